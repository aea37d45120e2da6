/**
 * Isolated handlers on a real redis-server: a thread stuck in `while (true) {}` is terminated at
 * the timeout and the worker goes on; a process that crashes fails one attempt, the retry runs
 * on a fresh process; close() with a stuck thread hands its job back at once. verify() after each.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HandlerTimeoutError, IsolatedHandlerError, Queue, Worker, type WorkerOptions } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { handlerModule, outcomes } from '../helpers/isolation.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

const HANDLER = handlerModule(
  'redis-where',
  `import { threadId } from 'node:worker_threads';
export default async (job) => {
  if (job.data === 'spin') { await job.log('spinning'); while (true) {} }
  if (job.data === 'exit-once' && job.attempt === 1) process.exit(7);
  return { threadId, pid: process.pid };
};`,
);

function setup(opts: WorkerOptions<unknown>) {
  const name = uniqueName('iso');
  const queue = fx.track(new Queue<unknown>(name, { connection: fx.redis.url }));
  const worker = errorLog.watch(new Worker<unknown>(name, HANDLER, { connection: fx.redis.url, concurrency: 1, ...opts }));
  fx.track(worker);
  return { queue, worker, seen: outcomes(worker) };
}

describe('isolated handlers on Redis', () => {
  test("isolation 'thread': while (true) {} is stopped at timeoutMs 200, the attempt fails with HandlerTimeoutError, the next job runs on a fresh thread", async () => {
    const { queue, worker, seen } = setup({ isolation: 'thread', timeoutMs: 200, attempts: 1 });
    // The jobs that should finish carry a timeout of their own: a fresh thread's start counts
    // against it, and takes more than 200 ms on a busy machine.
    await queue.add('ok', { id: 'first', timeoutMs: 10_000 });
    const first = (await seen.next('first')) as { event: string; result: { threadId: number } };
    assert.equal(first.event, 'completed');
    await queue.add('spin', { id: 'spin' });
    await queue.add('ok', { id: 'next', timeoutMs: 10_000 });
    const failed = (await seen.next('spin')) as { event: string; error: unknown };
    assert.equal(failed.event, 'failed');
    assert.ok(failed.error instanceof HandlerTimeoutError);
    assert.equal((await seen.next('spin')).event, 'dead');
    const next = (await seen.next('next')) as { event: string; result: { threadId: number } };
    assert.equal(next.event, 'completed', JSON.stringify(next));
    assert.notEqual(next.result.threadId, first.result.threadId);
    const dead = await queue.get('spin');
    assert.equal(dead?.state, 'dead');
    assert.deepEqual(dead?.logs, ['spinning']);
    await within(worker.close(), 5_000, 'close');
    assert.equal((await queue.stats()).active, 0);
    assert.equal((await queue.verify()).ok, true);
  });

  test("isolation 'thread': a job spinning in while (true) {} cancelled from another Queue (running: true): the thread is terminated, the job is gone, the next job runs on a fresh thread", async () => {
    const { queue, worker, seen } = setup({ isolation: 'thread', attempts: 1 });
    const revoked: string[] = [];
    worker.on('revoked', (job, why) => revoked.push(`${job.id}:${why}`));
    await queue.add('ok', { id: 'first' });
    const first = (await seen.next('first')) as { event: string; result: { threadId: number } };
    await queue.add('spin', { id: 'spin' });
    await within(
      (async () => {
        while ((await queue.get('spin'))?.logs?.[0] !== 'spinning') await new Promise((r) => setTimeout(r, 10));
      })(),
      5_000,
      'the job spins',
    );
    const other = new Queue(queue.name, { connection: fx.redis.url });
    try {
      assert.deepEqual(await other.cancel('spin', { running: true }), { id: 'spin', cancelled: true, state: 'active' });
    } finally {
      await other.close();
    }
    await queue.add('ok', { id: 'next' });
    const next = (await seen.next('next')) as { event: string; result: { threadId: number } };
    assert.equal(next.event, 'completed', JSON.stringify(next));
    assert.notEqual(next.result.threadId, first.result.threadId, 'the spinning thread was terminated');
    assert.deepEqual(revoked, ['spin:cancelled']);
    assert.equal(await queue.get('spin'), null);
    await within(worker.close(), 5_000, 'close');
    assert.equal((await queue.verify()).ok, true);
  });

  test("isolation 'process': a handler that exits fails its attempt with IsolatedHandlerError; the retry runs on a fresh process and completes", async () => {
    const { queue, worker, seen } = setup({ isolation: 'process', attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    await queue.add('exit-once', { id: 'crashy' });
    const failed = (await seen.next('crashy')) as { event: string; error: Error };
    assert.equal(failed.event, 'failed');
    assert.ok(failed.error instanceof IsolatedHandlerError);
    assert.match(failed.error.message, /the handler's process exited with code 7/);
    assert.equal((await seen.next('crashy')).event, 'retried');
    const done = (await seen.next('crashy')) as { event: string; result: { pid: number } };
    assert.equal(done.event, 'completed', JSON.stringify(done));
    assert.notEqual(done.result.pid, process.pid);
    await within(worker.close(), 5_000, 'close');
    assert.equal((await queue.verify()).ok, true);
  });

  test('close() with a thread stuck in while (true) {}: its signal aborts, the thread is terminated after the grace, the job is handed back with its attempt unspent', async () => {
    const { queue, worker, seen } = setup({ isolation: 'thread', isolationGraceMs: 150, closeTimeoutMs: 30_000 });
    await queue.add('spin', { id: 'stuck' });
    await within(
      (async () => {
        while (((await queue.get('stuck'))?.logs?.length ?? 0) === 0) await new Promise((r) => setTimeout(r, 10));
      })(),
      10_000,
      'the handler to start',
    );
    const started = Date.now();
    await within(worker.close(), 5_000, 'close');
    assert.ok(Date.now() - started < 3_000, `close took ${Date.now() - started} ms, not the 30 s close timeout`);
    assert.equal((await seen.next('stuck')).event, 'released');
    const info = await queue.get('stuck');
    assert.equal(info?.state, 'scheduled');
    assert.equal((await queue.verify()).ok, true);
  });
});
