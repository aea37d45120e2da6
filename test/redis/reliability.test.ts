import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HandlerTimeoutError, Queue, RedisStore, UnrecoverableError, Worker, type Job, type WorkerOptions } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { deferred, until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

let store: RedisStore;
const open: { close(): Promise<void> }[] = [];
fx.before(() => {
  store = new RedisStore({ connection: fx.redis.url });
});
fx.after(async () => {
  await Promise.all(open.map((o) => o.close()));
  await store.close();
});

function setup<T = unknown>() {
  const name = uniqueName('r');
  const queue = new Queue<T>(name, { connection: fx.redis.url });
  open.push(queue);
  const worker = (handler: (job: Job<T>) => unknown, opts: WorkerOptions<T> = {}) => {
    const w = new Worker<T>(name, handler, { connection: fx.redis.url, ...opts });
    errorLog.watch(w);
    open.push(w);
    return w;
  };
  return { name, queue, worker };
}

async function assertClean(queue: Queue<unknown>) {
  const report = await queue.verify();
  assert.deepEqual(report.problems, []);
  assert.equal(report.ok, true);
}

describe('fencing and leases', () => {
  test('a lease that runs out hands the job out again with a new token; the stale ack is refused', async () => {
    const { name, queue } = setup();
    await queue.add('x', { id: 'lease-1' });
    const first = await store.claim(name, 1, 100, 3);
    assert.equal(first.jobs.length, 1);
    const stale = first.jobs[0]!;
    assert.equal(first.nextWakeMs, stale.leaseExpiresAtMs, 'a sleeping worker wakes when the lease runs out');
    await until(async () => (await store.claim(name, 1, 30_000, 3)).jobs[0], 'the expired job to be handed out again').then((again) => {
      assert.equal(again.id, 'lease-1');
      assert.equal(again.attempt, 2);
      assert.notEqual(again.token, stale.token);
      return again;
    });
    assert.deepEqual(await store.complete(name, [{ id: 'lease-1', token: stale.token }]), ['lease_lost']);
    assert.deepEqual(await store.extend(name, [{ id: 'lease-1', token: stale.token }], 1000), ['lease_lost']);
    assert.equal(
      (await store.fail(name, { id: 'lease-1', token: stale.token, error: 'x', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 })).outcome,
      'lease_lost',
    );
    const info = await queue.get('lease-1');
    assert.equal(info?.state, 'active');
    assert.match(info!.lastError!, /lease expired during attempt 1 of 3/);
    await assertClean(queue);
  });

  test('a lease that runs out on the last attempt sends the job to the dead set', async () => {
    const { name, queue } = setup();
    await queue.add('x', { id: 'lease-2', attempts: 1 });
    await store.claim(name, 1, 50, 3);
    await until(async () => (await store.claim(name, 1, 50, 3), (await queue.get('lease-2'))?.state === 'dead'), 'the job to die');
    await assertClean(queue);
  });

  test('the heartbeat keeps a slow handler its lease, and a handler can extend its own', async () => {
    const { queue, worker } = setup();
    await queue.add('slow', { id: 'slow' });
    const done = deferred();
    const w = worker(
      async (job) => {
        await new Promise((r) => setTimeout(r, 700));
        await job.extendLease(5000);
        done.resolve();
      },
      { leaseMs: 300 },
    );
    const lost: string[] = [];
    w.on('leaseLost', (job) => lost.push(job.id));
    const completed = deferred();
    w.on('completed', () => completed.resolve());
    await within(done.promise, 5_000, 'the slow handler to finish');
    await within(completed.promise, 5_000, 'the slow job to complete');
    assert.deepEqual(lost, []);
    assert.equal(await queue.get('slow'), null);
  });

  test('a re-sent ack, fail or release answers as the first did', async () => {
    const { name, queue } = setup();
    await queue.add('a', { id: 'resend-fail' });
    await queue.add('b', { id: 'resend-release' });
    const { jobs } = await store.claim(name, 2, 30_000, 3);
    const byId = new Map(jobs.map((j) => [j.id, j]));
    const f = { id: 'resend-fail', token: byId.get('resend-fail')!.token, error: 'e', retryDelayMs: 60_000, dead: false, defaultMaxAttempts: 3 };
    const first = await store.fail(name, f);
    assert.equal(first.outcome, 'retried');
    assert.deepEqual(await store.fail(name, f), first);
    const r = [{ id: 'resend-release', token: byId.get('resend-release')!.token }];
    assert.deepEqual(await store.release(name, r), ['ok']);
    assert.deepEqual(await store.release(name, r), ['ok']);
    await assertClean(queue);
  });
});

describe('retries, snooze, timeout, dead set', () => {
  test('UnrecoverableError skips the attempts left', async () => {
    const { queue, worker } = setup();
    await queue.add('x', { id: 'fatal', attempts: 5 });
    const w = worker(() => {
      throw new UnrecoverableError('card declined for good');
    });
    const dead = deferred();
    w.on('dead', () => dead.resolve());
    await within(dead.promise, 5_000, 'the job to go dead');
    const info = await queue.get('fatal');
    assert.equal(info?.state, 'dead');
    assert.equal(info?.attempt, 1);
    assert.match(info!.lastError!, /card declined for good/);
  });

  test('snooze runs the job again later without spending an attempt, until its deadline', async () => {
    const { queue, worker } = setup<{ order: string }>();
    const added = await queue.add({ order: 'o1' }, { id: 'pay-check', attempts: 1 });
    const looks: number[] = [];
    const w = worker((job) => {
      looks.push(job.attempt);
      job.snooze(30, { deadlineAtMs: added.dueAtMs + 200 });
    });
    const dead = deferred<string>();
    w.on('dead', (_job, reason) => dead.resolve(reason));
    assert.match(await within(dead.promise, 5_000, 'the snoozed job to go dead'), /snooze deadline passed/);
    assert.ok(looks.length >= 3, `looked ${looks.length} times`);
    assert.ok(
      looks.every((a) => a === 1),
      'a snooze never spends an attempt',
    );
    const info = await queue.get('pay-check');
    assert.equal(info?.state, 'dead');
    assert.match(info!.lastError!, /snooze deadline passed/);
  });

  test('a handler past its timeout fails the attempt and is retried', async () => {
    const { queue, worker } = setup();
    await queue.add('x', { id: 'hang', attempts: 2, backoff: { type: 'fixed', delay: 10 } });
    const signals: AbortSignal[] = [];
    const errors: unknown[] = [];
    const w = worker(
      (job) => {
        signals.push(job.signal);
        return new Promise(() => {});
      },
      { timeoutMs: 100 },
    );
    w.on('failed', (_j, err) => errors.push(err));
    const dead = deferred();
    w.on('dead', () => dead.resolve());
    await within(dead.promise, 5_000, 'the hanging job to go dead');
    assert.equal(errors.length, 2);
    assert.ok(errors.every((e) => e instanceof HandlerTimeoutError));
    assert.ok(
      signals.every((s) => s.aborted),
      'the handler is told to stop',
    );
    assert.equal(w.running, 0);
  });

  test('dead set: list, retry one, retry all, purge', async () => {
    const { queue, worker } = setup<number>();
    for (let i = 0; i < 5; i++) await queue.add(i, { id: `d${i}`, attempts: 1 });
    let fail = true;
    const w = worker((job) => {
      if (fail) throw new Error(`no ${job.data}`);
    });
    await until(async () => (await queue.stats()).dead === 5, 'five dead jobs');
    const page = await queue.dead.list({ limit: 2 });
    assert.equal(page.total, 5);
    assert.equal(page.jobs.length, 2);
    assert.equal(typeof page.jobs[0]!.data, 'number');
    assert.match(page.jobs[0]!.lastError!, /^Error: no \d/);
    assert.equal(await queue.dead.purge('d0'), 1);
    assert.equal(await queue.dead.purge(['d0', 'nope']), 0);
    fail = false;
    const completed = new Set<string>();
    w.on('completed', (job) => completed.add(job.id));
    assert.equal(await queue.dead.retry('d1'), 1);
    await until(() => completed.has('d1'), 'd1 to run again');
    assert.equal(await queue.dead.retry({ all: true }), 3);
    await until(() => completed.size === 4, 'the other three to run again');
    assert.equal((await queue.stats()).dead, 0);
    await assertClean(queue);
  });

  test('purge older than an age keeps the young', async () => {
    const { name, queue } = setup();
    await queue.add(1, { id: 'old' });
    const { jobs } = await store.claim(name, 1, 30_000, 3);
    await store.fail(name, { id: 'old', token: jobs[0]!.token, error: 'x', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 });
    assert.equal(await queue.dead.purge({ olderThanMs: 60_000 }), 0);
    await until(async () => (await queue.dead.purge({ olderThanMs: 20 })) === 1, 'the dead job to age');
    assert.equal((await queue.stats()).dead, 0);
  });
});

describe('bad stored data and bad listeners', () => {
  test('a body that is not JSON goes to the dead set with the reason; the worker keeps running', async () => {
    const { name, queue, worker } = setup<string>();
    await queue.add('fine', { id: 'bad', delay: 60_000 });
    const k = queueKeys('dq', name);
    const body = (await fx.client.hget(k.jobs, 'bad'))!;
    await fx.client.hset(k.jobs, 'bad', body.replace('"fine"', '{not json'));
    await queue.promote('bad');
    const w = worker(() => {});
    const dead = deferred<string>();
    w.on('dead', (_job, reason) => dead.resolve(reason));
    assert.match(await within(dead.promise, 5_000, 'the corrupt job to go dead'), /corrupt job: data is not valid JSON/);
    const completed = deferred<string>();
    w.on('completed', (job) => completed.resolve(job.id));
    await queue.add('after', { id: 'good' });
    assert.equal(await within(completed.promise, 5_000, 'the good job to complete'), 'good');
    const info = await queue.get('bad');
    assert.equal(info?.state, 'dead');
    assert.match(info!.lastError!, /not valid JSON/);
    await assertClean(queue);
  });

  test('a body with an unreadable header goes to the dead set when it would fall due', async () => {
    const { name, queue } = setup();
    await queue.add(1, { id: 'no-t' });
    await fx.client.hset(queueKeys('dq', name).jobs, 'no-t', 'x:y');
    // Make the backlog larger than one hand-out so the job passes through the ready set's promotion.
    await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ data: i })));
    await store.claim(name, 2, 30_000, 3);
    const info = await queue.get('no-t');
    assert.equal(info?.state, 'dead');
    assert.match(info!.lastError!, /unreadable body header/);
  });

  test('a listener that throws cannot stop a job from being acked', async () => {
    const { queue, worker } = setup();
    const w = worker(() => 'ok');
    const errors: Error[] = [];
    w.removeAllListeners('error');
    w.on('error', (e) => errors.push(e));
    w.on('claimed', () => {
      throw new Error('listener bug');
    });
    const completed = deferred();
    w.on('completed', () => completed.resolve());
    await queue.add(1, { id: 'listener' });
    await within(completed.promise, 5_000, 'the job to complete');
    assert.equal(await queue.get('listener'), null);
    assert.ok(errors.some((e) => e.message === 'listener bug'));
  });

  test('verify finds a body in no state, an entry without a body, and a job in two states', async () => {
    const { name, queue } = setup();
    await queue.add(1, { id: 'two', delay: 60_000 });
    const k = queueKeys('dq', name);
    await fx.client.zadd(k.dead, 1, 'two');
    await fx.client.hset(k.jobs, 'orphan', '1:1:0::0:0:1');
    await fx.client.hset(k.runs, 'lonely', '1:1::::');
    await fx.client.zadd(k.active, 1, 'ghost');
    const report = await queue.verify();
    assert.equal(report.ok, false);
    assert.deepEqual(report.problems.sort(), [
      'job ghost is active but has no body',
      'job lonely has a run state but no body',
      'job orphan has a body but is in no state',
      'job two is in 2 states: scheduled, dead',
    ]);
  });
});
