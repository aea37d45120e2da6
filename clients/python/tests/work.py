"""work.py URL QUEUE [idle_ms] [attempts] [backoff_ms]: a Python Worker until idle; a job whose id
starts with 'fail' raises. One line per run: id, attempt, data, group; then one per failing job as
Queue.get reads it (state, attempts, max_attempts)."""

import sys
import time

from _common import client, emit

from delayq_client import Queue, Worker

url, queue = sys.argv[1], sys.argv[2]
idle_ms = int(sys.argv[3]) if len(sys.argv) > 3 else 800
attempts = int(sys.argv[4]) if len(sys.argv) > 4 else 3
backoff_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 100


failing = set()


def handler(job):
    emit(ran=job.id, attempt=job.attempt, data=job.data, group=job.group)
    if job.id.startswith("fail"):
        failing.add(job.id)
        raise RuntimeError("planned failure %d" % job.attempt)
    if isinstance(job.data, dict) and job.data.get("slow_ms"):
        time.sleep(job.data["slow_ms"] / 1000)
    return {"by": "python", "id": job.id}


w = Worker(client(url), queue, handler, concurrency=4, batch=10, lease_ms=900, attempts=attempts,
           backoff={"type": "exponential", "delay": backoff_ms, "jitter": False})
w.run_until_idle(idle_ms=idle_ms, timeout_s=25)
emit(done=True, ran=w.ran, failed=w.failed)
for id in sorted(failing):
    got = Queue(client(url), queue).get(id)
    emit(got=id, state=got["state"], attempts=got["attempts"], max_attempts=got["max_attempts"])
