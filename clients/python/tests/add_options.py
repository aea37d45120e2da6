"""add_options.py URL QUEUE CASE [ARG]: adds with cost, debounce and dedup; one line per result.

CASE is one of:
  cost          a (cost 2) and b (cost 1) in one add_bulk, then c (cost 2)
  too_costly    an add of cost 4, and an add_bulk whose second job costs 5: each refused
  debounce      four adds with one debounce key (delay 200 ms, no bound), data n = 1..4
  bound         three adds with one debounce key (delay 60 s, max_wait 1500 ms), between two
                readings of the server clock (t0, t1)
  debounce_one  one add with the debounce key ARG (delay 0), data {"n": ARG2}
  dedup         a and b with the dedup key 'rem', then p with the key 'n-key' (taken by Node)
  attempts_made m (attempts 5, 2 made), then n (1 made) and p (none) in one add_bulk; an add of
                5 made of 5 and an add_bulk whose second job has -1 made: each refused; then m
                as get reads it
"""

import sys

from _common import client, emit

from delayq_client import Queue, TooCostlyError

q = Queue(client(sys.argv[1]), sys.argv[2])
case = sys.argv[3]


def refused(call):
    try:
        call()
    except TooCostlyError as e:
        emit(error=str(e), too_costly=True, value_error=isinstance(e, ValueError))
    else:
        emit(error=None, too_costly=False)


if case == "cost":
    for r in q.add_bulk([{"data": {"n": "a"}, "id": "a", "cost": 2}, {"data": {"n": "b"}, "id": "b"}]):
        emit(**r)
    emit(**q.add({"n": "c"}, id="c", cost=2))
elif case == "too_costly":
    refused(lambda: q.add({"n": "x"}, id="x", cost=4))
    refused(lambda: q.add_bulk([{"data": {"n": "d"}, "id": "d"}, {"data": {"n": "e"}, "id": "e", "cost": 5}]))
elif case == "debounce":
    for n in range(1, 5):
        emit(**q.add({"n": n}, debounce={"key": "doc", "delay_ms": 200}))
elif case == "bound":
    emit(t0=q.server_now_ms())
    rows = [q.add({"n": n}, debounce={"key": "doc", "delay_ms": 60000, "max_wait_ms": 1500}) for n in range(1, 4)]
    emit(t1=q.server_now_ms())
    for r in rows:
        emit(**r)
elif case == "debounce_one":
    emit(**q.add({"n": int(sys.argv[5])}, debounce={"key": sys.argv[4], "delay_ms": 0}))
elif case == "dedup":
    emit(**q.add({"n": "a"}, id="a", dedup={"key": "rem", "window_ms": 60000}))
    emit(**q.add({"n": "b"}, id="b", dedup={"key": "rem", "window_ms": 60000}))
    emit(**q.add({"n": "p"}, id="p", dedup={"key": "n-key", "window_ms": 60000}))
elif case == "attempts_made":
    emit(**q.add({"n": "m"}, id="m", attempts=5, attempts_made=2))
    for r in q.add_bulk([{"data": {"n": "n"}, "id": "n", "attempts_made": 1}, {"data": {"n": "p"}, "id": "p"}]):
        emit(**r)
    for call in (
        lambda: q.add({"n": "bad"}, id="bad", attempts=5, attempts_made=5),
        lambda: q.add_bulk([{"data": {}, "id": "ok2"}, {"data": {}, "id": "bad2", "attempts_made": -1}]),
    ):
        try:
            call()
        except ValueError as e:
            emit(error=str(e), value_error=True)
        else:
            emit(error=None, value_error=False)
    got = q.get("m")
    emit(got="m", attempts=got["attempts"], max_attempts=got["max_attempts"])
else:
    raise SystemExit("unknown case %r" % case)
