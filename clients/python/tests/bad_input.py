"""bad_input.py URL QUEUE: every bad input raises ValueError naming its field; one line each.
The field must begin the message (`named`), so a case that fails for another reason fails the test."""

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
    ("delay_ms", lambda: q.add({}, delay_ms=float("nan"))),
    ("run_at", lambda: q.add({}, run_at=1767225600)),
    ("run_at", lambda: q.add({}, run_at=253402300800000)),
    ("delay_ms", lambda: q.add({}, delay_ms=315360000001)),
    ("delay_ms", lambda: q.add({}, delay_ms="10")),
    ("delay_ms", lambda: q.add({}, delay_ms=1, run_at=2)),
    ("run_at", lambda: q.add({}, run_at=-5)),
    ("priority", lambda: q.add({}, priority=1000001)),
    ("attempts", lambda: q.add({}, attempts=0)),
    ("group", lambda: q.add({}, group="")),
    ("replace", lambda: q.add({}, replace="yes")),
    ("data", lambda: q.add({1, 2})),
    ("data", lambda: q.add({"x": object()})),
    ("data", lambda: q.add("x" * (600 * 1024))),
    ("jobs", lambda: q.add_bulk([])),
    ("jobs[1].delay_ms", lambda: q.add_bulk([{"data": 1}, {"data": 2, "delay_ms": -3}])),
    ("jobs", lambda: q.add_bulk([{"data": 1, "id": "same"}, {"data": 2, "id": "same"}])),
    ("cost", lambda: q.add({}, cost=0)),
    ("cost", lambda: q.add({}, cost=1.5)),
    ("cost", lambda: q.add({}, cost=True)),
    ("cost", lambda: q.add({}, cost="x")),
    ("cost", lambda: q.add({}, cost=float("nan"))),
    ("cost", lambda: q.add({}, cost=1000001)),
    ("jobs[1].cost", lambda: q.add_bulk([{"data": 1, "cost": 2}, {"data": 2, "cost": -1}])),
    ("debounce", lambda: q.add({}, debounce="doc")),
    ("debounce.key", lambda: q.add({}, debounce={"delay_ms": 10})),
    ("debounce.key", lambda: q.add({}, debounce={"key": "", "delay_ms": 10})),
    ("debounce.delay_ms", lambda: q.add({}, debounce={"key": "k"})),
    ("debounce.delay_ms", lambda: q.add({}, debounce={"key": "k", "delay_ms": -1})),
    ("debounce.max_wait_ms", lambda: q.add({}, debounce={"key": "k", "delay_ms": 10, "max_wait_ms": 0})),
    ("debounce.delayMs", lambda: q.add({}, debounce={"key": "k", "delayMs": 10})),
    ("debounce", lambda: q.add({}, delay_ms=100, debounce={"key": "k", "delay_ms": 10})),
    ("debounce", lambda: q.add({}, delay_ms=0, debounce={"key": "k", "delay_ms": 10})),
    ("debounce", lambda: q.add({}, run_at=1767225600000, debounce={"key": "k", "delay_ms": 10})),
    ("debounce", lambda: q.add({}, replace=True, debounce={"key": "k", "delay_ms": 10})),
    ("debounce", lambda: q.add({}, dedup={"key": "d", "window_ms": 10}, debounce={"key": "k", "delay_ms": 10})),
    ("jobs[0].debounce", lambda: q.add_bulk([{"data": 1, "delay_ms": 5, "debounce": {"key": "k", "delay_ms": 10}}])),
    ("dedup", lambda: q.add({}, dedup=["k", 10])),
    ("dedup.window_ms", lambda: q.add({}, dedup={"key": "k", "window_ms": 0})),
    ("dedup.window_ms", lambda: q.add({}, dedup={"key": "k"})),
    ("dedup.key", lambda: q.add({}, dedup={"key": "a\x00b", "window_ms": 10})),
    ("dedup.windowMs", lambda: q.add({}, dedup={"key": "k", "window_ms": 10, "windowMs": 10})),
    ("jobs[0].costs", lambda: q.add_bulk([{"data": 1, "costs": 2}])),
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
        emit(field=field, error=str(e), named=str(e).startswith(field + " "))
    else:
        emit(field=field, error=None, named=False)
