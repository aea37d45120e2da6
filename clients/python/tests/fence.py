"""fence.py URL QUEUE: a worker's lease runs out and a second worker is handed the job; the first
one's late complete, fail and extend answer lease_lost and change nothing; the second acks it."""

import sys
import time

from _common import client, emit

from delayq_client import Queue, Worker

r = client(sys.argv[1])
queue = sys.argv[2]
Queue(r, queue).add({"n": 1}, id="fenced")
first = Worker(r, queue, lambda job: None, lease_ms=200)
second = Worker(r, queue, lambda job: None, lease_ms=5000)
_, [stale], _ = first._claim(1)
time.sleep(0.4)  # the lease runs out
_, [fresh], _ = second._claim(1)  # the claim recovers the expired lease, then hands the job out again
emit(stale_attempt=stale.attempt, fresh_attempt=fresh.attempt, same_token=stale.token == fresh.token)
emit(stale_complete=first._complete(stale, {"by": "stale"}))
emit(stale_fail=first._fail(stale.id, stale.token, "late", 0))
first._extend([stale])
emit(stale_extend_lost=stale.lease_lost)
emit(fresh_complete=second._complete(fresh, {"by": "fresh"}))
