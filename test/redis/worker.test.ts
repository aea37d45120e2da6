import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore, Worker, type Job, type WorkerOptions } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { deferred, serverTimeMs, until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

const open: { close(): Promise<void> }[] = [];
fx.after(async () => {
  await Promise.all(open.map((o) => o.close()));
});

function setup<T = unknown>() {
  const name = uniqueName('w');
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

describe('worker', () => {
  test('never runs a job before its due time by the server clock', async () => {
    const { queue, worker } = setup<number>();
    const n = 40;
    const early: string[] = [];
    const done = deferred();
    let count = 0;
    for (let i = 0; i < n; i++) await queue.add(i, { delay: 20 + (i % 10) * 15 });
    worker(
      async (job) => {
        const now = await serverTimeMs(fx.client);
        if (now < job.dueAtMs) early.push(`${job.id} ran at ${now}, due ${job.dueAtMs}`);
        if (++count === n) done.resolve();
      },
      { concurrency: 5 },
    );
    await within(done.promise, 5_000, 'all 40 jobs to run');
    assert.deepEqual(early, []);
  });

  test('runs a job due at runAt, and a job added while it sleeps on a later one', async () => {
    const { queue, worker } = setup<string>();
    const ran = new Map<string, number>();
    await queue.add('late', { id: 'late', delay: 60_000 });
    worker(async (job) => {
      ran.set(job.id, await serverTimeMs(fx.client));
    });
    // Let the worker go to sleep on the job due in a minute.
    await until(async () => (await queue.stats()).scheduled === 1, 'the late job to be scheduled');
    const start = await serverTimeMs(fx.client);
    const a = await queue.add('soon', { id: 'soon', delay: 100 });
    const b = await queue.add('at', { id: 'at', runAt: start + 150 });
    await until(() => ran.size === 2, 'both short jobs to run', 5000);
    assert.ok(!ran.has('late'));
    assert.ok(ran.get('soon')! >= a.dueAtMs && ran.get('soon')! < a.dueAtMs + 500, `soon ran ${ran.get('soon')! - a.dueAtMs} ms after due`);
    assert.ok(ran.get('at')! >= b.dueAtMs && ran.get('at')! < b.dueAtMs + 500);
  });

  test('higher priority first, then earlier due time, then first added', async () => {
    const { queue, worker } = setup<string>();
    const jobs: { data: string; opts: { priority: number; runAt?: number } }[] = [];
    const base = (await serverTimeMs(fx.client)) - 10_000;
    // Same due time for everything but the 'older' ones, which are due earlier.
    for (let i = 0; i < 10; i++) jobs.push({ data: `low-${i}`, opts: { priority: 0, runAt: base } });
    for (let i = 0; i < 10; i++) jobs.push({ data: `high-${i}`, opts: { priority: 10, runAt: base } });
    for (let i = 0; i < 5; i++) jobs.push({ data: `mid-${i}`, opts: { priority: 5, runAt: base } });
    jobs.push({ data: 'low-older', opts: { priority: 0, runAt: base - 1 } });
    jobs.push({ data: 'high-older', opts: { priority: 10, runAt: base - 1 } });
    await queue.addBulk(jobs);
    const order: string[] = [];
    const done = deferred();
    worker(
      (job) => {
        order.push(job.data);
        if (order.length === jobs.length) done.resolve();
      },
      { concurrency: 1, batch: 1 },
    );
    await within(done.promise, 5_000, 'every job to run, one at a time');
    const expected = [
      'high-older',
      ...Array.from({ length: 10 }, (_, i) => `high-${i}`),
      ...Array.from({ length: 5 }, (_, i) => `mid-${i}`),
      'low-older',
      ...Array.from({ length: 10 }, (_, i) => `low-${i}`),
    ];
    assert.deepEqual(order, expected);
  });

  test('claims up to `batch` jobs in one round trip', async () => {
    const { name, queue } = setup();
    await queue.addBulk(Array.from({ length: 25 }, (_, i) => ({ data: i })));
    const store = new RedisStore({ connection: fx.redis.url });
    open.push(store);
    const first = await store.claim(name, 10, 30_000, 3);
    assert.equal(first.jobs.length, 10);
    assert.equal(first.more, true);
    assert.deepEqual(
      first.jobs.map((j) => j.attempt),
      Array(10).fill(1),
    );
    assert.equal(new Set(first.jobs.map((j) => j.token)).size, 10);
    const rest = await store.claim(name, 100, 30_000, 3);
    assert.equal(rest.jobs.length, 15);
    assert.equal(rest.more, false);
    assert.equal(await fx.client.zcard(queueKeys('dq', name).active), 25);
  });

  test('two workers never get the same job', async () => {
    const { queue, worker } = setup<number>();
    const n = 2000;
    await queue.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { id: `j${i}` } })));
    const seen = new Map<string, number>();
    const done = deferred();
    const handler = (job: Job<number>) => {
      seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
      if (seen.size === n) done.resolve();
    };
    const w1 = worker(handler, { concurrency: 20, batch: 7 });
    const w2 = worker(handler, { concurrency: 20, batch: 7 });
    await within(done.promise, 10_000, 'two workers to run all 2000 jobs');
    await Promise.all([w1.close(), w2.close()]);
    assert.equal(seen.size, n);
    assert.deepEqual(
      [...seen.values()].filter((c) => c !== 1),
      [],
    );
    assert.equal((await queue.stats()).active, 0);
  });

  test('a producer and worker whose host clock is 10 minutes wrong still run on server time', async () => {
    const { queue, worker } = setup<string>();
    const realNow = Date.now;
    Date.now = () => realNow() + 10 * 60_000;
    try {
      const before = await serverTimeMs(fx.client);
      const r = await queue.add('skewed', { delay: 300 });
      assert.ok(r.dueAtMs >= before + 300 && r.dueAtMs < before + 300 + 1000, `due ${r.dueAtMs - before} ms after server now`);
      const ran = deferred<number>();
      worker(async () => ran.resolve(await serverTimeMs(fx.client)));
      const at = await within(ran.promise, 5_000, 'the job added with a skewed clock to run');
      assert.ok(at >= r.dueAtMs && at < r.dueAtMs + 1000, `ran ${at - r.dueAtMs} ms after due`);
    } finally {
      Date.now = realNow;
    }
  });

  test('a failing job is retried with backoff, then goes dead with its last error', async () => {
    const { queue, worker } = setup<string>();
    await queue.add('boom', { id: 'f1', attempts: 3, backoff: { type: 'fixed', delay: 20 } });
    const attempts: number[] = [];
    const dead = deferred();
    const w = worker(
      (job) => {
        attempts.push(job.attempt);
        throw new Error(`failure ${job.attempt}`);
      },
      { concurrency: 1 },
    );
    w.on('dead', () => dead.resolve());
    await within(dead.promise, 5_000, 'the failing job to go dead');
    assert.deepEqual(attempts, [1, 2, 3]);
    const info = await queue.get('f1');
    assert.equal(info?.state, 'dead');
    assert.equal(info?.attempt, 3);
    assert.match(info!.lastError!, /^Error: failure 3/);
  });

  test('close() waits for running handlers, then hands back what is still running', async () => {
    const { queue, worker } = setup<string>();
    await queue.add('quick', { id: 'quick' });
    await queue.add('stuck', { id: 'stuck' });
    const started = new Set<string>();
    const w = worker(
      async (job) => {
        started.add(job.id);
        if (job.id === 'stuck') await new Promise(() => {});
      },
      { concurrency: 2 },
    );
    const completed = new Set<string>();
    w.on('completed', (job) => completed.add(job.id));
    await until(() => started.size === 2, 'both jobs to start');
    await w.close({ timeoutMs: 200 });
    assert.ok(completed.has('quick'));
    const stuck = await queue.get('stuck');
    assert.equal(stuck?.state, 'scheduled');
    assert.equal(stuck?.attempt, 0, 'a hand-back does not spend an attempt');
    assert.equal((await queue.stats()).active, 0);
  });

  test('woken for a job or two, a worker sends one claim at a time; a backlog keeps two in flight', async () => {
    // The second claim in flight pays off only while the last one said more is due: woken for
    // one job, it found nothing and cost Redis a whole call (2.4 claims a job at 400 jobs/s).
    const store = new RedisStore({ connection: fx.redis.url });
    open.push(store);
    let inFlight = 0;
    let most = 0;
    const claim = store.claim.bind(store);
    store.claim = async (...args) => {
      most = Math.max(most, ++inFlight);
      try {
        return await claim(...args);
      } finally {
        inFlight--;
      }
    };
    const { queue, worker } = setup<number>();
    for (const [i, delay] of [150, 300, 450].entries()) await queue.add(i, { delay });
    let ran = 0;
    const w = worker(
      () => {
        ran++;
      },
      { store, concurrency: 200, batch: 100 },
    );
    await until(() => ran === 3, 'the three jobs to run');
    assert.equal(most, 1, 'one claim at a time while no backlog');

    await queue.addBulk(Array.from({ length: 3000 }, (_, i) => ({ data: i })));
    await until(() => ran === 3003, 'the backlog to run', 20_000);
    assert.equal(most, 2, 'a backlog keeps two claims in flight');
    await w.close();
  });

  test('in a backlog of handlers that return at once, every claim asks for a whole batch', async () => {
    // Two claims' jobs starting in one turn: the first job to end found a slot or two free and
    // claimed for those alone (a tenth of a dispatch's claims brought one job). Such a claim
    // waits for the turn's end, when the other handlers' slots are free too.
    const store = new RedisStore({ connection: fx.redis.url });
    open.push(store);
    const wants: number[] = [];
    const claim = store.claim.bind(store);
    store.claim = (queue, want, ...rest) => {
      wants.push(want);
      return claim(queue, want, ...rest);
    };
    const { queue, worker } = setup<number>();
    const n = 10_000;
    for (let i = 0; i < n; i += 1000) await queue.addBulk(Array.from({ length: 1000 }, (_, k) => ({ data: i + k })));
    let ran = 0;
    const w = worker(
      () => {
        ran++;
      },
      { store, concurrency: 200, batch: 100 },
    );
    await until(() => ran === n, 'the backlog to run', 30_000);
    await w.close();
    const partial = wants.filter((want) => want !== 100);
    assert.deepEqual(partial, [], `${partial.length} of ${wants.length} claims asked for part of a batch`);
  });

  test('an idle worker sends next to no commands to Redis', async () => {
    // A server of its own, so other tests' traffic does not count.
    const own = await fx.another();
    try {
      const probe = own.client();
      const name = uniqueName('idle');
      const q = new Queue(name, { connection: own.url });
      await q.add('far', { delay: 3_600_000 });
      const w = new Worker(name, () => {}, { connection: own.url });
      await until(async () => (await probe.info('commandstats')).includes('cmdstat_fcall'), 'the first claim');
      await new Promise((r) => setTimeout(r, 200));
      const calls = async () => {
        const text = await probe.info('commandstats');
        let total = 0;
        for (const m of text.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (m[1] !== 'info') total += Number(m[2]);
        return total;
      };
      const before = await calls();
      await new Promise((r) => setTimeout(r, 3000));
      const idle = (await calls()) - before;
      assert.ok(idle <= 1, `an idle worker sent ${idle} commands in 3 s`);
      await w.close();
      await q.close();
    } finally {
      await own.stop();
    }
  });
});
