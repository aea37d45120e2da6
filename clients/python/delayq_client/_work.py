"""What the threaded Worker (worker.py) and the asyncio Worker (asyncio.py) share: the Job, the
result and backoff rules, routing by name, and every script call a worker makes (claim, complete,
fail, extend, worker-beat), planned as a `Call` with the reading of its reply.

Every call after the claim carries the job's lease token: once the job was handed to someone
else (the lease ran out), complete, fail and extend answer lease_lost and the worker lets go.
"""

from __future__ import annotations

import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import validate as v
from .formats import decode_backoff, decode_body, decode_claim_groups
from .protocol import Protocol, ProtocolError, Reply, Row
from .queue import Call

log = logging.getLogger("delayq_client")

HISTORY = 10  # failed attempts kept per job, as the library sends it
MAX_ERROR_LENGTH = 10000
POLL_MS = 1000  # the longest sleep between claims without a wake message
DEFAULT_BACKOFF: Dict[str, Any] = {"type": "exponential", "delay": 1000, "maxDelay": 3600000, "jitter": True}
# The Node worker's heartbeat (src/worker/heartbeat.ts): a beat every 10 s, carried by extend
# while the worker holds leases; its entry lives three beats, so a killed worker drops off alone.
BEAT_MS = 10000
BEAT_TTL_MS = 3 * BEAT_MS
VERSION = "0.1.0"  # pyproject.toml's version


class Job:
    """One hand-out: the job's id, name, data, attempt (1-based) and group, bound to its lease token.
    `aborted` is set (and `abort_reason` says why: 'timeout', 'cancelled', 'failed') when the
    attempt was ended without the handler: a handler that runs long should check it."""

    def __init__(
        self,
        id: str,
        data: Any,
        attempt: int,
        due_ms: int,
        token: str,
        group: Optional[str],
        body: Mapping[str, Any],
        default_timeout_ms: Optional[int] = None,
    ) -> None:
        self.id = id
        self.data = data
        self.attempt = attempt
        self.due_ms = due_ms
        self.token = token
        self.group = group
        self.name: Optional[str] = body.get("name")
        self.max_attempts: Optional[int] = body["max_attempts"]
        self.backoff = decode_backoff(body["backoff"])
        self.timeout_ms: Optional[int] = body.get("timeout_ms") or default_timeout_ms
        self.extended_at = time.monotonic()
        self.lease_lost = False
        self.aborted = threading.Event()
        self.abort_reason: Optional[str] = None

    def abort(self, reason: str) -> None:
        if not self.aborted.is_set():
            self.abort_reason = reason
            self.aborted.set()

    def __repr__(self) -> str:
        return "Job(%r, attempt=%d)" % (self.id, self.attempt)


def result_text(result: Any) -> str:
    """The handler's result as the Node library keeps it (src/worker/outcome-text.ts): '' for
    None, JSON as JSON.stringify writes it, or a note in its place (a JSON string) when it is not
    JSON (a set, a datetime, a Decimal) or is over MAX_RESULT_BYTES: the job is acked either way,
    never left to run again for a result that cannot be kept."""
    if result is None:
        return ""
    try:
        text = v.to_json(result)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError) as e:
        return json.dumps("[result not kept: not JSON (%s)]" % e, ensure_ascii=False)
    if size > v.MAX_RESULT_BYTES:
        return json.dumps("[result not kept: %d bytes, over the %d-byte limit]" % (size, v.MAX_RESULT_BYTES))
    return text


def backoff_delay(b: Mapping[str, Any], attempt: int) -> int:
    if b["type"] == "fixed":
        return int(b["delay"])
    exp = min(b.get("maxDelay", 3600000), b["delay"] * 2 ** max(0, attempt - 1))
    return int(round(exp if b.get("jitter") is False else random.random() * exp))


def route_by_name(handlers: Mapping[str, Callable[[Job], Any]]) -> Callable[[Job], Any]:
    """One handler for handlers by job name, as the Node Worker's: a job runs the handler of its
    name; 'default' runs a job whose name has none (or that has no name); any other fails its
    attempt with an error naming its name. (An async handler's coroutine is returned as it is.)"""
    if not handlers:
        v.fail("handler", "must name at least one job name (or 'default')")
    for name, fn in handlers.items():
        if not callable(fn):
            v.fail("handler[%r]" % (name,), "must be callable")
    fallback = handlers.get("default")
    known = ", ".join(json.dumps(n) for n in handlers if n != "default") or "no name"

    def route(job: Job) -> Any:
        fn = handlers.get(job.name) if job.name is not None else None
        fn = fn or fallback
        if fn is None:
            what = "job has no name" if job.name is None else "no handler for job name %s" % json.dumps(job.name)
            raise LookupError("%s: this worker handles %s and has no 'default' handler" % (what, known))
        return fn(job)

    return route


#: A claim's answer: its head (now_ms, more, next_wake_ms, …), the jobs handed out, and the
#: (id, token, reason) of those whose body or data did not read (to be failed to the dead set).
Claimed = Tuple[Row, List[Job], List[Tuple[str, str, str]]]


class WorkerCalls:
    """A worker's options (checked: ValueError naming the field) and its script calls."""

    def __init__(
        self,
        redis_client: Any,
        queue: str,
        handler: Any,
        concurrency: int = 1,
        batch: int = 10,
        lease_ms: int = 30000,
        attempts: int = 3,
        prefix: str = "dq",
        backoff: Optional[Mapping[str, Any]] = None,
        manifest_path: Optional[str] = None,
        protocol: Optional[Protocol] = None,
        subscribe: bool = True,
        timeout_ms: Optional[int] = None,
    ) -> None:
        self.redis = redis_client
        self.queue = v.queue_name(queue, "queue")
        self.prefix = v.prefix(prefix)
        if isinstance(handler, dict):
            self.handler: Callable[[Job], Any] = route_by_name(handler)
        elif callable(handler):
            self.handler = handler
        else:
            v.fail("handler", "must be callable, or a dict of handlers by job name")
        self.concurrency = v.whole(concurrency, "concurrency", 1, 1000)
        self.batch = v.whole(batch, "batch", 1, 1000)
        self.lease_ms = v.whole(lease_ms, "lease_ms", 100)
        self.attempts = v.whole(attempts, "attempts", 1, v.MAX_ATTEMPTS)
        self.timeout_ms = None if timeout_ms is None else v.whole(timeout_ms, "timeout_ms", 1, v.MAX_DELAY_MS)
        self.backoff = dict(backoff or DEFAULT_BACKOFF)
        if self.backoff.get("type") not in ("fixed", "exponential"):
            v.fail("backoff.type", "must be 'fixed' or 'exponential'")
        v.whole(self.backoff.get("delay"), "backoff.delay", 0)
        self.protocol = protocol or Protocol(manifest_path)
        limits = self.protocol.manifest["lifecycle"]["limits"]
        self.promote_limit: int = limits["promote_per_claim"]
        self.reap_limit: int = limits["reap_per_claim"]
        self.id = "py-" + uuid.uuid4().hex[:12]  # worker ids never hold ':'
        self._subscribe = subscribe
        self._host = socket.gethostname()
        self._started_ms = int(time.time() * 1000)
        self._offset_ms = 0
        self._last_beat = 0.0
        self._registered = False
        self.ran = 0
        self.failed = 0
        self._setup()

    def _setup(self) -> None:
        """What a worker kind adds to the options (its pool, events, tasks): called by __init__, so
        every kind keeps the one typed signature above."""

    def _running(self) -> int:
        """Jobs whose handlers run now (for the heartbeat)."""
        raise NotImplementedError

    def _wire(self, call: Call[Any]) -> Tuple[List[str], List[str]]:
        return self.protocol.build(call.script, self.prefix, self.queue, call.args, call.items, call.request_id, call.item_fields)

    def _server_now(self) -> int:
        return int(time.monotonic() * 1000) + self._offset_ms

    # --- calls ------------------------------------------------------------------------------
    def _claim_call(self, count: int) -> Call[Claimed]:
        request_id = str(uuid.uuid4())
        sent = time.monotonic()
        args = {"count": count, "lease_ms": self.lease_ms, "default_max": self.attempts, "promote_limit": self.promote_limit,
                "reap_limit": self.reap_limit, "request_id": request_id, "worker": self.id, "packed": 0}

        def read(_: Call[Claimed], reply: Reply) -> Claimed:
            head, rows = self.protocol.parse("claim", reply)
            # The server's clock, as an offset from ours: due times and wake times are server times.
            self._offset_ms = int(head["now_ms"]) - int((sent + time.monotonic()) / 2 * 1000)
            groups = decode_claim_groups(head["groups"])
            jobs: List[Job] = []
            corrupt: List[Tuple[str, str, str]] = []
            for pos, r in enumerate(rows, start=1):
                token = head["token_prefix"] + str(r["token_number"])
                try:
                    body = decode_body(r["body"])
                    data = json.loads(body["data_json"])
                except (ProtocolError, ValueError, UnicodeDecodeError) as e:
                    corrupt.append((r["id"], token, "corrupt job: %s" % e))
                    continue
                jobs.append(Job(r["id"], data, int(r["attempt"]), int(r["due_ms"]), token, groups.get(pos), body, self.timeout_ms))
            return head, jobs, corrupt

        return Call("claim", args, read, None, request_id)

    def _complete_call(self, job: Job, result: Any) -> Call[str]:
        def read(_: Call[str], reply: Reply) -> str:
            _head, rows = self.protocol.parse("complete", reply)
            return self.protocol.script("complete").code(rows[0]["code"])

        return Call("complete", {"packed": 0}, read, [{"id": job.id, "token": job.token, "result": result_text(result)}])

    def _fail_call(self, id: str, token: str, error: str, retry_ms: int, dead: bool = False) -> Call[str]:
        def read(_: Call[str], reply: Reply) -> str:
            head, _rows = self.protocol.parse("fail", reply)
            return self.protocol.script("fail").code(head["code"])

        args = {"id": id, "token": token, "error": error[:MAX_ERROR_LENGTH], "retry_ms": retry_ms,
                "dead": "1" if dead else "0", "default_max": self.attempts, "history": HISTORY}
        return Call("fail", args, read)

    def _info(self) -> str:
        """WORKER_INFO: what `queue.workers()`, `delayq workers` and the dashboard show of this worker."""
        info = {"host": self._host, "pid": os.getpid(), "queue": self.queue, "concurrency": self.concurrency,
                "running": self._running(), "startedAtMs": self._started_ms, "version": VERSION, "language": "python"}
        return json.dumps(info, separators=(",", ":"))

    def _beat_call(self, gone: bool = False) -> Call[None]:
        """A heartbeat of its own (worker-beat.lua), when no extend carried one lately; gone=True
        takes the worker off the list at once (info ''). The first names the queue in the
        registry (`call.register`), as the Node worker's first beat does."""
        self._last_beat = time.monotonic()
        call: Call[None] = Call("worker-beat", {"worker": self.id, "info": "" if gone else self._info(), "ttl_ms": BEAT_TTL_MS}, _nothing)
        call.register = not self._registered and not gone
        return call

    def _extend_call(self, jobs: Sequence[Job]) -> Call[None]:
        """Renews the leases of `jobs`; the beat rides along (a busy worker pays no round trip of
        its own to stay listed). A job whose lease is gone is marked lost and aborted."""
        self._last_beat = time.monotonic()
        codes = self.protocol.script("extend").codes

        def read(_: Call[None], reply: Reply) -> None:
            _head, rows = self.protocol.parse("extend", reply)
            for j, r in zip(jobs, rows):
                if r["deadline_ms"] in (codes["lease_lost"], codes["not_found"]):
                    j.lease_lost = True
                    # Also how a cancel or fail from outside is heard when its wake message was lost.
                    j.abort("lease lost")
                    log.warning("lease lost on %s", j.id)
                else:
                    j.extended_at = time.monotonic()

        args = {"lease_ms": self.lease_ms, "worker": self.id, "info": self._info(), "ttl_ms": BEAT_TTL_MS}
        return Call("extend", args, read, [{"id": j.id, "token": j.token} for j in jobs])

    def _registry_args(self) -> Tuple[str, Dict[str, int]]:
        self._registered = True
        return self.protocol.registry_key(self.prefix), {self.queue: int(time.time() * 1000)}

    def _beat_due(self) -> bool:
        return time.monotonic() - self._last_beat >= BEAT_MS * 0.9 / 1000.0

    @staticmethod
    def _revoke_message(message: Any) -> Optional[Tuple[str, str]]:
        """(why, token) of a REVOKED_MESSAGE on the wake channel; None for any other message."""
        data = message.get("data") if isinstance(message, dict) else None
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        if isinstance(data, str) and data.startswith("r:"):
            why, _, token = data[2:].partition(":")
            return (why, token) if token else ("", "")
        return None


def _nothing(_: Call[None], __: Reply) -> None:
    return None
