"""names.py URL QUEUE CASE: job names (add(name=...), Worker handlers by name). One line per result.

CASE is one of:
  produce   add e (name 'send-email'), c (name 'charge', non-ASCII data), u (no name) and, in one
            add_bulk, b1 (name 'é名🙂') and b2 (name 'charge')
  bad       adds refused for a bad name (empty, 257 characters, a newline, a number): each line
            the error, and whether it is a ValueError
  work      a Python Worker with handlers 'send-email', 'charge' and 'default' until idle; one
            line per run: id, name, the handler that ran it
  strict    a Python Worker with only a 'send-email' handler and attempts=1 until idle
"""

import sys

from _common import client, emit

from delayq_client import Queue, Worker

url, queue, case = sys.argv[1], sys.argv[2], sys.argv[3]

if case == "produce":
    q = Queue(client(url), queue)
    emit(**q.add({"to": "ada"}, id="e", name="send-email"))
    emit(**q.add({"amount": "€5"}, id="c", name="charge"))
    emit(**q.add({"n": 1}, id="u"))
    for r in q.add_bulk([{"data": 1, "id": "b1", "name": "é名🙂"}, {"data": 2, "id": "b2", "name": "charge"}]):
        emit(**r)
elif case == "bad":
    q = Queue(client(url), queue)
    for name in ["", "x" * 257, "send\nemail", 42]:
        try:
            q.add(1, id="bad", name=name)
        except ValueError as e:
            emit(error=str(e))
        else:
            emit(error=None)
    try:
        q.add_bulk([{"data": 1, "id": "ok"}, {"data": 2, "id": "bad2", "name": "\x07"}])
    except ValueError as e:
        emit(error=str(e))
elif case in ("work", "strict"):

    def by(who):
        def handler(job):
            emit(ran=job.id, name=job.name, handler=who)
            return who

        return handler

    handlers = {"send-email": by("send-email")}
    if case == "work":
        handlers.update({"charge": by("charge"), "default": by("default")})
    w = Worker(client(url), queue, handlers, concurrency=2, lease_ms=5000, attempts=1)
    w.run_until_idle(idle_ms=500, timeout_s=25)
    emit(done=True, ran=w.ran, failed=w.failed)
