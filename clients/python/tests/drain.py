"""drain.py URL QUEUE: a Python Worker (lease 600 ms) is stopped while its one job runs 2 s (as a
deploy's SIGTERM handler would call stop()); the job must keep its lease until it ends and is
acked. Lines: its id, the start, the outcome of the ack, then done."""

import logging
import sys
import threading
import time

from _common import client, emit

from delayq_client import Worker

url, queue = sys.argv[1], sys.argv[2]
started = threading.Event()
outcomes = []


def handler(job):
    emit(started=job.id)
    started.set()
    time.sleep(2.0)  # the job's own work, longer than three leases
    return "done"


class Recorder(logging.Handler):
    def emit(self, record):
        outcomes.append(record.getMessage())


logging.getLogger("delayq_client").addHandler(Recorder())
w = Worker(client(url), queue, handler, concurrency=1, lease_ms=600)
threading.Thread(target=lambda: (started.wait(10), w.stop()), daemon=True).start()
w.run()
emit(done=True, ran=w.ran, warnings=outcomes)
