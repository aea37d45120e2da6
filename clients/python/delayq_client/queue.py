"""Queue: a producer (add, add_bulk, cancel, fail, reschedule, get) over the published scripts.

Every method is planned as a `Call` (what to send, how to read the answer) by `QueueCalls`, which
holds the checks and the wire code; `Queue` runs a call on a redis.Redis, and
`delayq_client.asyncio.Queue` the same call on a redis.asyncio.Redis.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar

import redis

from . import validate as v
from .formats import decode_body, decode_run, packed_tail
from .protocol import Protocol, ProtocolError, Reply

MEMO_MS = 60000
# The most bytes of a signal's data as JSON (LIMIT.signal_data_bytes of the Node library).
SIGNAL_DATA_BYTES = 16384
#: What add, cancel, fail and reschedule answer, as the Node library's results (snake_case keys).
Result = Dict[str, Any]

R = TypeVar("R")


class Call(Generic[R]):
    """One script call, planned: its script, arguments and items by the manifest's names, and how
    its reply reads. `register` is set by `read` when the call made the queue's keys (name it in
    the registry)."""

    def __init__(
        self,
        script: str,
        args: Mapping[str, Any],
        read: Callable[[Call[R], Reply], R],
        items: Optional[Sequence[Mapping[str, Any]]] = None,
        request_id: str = "",
        item_fields: Optional[Sequence[str]] = None,
    ) -> None:
        self.script = script
        self.args = args
        self.items = items
        self.request_id = request_id
        self.item_fields = item_fields
        self._read = read
        self.register = False

    def read(self, reply: Reply) -> R:
        return self._read(self, reply)


class QueueCalls:
    """The checks and wire code of a queue's calls, shared by the blocking and the asyncio Queue:
    a bad input raises ValueError naming the field before anything is sent."""

    def __init__(
        self,
        redis_client: Any,
        name: str,
        prefix: str = "dq",
        manifest_path: Optional[str] = None,
        protocol: Optional[Protocol] = None,
        max_payload_bytes: int = v.MAX_PAYLOAD_BYTES,
    ) -> None:
        self.redis = redis_client
        self.name = v.queue_name(name)
        self.prefix = v.prefix(prefix)
        self.protocol = protocol or Protocol(manifest_path)
        self.max_payload_bytes = v.whole(max_payload_bytes, "max_payload_bytes", 1)

    def _wire(self, call: Call[Any]) -> "tuple[List[str], List[str]]":
        return self.protocol.build(call.script, self.prefix, self.name, call.args, call.items, call.request_id, call.item_fields)

    # --- planning ---------------------------------------------------------------------------
    def _add_call(
        self,
        data: Any,
        id: Optional[str] = None,
        delay_ms: Optional[float] = None,
        run_at: Optional[float] = None,
        priority: int = 0,
        attempts: Optional[int] = None,
        group: Optional[str] = None,
        replace: bool = False,
        cost: int = 1,
        dedup: Optional[Mapping[str, Any]] = None,
        debounce: Optional[Mapping[str, Any]] = None,
        name: Optional[str] = None,
        timeout_ms: Optional[int] = None,
        attempts_made: Optional[int] = None,
        depends_on: Optional[Sequence[str]] = None,
        wait_at_most_ms: Optional[int] = None,
        on_child_failure: Optional[str] = None,
    ) -> Call[List[Result]]:
        job = dict(data=data, id=id, delay_ms=delay_ms, run_at=run_at, priority=priority, attempts=attempts, group=group, replace=replace)
        job.update(cost=cost, dedup=dedup, debounce=debounce, name=name, timeout_ms=timeout_ms, attempts_made=attempts_made)
        if depends_on is not None or wait_at_most_ms is not None or on_child_failure is not None:
            job.update(depends_on=depends_on, wait_at_most_ms=wait_at_most_ms, on_child_failure=on_child_failure)
        return self._add_bulk_call([job], "")

    def _add_bulk_call(self, jobs: Sequence[Mapping[str, Any]], _field: Optional[str] = None) -> Call[List[Result]]:
        if not isinstance(jobs, (list, tuple)) or not jobs:
            v.fail("jobs", "must be a non-empty list")
        prefixes = ["jobs[%d]." % i if _field is None else "" for i in range(len(jobs))]
        items = [self._item(j, f) for j, f in zip(jobs, prefixes)]
        if len({it["id"] for it in items}) != len(items):
            v.fail("jobs", "must not repeat an id")
        # add.lua's `item_fields`: items carry group, cost, the debounce fields and attempts_made
        # only when a job of the call has one of them ('controls'), and the hold's fields only
        # when one waits for other jobs ('holds'); else they end at `timeout_ms` ('base').
        holds = any(it["depends_on"] for it in items)
        controls = holds or any(it["group"] or it["cost"] or it["debounce_key"] or it["attempts_made"] for it in items)
        script = self.protocol.script("add")
        fields = script.item_fields or []
        if not holds:
            fields = fields[: fields.index("attempts_made" if controls else "timeout_ms") + 1]
        request_id = str(uuid.uuid4())

        def read(call: Call[List[Result]], reply: Reply) -> List[Result]:
            if isinstance(reply, list) and len(reply) == 1:
                code = script.code(reply[0])
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
            call.register = head["made"] == 1
            return [_result(it["id"], script.code(r["code"]), r, self.protocol) for it, r in zip(items, rows)]

        kind = "holds" if holds else "controls" if controls else "base"
        sent = items
        # Jobs without replace or dedup either: each body packed (formats.PACKED_TAIL), four
        # arguments a job, the cheapest add for the script.
        if kind == "base" and all(it["replace"] == "0" and it["dedup_key"] == "" for it in items):
            kind, fields = "packed", ["id", "data", "delay_ms", "run_at"]
            sent = [
                {
                    "id": it["id"],
                    "data": packed_tail(it["priority"], it["max_attempts"], it["timeout_ms"], it["name"], it["data"]),
                    "delay_ms": it["delay_ms"],
                    "run_at": it["run_at"],
                }
                for it in items
            ]
        args = {"schedule": "", "occurrence": "", "request_id": request_id, "memo_ms": MEMO_MS, "epoch": "", "item_fields": kind, "packed": 0}
        return Call("add", args, read, sent, request_id, fields)

    def _item(self, job: Any, f: str) -> Dict[str, Any]:
        if not isinstance(job, dict):
            v.fail(f.rstrip(".") or "job", "must be a dict")
        unknown = set(job) - {
            "data",
            "id",
            "delay_ms",
            "run_at",
            "priority",
            "attempts",
            "attempts_made",
            "group",
            "replace",
            "cost",
            "dedup",
            "debounce",
            "name",
            "timeout_ms",
            "depends_on",
            "wait_at_most_ms",
            "on_child_failure",
        }
        if unknown:
            v.fail(f + sorted(unknown, key=str)[0], "is not an option of add")
        job_id = job.get("id")
        delay, run_at = v.when(job.get("delay_ms"), job.get("run_at"), f)
        attempts = job.get("attempts")
        max_attempts: Optional[int] = None if attempts is None else v.whole(attempts, f + "attempts", 1, v.MAX_ATTEMPTS)
        # Attempts made before it was added (a job moved from another queue): its next run counts on from them.
        made = v.whole(0 if job.get("attempts_made") is None else job["attempts_made"], f + "attempts_made", 0, v.MAX_ATTEMPTS - 1)
        if max_attempts is not None and made >= max_attempts:
            v.fail(f + "attempts_made", "must be below attempts (%d) (got %d)" % (max_attempts, made))
        group = job.get("group")
        name = job.get("name")
        timeout_ms = job.get("timeout_ms")
        replace = v.flag(job.get("replace", False), f + "replace")
        cost = v.whole(1 if job.get("cost") is None else job["cost"], f + "cost", 1, v.MAX_RATE_TOKENS)
        dedup_in = job.get("dedup")
        dedup: Any = None
        if dedup_in is not None:
            v.options(dedup_in, f + "dedup", ("key", "window_ms"), ("key", "window_ms"))
            dedup = (v.job_id(dedup_in["key"], f + "dedup.key"), v.whole(dedup_in["window_ms"], f + "dedup.window_ms", 1, v.MAX_DELAY_MS))
        debounce_in = job.get("debounce")
        debounce: Any = None
        if debounce_in is not None:
            v.options(debounce_in, f + "debounce", ("key", "delay_ms", "max_wait_ms"), ("key", "delay_ms"))
            max_wait = debounce_in.get("max_wait_ms")
            debounce = (
                v.job_id(debounce_in["key"], f + "debounce.key"),
                v.whole(debounce_in["delay_ms"], f + "debounce.delay_ms", 0, v.MAX_DELAY_MS),
                "" if max_wait is None else v.whole(max_wait, f + "debounce.max_wait_ms", 1, v.MAX_DELAY_MS),
            )
            # The Node library's rule (src/options.ts): the debounce says when the job runs, and
            # a folded add replaces the burst's job by design.
            if job.get("delay_ms") is not None or job.get("run_at") is not None or dedup is not None or replace:
                v.fail(f + "debounce", "cannot be given with delay_ms, run_at, dedup or replace (debounce.delay_ms says when the job runs)")
        # Holds (docs/flows.md): the jobs this one waits for, at most how long, and what a failed one does.
        depends_in = job.get("depends_on")
        depends: List[str] = []
        if depends_in is not None:
            if not isinstance(depends_in, list) or not depends_in:
                v.fail(f + "depends_on", "must be a non-empty list of job ids")
            depends = [v.job_id(d, "%sdepends_on[%d]" % (f, i)) for i, d in enumerate(depends_in)]
            if len(set(depends)) != len(depends):
                v.fail(f + "depends_on", "names a job twice")
            if dedup is not None or debounce is not None or replace:
                v.fail(f + "depends_on", "cannot be given with dedup, debounce or replace")
        wait = job.get("wait_at_most_ms")
        policy = job.get("on_child_failure")
        if (wait is not None or policy is not None) and not depends:
            v.fail(f + "depends_on", "wait_at_most_ms and on_child_failure need depends_on")
        if policy is not None and policy not in ("fail", "ignore"):
            v.fail(f + "on_child_failure", "must be 'fail' or 'ignore'")
        return {
            "id": str(uuid.uuid4()) if job_id is None else v.job_id(job_id, f + "id"),
            "data": v.payload(job.get("data"), f + "data", self.max_payload_bytes),
            "delay_ms": delay,
            "run_at": run_at,
            "priority": v.whole(job.get("priority", 0), f + "priority", -v.MAX_PRIORITY, v.MAX_PRIORITY),
            "max_attempts": "" if max_attempts is None else max_attempts,
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
            "attempts_made": made if made > 0 else "",
            # Sent only when a job of the call has depends_on (ids joined by tabs).
            "depends_on": "\t".join(depends),
            "deadline_ms": "" if wait is None else v.whole(wait, f + "wait_at_most_ms", 0, v.MAX_DELAY_MS),
            "deadline_at": "",
            "on_child_failure": policy or "",
        }

    def _cancel_call(self, id: str, running: bool = False, reason: str = "") -> Call[Result]:
        v.job_id(id)
        running = v.flag(running, "running")
        if not isinstance(reason, str):
            v.fail("reason", "must be a string")
        request_id = str(uuid.uuid4())
        args = {"request_id": request_id, "memo_ms": MEMO_MS, "running": "1" if running else "0", "reason": reason}

        def read(_: Call[Result], reply: Reply) -> Result:
            _head, rows = self.protocol.parse("cancel", reply)
            return {"result": self.protocol.script("cancel").code(rows[0]["code"]), "state": rows[0]["state"] or None}

        return Call("cancel", args, read, [{"id": id}], request_id)

    @staticmethod
    def _flatten_flow(flow: Any) -> Tuple[List[Dict[str, Any]], Any]:
        """A flow ({'data', 'opts'?, 'children'?}) as add_bulk's jobs, children first, each parent
        depending on its children, and its tree of positions. A child without an id gets
        '<parent id>/<index>', as the Node library's addFlow, so a flow whose root has an id is
        idempotent."""
        jobs: List[Dict[str, Any]] = []

        def visit(node: Any, field: str, id: Optional[str]) -> Any:
            if not isinstance(node, dict):
                v.fail(field or "flow", "must be a dict {'data', 'opts'?, 'children'?}")
            extra = sorted(set(node) - {"data", "opts", "children"}, key=str)
            if extra:
                v.fail((field + "." if field else "") + str(extra[0]), "is not a flow field (data, opts, children)")
            opts = dict(node.get("opts") or {})
            own = opts.get("id") or id or str(uuid.uuid4())
            kids = [visit(c, "%s%schildren[%d]" % (field, "." if field else "", k), "%s/%d" % (own, k) if len("%s/%d" % (own, k)) <= 256 else None)
                    for k, c in enumerate(node.get("children") or [])]
            job = dict(opts, data=node.get("data"), id=own)
            if kids:
                job["depends_on"] = list(opts.get("depends_on") or []) + [jobs[k[0]]["id"] for k in kids]
            jobs.append(job)
            return (len(jobs) - 1, kids)

        tree = visit(flow, "", None)
        return jobs, tree

    @staticmethod
    def _flow_root_kept(flow: Any, jobs: List[Dict[str, Any]], tree: Any) -> Optional[str]:
        """The root's id when the flow gives one (so a flow sent again makes the same ids) and does
        not replace it: then a root that is there means the flow was added before."""
        root = jobs[tree[0]]
        given = isinstance(flow, dict) and isinstance(flow.get("opts"), dict) and flow["opts"].get("id")
        return root["id"] if given and not root.get("replace") else None

    @staticmethod
    def _left_alone(id: str, job: Optional[Dict[str, Any]]) -> Result:
        """A job of a flow sent again while its root is there: as it is, or 'finished' when it ran and
        is gone (as the Node library's addFlow)."""
        if job is None:
            return {"id": id, "result": "exists", "state": "finished", "due_ms": 0}
        return {"id": id, "result": "exists", "state": job["state"], "due_ms": job["due_ms"]}

    @staticmethod
    def _shape_flow(tree: Any, results: List[Result]) -> Result:
        at, kids = tree
        return dict(results[at], children=[QueueCalls._shape_flow(k, results) for k in kids])

    def _signal_call(self, id: str, name: str, data: Any = None) -> Call[Result]:
        v.job_id(id)
        v.job_id(name, "name")
        text = "" if data is None else v.payload(data, "data", SIGNAL_DATA_BYTES)
        request_id = str(uuid.uuid4())
        args = {"id": id, "name": name, "data": text, "request_id": request_id, "memo_ms": MEMO_MS}

        def read(_: Call[Result], reply: Reply) -> Result:
            head, _rows = self.protocol.parse("signal", reply)
            return {"result": self.protocol.script("signal").code(head["code"]), "state": head["state"] or None}

        return Call("signal", args, read, None, request_id)

    def _fail_call(self, id: str, reason: str = "failed by Queue.fail", dead: bool = False, retry_ms: int = 1000, default_max: int = 3) -> Call[Result]:
        v.job_id(id)
        if not isinstance(reason, str):
            v.fail("reason", "must be a string")
        dead = v.flag(dead, "dead")
        retry_ms = v.whole(retry_ms, "retry_ms", 0, v.MAX_DELAY_MS)
        default_max = v.whole(default_max, "default_max", 1, v.MAX_ATTEMPTS)
        request_id = str(uuid.uuid4())
        args = {"id": id, "reason": reason, "dead": "1" if dead else "0", "retry_ms": retry_ms, "default_max": default_max,
                "history": 10, "request_id": request_id, "memo_ms": MEMO_MS}
        return Call("fail-now", args, self._read_moved, None, request_id)

    def _reschedule_call(self, id: str, delay_ms: Optional[float] = None, run_at: Optional[float] = None) -> Call[Result]:
        v.job_id(id)
        if delay_ms is None and run_at is None:
            v.fail("delay_ms", "or run_at must be given")
        delay, at = v.when(delay_ms, run_at)
        request_id = str(uuid.uuid4())
        args = {"id": id, "delay_ms": delay, "run_at": at, "request_id": request_id, "memo_ms": MEMO_MS}
        return Call("reschedule", args, self._read_moved, None, request_id)

    def _read_moved(self, call: Call[Result], reply: Reply) -> Result:
        """fail-now's and reschedule's answer: {'result', 'state', 'due_ms'}."""
        head, _ = self.protocol.parse(call.script, reply)
        code = self.protocol.script(call.script).code(head["code"])
        return {"result": code, "state": head.get("state") or None, "due_ms": _num(self.protocol, head.get("due_ms"))}

    def _get_call(self, id: str, logs: bool = False) -> Call[Optional[Dict[str, Any]]]:
        v.job_id(id)
        return Call("get", {"logs": "1" if logs else "0"}, self._read_job, [{"id": id}])

    def _read_job(self, _: Call[Optional[Dict[str, Any]]], reply: Reply) -> Optional[Dict[str, Any]]:
        _head, rows = self.protocol.parse("get", reply)
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
            # A job that ran out of attempts: the max that applied (the worker's default when it had none).
            "max_attempts": run["max_attempts"] if run["max_attempts"] is not None else body["max_attempts"] if body else None,
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


class Queue(QueueCalls):
    """One delayq queue, reached through `redis_client` (a redis.Redis). Every call is one script
    run, re-sent once (same request id, same arguments) when the connection drops before its
    reply: every published script answers a re-send as its first run did."""

    def _do(self, call: Call[R]) -> R:
        keys, argv = self._wire(call)
        try:
            reply = self.protocol.call(self.redis, call.script, keys, argv)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            reply = self.protocol.call(self.redis, call.script, keys, argv)
        out = call.read(reply)
        if call.register:
            self.redis.zadd(self.protocol.registry_key(self.prefix), {self.name: self.server_now_ms()}, nx=True)
        return out

    def server_now_ms(self) -> int:
        s, us = self.redis.time()
        return int(s) * 1000 + int(us) // 1000

    def add(
        self,
        data: Any,
        id: Optional[str] = None,
        delay_ms: Optional[float] = None,
        run_at: Optional[float] = None,
        priority: int = 0,
        attempts: Optional[int] = None,
        group: Optional[str] = None,
        replace: bool = False,
        cost: int = 1,
        dedup: Optional[Mapping[str, Any]] = None,
        debounce: Optional[Mapping[str, Any]] = None,
        name: Optional[str] = None,
        timeout_ms: Optional[int] = None,
        attempts_made: Optional[int] = None,
        depends_on: Optional[Sequence[str]] = None,
        wait_at_most_ms: Optional[int] = None,
        on_child_failure: Optional[str] = None,
    ) -> Result:
        """Adds one job; returns {'id', 'result' ('added', 'exists', 'replaced', 'deduplicated',
        'debounced'), 'state', 'due_ms'}, and 'duplicate_of' when deduplicated. A debounced add
        answers with the id of the burst's job, which took its data. attempts_made: attempts the
        job made before it was added (a job moved from another queue), below attempts when given:
        its next run is attempt attempts_made + 1. depends_on (docs/flows.md): the job is held
        until those jobs have ended (each an existing job not dead, or an earlier job of the same
        add_bulk), at most wait_at_most_ms; on_child_failure 'fail' (default) buries it when one
        ends dead or cancelled, 'ignore' runs it anyway."""
        call = self._add_call(
            data, id, delay_ms, run_at, priority, attempts, group, replace, cost, dedup, debounce, name, timeout_ms, attempts_made,
            depends_on, wait_at_most_ms, on_child_failure,
        )
        return self._do(call)[0]

    def add_bulk(self, jobs: Sequence[Mapping[str, Any]]) -> List[Result]:
        """Adds jobs in one call (one script run): each a dict with `data` and the options of add."""
        return self._do(self._add_bulk_call(jobs))

    def add_flow(self, flow: Mapping[str, Any]) -> Result:
        """Adds a flow in one call (docs/flows.md): {'data', 'opts'?, 'children'?: [flows]}, each
        job held until its children have ended (opts as add's, on_child_failure and
        wait_at_most_ms among them). Returns the root's result with 'children', in the same tree."""
        jobs, tree = self._flatten_flow(flow)
        # Sent again while its root is there: every job of it was written with the root, so none is
        # written again (a child that ran and is gone would run twice). The store decides each job
        # of a call as if added alone, so the root is read first.
        root = self._flow_root_kept(flow, jobs, tree)
        if root is not None and self._do(self._get_call(root)) is not None:
            return self._shape_flow(tree, [self._left_alone(j["id"], self._do(self._get_call(j["id"]))) for j in jobs])
        return self._shape_flow(tree, self._do(self._add_bulk_call(jobs)))

    def cancel(self, id: str, running: bool = False, reason: str = "") -> Result:
        """Cancels a job that has not started, and with running=True a running one too (its lease
        ends, its holder is told): 'done', 'refused' (with the state) or 'not_found'."""
        return self._do(self._cancel_call(id, running, reason))

    def fail(self, id: str, reason: str = "failed by Queue.fail", dead: bool = False, retry_ms: int = 1000, default_max: int = 3) -> Result:
        """Fails a job now from outside its holder (fail-now.lua): a running attempt fails with the
        reason (retried after retry_ms while attempts are left, else dead); dead=True buries the
        job now, running or waiting. Returns {'result' ('retried', 'dead', 'refused',
        'not_found'), 'state', 'due_ms'}."""
        return self._do(self._fail_call(id, reason, dead, retry_ms, default_max))

    def signal(self, id: str, name: str, data: Any = None) -> Result:
        """Sends a signal to a job (docs/flows.md): 'released' (it was waiting for it and runs now,
        reading the data), 'kept' (it keeps it for its next wait of that name), 'refused' (it has
        ended) or 'not_found'. Safe to re-send: a lost reply's re-send releases once."""
        return self._do(self._signal_call(id, name, data))

    def reschedule(self, id: str, delay_ms: Optional[float] = None, run_at: Optional[float] = None) -> Result:
        """Moves a job that is not active to a new due time: 'done', 'refused' or 'not_found'."""
        return self._do(self._reschedule_call(id, delay_ms, run_at))

    def get(self, id: str, logs: bool = False) -> Optional[Dict[str, Any]]:
        """A job's public view (JOB_ROW decoded), or None when there is no such job."""
        return self._do(self._get_call(id, logs))

    # for the tests
    def registered(self) -> bool:
        return self.redis.zscore(self.protocol.registry_key(self.prefix), self.name) is not None


def _result(id: str, code: str, row: Dict[str, Any], protocol: Protocol) -> Result:
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


def _num(protocol: Protocol, n: Any) -> Optional[int]:
    if n is None or n == "" or n == protocol.not_set_number:
        return None
    return int(n)
