"""bad_input.py URL QUEUE: every bad input raises ValueError naming its field; one line each."""

import sys

from _common import client, emit

from delayq_client import Queue, Worker

r = client(sys.argv[1])
q = Queue(r, sys.argv[2])
cases = [
    ("id", lambda: q.add({}, id="")),
    ("id", lambda: q.add({}, id="x" * 257)),
    ("id", lambda: q.add({}, id="a\nb")),
    ("id", lambda: q.add({}, id="\ud800")),
    ("id", lambda: q.add({}, id=12)),
    ("delay_ms", lambda: q.add({}, delay_ms=-1)),
    ("delay_ms", lambda: q.add({}, delay_ms=1.5)),
    ("delay_ms", lambda: q.add({}, delay_ms="10")),
    ("delay_ms", lambda: q.add({}, delay_ms=1, run_at=2)),
    ("run_at", lambda: q.add({}, run_at=-5)),
    ("priority", lambda: q.add({}, priority=1000001)),
    ("attempts", lambda: q.add({}, attempts=0)),
    ("group", lambda: q.add({}, group="")),
    ("replace", lambda: q.add({}, replace="yes")),
    ("data", lambda: q.add(float("nan"))),
    ("data", lambda: q.add({"x": object()})),
    ("data", lambda: q.add("x" * (600 * 1024))),
    ("jobs", lambda: q.add_bulk([])),
    ("jobs[1].delay_ms", lambda: q.add_bulk([{"data": 1}, {"data": 2, "delay_ms": -3}])),
    ("jobs", lambda: q.add_bulk([{"data": 1, "id": "same"}, {"data": 2, "id": "same"}])),
    ("id", lambda: q.cancel("")),
    ("delay_ms", lambda: q.reschedule("x", delay_ms=-1)),
    ("delay_ms", lambda: q.reschedule("x")),
    ("queue name", lambda: Queue(r, "bad queue")),
    ("prefix", lambda: Queue(r, "ok", prefix="")),
    ("concurrency", lambda: Worker(r, "ok", lambda j: None, concurrency=0)),
    ("handler", lambda: Worker(r, "ok", None)),
]
for field, call in cases:
    try:
        call()
    except ValueError as e:
        emit(field=field, error=str(e), named=str(e).startswith(field))
    else:
        emit(field=field, error=None, named=False)
