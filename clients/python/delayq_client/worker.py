"""Worker: claims due jobs, runs a handler on each, acks or fails them, and keeps their leases.

Every call after the claim carries the job's lease token: once the job was handed to someone
else (the lease ran out), complete, fail and extend answer lease_lost and the worker lets go.
"""

import json
import logging
import os
import random
import socket
import threading
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor

import redis

from . import validate as v
from .formats import decode_backoff, decode_body, decode_claim_groups
from .protocol import Protocol, ProtocolError

log = logging.getLogger("delayq_client")

HISTORY = 10  # failed attempts kept per job, as the library sends it
MAX_ERROR_LENGTH = 10000
POLL_MS = 1000  # the longest sleep between claims without a wake message
DEFAULT_BACKOFF = {"type": "exponential", "delay": 1000, "maxDelay": 3600000, "jitter": True}
# The Node worker's heartbeat (src/worker/heartbeat.ts): a beat every 10 s, carried by extend
# while the worker holds leases; its entry lives three beats, so a killed worker drops off alone.
BEAT_MS = 10000
BEAT_TTL_MS = 3 * BEAT_MS
VERSION = "0.1.0"  # pyproject.toml's version


class Job:
    """One hand-out: the job's id, name, data, attempt (1-based) and group, bound to its lease token.
    `aborted` is set (and `abort_reason` says why: 'timeout', 'cancelled', 'failed') when the
    attempt was ended without the handler: a handler that runs long should check it."""

    def __init__(self, id, data, attempt, due_ms, token, group, body, default_timeout_ms=None):
        self.id = id
        self.data = data
        self.attempt = attempt
        self.due_ms = due_ms
        self.token = token
        self.group = group
        self.name = body.get("name")
        self.max_attempts = body["max_attempts"]
        self.backoff = decode_backoff(body["backoff"])
        self.timeout_ms = body.get("timeout_ms") or default_timeout_ms
        self.extended_at = time.monotonic()
        self.lease_lost = False
        self.aborted = threading.Event()
        self.abort_reason = None

    def abort(self, reason):
        if not self.aborted.is_set():
            self.abort_reason = reason
            self.aborted.set()

    def __repr__(self):
        return "Job(%r, attempt=%d)" % (self.id, self.attempt)


def result_text(result):
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


def backoff_delay(b, attempt):
    if b["type"] == "fixed":
        return int(b["delay"])
    exp = min(b.get("maxDelay", 3600000), b["delay"] * 2 ** max(0, attempt - 1))
    return int(round(exp if b.get("jitter") is False else random.random() * exp))


def _route_by_name(handlers):
    """One handler for handlers by job name, as the Node Worker's: a job runs the handler of its
    name; 'default' runs a job whose name has none (or that has no name); any other fails its
    attempt with an error naming its name."""
    if not handlers:
        v.fail("handler", "must name at least one job name (or 'default')")
    for name, fn in handlers.items():
        if not callable(fn):
            v.fail("handler[%r]" % (name,), "must be callable")
    fallback = handlers.get("default")
    known = ", ".join(json.dumps(n) for n in handlers if n != "default") or "no name"

    def route(job):
        fn = handlers.get(job.name) if job.name is not None else None
        fn = fn or fallback
        if fn is None:
            what = "job has no name" if job.name is None else "no handler for job name %s" % json.dumps(job.name)
            raise LookupError("%s: this worker handles %s and has no 'default' handler" % (what, known))
        return fn(job)

    return route


class Worker:
    def __init__(self, redis_client, queue, handler, concurrency=1, batch=10, lease_ms=30000, attempts=3,
                 prefix="dq", backoff=None, manifest_path=None, protocol=None, subscribe=True, timeout_ms=None):
        self.redis = redis_client
        self.queue = v.queue_name(queue, "queue")
        self.prefix = v.prefix(prefix)
        if isinstance(handler, dict):
            self.handler = _route_by_name(handler)
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
        self.promote_limit = limits["promote_per_claim"]
        self.reap_limit = limits["reap_per_claim"]
        self.id = "py-" + uuid.uuid4().hex[:12]  # worker ids never hold ':'
        self._subscribe = subscribe
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency)
        self._inflight = {}
        self._lock = threading.Lock()
        self._kick = threading.Event()
        self._stopped = threading.Event()
        self._pubsub = None
        self._pubsub_thread = None
        self._host = socket.gethostname()
        self._started_ms = int(time.time() * 1000)
        self._last_beat = 0.0
        self._registered = False
        self.ran = 0
        self.failed = 0

    # --- calls ------------------------------------------------------------------------------
    def _run(self, name, args, items=None, request_id=""):
        keys, argv = self.protocol.build(name, self.prefix, self.queue, args, items, request_id)
        try:
            return self.protocol.call(self.redis, name, keys, argv)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            # Re-sent once as it was: the claim by its request id, the rest by their token's mark.
            return self.protocol.call(self.redis, name, keys, argv)

    def _claim(self, count):
        request_id = str(uuid.uuid4())
        sent = time.monotonic()
        reply = self._run(
            "claim",
            {"count": count, "lease_ms": self.lease_ms, "default_max": self.attempts, "promote_limit": self.promote_limit,
             "reap_limit": self.reap_limit, "request_id": request_id, "worker": self.id},
            None,
            request_id,
        )
        head, rows = self.protocol.parse("claim", reply)
        # The server's clock, as an offset from ours: due times and wake times are server times.
        self._offset_ms = int(head["now_ms"]) - int((sent + time.monotonic()) / 2 * 1000)
        groups = decode_claim_groups(head["groups"])
        jobs = []
        for pos, r in enumerate(rows, start=1):
            token = head["token_prefix"] + str(r["token_number"])
            try:
                body = decode_body(r["body"])
                data = json.loads(body["data_json"])
            except (ProtocolError, ValueError, UnicodeDecodeError) as e:
                self._fail(r["id"], token, "corrupt job: %s" % e, 0, dead=True)
                continue
            jobs.append(Job(r["id"], data, int(r["attempt"]), int(r["due_ms"]), token, groups.get(pos), body, self.timeout_ms))
        return head, jobs

    def _server_now(self):
        return int(time.monotonic() * 1000) + self._offset_ms

    def _complete(self, job, result):
        text = result_text(result)
        _, rows = self.protocol.parse("complete", self._run("complete", {}, [{"id": job.id, "token": job.token, "result": text}]))
        return self.protocol.script("complete").code_names.get(rows[0]["code"], rows[0]["code"])

    def _fail(self, id, token, error, retry_ms, dead=False):
        reply = self._run("fail", {"id": id, "token": token, "error": error[:MAX_ERROR_LENGTH], "retry_ms": retry_ms,
                                   "dead": "1" if dead else "0", "default_max": self.attempts, "history": HISTORY})
        head, _ = self.protocol.parse("fail", reply)
        return self.protocol.script("fail").code_names.get(head["code"], head["code"])

    def _info(self):
        """WORKER_INFO: what `queue.workers()`, `delayq workers` and the dashboard show of this worker."""
        with self._lock:
            running = len(self._inflight)
        info = {"host": self._host, "pid": os.getpid(), "queue": self.queue, "concurrency": self.concurrency,
                "running": running, "startedAtMs": self._started_ms, "version": VERSION, "language": "python"}
        return json.dumps(info, separators=(",", ":"))

    def _beat(self, gone=False):
        """A heartbeat of its own (worker-beat.lua), when no extend carried one lately; gone=True
        takes the worker off the list at once (info '')."""
        self._last_beat = time.monotonic()
        if not self._registered and not gone:
            # As the Node worker's first beat: the queue named in the registry (`delayq queues`).
            self.redis.zadd(self.protocol.registry_key(self.prefix), {self.queue: int(time.time() * 1000)}, nx=True)
            self._registered = True
        self._run("worker-beat", {"worker": self.id, "info": "" if gone else self._info(), "ttl_ms": BEAT_TTL_MS})

    def _extend(self, jobs):
        # The beat rides along: a busy worker pays no round trip of its own to stay listed.
        self._last_beat = time.monotonic()
        reply = self._run("extend", {"lease_ms": self.lease_ms, "worker": self.id, "info": self._info(), "ttl_ms": BEAT_TTL_MS},
                          [{"id": j.id, "token": j.token} for j in jobs])
        _, rows = self.protocol.parse("extend", reply)
        codes = self.protocol.script("extend").codes
        for j, r in zip(jobs, rows):
            if r["deadline_ms"] in (codes["lease_lost"], codes["not_found"]):
                j.lease_lost = True
                # Also how a cancel or fail from outside is heard when its wake message was lost.
                j.abort("lease lost")
                log.warning("lease lost on %s", j.id)
            else:
                j.extended_at = time.monotonic()

    # --- running ----------------------------------------------------------------------------
    def _timed_out(self, job):
        """The attempt ran past its timeout: it fails now (retries apply) and the handler's outcome,
        whenever it comes, is dropped. A Python thread cannot be stopped: `job.aborted` tells it."""
        with self._lock:
            if job.lease_lost or job.id not in self._inflight:
                return
            job.lease_lost = True
        job.abort("timeout")
        self.failed += 1
        error = "HandlerTimeoutError: handler did not finish within %d ms" % job.timeout_ms
        try:
            self._fail(job.id, job.token, error, backoff_delay(job.backoff or self.backoff, job.attempt))
        except Exception:  # noqa: BLE001 - the lease runs out and the job is recovered
            log.exception("fail of %s after its timeout failed", job.id)

    def _revoked(self, token, why):
        """REVOKED_MESSAGE: a job of this worker was cancelled or failed from outside as it ran."""
        with self._lock:
            job = next((j for j in self._inflight.values() if j.token == token), None)
            if job is None:
                return
            job.lease_lost = True
        job.abort("cancelled" if why == "cancelled" else "failed")
        log.info("%s: %s from outside as it ran", job.id, why)

    def _on_wake(self, message):
        data = message.get("data")
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        if isinstance(data, str) and data.startswith("r:"):
            why, _, token = data[2:].partition(":")
            if token:
                self._revoked(token, why)
            return
        self._kick.set()

    def _process(self, job):
        timer = None
        if job.timeout_ms:
            timer = threading.Timer(job.timeout_ms / 1000.0, self._timed_out, (job,))
            timer.daemon = True
            timer.start()
        try:
            try:
                result = self.handler(job)
            except Exception as e:  # noqa: BLE001 - a handler's error fails the attempt
                if timer:
                    timer.cancel()
                if job.lease_lost:
                    return
                self.failed += 1
                b = job.backoff or self.backoff
                error = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
                outcome = self._fail(job.id, job.token, error, backoff_delay(b, job.attempt))
            else:
                if timer:
                    timer.cancel()
                if job.lease_lost:
                    return
                self.ran += 1
                outcome = self._complete(job, result)
            if outcome in ("lease_lost", "not_found"):
                log.warning("%s: %s, the job was handed to another worker", job.id, outcome)
        except Exception:  # noqa: BLE001 - a lost ack is recovered by the lease running out
            log.exception("ack of %s failed", job.id)
        finally:
            with self._lock:
                self._inflight.pop(job.id, None)
            self._kick.set()

    def _keep_leases(self):
        """Renews the leases of jobs in flight (a third of the lease after the last renewal) and
        beats when no renewal carried a beat for about BEAT_MS."""
        third = self.lease_ms / 3000.0
        while not self._stopped.wait(min(third / 2, 1.0)):
            with self._lock:
                due = [j for j in self._inflight.values() if not j.lease_lost and time.monotonic() - j.extended_at >= third]
            if due:
                try:
                    self._extend(due)
                except Exception:  # noqa: BLE001 - tried again on the next tick
                    log.exception("extend failed")
            if time.monotonic() - self._last_beat >= BEAT_MS * 0.9 / 1000.0:
                self._safe_beat()

    def _safe_beat(self, gone=False):
        try:
            self._beat(gone)
        except Exception:  # noqa: BLE001 - the next tick beats again; the entry outlives two misses
            log.exception("heartbeat failed")

    def _start_wake(self):
        if not self._subscribe or self._pubsub_thread:
            return
        try:
            self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            self._pubsub.subscribe(**{self.protocol.wake_channel(self.prefix, self.queue): self._on_wake})
            self._pubsub_thread = self._pubsub.run_in_thread(sleep_time=0.2, daemon=True)
        except Exception:  # noqa: BLE001 - polling every second still works
            log.exception("SUBSCRIBE to the wake channel failed; polling")

    def _loop(self, idle_ms=None, timeout_s=None):
        self._start_wake()
        self._safe_beat()
        keeper = threading.Thread(target=self._keep_leases, daemon=True)
        keeper.start()
        self._offset_ms = 0
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        quiet_since = time.monotonic()
        try:
            while not self._stopped.is_set():
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError("worker did not go idle within %s s" % timeout_s)
                with self._lock:
                    free = self.concurrency - len(self._inflight)
                sleep_ms = POLL_MS
                if free > 0:
                    self._kick.clear()
                    try:
                        head, jobs = self._claim(min(self.batch, free))
                    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                        log.exception("claim failed; trying again in %d ms", POLL_MS)
                        self._stopped.wait(POLL_MS / 1000.0)
                        continue
                    for job in jobs:
                        with self._lock:
                            self._inflight[job.id] = job
                        self._pool.submit(self._process, job)
                    if jobs:
                        quiet_since = time.monotonic()
                        if int(head["more"]) == 1:
                            continue
                    wake = int(head["next_wake_ms"])
                    if wake != self.protocol.not_set_number:
                        sleep_ms = max(0, min(POLL_MS, wake - self._server_now()))
                    with self._lock:
                        busy = bool(self._inflight)
                    if idle_ms is not None and not jobs and not busy:
                        nothing_soon = wake == self.protocol.not_set_number or wake - self._server_now() > idle_ms
                        if nothing_soon and (time.monotonic() - quiet_since) * 1000 >= idle_ms:
                            return
                        sleep_ms = min(sleep_ms, idle_ms)
                self._kick.wait(sleep_ms / 1000.0)
        finally:
            self._stopped.set()
            keeper.join()

    def run(self):
        """Runs until stop(); jobs in flight then run to their end and are acked."""
        try:
            self._loop()
        finally:
            self.close()

    def run_until_idle(self, idle_ms=500, timeout_s=30):
        """Runs until nothing is in flight, nothing was claimed for idle_ms and nothing is due
        within idle_ms (server clock); raises TimeoutError after timeout_s."""
        self._stopped.clear()
        self._loop(idle_ms, timeout_s)
        self._pool.shutdown(wait=True)
        self.close()

    def stop(self):
        self._stopped.set()
        self._kick.set()

    def close(self):
        self.stop()
        self._pool.shutdown(wait=True)
        if self._last_beat:
            # Off the list of live workers at once, once the jobs in flight were acked.
            self._last_beat = 0.0
            self._safe_beat(gone=True)
        if self._pubsub_thread:
            # The thread closes its PubSub itself once it sees the stop; closing it here too
            # would hand one connection back to the pool twice.
            self._pubsub_thread.stop()
            self._pubsub_thread.join(timeout=5)
            self._pubsub_thread = None
            self._pubsub = None
