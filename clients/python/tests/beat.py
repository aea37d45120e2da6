"""beat.py URL QUEUE RELEASE_KEY: a Python Worker (concurrency 1, lease 900 ms) whose handler
blocks until RELEASE_KEY gets a value (BLPOP), then runs until idle and closes. Lines: its id,
then one per run."""

import sys

from _common import client, emit

from delayq_client import Worker

url, queue, release = sys.argv[1], sys.argv[2], sys.argv[3]
r = client(url)
waiter = client(url)
waiter.connection_pool.connection_kwargs["socket_timeout"] = 30


def handler(job):
    emit(ran=job.id)
    if waiter.blpop(release, timeout=25) is None:
        raise RuntimeError("never released")


w = Worker(r, queue, handler, concurrency=1, batch=1, lease_ms=900)
emit(worker=w.id)
w.run_until_idle(idle_ms=300, timeout_s=40)
emit(done=True, ran=w.ran)
