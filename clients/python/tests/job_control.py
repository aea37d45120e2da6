"""job_control.py URL QUEUE CASE: job control from Python.
  work: a Python Worker until idle; a job 'slow' or 'hang' waits for job.aborted (at most 5 s)
        and says why it was aborted; any other job returns its id.
  produce: adds 'timed' with timeout_ms 250, then cancels 'held' (running=True) and fails
        'failing' now (dead), once each is active (a Node worker holds them)."""

import sys
import time

from _common import client, emit

from delayq_client import Queue, Worker

url, queue, case = sys.argv[1], sys.argv[2], sys.argv[3]
r = client(url)

if case == "work":

    def handler(job):
        emit(started=job.id, timeout_ms=job.timeout_ms)
        if job.id in ("slow", "hang"):
            job.aborted.wait(5)
            emit(aborted=job.id, reason=job.abort_reason)
            return "late"
        return job.id

    import logging

    logging.basicConfig(level=logging.INFO)
    # A lease long enough that no extension (a third of it) comes before the cancel's message.
    w = Worker(r, queue, handler, concurrency=4, lease_ms=30000, attempts=1)
    w.run_until_idle(idle_ms=1500, timeout_s=25)
    emit(done=True, ran=w.ran, failed=w.failed)
elif case == "produce":
    q = Queue(r, queue)
    emit(added=q.add({"n": 1}, id="timed", timeout_ms=250)["result"])
    try:
        q.add({"n": 2}, id="bad", timeout_ms=0)
    except ValueError as e:
        emit(refused=str(e))
    deadline = time.monotonic() + 10
    pending = {"held", "failing"}
    while pending and time.monotonic() < deadline:
        for id in list(pending):
            job = q.get(id)
            if job and job["state"] == "active":
                pending.discard(id)
                if id == "held":
                    emit(cancelled=q.cancel(id, running=True, reason="from python"))
                else:
                    emit(failed=q.fail(id, reason="poison from python", dead=True))
        time.sleep(0.02)
    emit(done=True, pending=sorted(pending))
