"""delayq_client.asyncio: the Queue and the Worker on redis.asyncio, for asyncio applications.

The same checks, script calls and answers as delayq_client.Queue and delayq_client.Worker (the
wire code is theirs: queue.QueueCalls and _work.WorkerCalls plan each call; here it is awaited).
The Worker runs async handlers as tasks on the running loop, so unlike a thread a handler past
its timeout, or whose running job was cancelled or failed from outside, is really stopped
(cancelled).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import traceback
from typing import Any, Dict, List, Mapping, Optional, Sequence

import redis

from ._work import POLL_MS, Claimed, Job, WorkerCalls, backoff_delay
from .queue import Call, QueueCalls, R, Result

__all__ = ["Job", "Queue", "Worker"]

log = logging.getLogger("delayq_client")


class Queue(QueueCalls):
    """One delayq queue, reached through `redis_client` (a redis.asyncio.Redis); the methods of
    delayq_client.Queue, awaited. Bad input raises ValueError naming the field before anything is
    sent; a call whose connection dropped before its reply is re-sent once, as it was."""

    async def _do(self, call: Call[R]) -> R:
        keys, argv = self._wire(call)
        try:
            reply = await self.protocol.call_async(self.redis, call.script, keys, argv)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            reply = await self.protocol.call_async(self.redis, call.script, keys, argv)
        out = call.read(reply)
        if call.register:
            await self.redis.zadd(self.protocol.registry_key(self.prefix), {self.name: await self.server_now_ms()}, nx=True)
        return out

    async def server_now_ms(self) -> int:
        s, us = await self.redis.time()
        return int(s) * 1000 + int(us) // 1000

    async def add(
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
        """delayq_client.Queue.add, awaited."""
        call = self._add_call(
            data, id, delay_ms, run_at, priority, attempts, group, replace, cost, dedup, debounce, name, timeout_ms, attempts_made,
            depends_on, wait_at_most_ms, on_child_failure,
        )
        return (await self._do(call))[0]

    async def add_bulk(self, jobs: Sequence[Mapping[str, Any]]) -> List[Result]:
        return await self._do(self._add_bulk_call(jobs))

    async def add_flow(self, flow: Mapping[str, Any]) -> Result:
        jobs, tree = self._flatten_flow(flow)
        # As Queue.add_flow: a flow sent again while its root is there writes nothing.
        root = self._flow_root_kept(flow, jobs, tree)
        if root is not None and await self._do(self._get_call(root)) is not None:
            return self._shape_flow(tree, [self._left_alone(j["id"], await self._do(self._get_call(j["id"]))) for j in jobs])
        return self._shape_flow(tree, await self._do(self._add_bulk_call(jobs)))

    async def cancel(self, id: str, running: bool = False, reason: str = "") -> Result:
        return await self._do(self._cancel_call(id, running, reason))

    async def fail(self, id: str, reason: str = "failed by Queue.fail", dead: bool = False, retry_ms: int = 1000, default_max: int = 3) -> Result:
        return await self._do(self._fail_call(id, reason, dead, retry_ms, default_max))

    async def signal(self, id: str, name: str, data: Any = None) -> Result:
        return await self._do(self._signal_call(id, name, data))

    async def reschedule(self, id: str, delay_ms: Optional[float] = None, run_at: Optional[float] = None) -> Result:
        return await self._do(self._reschedule_call(id, delay_ms, run_at))

    async def get(self, id: str, logs: bool = False) -> Optional[Dict[str, Any]]:
        return await self._do(self._get_call(id, logs))


class Worker(WorkerCalls):
    """Runs `await handler(job)` (or handlers by job name: a dict, with 'default') on due jobs of
    `queue`, up to `concurrency` at once as tasks of the running loop; the options of
    delayq_client.Worker. `await run()` until `stop()`; `await run_until_idle()` for scripts and
    tests. A handler that is a plain function runs on the loop (it must not block)."""

    def _setup(self) -> None:
        self._jobs: Dict[str, Job] = {}
        self._handlers: Dict[str, "asyncio.Task[Any]"] = {}
        self._tasks: "set[asyncio.Task[None]]" = set()
        # Made on the running loop (run): before Python 3.10 an Event binds to a loop when made.
        self._kick: Optional[asyncio.Event] = None
        self._stop = False
        self._pubsub: Any = None
        self._keeper: Optional["asyncio.Task[None]"] = None
        self._reader: Optional["asyncio.Task[None]"] = None

    def _running(self) -> int:
        return len(self._jobs)

    # --- calls ------------------------------------------------------------------------------
    async def _do(self, call: Call[R]) -> R:
        keys, argv = self._wire(call)
        try:
            reply = await self.protocol.call_async(self.redis, call.script, keys, argv)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            # Re-sent once as it was: the claim by its request id, the rest by their token's mark.
            reply = await self.protocol.call_async(self.redis, call.script, keys, argv)
        out = call.read(reply)
        if call.register:
            key, member = self._registry_args()
            await self.redis.zadd(key, member, nx=True)
        return out

    async def _claim(self, count: int) -> Claimed:
        claimed = await self._do(self._claim_call(count))
        for id, token, reason in claimed[2]:
            await self._do(self._fail_call(id, token, reason, 0, dead=True))
        return claimed

    async def _safe_beat(self, gone: bool = False) -> None:
        try:
            await self._do(self._beat_call(gone))
        except Exception:  # noqa: BLE001 - the next tick beats again; the entry outlives two misses
            log.exception("heartbeat failed")

    # --- running ----------------------------------------------------------------------------
    def _end(self, job: Job, why: str) -> None:
        """Ends an attempt without its handler: past its timeout, or revoked from outside (its
        lease is gone). The handler's task is cancelled; _process sends what is left to send."""
        if job.lease_lost or job.id not in self._jobs:
            return
        job.lease_lost = why != "timeout"
        job.abort(why)
        task = self._handlers.get(job.id)
        if task is not None:
            task.cancel()

    def _on_wake(self, message: Any) -> None:
        revoked = self._revoke_message(message)
        if revoked is None:
            if self._kick is not None:
                self._kick.set()
            return
        why, token = revoked
        job = next((j for j in self._jobs.values() if j.token == token), None) if token else None
        if job is not None:
            log.info("%s: %s from outside as it ran", job.id, why)
            self._end(job, "cancelled" if why == "cancelled" else "failed")

    async def _process(self, job: Job) -> None:
        loop = asyncio.get_running_loop()
        timer = loop.call_later(job.timeout_ms / 1000.0, self._end, job, "timeout") if job.timeout_ms else None
        try:
            try:
                out = self.handler(job)
                if inspect.isawaitable(out):
                    task = asyncio.ensure_future(out)
                    self._handlers[job.id] = task
                    out = await task
            except BaseException as e:  # noqa: BLE001 - a handler's error (or its cancellation) ends the attempt
                if job.lease_lost:
                    return  # revoked: the lease is gone, nothing more is sent for it
                if job.abort_reason == "timeout":
                    await self._fail_timed_out(job)
                    return
                if not isinstance(e, Exception):
                    raise  # the worker itself was cancelled (the loop is closing)
                self.failed += 1
                error = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
                outcome = await self._do(self._fail_call(job.id, job.token, error, backoff_delay(job.backoff or self.backoff, job.attempt)))
            else:
                if job.lease_lost:
                    return
                if job.abort_reason == "timeout":
                    # A handler that swallowed its cancellation: the attempt timed out all the same.
                    await self._fail_timed_out(job)
                    return
                self.ran += 1
                outcome = await self._do(self._complete_call(job, out))
            if outcome in ("lease_lost", "not_found"):
                log.warning("%s: %s, the job was handed to another worker", job.id, outcome)
        except Exception:  # noqa: BLE001 - a lost ack is recovered by the lease running out
            log.exception("ack of %s failed", job.id)
        finally:
            if timer is not None:
                timer.cancel()
            self._handlers.pop(job.id, None)
            self._jobs.pop(job.id, None)
            if self._kick is not None:
                self._kick.set()

    async def _fail_timed_out(self, job: Job) -> None:
        """The attempt ran past its timeout: it fails (retries apply); its handler was cancelled."""
        self.failed += 1
        job.lease_lost = True
        error = "HandlerTimeoutError: handler did not finish within %d ms" % (job.timeout_ms or 0)
        await self._do(self._fail_call(job.id, job.token, error, backoff_delay(job.backoff or self.backoff, job.attempt)))

    async def _keep_leases(self) -> None:
        """Renews the leases of jobs in flight (a third of the lease after the last renewal) and
        beats when no renewal carried a beat for about BEAT_MS; until cancelled by close()."""
        third = self.lease_ms / 3000.0
        while True:
            await asyncio.sleep(min(third / 2, 1.0))
            due = [j for j in self._jobs.values() if not j.lease_lost and time.monotonic() - j.extended_at >= third]
            if due:
                try:
                    await self._do(self._extend_call(due))
                except Exception:  # noqa: BLE001 - tried again on the next tick
                    log.exception("extend failed")
            if self._beat_due():
                await self._safe_beat()

    async def _read_wake(self) -> None:
        while True:
            message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if message is not None:
                self._on_wake(message)

    def _spawn(self, coro: Any) -> "asyncio.Task[None]":
        task: "asyncio.Task[None]" = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _loop(self, idle_ms: Optional[int] = None, timeout_s: Optional[float] = None) -> None:
        self._kick = asyncio.Event()
        if self._subscribe and self._pubsub is None:
            try:
                self._pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
                await self._pubsub.subscribe(self.protocol.wake_channel(self.prefix, self.queue))
                self._reader = self._spawn(self._read_wake())
            except Exception:  # noqa: BLE001 - polling every second still works
                log.exception("SUBSCRIBE to the wake channel failed; polling")
        await self._safe_beat()
        self._keeper = self._spawn(self._keep_leases())
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        quiet_since = time.monotonic()
        while not self._stop:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("worker did not go idle within %s s" % timeout_s)
            free = self.concurrency - len(self._jobs)
            sleep_ms: float = POLL_MS
            if free > 0:
                self._kick.clear()
                try:
                    head, jobs, _corrupt = await self._claim(min(self.batch, free))
                except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                    log.exception("claim failed; trying again in %d ms", POLL_MS)
                    await asyncio.sleep(POLL_MS / 1000.0)
                    continue
                for job in jobs:
                    self._jobs[job.id] = job
                    self._spawn(self._process(job))
                if jobs:
                    quiet_since = time.monotonic()
                    if int(head["more"]) == 1:
                        continue
                wake = int(head["next_wake_ms"])
                if wake != self.protocol.not_set_number:
                    sleep_ms = max(0, min(POLL_MS, wake - self._server_now()))
                if idle_ms is not None and not jobs and not self._jobs:
                    nothing_soon = wake == self.protocol.not_set_number or wake - self._server_now() > idle_ms
                    if nothing_soon and (time.monotonic() - quiet_since) * 1000 >= idle_ms:
                        return
                    sleep_ms = min(sleep_ms, idle_ms)
            try:
                await asyncio.wait_for(self._kick.wait(), sleep_ms / 1000.0)
            except asyncio.TimeoutError:
                pass

    async def run(self) -> None:
        """Runs until stop(); jobs in flight then run to their end and are acked."""
        try:
            await self._loop()
        finally:
            await self.close()

    async def run_until_idle(self, idle_ms: int = 500, timeout_s: float = 30) -> None:
        """Runs until nothing is in flight, nothing was claimed for idle_ms and nothing is due
        within idle_ms (server clock); raises TimeoutError after timeout_s."""
        self._stop = False
        try:
            await self._loop(idle_ms, timeout_s)
        finally:
            await self.close()

    def stop(self) -> None:
        self._stop = True
        if self._kick is not None:
            self._kick.set()

    async def close(self) -> None:
        """Stops claiming, lets the jobs in flight end (their leases renewed meanwhile), then
        unsubscribes and takes the worker off the list of live workers."""
        self.stop()
        running = [t for t in self._tasks if t is not self._keeper and t is not self._reader]
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._pubsub is not None:
            try:
                await self._pubsub.unsubscribe()
                await self._pubsub.reset()
            except Exception:  # noqa: BLE001 - the connection goes with the client anyway
                log.exception("closing the wake subscription failed")
            self._pubsub = None
        if self._last_beat:
            self._last_beat = 0.0
            await self._safe_beat(gone=True)
