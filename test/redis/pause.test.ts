import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker, type Job } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

function setup<T>() {
  const queue = new Queue<T>(uniqueName('p'), { connection: fx.redis.url });
  fx.track(queue);
  const worker = (handler: (job: Job<T>) => unknown) => {
    // A long idle check, so only the resume signal can explain a prompt start.
    const w = new Worker<T>(queue.name, handler, { connection: fx.redis.url, concurrency: 1, batch: 1, idleCheckMs: 600_000 });
    errorLog.watch(w);
    fx.track(w);
    return w;
  };
  return { queue, worker };
}

describe('pause and resume', () => {
  test('a paused queue hands out nothing; on resume, workers are signalled and run overdue jobs in due order', async () => {
    const { queue, worker } = setup<string>();
    assert.equal(await queue.pause(), true);
    assert.equal(await queue.pause(), false, 'pausing twice changes nothing');
    const now = await serverTimeMs(fx.client);
    // Added in an order unlike their due order.
    await queue.add('c', { id: 'c', runAt: now + 30 });
    await queue.add('a', { id: 'a', runAt: now + 10 });
    await queue.add('b', { id: 'b', runAt: now + 20 });
    const ran: string[] = [];
    worker((job) => {
      ran.push(job.data);
    });
    // All three fall due and the worker's timer fires while paused; it must hand out nothing.
    await until(async () => (await queue.stats()).ready === 3, 'the jobs to fall due');
    await until(async () => (await serverTimeMs(fx.client)) > now + 300, 'a few timer periods after the jobs fell due');
    assert.deepEqual(ran, []);
    const stats = await queue.stats();
    assert.equal(stats.paused, true);
    assert.equal(stats.scheduled, 3);
    assert.equal(stats.active, 0);

    const resumedAt = Date.now();
    assert.equal(await queue.resume(), true);
    assert.equal(await queue.resume(), false);
    await until(() => ran.length === 3, 'the overdue jobs to run after resume', 5000);
    assert.ok(Date.now() - resumedAt < 2000, 'resume wakes workers by signal, not by their idle check');
    assert.deepEqual(ran, ['a', 'b', 'c']);
    assert.equal((await queue.stats()).paused, false);
    assert.equal((await queue.verify()).ok, true);
  });

  test('leases that run out while paused are still recovered, with the attempt counted', async () => {
    const { queue } = setup<string>();
    await queue.add('x', { id: 'x' });
    const first = await queue.store.claim(queue.name, 1, 100, 3);
    assert.equal(first.jobs.length, 1);
    await queue.pause();
    await until(async () => (await serverTimeMs(fx.client)) > first.jobs[0]!.leaseExpiresAtMs, 'the lease to run out');
    const second = await queue.store.claim(queue.name, 1, 1000, 3);
    assert.deepEqual(second.jobs, [], 'nothing is handed out while paused');
    const info = await queue.get('x');
    assert.equal(info?.state, 'scheduled');
    assert.equal(info?.attempt, 1);
    assert.match(info?.lastError ?? '', /lease expired/);
    assert.equal((await queue.verify()).ok, true);
  });

  test('pausing does not stop running handlers, and their acks land', async () => {
    const { queue, worker } = setup<string>();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    const w = worker(async () => {
      started = true;
      await gate;
    });
    const completed = new Promise((r) => w.once('completed', r));
    await queue.add('long', { id: 'long' });
    await until(() => started, 'the handler to start');
    await queue.pause();
    release();
    await within(completed, 5_000, 'the job running at the pause to complete');
    await until(async () => (await queue.stats()).active === 0, 'the ack to land');
    assert.equal(await queue.get('long'), null);
  });
});
