"""produce.py URL QUEUE: plain, delayed, priority, grouped and bulk adds; one line per job."""

import sys

from _common import client, emit

from delayq_client import Queue

q = Queue(client(sys.argv[1]), sys.argv[2])
results = [
    q.add({"kind": "plain", "n": 1}, id="plain"),
    q.add({"kind": "delayed", "n": 2}, id="delayed", delay_ms=300),
    q.add({"kind": "priority", "n": 3}, id="urgent", priority=10),
    q.add({"kind": "group", "n": 4}, id="grouped", group="g1"),
    q.add({"kind": "plain", "n": 1}, id="plain"),  # exists: left alone
]
results += q.add_bulk(
    [
        {"data": {"kind": "bulk", "n": 5}, "id": "bulk-1"},
        {"data": {"kind": "bulk", "n": 6}, "id": "bulk-2", "group": "g2"},
        {"data": {"kind": "bulk", "n": 7}},
    ]
)
for r in results:
    emit(**r)
emit(registered=q.registered())
