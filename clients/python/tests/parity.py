"""parity.py URL QUEUE add CASES_FILE | parity.py URL QUEUE results CASES_FILE (a JSON list)

add: runs each case's add (`kwargs` for Queue.add) and prints one line per case: the answer, or
the ValueError's field (the message's first word) and message; then the stored job (Queue.get).
results: adds one job per case (data {"case": i}) and runs a worker whose handler returns the
case's result, built from its `py` name (values JSON cannot carry: a set, a datetime, NaN…);
prints nothing but what the worker logs. test/clients/python-client.test.ts runs the same tables
through the Node library and compares."""

import datetime
import decimal
import json
import sys

from _common import client, emit

from delayq_client import Queue, Worker

r = client(sys.argv[1])
q = Queue(r, sys.argv[2])
mode = sys.argv[3]
with open(sys.argv[4], encoding="utf-8") as f:
    cases = json.load(f)

RESULTS = {
    "nan": lambda: float("nan"),
    "nested_inf": lambda: {"a": float("inf"), "b": [1, float("-inf")]},
    "set": lambda: {1, 2},
    "datetime": lambda: datetime.datetime(2030, 1, 1),
    "decimal": lambda: decimal.Decimal("1.5"),
    "circular": lambda: (lambda a: (a.append(a), a)[1])([]),
    "big": lambda: "x" * 20000,
    "big_unicode": lambda: "\u00e9" * 9000,  # 9,000 characters, 18,002 bytes of JSON
    "just_under": lambda: "y" * 16382,  # 16,384 bytes of JSON with its quotes
}

if mode == "add":
    for i, c in enumerate(cases):
        try:
            out = q.add(c.get("data"), **c.get("kwargs", {}))
        except ValueError as e:
            emit(case=i, ok=False, field=str(e).split(" ", 1)[0], error=str(e))
            continue
        job = q.get(out["id"])
        emit(case=i, ok=True, result=out["result"], job={k: job[k] for k in ("data", "priority", "max_attempts", "attempts", "due_ms", "group")})
else:
    for i, c in enumerate(cases):
        q.add({"case": i}, id="r%d" % i)

    def handler(job):
        c = cases[job.data["case"]]
        return RESULTS[c["py"]]() if "py" in c else c.get("value")

    Worker(r, sys.argv[2], handler, lease_ms=2000, subscribe=False).run_until_idle(idle_ms=300, timeout_s=20)
    emit(done=True)
