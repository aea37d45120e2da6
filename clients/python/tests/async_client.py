"""async_client.py URL QUEUE CASE: delayq_client.asyncio on redis.asyncio.
  produce: the asyncio Queue adds (named and delayed, a bulk, an existing id), reads, reschedules
        and cancels; bad input raises ValueError before anything is sent.
  work: the asyncio Worker until idle (lease 900 ms): 'fail-*' raises, 'slow' awaits 700 ms (its
        lease is renewed), 'hang-*' awaits for ever and says when it is cancelled (a timeout, a
        cancel from outside; 'hang-swallow' returns instead of re-raising); any other job returns
        its id. Lines: its id, one per start, one per
        cancelled handler, then done."""

import asyncio
import sys

import _common  # noqa: F401 - the package on the path unless installed
import redis.asyncio as aredis
from _common import emit

from delayq_client.asyncio import Queue, Worker

url, queue, case = sys.argv[1], sys.argv[2], sys.argv[3]


async def produce(r):
    q = Queue(r, queue)
    emit(added=await q.add({"to": "ada"}, id="mail-1", name="send-email", delay_ms=60000))
    emit(bulk=await q.add_bulk([{"data": {"n": 1}, "id": "b1"}, {"data": {"n": 2}, "id": "b2", "priority": 5}]))
    emit(again=await q.add({"to": "ada"}, id="mail-1", name="send-email"))
    emit(got=await q.get("mail-1"))
    emit(moved=await q.reschedule("mail-1", delay_ms=120000))
    emit(cancelled=await q.cancel("b2"))
    emit(missing=await q.get("b2"))
    for bad in ({"delay_ms": -1}, {"id": ""}, {"name": "a\tb"}, {"priority": 1.5}):
        try:
            await q.add({"n": 0}, **bad)
            emit(refused=None)
        except ValueError as e:
            emit(refused=str(e))
    try:
        await q.add_bulk([{"data": 1, "id": "ok"}, {"data": 2, "id": "x", "debounce": {"key": "k"}}])
    except ValueError as e:
        emit(refused=str(e))


async def work(r):
    async def handler(job):
        emit(started=job.id, attempt=job.attempt)
        if job.id.startswith("fail"):
            raise RuntimeError("planned failure %d" % job.attempt)
        if job.id == "slow":
            await asyncio.sleep(0.7)
        if job.id.startswith("hang"):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                emit(handler_cancelled=job.id, reason=job.abort_reason)
                if job.id == "hang-swallow":
                    return "swallowed"  # a handler that ignores its cancellation
                raise
        return {"by": "python-asyncio", "id": job.id}

    w = Worker(r, queue, handler, concurrency=4, lease_ms=900, attempts=2, backoff={"type": "fixed", "delay": 50})
    emit(worker=w.id)
    await w.run_until_idle(idle_ms=800, timeout_s=25)
    emit(done=True, ran=w.ran, failed=w.failed)


async def main():
    r = aredis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        await (produce(r) if case == "produce" else work(r))
    finally:
        await r.close()


asyncio.run(main())
