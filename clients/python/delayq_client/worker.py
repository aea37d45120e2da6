"""Worker: claims due jobs, runs a handler on each in a thread pool, acks or fails them, keeps
their leases and beats (the calls and their wire code are shared with the asyncio Worker, in
_work.py).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Optional

import redis

from ._work import (
    BEAT_MS,
    BEAT_TTL_MS,
    DEFAULT_BACKOFF,
    HISTORY,
    MAX_ERROR_LENGTH,
    POLL_MS,
    VERSION,
    Claimed,
    Job,
    WorkerCalls,
    backoff_delay,
    result_text,
)

# Revokes remembered for jobs not taken in yet (the wake channel ahead of the claim's reply).
EARLY_REVOKES_KEPT = 256
from .queue import Call, R

__all__ = ["BEAT_MS", "BEAT_TTL_MS", "DEFAULT_BACKOFF", "HISTORY", "MAX_ERROR_LENGTH", "POLL_MS", "VERSION", "Job", "Worker", "result_text"]

log = logging.getLogger("delayq_client")


class Worker(WorkerCalls):
    """Runs `handler(job)` (or handlers by job name: a dict, with 'default') on due jobs of
    `queue`, `concurrency` at a time in threads; see clients/python/README.md."""

    def _setup(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=self.concurrency)
        self._inflight: Dict[str, Job] = {}
        # Revokes of jobs not taken in yet (token -> why): the wake channel's thread may hear of a
        # cancel before this loop has read the claim that handed the job out. Bounded.
        self._early_revokes: Dict[str, str] = {}
        self._lock = threading.Lock()
        self._kick = threading.Event()
        self._stopped = threading.Event()
        # The lease keeper outlives the claim loop: jobs in flight at stop() keep their leases
        # (and the worker its heartbeat) until close() has seen them end.
        self._keeper_stop = threading.Event()
        self._keeper: Optional[threading.Thread] = None
        self._pubsub: Any = None
        self._pubsub_thread: Any = None

    def _running(self) -> int:
        with self._lock:
            return len(self._inflight)

    # --- calls ------------------------------------------------------------------------------
    def _do(self, call: Call[R]) -> R:
        keys, argv = self._wire(call)
        try:
            reply = self.protocol.call(self.redis, call.script, keys, argv)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            # Re-sent once as it was: the claim by its request id, the rest by their token's mark.
            reply = self.protocol.call(self.redis, call.script, keys, argv)
        out = call.read(reply)
        if call.register:
            key, member = self._registry_args()
            self.redis.zadd(key, member, nx=True)
        return out

    def _claim(self, count: int) -> Claimed:
        claimed = self._do(self._claim_call(count))
        for id, token, reason in claimed[2]:
            self._fail(id, token, reason, 0, dead=True)
        return claimed

    def _complete(self, job: Job, result: Any) -> str:
        return self._do(self._complete_call(job, result))

    def _fail(self, id: str, token: str, error: str, retry_ms: int, dead: bool = False) -> str:
        return self._do(self._fail_call(id, token, error, retry_ms, dead))

    def _extend(self, jobs: "list[Job]") -> None:
        self._do(self._extend_call(jobs))

    def _beat(self, gone: bool = False) -> None:
        self._do(self._beat_call(gone))

    # --- running ----------------------------------------------------------------------------
    def _timed_out(self, job: Job) -> None:
        """The attempt ran past its timeout: it fails now (retries apply) and the handler's outcome,
        whenever it comes, is dropped. A Python thread cannot be stopped: `job.aborted` tells it."""
        with self._lock:
            if job.lease_lost or job.id not in self._inflight:
                return
            job.lease_lost = True
        job.abort("timeout")
        self.failed += 1
        error = "HandlerTimeoutError: handler did not finish within %d ms" % (job.timeout_ms or 0)
        try:
            self._fail(job.id, job.token, error, backoff_delay(job.backoff or self.backoff, job.attempt))
        except Exception:  # noqa: BLE001 - the lease runs out and the job is recovered
            log.exception("fail of %s after its timeout failed", job.id)

    def _revoked(self, token: str, why: str) -> None:
        """REVOKED_MESSAGE: a job of this worker was cancelled or failed from outside as it ran."""
        with self._lock:
            job = next((j for j in self._inflight.values() if j.token == token), None)
            if job is None:
                self._early_revokes[token] = why
                while len(self._early_revokes) > EARLY_REVOKES_KEPT:
                    del self._early_revokes[next(iter(self._early_revokes))]
                return
            job.lease_lost = True
        job.abort("cancelled" if why == "cancelled" else "failed")
        log.info("%s: %s from outside as it ran", job.id, why)

    def _on_wake(self, message: Any) -> None:
        revoked = self._revoke_message(message)
        if revoked is None:
            self._kick.set()
        elif revoked[1]:
            self._revoked(revoked[1], revoked[0])

    def _process(self, job: Job) -> None:
        timer: Optional[threading.Timer] = None
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

    def _keep_leases(self) -> None:
        """Renews the leases of jobs in flight (a third of the lease after the last renewal) and
        beats when no renewal carried a beat for about BEAT_MS; until close() saw the jobs end."""
        third = self.lease_ms / 3000.0
        while not self._keeper_stop.wait(min(third / 2, 1.0)):
            with self._lock:
                due = [j for j in self._inflight.values() if not j.lease_lost and time.monotonic() - j.extended_at >= third]
            if due:
                try:
                    self._extend(due)
                except Exception:  # noqa: BLE001 - tried again on the next tick
                    log.exception("extend failed")
            if self._beat_due():
                self._safe_beat()

    def _safe_beat(self, gone: bool = False) -> None:
        try:
            self._beat(gone)
        except Exception:  # noqa: BLE001 - the next tick beats again; the entry outlives two misses
            log.exception("heartbeat failed")

    def _start_wake(self) -> None:
        if not self._subscribe or self._pubsub_thread:
            return
        try:
            self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
            self._pubsub.subscribe(**{self.protocol.wake_channel(self.prefix, self.queue): self._on_wake})
            self._pubsub_thread = self._pubsub.run_in_thread(sleep_time=0.2, daemon=True)
        except Exception:  # noqa: BLE001 - polling every second still works
            log.exception("SUBSCRIBE to the wake channel failed; polling")

    def _loop(self, idle_ms: Optional[int] = None, timeout_s: Optional[float] = None) -> None:
        self._start_wake()
        self._safe_beat()
        if self._keeper is None:
            self._keeper_stop.clear()
            self._keeper = threading.Thread(target=self._keep_leases, daemon=True)
            self._keeper.start()
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
                        head, jobs, _corrupt = self._claim(min(self.batch, free))
                    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                        log.exception("claim failed; trying again in %d ms", POLL_MS)
                        self._stopped.wait(POLL_MS / 1000.0)
                        continue
                    for job in jobs:
                        with self._lock:
                            self._inflight[job.id] = job
                            early = self._early_revokes.pop(job.token, None)
                            if early is not None:
                                job.lease_lost = True
                        if early is not None:
                            # Cancelled or failed from outside before this loop took it in: its
                            # handler starts told (job.aborted), and its outcome is dropped.
                            job.abort("cancelled" if early == "cancelled" else "failed")
                            log.info("%s: %s from outside as it was handed out", job.id, early)
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

    def run(self) -> None:
        """Runs until stop(); jobs in flight then run to their end and are acked."""
        try:
            self._loop()
        finally:
            self.close()

    def run_until_idle(self, idle_ms: int = 500, timeout_s: float = 30) -> None:
        """Runs until nothing is in flight, nothing was claimed for idle_ms and nothing is due
        within idle_ms (server clock); raises TimeoutError after timeout_s."""
        self._stopped.clear()
        try:
            self._loop(idle_ms, timeout_s)
        finally:
            self.close()

    def stop(self) -> None:
        self._stopped.set()
        self._kick.set()

    def close(self) -> None:
        self.stop()
        self._pool.shutdown(wait=True)
        if self._keeper is not None:
            self._keeper_stop.set()
            self._keeper.join()
            self._keeper = None
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
