"""Queue: a producer (add, add_bulk, cancel, reschedule, get) over the published scripts."""

import json
import uuid

import redis

from . import validate as v
from .formats import decode_body, decode_run
from .protocol import Protocol, ProtocolError

MEMO_MS = 60000


class Queue:
    """One delayq queue, reached through `redis_client` (a redis.Redis)."""

    def __init__(self, redis_client, name, prefix="dq", manifest_path=None, protocol=None, max_payload_bytes=v.MAX_PAYLOAD_BYTES):
        self.redis = redis_client
        self.name = v.queue_name(name)
        self.prefix = v.prefix(prefix)
        self.protocol = protocol or Protocol(manifest_path)
        self.max_payload_bytes = v.whole(max_payload_bytes, "max_payload_bytes", 1)

    # --- calling ----------------------------------------------------------------------------
    def _run(self, name, args, items=None, request_id="", item_fields=None):
        """One script call, re-sent once (same request id, same arguments) when the connection
        drops before its reply: every published script answers a re-send as its first run did."""
        keys, argv = self.protocol.build(name, self.prefix, self.name, args, items, request_id, item_fields)
        try:
            return self.protocol.call(self.redis, name, keys, argv)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            return self.protocol.call(self.redis, name, keys, argv)

    def server_now_ms(self):
        s, us = self.redis.time()
        return int(s) * 1000 + int(us) // 1000

    # --- producing --------------------------------------------------------------------------
    def add(self, data, id=None, delay_ms=None, run_at=None, priority=0, attempts=None, group=None, replace=False, cost=1, dedup=None, debounce=None, name=None, timeout_ms=None):
        """Adds one job; returns {'id', 'result' ('added', 'exists', 'replaced', 'deduplicated',
        'debounced'), 'state', 'due_ms'}, and 'duplicate_of' when deduplicated. A debounced add
        answers with the id of the burst's job, which took its data."""
        job = dict(data=data, id=id, delay_ms=delay_ms, run_at=run_at, priority=priority, attempts=attempts, group=group, replace=replace)
        job.update(cost=cost, dedup=dedup, debounce=debounce, name=name, timeout_ms=timeout_ms)
        return self.add_bulk([job], _field="")[0]

    def add_bulk(self, jobs, _field=None):
        """Adds jobs in one call (one script run): each a dict with `data` and the options of add."""
        if not isinstance(jobs, (list, tuple)) or not jobs:
            v.fail("jobs", "must be a non-empty list")
        prefixes = ["jobs[%d]." % i if _field is None else "" for i in range(len(jobs))]
        items = [self._item(j, f) for j, f in zip(jobs, prefixes)]
        if len({it["id"] for it in items}) != len(items):
            v.fail("jobs", "must not repeat an id")
        # add.lua's `flow`: items carry group, cost and the debounce fields only when a job of
        # the call has one of them; else they end at `timeout_ms`.
        flow = any(it["group"] or it["cost"] or it["debounce_key"] for it in items)
        fields = self.protocol.script("add").item_fields
        if not flow:
            fields = fields[: fields.index("timeout_ms") + 1]
        request_id = str(uuid.uuid4())
        reply = self._run(
            "add",
            {"schedule": "", "occurrence": "", "request_id": request_id, "memo_ms": MEMO_MS, "epoch": "", "flow": "1" if flow else "0"},
            items,
            request_id,
            fields,
        )
        script = self.protocol.script("add")
        if isinstance(reply, list) and len(reply) == 1:
            code = script.code_names.get(reply[0], reply[0])
            if code == "too_costly":
                # The script names no job: name the costliest one of the call (nothing was written).
                costs = [int(it["cost"] or 1) for it in items]
                i = costs.index(max(costs))
                raise v.TooCostlyError(
                    "%scost is above the max of a rate limit that applies to the job (the queue's, or its group's) (got %d)"
                    % (prefixes[i], costs[i])
                )
            raise ProtocolError("add refused: %s" % code)
        head, rows = self.protocol.parse("add", reply)
        if len(rows) != len(items):
            raise ProtocolError("add: %d answers for %d jobs" % (len(rows), len(items)))
        if head["made"] == 1:
            self.redis.zadd(self.protocol.registry_key(self.prefix), {self.name: self.server_now_ms()}, nx=True)
        return [_result(it["id"], script.code_names.get(r["code"], r["code"]), r, self.protocol) for it, r in zip(items, rows)]

    def _item(self, job, f):
        if not isinstance(job, dict):
            v.fail(f.rstrip(".") or "job", "must be a dict")
        unknown = set(job) - {"data", "id", "delay_ms", "run_at", "priority", "attempts", "group", "replace", "cost", "dedup", "debounce", "name", "timeout_ms"}
        if unknown:
            v.fail(f + sorted(unknown, key=str)[0], "is not an option of add")
        job_id = job.get("id")
        delay, run_at = v.when(job.get("delay_ms"), job.get("run_at"), f)
        attempts = job.get("attempts")
        group = job.get("group")
        name = job.get("name")
        timeout_ms = job.get("timeout_ms")
        replace = v.flag(job.get("replace", False), f + "replace")
        cost = v.whole(1 if job.get("cost") is None else job["cost"], f + "cost", 1, v.MAX_RATE_TOKENS)
        dedup = job.get("dedup")
        if dedup is not None:
            v.options(dedup, f + "dedup", ("key", "window_ms"), ("key", "window_ms"))
            dedup = (v.job_id(dedup["key"], f + "dedup.key"), v.whole(dedup["window_ms"], f + "dedup.window_ms", 1, v.MAX_DELAY_MS))
        debounce = job.get("debounce")
        if debounce is not None:
            v.options(debounce, f + "debounce", ("key", "delay_ms", "max_wait_ms"), ("key", "delay_ms"))
            max_wait = debounce.get("max_wait_ms")
            debounce = (
                v.job_id(debounce["key"], f + "debounce.key"),
                v.whole(debounce["delay_ms"], f + "debounce.delay_ms", 0, v.MAX_DELAY_MS),
                "" if max_wait is None else v.whole(max_wait, f + "debounce.max_wait_ms", 1, v.MAX_DELAY_MS),
            )
            # The Node library's rule (src/options.ts): the debounce says when the job runs, and
            # a folded add replaces the burst's job by design.
            if job.get("delay_ms") is not None or job.get("run_at") is not None or dedup is not None or replace:
                v.fail(f + "debounce", "cannot be given with delay_ms, run_at, dedup or replace (debounce.delay_ms says when the job runs)")
        return {
            "id": str(uuid.uuid4()) if job_id is None else v.job_id(job_id, f + "id"),
            "data": v.payload(job.get("data"), f + "data", self.max_payload_bytes),
            "delay_ms": delay,
            "run_at": run_at,
            "priority": v.whole(job.get("priority", 0), f + "priority", -v.MAX_PRIORITY, v.MAX_PRIORITY),
            "max_attempts": "" if attempts is None else v.whole(attempts, f + "attempts", 1, v.MAX_ATTEMPTS),
            "backoff": "",
            "replace": "1" if replace else "0",
            # The key as given: add.lua keeps it as <prefix>:{<queue>}:dedup:<key>.
            "dedup_key": dedup[0] if dedup else "",
            "dedup_ms": dedup[1] if dedup else "",
            "trace": "",
            # The job's name ('': none), validated like an id.
            "name": "" if name is None else v.job_id(name, f + "name"),
            # How long one attempt may run ('': the worker's timeout).
            "timeout_ms": "" if timeout_ms is None else v.whole(timeout_ms, f + "timeout_ms", 1, v.MAX_DELAY_MS),
            "group": "" if group is None else v.job_id(group, f + "group"),
            # Sent only when `flow` is '1'. A cost of 1 is written '' (the script reads it as 1).
            "cost": cost if cost > 1 else "",
            "debounce_key": debounce[0] if debounce else "",
            "debounce_ms": debounce[1] if debounce else "",
            "debounce_max_ms": debounce[2] if debounce else "",
            # Only a sharded producer moving a burst off a retired shard sets it.
            "debounce_first_ms": "",
        }

    def cancel(self, id, running=False, reason=""):
        """Cancels a job that has not started, and with running=True a running one too (its lease
        ends, its holder is told): 'done', 'refused' (with the state) or 'not_found'."""
        v.job_id(id)
        running = v.flag(running, "running")
        if not isinstance(reason, str):
            v.fail("reason", "must be a string")
        request_id = str(uuid.uuid4())
        args = {"request_id": request_id, "memo_ms": MEMO_MS, "running": "1" if running else "0", "reason": reason}
        reply = self._run("cancel", args, [{"id": id}], request_id)
        _, rows = self.protocol.parse("cancel", reply)
        codes = self.protocol.script("cancel").code_names
        return {"result": codes.get(rows[0]["code"], rows[0]["code"]), "state": rows[0]["state"] or None}

    def fail(self, id, reason="failed by Queue.fail", dead=False, retry_ms=1000, default_max=3):
        """Fails a job now from outside its holder (fail-now.lua): a running attempt fails with the
        reason (retried after retry_ms while attempts are left, else dead); dead=True buries the
        job now, running or waiting. Returns {'result' ('retried', 'dead', 'refused',
        'not_found'), 'state', 'due_ms'}."""
        v.job_id(id)
        if not isinstance(reason, str):
            v.fail("reason", "must be a string")
        dead = v.flag(dead, "dead")
        retry_ms = v.whole(retry_ms, "retry_ms", 0, v.MAX_DELAY_MS)
        default_max = v.whole(default_max, "default_max", 1, v.MAX_ATTEMPTS)
        request_id = str(uuid.uuid4())
        args = {"id": id, "reason": reason, "dead": "1" if dead else "0", "retry_ms": retry_ms, "default_max": default_max,
                "history": 10, "request_id": request_id, "memo_ms": MEMO_MS}
        head, _ = self.protocol.parse("fail-now", self._run("fail-now", args, None, request_id))
        codes = self.protocol.script("fail-now").code_names
        return {"result": codes.get(head["code"], head["code"]), "state": head.get("state") or None, "due_ms": _num(self.protocol, head.get("due_ms"))}

    def reschedule(self, id, delay_ms=None, run_at=None):
        """Moves a job that is not active to a new due time: 'done', 'refused' or 'not_found'."""
        v.job_id(id)
        if delay_ms is None and run_at is None:
            v.fail("delay_ms", "or run_at must be given")
        delay, at = v.when(delay_ms, run_at)
        request_id = str(uuid.uuid4())
        reply = self._run("reschedule", {"id": id, "delay_ms": delay, "run_at": at, "request_id": request_id, "memo_ms": MEMO_MS}, None, request_id)
        head, _ = self.protocol.parse("reschedule", reply)
        codes = self.protocol.script("reschedule").code_names
        return {"result": codes.get(head["code"], head["code"]), "state": head.get("state") or None, "due_ms": _num(self.protocol, head.get("due_ms"))}

    def get(self, id, logs=False):
        """A job's public view (JOB_ROW decoded), or None when there is no such job."""
        v.job_id(id)
        reply = self._run("get", {"logs": "1" if logs else "0"}, [{"id": id}])
        _, rows = self.protocol.parse("get", reply)
        row = rows[0]
        if not row["state"]:
            return None
        state = row["state"]
        if state in ("ready", "waiting"):
            # data-model.md: a job in ready or a group's line is, publicly, scheduled.
            state = "scheduled"
        body = decode_body(row["body"]) if row["body"] else None
        run = decode_run(row["run"])
        return {
            "id": row["id"],
            "state": state,
            "data": json.loads(body["data_json"]) if body else None,
            "priority": body["priority"] if body else None,
            "max_attempts": body["max_attempts"] if body else None,
            "created_ms": body["created_ms"] if body else None,
            "attempts": run["attempts"],
            "last_error": run["last_error"],
            "due_ms": _num(self.protocol, row["due_ms"]),
            "score": _num(self.protocol, row["score"]),
            "result": json.loads(row["result"]) if row["result"] else None,
            "progress": json.loads(row["progress"]) if row["progress"] else None,
            "errors": json.loads(row["errors"]) if row["errors"] else [],
            "logs": row["logs"] or None,
            "group": row["group"] or None,
        }

    # for the tests
    def registered(self):
        return self.redis.zscore(self.protocol.registry_key(self.prefix), self.name) is not None


def _result(id, code, row, protocol):
    """One job's answer, as the Node library gives it (AddResult): a debounced add answers with
    the burst job's id (the reply's holder); a deduplicated one keeps its own id and names the
    holder of the dedup key in `duplicate_of`."""
    holder = row["holder"] or None
    out = {"id": id, "result": code, "state": row["state"] or None, "due_ms": _num(protocol, row["due_ms"])}
    if code == "debounced":
        out["id"] = holder or id
    elif holder is not None:
        out["duplicate_of"] = holder
    return out


def _num(protocol, n):
    if n is None or n == "" or n == protocol.not_set_number:
        return None
    return int(n)
