/**
 * Job control attacked on a real redis-server: a cancel and a fail-now whose replies were lost,
 * re-sent with the same request id (one outcome); a worker killed with kill -9 while it held the
 * job, then the job cancelled or failed (nothing lost, nothing run twice without a new token); a
 * stale holder whose lease was recovered and handed to another worker (the cancel reaches the
 * new holder, the old one is told lease lost); a wait that times out leaves no waiter behind;
 * waits and cancels on a sharded queue across a live reshard. verify() after each.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JobCancelledError, Queue, RedisStore, Worker, type Job } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { callScript } from '../helpers/protocol-call.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until, within } from '../helpers/wait.js';
import { WorkerFleet } from '../helpers/worker-fleet.js';

const fx = useRedis();
const errorLog = useErrorLog();

async function verified(q: Queue<unknown>): Promise<void> {
  const report = await q.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
}

describe('job control on Redis, attacked', () => {
  test('a cancel of a running job and a fail-now whose replies were lost, re-sent with the same request id, answer as the first run and change nothing more', async () => {
    const name = uniqueName('jc-resend');
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const q = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    await q.addBulk([
      { data: 1, opts: { id: 'c', attempts: 3 } },
      { data: 2, opts: { id: 'f', attempts: 3 } },
    ]);
    const claimed = await store.claim(name, 2, 60_000, 3);
    assert.equal(claimed.jobs.length, 2);
    const args = { request_id: 'r-cancel', memo_ms: 60_000, running: '1', reason: 'lost reply' };
    const first = await callScript(fx.client, 'cancel', name, args, [{ id: 'c' }]);
    const again = await callScript(fx.client, 'cancel', name, args, [{ id: 'c' }]);
    assert.deepEqual(again, first, 'the re-send answers as the first run');
    assert.equal(await q.get('c'), null);

    const fArgs = { id: 'f', reason: 'hung', dead: '0', retry_ms: 60_000, default_max: 3, history: 10, request_id: 'r-fail', memo_ms: 60_000 };
    const f1 = await callScript(fx.client, 'fail-now', name, fArgs);
    const before = await q.get('f');
    const f2 = await callScript(fx.client, 'fail-now', name, fArgs);
    assert.deepEqual(f2, f1);
    const after = await q.get('f');
    assert.deepEqual(after?.errors, before?.errors, 'the re-send appended no second failure');
    assert.equal(after?.dueAtMs, before?.dueAtMs);
    assert.equal(after?.state, 'scheduled');
    // Without a request id, a second fail-now of the job (no longer running) is refused.
    assert.equal((await q.fail('f')).outcome, 'refused');
    // The holder's token is stale for every call.
    const fTok = claimed.jobs.find((j) => j.id === 'f')!.token;
    assert.deepEqual(await store.complete(name, [{ id: 'f', token: fTok, result: '' }]), ['lease_lost']);
    assert.equal((await store.fail(name, { id: 'f', token: fTok, error: 'x', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 })).outcome, 'lease_lost');
    assert.equal((await store.snooze(name, { id: 'f', token: fTok, delayMs: 10, deadlineAtMs: undefined })).outcome, 'lease_lost');
    assert.deepEqual(await store.release(name, [{ id: 'f', token: fTok }]), ['lease_lost']);
    await verified(q);
  });

  test('kill -9 of the worker holding a job, then a cancel and a fail-now of its jobs: nothing lost, nothing run again without a new token', async () => {
    const name = uniqueName('jc-kill');
    const q = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 4, leaseMs: 1_500, workMs: 60_000 });
    const child = await fleet.start();
    await q.addBulk([
      { data: 1, opts: { id: 'gone', attempts: 3 } },
      { data: 2, opts: { id: 'again', attempts: 3 } },
    ]);
    await until(() => fleet.reports.filter((r) => r.t === 'start').length === 2, 'the child runs both');
    await fleet.kill9(child);
    assert.equal((await q.cancel('gone', { running: true })).cancelled, true);
    assert.equal((await q.fail('again', { reason: 'its worker died', retryDelayMs: 0 })).outcome, 'retried');
    const runs: Job<number>[] = [];
    const w = errorLog.watch(
      fx.track(
        new Worker<number>(
          name,
          (job) => {
            runs.push(job);
          },
          { connection: fx.redis.url, leaseMs: 1_500 },
        ),
      ),
    );
    await until(() => runs.length === 1, 'the failed job runs again');
    // Past the dead worker's lease: nothing of it comes back.
    await new Promise((r) => setTimeout(r, 2_000));
    assert.deepEqual(
      runs.map((j) => [j.id, j.attempt]),
      [['again', 2]],
    );
    const oldToken = fleet.reports.find((r) => r.t === 'start' && r.id === 'again')!.token;
    assert.notEqual(runs[0]!.token, oldToken, 'a new token');
    await within(w.close(), 5_000, 'close');
    assert.equal((await q.stats()).active, 0);
    await verified(q);
  });

  test("a stale holder: its lease ran out and another worker holds the job; a cancel reaches the new holder, and the old one's calls answer lease lost", async () => {
    const name = uniqueName('jc-stale');
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const q = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    await q.add(1, { id: 's', attempts: 5 });
    const stale = (await store.claim(name, 1, 50, 5)).jobs[0]!;
    await new Promise((r) => setTimeout(r, 80));
    let held: Job<number> | undefined;
    const w = errorLog.watch(
      fx.track(
        new Worker<number>(
          name,
          (job) => {
            held = job;
            return new Promise(() => {});
          },
          { connection: fx.redis.url },
        ),
      ),
    );
    await until(() => held !== undefined, 'the second worker recovers and runs it');
    assert.equal(held!.attempt, 2);
    assert.equal((await q.cancel('s', { running: true })).cancelled, true);
    await until(() => held!.signal.aborted, 'the new holder is told');
    assert.equal(held!.signal.reason, 'cancelled');
    assert.deepEqual(await store.complete(name, [{ id: 's', token: stale.token, result: '' }]), ['lease_lost']);
    assert.deepEqual(await store.complete(name, [{ id: 's', token: held!.token, result: '' }]), ['lease_lost']);
    await within(w.close(), 5_000, 'close');
    await verified(q);
  });

  test('a wait that times out leaves no waiter behind; a wait woken by a cancel carries its reason; a second process waits too', async () => {
    const name = uniqueName('jc-wait');
    const q = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    const other = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    await q.add(1, { id: 'far', delay: 600_000 });
    await assert.rejects(q.waitFor('far', { timeoutMs: 100 }), { name: 'WaitTimeoutError' });
    await until(async () => (await fx.client.exists(`dq:{${name}}:waiters`)) === 0, 'the waiter pruned', 2_000);
    // One registration after the other: the second, with the longer wait, raises the job's score
    // (ZADD GT), so each is seen registered before the cancel.
    const score = async () => Number((await fx.client.zscore(`dq:{${name}}:waiters`, 'far')) ?? 0);
    const first = q.waitFor('far', { timeoutMs: 10_000 }).catch((e: unknown) => e);
    await until(async () => (await score()) > 0, 'the first wait is registered');
    const firstScore = await score();
    const second = other.waitFor('far', { timeoutMs: 20_000 }).catch((e: unknown) => e);
    await until(async () => (await score()) > firstScore, 'the second wait is registered');
    const waits = [first, second];
    await q.cancel('far', { reason: 'paid' });
    for (const e of await Promise.all(waits)) {
      assert.ok(e instanceof JobCancelledError, String(e));
      assert.equal(e.reason, 'paid');
    }
    assert.equal(await fx.client.exists(`dq:{${name}}:waiters`), 0);
    await verified(q);
  });

  test('a sharded queue during a live reshard: a job held on an old shard is cancelled, one on a new shard is waited for from another process', async () => {
    const name = uniqueName('jc-shard');
    const q = fx.track(new Queue<number>(name, { connection: fx.redis.url, shards: 3 }));
    const held = new Map<string, Job<number>>();
    const w = errorLog.watch(
      fx.track(
        new Worker<number>(
          name,
          (job) => {
            if (job.data === 0) return `done ${job.id}`;
            held.set(job.id, job);
            return new Promise(() => {});
          },
          { connection: fx.redis.url, concurrency: 20 },
        ),
      ),
    );
    await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ data: 1, opts: { id: `old-${i}` } })));
    await until(() => held.size === 6, 'six held');
    await q.reshard(5);
    const other = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    const waited = Array.from({ length: 6 }, (_, i) => other.addAndWait(0, { id: `new-${i}` }, { timeoutMs: 10_000 }));
    for (let i = 0; i < 6; i++) assert.equal((await other.cancel(`old-${i}`, { running: true })).cancelled, true);
    await until(() => [...held.values()].every((j) => j.signal.aborted), 'every holder told');
    assert.deepEqual(new Set([...held.values()].map((j) => j.signal.reason)), new Set(['cancelled']));
    assert.deepEqual(
      await Promise.all(waited),
      Array.from({ length: 6 }, (_, i) => `done new-${i}`),
    );
    await within(w.close(), 5_000, 'close');
    assert.equal((await q.stats()).active, 0);
    await verified(q);
  });
});
