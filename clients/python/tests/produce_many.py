"""produce_many.py URL QUEUE N: N jobs ('m-<i>'), one by one and in bulk, some grouped, over ~1 s."""

import sys
import time

from _common import client, emit

from delayq_client import Queue

q = Queue(client(sys.argv[1]), sys.argv[2])
n = int(sys.argv[3])
i = 0
added = 0
while i < n:
    if i % 3 == 0:
        r = [q.add({"i": i}, id="m-%d" % i, group="g%d" % (i % 4) if i % 2 else None)]
        i += 1
    else:
        batch = [{"data": {"i": j}, "id": "m-%d" % j, "delay_ms": (j % 5) * 20} for j in range(i, min(n, i + 7))]
        r = q.add_bulk(batch)
        i += len(batch)
    added += sum(1 for x in r if x["result"] == "added")
    time.sleep(0.02)
emit(added=added)
