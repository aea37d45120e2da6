import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { DelayqMetrics, MemoryStore, Queue, ShardError, UnrecoverableError, ValidationError, Worker, type Store } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { parseScrape } from '../helpers/prometheus-text.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

describe('Prometheus metrics', () => {
  test('/metrics from a worker under load has every series, with sane values, and no job ids as labels', async () => {
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0 });
    const name = uniqueName('m');
    const queue = new Queue<number>(name, { connection: fx.redis.url });
    const worker = new Worker<number>(
      name,
      async (job) => {
        if (job.data % 10 === 0) throw new UnrecoverableError('poison');
        if (job.data % 10 === 1 && job.attempt === 1) throw new Error('flaky');
        await new Promise((r) => setTimeout(r, 2));
      },
      { connection: fx.redis.url, concurrency: 20, backoff: { type: 'fixed', delay: 10 } },
    );
    errorLog.watch(worker);
    metrics.observeQueue(queue).observeWorker(worker);
    const server = createServer(async (_req, res) => {
      res.setHeader('content-type', registry.contentType);
      res.end(await registry.metrics());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    try {
      const n = 500;
      // Counted from before the first add: the worker is running, and a job that ended before
      // the listeners were on would never be counted.
      let done = 0;
      worker.on('completed', () => done++);
      worker.on('dead', () => done++);
      await queue.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { delay: Math.floor(i / 5) } })));
      await queue.add(-1, { id: 'later', delay: 600_000 });
      await until(() => done === n, `every job to end (${n})`, 20_000);
      await until(async () => (await queue.stats()).active === 0, 'acks to land');
      const text = await (await fetch(url)).text();
      const m = parseScrape(text);
      const q = `queue="${name}"`;
      assert.equal(m.get(`delayq_enqueued_total{${q}}`), n + 1);
      assert.equal(m.get(`delayq_completed_total{${q}}`), n - 50);
      assert.equal(m.get(`delayq_dead_total{${q}}`), 50);
      assert.equal(m.get(`delayq_failed_total{${q}}`), 100, '50 poison + 50 flaky first tries');
      assert.equal(m.get(`delayq_retried_total{${q}}`), 50);
      assert.equal(m.get(`delayq_lease_lost_total{${q}}`) ?? 0, 0);
      assert.equal(m.get(`delayq_jobs{${q},state="scheduled"}`), 1);
      assert.equal(m.get(`delayq_jobs{${q},state="ready"}`), 0);
      assert.equal(m.get(`delayq_jobs{${q},state="active"}`), 0);
      assert.equal(m.get(`delayq_jobs{${q},state="dead"}`), 50);
      assert.equal(m.get(`delayq_oldest_ready_age_seconds{${q}}`), 0);
      // Every hand-out's lag is observed once: 500 first runs + 50 retries.
      assert.equal(m.get(`delayq_schedule_lag_seconds_count{${q}}`), n + 50);
      const lagSum = m.get(`delayq_schedule_lag_seconds_sum{${q}}`)!;
      assert.ok(lagSum >= 0 && lagSum / (n + 50) < 1, `mean lag ${lagSum / (n + 50)} s`);
      assert.ok(m.get(`delayq_schedule_lag_seconds_bucket{le="+Inf",${q}}`) === n + 50);
      assert.equal(m.get(`delayq_job_duration_seconds_count{${q}}`), n + 50);
      assert.doesNotMatch(text, /job_id|jobId|id="/, 'no job ids as labels');
    } finally {
      server.close();
      await worker.close();
      await queue.close();
    }
  });

  test('revocations (by why) and timeouts are counted; a revoked hand-out is tracked no longer', async () => {
    const store = new MemoryStore();
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry });
    const name = uniqueName('m');
    const queue = new Queue<number>(name, { store });
    const worker = new Worker<number>(name, () => new Promise(() => {}), { store, concurrency: 5, attempts: 1 });
    metrics.observeWorker(worker);
    try {
      await queue.add(1, { id: 'c' });
      await queue.add(2, { id: 'f' });
      await queue.add(3, { id: 't', timeoutMs: 50 });
      await until(() => worker.running === 3, 'three run', 5_000);
      await queue.cancel('c', { running: true });
      await queue.fail('f', { dead: true });
      await until(async () => (await queue.stats()).active === 0, 'all three ended', 5_000);
      await until(() => metrics.trackedHandOuts === 0, 'no hand-out tracked', 5_000);
      const m = parseScrape(await registry.metrics());
      const q = `queue="${name}"`;
      assert.equal(m.get(`delayq_revoked_total{${q},why="cancelled"}`), 1);
      assert.equal(m.get(`delayq_revoked_total{${q},why="failed"}`), 1);
      assert.equal(m.get(`delayq_timed_out_total{${q}}`), 1);
    } finally {
      await worker.close({ timeoutMs: 0 });
    }
  });

  test('delayq_held_jobs counts the jobs held for dependencies, on redis and in memory; a held job is in no state of delayq_jobs', async () => {
    for (const options of [{ connection: fx.redis.url }, { store: new MemoryStore() }]) {
      const registry = new Registry();
      const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0 });
      const name = uniqueName('mh');
      const queue = new Queue<string>(name, options);
      metrics.observeQueue(queue);
      const q = `queue="${name}"`;
      try {
        await queue.add('a', { id: 'a', delay: 600_000 });
        await queue.add('b', { id: 'b', dependsOn: ['a'] });
        await queue.add('c', { id: 'c', dependsOn: ['a'], onChildFailure: 'ignore' });
        let m = parseScrape(await registry.metrics());
        assert.equal(m.get(`delayq_held_jobs{${q}}`), 2);
        assert.equal(m.get(`delayq_jobs{${q},state="scheduled"}`), 1, 'only a');
        // Cancelling the dependency fails b (dead) and releases c (scheduled).
        await queue.cancel('a');
        m = parseScrape(await registry.metrics());
        assert.equal(m.get(`delayq_held_jobs{${q}}`), 0);
        assert.equal(m.get(`delayq_jobs{${q},state="scheduled"}`), 1, 'c');
        assert.equal(m.get(`delayq_jobs{${q},state="dead"}`), 1, 'b');
      } finally {
        await queue.close();
      }
    }
  });

  test("schedule lag is measured by the server's clock, not the worker host's", async () => {
    // The store's clock (the server's) is a minute behind this host's: a job due now runs now.
    const store = new MemoryStore({ clock: () => Date.now() - 60_000 });
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry });
    const name = uniqueName('m');
    const queue = new Queue<number>(name, { store });
    let done = 0;
    const worker = new Worker<number>(name, () => void done++, { store });
    metrics.observeWorker(worker);
    try {
      await queue.addBulk([{ data: 1 }, { data: 2 }, { data: 3 }]);
      await until(() => done === 3, 'three jobs to run', 5_000);
      const m = parseScrape(await registry.metrics());
      const q = `queue="${name}"`;
      assert.equal(m.get(`delayq_schedule_lag_seconds_count{${q}}`), 3);
      const lagSum = m.get(`delayq_schedule_lag_seconds_sum{${q}}`)!;
      assert.ok(lagSum < 1, `lag summed to ${lagSum} s for three jobs due now`);
    } finally {
      await worker.close();
    }
  });

  test('a job whose ack cannot be written still has its run time observed, and the metrics keep nothing of it', async () => {
    // The regression: the start of a hand-out was forgotten only on completed/failed/… events,
    // none of which comes when the ack itself fails, so the entry stayed for the process's life.
    const inner = new MemoryStore();
    const ackFails = new Error('ack failed (Redis went away)');
    const store = new Proxy(inner, {
      get(target, prop) {
        if (prop === 'complete') return async () => Promise.reject(ackFails);
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Store;
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry });
    const name = uniqueName('m');
    const queue = new Queue<number>(name, { store });
    const errors: Error[] = [];
    const settleFailed: string[] = [];
    const worker = new Worker<number>(name, () => {}, { store, leaseMs: 60_000 });
    worker.on('error', (err) => errors.push(err));
    worker.on('settleFailed', (job) => settleFailed.push(job.id));
    metrics.observeWorker(worker);
    try {
      await queue.add(1, { id: 'a' });
      await until(() => settleFailed.length === 1, 'the failed ack to be reported', 5_000);
      assert.deepEqual(settleFailed, ['a']);
      assert.equal(errors[0], ackFails);
      const m = parseScrape(await registry.metrics());
      const q = `queue="${name}"`;
      assert.equal(m.get(`delayq_job_duration_seconds_count{${q}}`), 1, 'the run time is observed once');
      assert.equal(m.get(`delayq_completed_total{${q}}`) ?? 0, 0, 'not counted as completed');
      assert.equal(metrics.trackedHandOuts, 0, 'no start time left behind');
    } finally {
      await worker.close({ timeoutMs: 1000 });
    }
  });

  test('perShard: each shard of a sharded queue has its job and lag series; an unsharded queue has none; off by default', async () => {
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0, perShard: true });
    const plainRegistry = new Registry();
    const plainMetrics = await DelayqMetrics.create({ registry: plainRegistry, statsCacheMs: 0 });
    const name = uniqueName('ms');
    const sharded = new Queue<number>(name, { connection: fx.redis.url, shards: 3 });
    const plain = new Queue<number>(uniqueName('mp'), { connection: fx.redis.url });
    try {
      await sharded.addBulk(Array.from({ length: 30 }, (_, i) => ({ data: i, opts: { delay: i % 2 === 0 ? 0 : 600_000 } })));
      await plain.add(1);
      metrics.observeQueue(sharded).observeQueue(plain);
      plainMetrics.observeQueue(sharded);
      await new Promise((r) => setTimeout(r, 20)); // the due jobs have waited a little
      const m = parseScrape(await registry.metrics());
      const figures = await sharded.shardStats();
      for (const f of figures) {
        const l = `queue="${name}",shard="${f.name}"`;
        for (const state of ['scheduled', 'ready', 'active', 'dead'] as const)
          assert.equal(m.get(`delayq_shard_jobs{${l},state="${state}"}`), f[state], `${f.name} ${state}`);
        const age = m.get(`delayq_shard_oldest_ready_age_seconds{${l}}`)!;
        if (f.ready > 0) assert.ok(age > 0 && age < 60, `${f.name} lag ${age}`);
        else assert.equal(age, 0);
      }
      assert.equal(
        figures.reduce((a, f) => a + f.scheduled, 0),
        30,
      );
      assert.equal(
        [...m.keys()].filter((k) => k.includes(`queue="${plain.name}"`) && k.startsWith('delayq_shard_')).length,
        0,
        'no shard series for an unsharded queue',
      );
      assert.equal([...parseScrape(await plainMetrics.registry.metrics()).keys()].filter((k) => k.startsWith('delayq_shard_')).length, 0, 'off by default');
    } finally {
      await Promise.all([sharded.close(), plain.close()]);
    }
  });

  test('delayq_shard_errors_total counts each ShardError a worker reports, by queue and shard', async () => {
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry });
    const name = uniqueName('me');
    const queue = new Queue<number>(name, { connection: fx.redis.url, shards: 3 });
    // Enough jobs that shard 1 holds some (with 12 random ids it held none about 1 run in 130,
    // and the rename below found no key).
    await queue.addBulk(Array.from({ length: 60 }, (_, i) => ({ data: i })));
    // Shard 1's scheduled set is set aside and a string put in its place: each claim of it
    // fails with WRONGTYPE while the other shards answer (test/sharded/sharded-queue.test.ts).
    const client = fx.redis.client();
    const key = queueKeys('dq', `${name}#1`).scheduled;
    await client.rename(key, `${key}:aside`);
    await client.set(key, 'not a sorted set');
    const reported: ShardError[] = [];
    const worker = new Worker<number>(name, () => {}, { connection: fx.redis.url });
    worker.on('error', (err) => {
      if (err instanceof ShardError) reported.push(err);
    });
    metrics.observeQueue(queue).observeWorker(worker);
    try {
      await until(() => reported.length >= 2, 'two ShardErrors', 10_000);
      await worker.close();
      const m = parseScrape(await registry.metrics());
      assert.equal(
        m.get(`delayq_shard_errors_total{queue="${name}",shard="${name}#1"}`),
        reported.length,
        'one count per error reported, the queue and worker sharing nothing',
      );
      assert.deepEqual(new Set(reported.map((e) => e.shard)), new Set([`${name}#1`]));
      assert.equal([...m.keys()].filter((k) => k.startsWith('delayq_shard_errors_total') && !k.includes(`shard="${name}#1"`)).length, 0);
    } finally {
      await worker.close();
      await queue.close();
      client.disconnect();
    }
  });
  test('groups: the limits (absent when none), counts over the groups, and only the top N groups by waiting carry a group label', async () => {
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0, topGroups: 3 });
    const name = uniqueName('mg');
    const queue = new Queue<number>(name, { connection: fx.redis.url });
    const plain = new Queue<number>(uniqueName('mg-plain'), { connection: fx.redis.url });
    metrics.observeQueue(queue).observeQueue(plain);
    try {
      await queue.setLimits({ concurrency: 100, groupConcurrency: 1 });
      // Twelve tenants with 1..12 jobs, one with a limit of its own, one paused.
      for (let t = 1; t <= 12; t++) await queue.addBulk(Array.from({ length: t }, (_, i) => ({ data: i, opts: { group: `tenant-${t}` } })));
      await queue.groups.setLimits('tenant-11', { concurrency: 3 });
      await queue.groups.pause('tenant-12');
      await queue.groups.pause('tenant-idle');
      await plain.add(1);
      // A worker's claim: each group gets its slots, the rest wait in its line.
      const handed = (await queue.store.claim(name, 100, 60_000, 1)).jobs;
      assert.equal(handed.length, 11 + 2, 'one slot per tenant, three for tenant-11, none for the paused one');

      const m = parseScrape(await registry.metrics());
      const q = `queue="${name}"`;
      const groups = (await queue.groups.list({ limit: 1000 })).groups;
      const sum = (f: (g: (typeof groups)[number]) => number) => groups.reduce((n, g) => n + f(g), 0);
      assert.equal(m.get(`delayq_concurrency_limit{${q}}`), 100);
      assert.equal(m.get(`delayq_group_concurrency_limit{${q}}`), 1);
      assert.equal(m.get(`delayq_groups_walk_complete{${q}}`), 1);
      assert.equal(m.get(`delayq_groups_listed{${q}}`), 13, 'twelve tenants and the idle paused one');
      assert.equal(m.get(`delayq_groups_paused{${q}}`), 2);
      assert.equal(m.get(`delayq_groups_running{${q}}`), 11);
      assert.equal(
        m.get(`delayq_groups_waiting{${q}}`),
        sum((g) => (g.waiting > 0 ? 1 : 0)),
      );
      assert.equal(
        m.get(`delayq_groups_at_limit{${q}}`),
        sum((g) => (g.waiting > 0 && !g.paused ? 1 : 0)),
        'every tenant not paused with jobs waiting is at its limit',
      );
      assert.equal(m.get(`delayq_group_jobs{${q},state="running"}`), 13);
      assert.equal(
        m.get(`delayq_group_jobs{${q},state="waiting"}`),
        sum((g) => g.waiting),
      );
      assert.ok(sum((g) => g.waiting) > 0);
      // The top three by waiting, and no other group label.
      const top = [...groups]
        .filter((g) => g.waiting > 0)
        .sort((a, b) => b.waiting - a.waiting || a.id.localeCompare(b.id))
        .slice(0, 3);
      assert.equal(top.length, 3);
      const labelled = [...m.keys()].filter((k) => k.includes('group="'));
      assert.deepEqual(
        labelled.sort(),
        top
          .flatMap((g) => [`delayq_top_group_jobs{${q},group="${g.id}",state="running"}`, `delayq_top_group_jobs{${q},group="${g.id}",state="waiting"}`])
          .sort(),
      );
      for (const g of top) assert.equal(m.get(`delayq_top_group_jobs{${q},group="${g.id}",state="waiting"}`), g.waiting);
      // A queue without limits or groups: no limit series, zeros, walk complete.
      const p = `queue="${plain.name}"`;
      assert.equal(m.has(`delayq_concurrency_limit{${p}}`), false);
      assert.equal(m.has(`delayq_group_concurrency_limit{${p}}`), false);
      assert.equal(m.get(`delayq_groups_listed{${p}}`), 0);
      assert.equal(m.get(`delayq_groups_walk_complete{${p}}`), 1);

      // A limit removed, a group gone from the top: their series go with them.
      await queue.setLimits({ concurrency: null });
      await queue.groups.pause('tenant-11');
      const after = parseScrape(await registry.metrics());
      assert.equal(after.has(`delayq_concurrency_limit{${q}}`), false);
      assert.equal(after.get(`delayq_group_concurrency_limit{${q}}`), 1);
      assert.equal(after.get(`delayq_groups_paused{${q}}`), 3);
    } finally {
      await Promise.all([queue.close(), plain.close()]);
    }
  });

  test('rate limits: the limits (absent when none), tokens used, the next refill, a hold and the groups held back; no group label', async () => {
    let now = Date.UTC(2026, 0, 1);
    const store = new MemoryStore({ clock: () => now });
    const name = uniqueName('mrate');
    const queue = new Queue<number>(name, { store });
    const plain = new Queue<number>(uniqueName('mrate-plain'), { store });
    try {
      const registry = new Registry();
      (await DelayqMetrics.create({ registry, statsCacheMs: 0 })).observeQueue(queue).observeQueue(plain);
      await queue.setLimits({ rateLimit: { max: 10, perMs: 60_000 }, groupRateLimit: { max: 1, perMs: 30_000 } });
      await plain.add(1);
      await queue.addBulk([
        { data: 1, opts: { cost: 4 } },
        { data: 2, opts: { group: 'tenant-a' } },
        { data: 3, opts: { group: 'tenant-a' } },
      ]);
      const claimed = await store.claim(name, 10, 60_000, 1);
      assert.equal(claimed.jobs.length, 2, "the job of no group and one of tenant-a's: its group rate limit holds the other back");
      now += 15_000;
      const m = parseScrape(await registry.metrics());
      const q = `queue="${name}"`;
      assert.equal(m.get(`delayq_rate_limit_max{${q}}`), 10);
      assert.equal(m.get(`delayq_rate_limit_window_seconds{${q}}`), 60);
      assert.equal(m.get(`delayq_group_rate_limit_max{${q}}`), 1);
      assert.equal(m.get(`delayq_group_rate_limit_window_seconds{${q}}`), 30);
      // The job of cost 4 and tenant-a's of 1: both count against the queue's limit.
      assert.equal(m.get(`delayq_rate_tokens_used{${q}}`), 5);
      assert.equal(m.get(`delayq_rate_next_refill_seconds{${q}}`), 45, 'taken 15 s ago in a window of 60 s');
      assert.equal(m.get(`delayq_rate_held{${q}}`), 0);
      assert.equal(m.get(`delayq_rate_groups_held{${q}}`), 1, 'tenant-a waits for its token');
      assert.equal(m.get(`delayq_rate_held_jobs{${q}}`), 1, "tenant-a's second job waits for its group's token");
      assert.equal([...m.keys()].filter((k) => k.startsWith('delayq_rate') && k.includes('group="')).length, 0);
      // A queue without rate limits: no limit series, zeros.
      const p = `queue="${plain.name}"`;
      for (const series of [
        'delayq_rate_limit_max',
        'delayq_rate_limit_window_seconds',
        'delayq_group_rate_limit_max',
        'delayq_group_rate_limit_window_seconds',
      ])
        assert.equal(m.has(`${series}{${p}}`), false, series);
      assert.equal(m.get(`delayq_rate_tokens_used{${p}}`), 0);
      assert.equal(m.get(`delayq_rate_next_refill_seconds{${p}}`), 0, 'no token taken: 0');
      assert.equal(m.get(`delayq_rate_held{${p}}`), 0);
      assert.equal(m.get(`delayq_rate_groups_held{${p}}`), 0);
      assert.equal(m.get(`delayq_rate_held_jobs{${p}}`), 0);

      // A RateLimitSignal of a job of no group holds the queue; the limit removed takes its series along.
      const free = claimed.jobs.find((j) => j.group === undefined)!;
      await store.release(name, [{ id: free.id, token: free.token }], 20_000);
      await queue.setLimits({ rateLimit: null });
      const held = parseScrape(await registry.metrics());
      assert.equal(held.get(`delayq_rate_held{${q}}`), 1);
      assert.equal(held.get(`delayq_rate_held_jobs{${q}}`), 2, "the queue held: every due job (the one released and tenant-a's)");
      assert.equal(held.has(`delayq_rate_limit_max{${q}}`), false);
      assert.equal(held.has(`delayq_rate_limit_window_seconds{${q}}`), false);
      assert.equal(held.get(`delayq_group_rate_limit_max{${q}}`), 1);
      now += 60_000;
      const later = parseScrape(await registry.metrics());
      assert.equal(later.get(`delayq_rate_held{${q}}`), 0, 'the hold is over');
      assert.equal(later.get(`delayq_rate_tokens_used{${q}}`), 0, 'the window passed');
      assert.equal(later.get(`delayq_rate_next_refill_seconds{${q}}`), 0);
      // delayq_rate_groups_held is the store's count (rateStatus().groupsHeld), booked by claims: not asserted here past a claim.
    } finally {
      await Promise.all([queue.close(), plain.close()]);
      await store.close();
    }
  });

  for (const kind of ['memory', 'redis'] as const) {
    test(`rate limits on a sharded queue [${kind}]: with max not a multiple of the shard count, every due job waiting for a refill is counted held (issue 34, item 14)`, async () => {
      const name = uniqueName('mrsh');
      const store = kind === 'memory' ? { store: new MemoryStore() } : { connection: fx.redis.url };
      const queue = new Queue<number>(name, { ...store, shards: 3 });
      try {
        const registry = new Registry();
        (await DelayqMetrics.create({ registry, statsCacheMs: 0 })).observeQueue(queue);
        // 10 a minute over 3 shards: each shard takes floor(10 / 3) = 3, 9 in all.
        await queue.setLimits({ rateLimit: { max: 10, perMs: 60_000 } });
        await queue.addBulk(Array.from({ length: 30 }, (_, i) => ({ data: i, opts: { id: `j${i}` } })));
        let claimed = 0;
        for (let n = -1; n !== 0; claimed += n) n = (await queue.store.claim(name, 30, 60_000, 1)).jobs.length;
        assert.equal(claimed, 9, 'each shard handed out its 3 tokens');
        const shards = await queue.shardStats();
        assert.deepEqual(
          shards.filter((s) => s.role === 'current').map((s) => s.rateHeld),
          [true, true, true],
          'every shard is out of tokens',
        );
        const m = parseScrape(await registry.metrics());
        const q = `queue="${name}"`;
        assert.equal(m.get(`delayq_rate_tokens_used{${q}}`), 9);
        assert.equal(m.get(`delayq_rate_held_jobs{${q}}`), 21, 'the 21 due jobs all wait for a refill');
        assert.equal((await queue.stats()).ready, 21);
      } finally {
        await queue.close();
      }
    });
  }

  test('groups: a scrape reads at most groupPages pages a queue and says when its figures are partial; topGroups 0 makes no group label', async () => {
    const name = uniqueName('mgp');
    const queue = new Queue<number>(name, { connection: fx.redis.url });
    try {
      const ids = Array.from({ length: 2500 }, (_, i) => `t${i}`);
      for (let i = 0; i < ids.length; i += 250) await Promise.all(ids.slice(i, i + 250).map((id) => queue.groups.pause(id)));
      await queue.addBulk(Array.from({ length: 5 }, (_, i) => ({ data: i, opts: { group: `t${i}` } })));
      await queue.store.claim(name, 10, 60_000, 1);
      // Count the pages each scrape reads.
      let calls = 0;
      const list = queue.groups.list.bind(queue.groups);
      queue.groups.list = (opts) => {
        calls++;
        return list(opts);
      };
      const bounded = new Registry();
      (await DelayqMetrics.create({ registry: bounded, statsCacheMs: 0, groupPages: 1, topGroups: 0 })).observeQueue(queue);
      const text = await bounded.metrics();
      const m = parseScrape(text);
      const q = `queue="${name}"`;
      assert.equal(calls, 1, 'one page, shared by every group series of the scrape');
      assert.equal(m.get(`delayq_groups_walk_complete{${q}}`), 0);
      const listed = m.get(`delayq_groups_listed{${q}}`)!;
      assert.ok(listed > 0 && listed < 2500, `a partial walk read ${listed} groups`);
      assert.match(
        text,
        /# HELP delayq_groups_paused Paused groups, over the groups read: at most 1 pages of 1000 a scrape, so a lower bound while delayq_groups_walk_complete is 0/,
      );
      assert.equal([...m.keys()].filter((k) => k.includes('group="')).length, 0, 'topGroups 0: no group label');

      calls = 0;
      const whole = new Registry();
      (await DelayqMetrics.create({ registry: whole, statsCacheMs: 0 })).observeQueue(queue);
      const w = parseScrape(await whole.metrics());
      assert.ok(calls >= 3 && calls <= 10, `${calls} pages for 2500 groups`);
      assert.equal(w.get(`delayq_groups_walk_complete{${q}}`), 1);
      assert.equal(w.get(`delayq_groups_listed{${q}}`), 2500);
      assert.equal(w.get(`delayq_groups_paused{${q}}`), 2500);
      assert.equal(w.get(`delayq_group_jobs{${q},state="running"}`), 0, 'every group is paused: nothing handed out');
    } finally {
      await queue.close();
    }
  });

  test('groups: topGroups and groupPages are checked, the error naming the option', async () => {
    const cases: [object, RegExp][] = [
      [{ topGroups: -1 }, /^topGroups must be a whole number from 0 to 100 \(got -1\)$/],
      [{ topGroups: 1.5 }, /^topGroups must be a whole number from 0 to 100/],
      [{ topGroups: 101 }, /^topGroups must be a whole number from 0 to 100/],
      [{ topGroups: '5' }, /^topGroups must be a whole number/],
      [{ groupPages: 0 }, /^groupPages must be a whole number from 1 to 1000 \(got 0\)$/],
      [{ groupPages: Number.NaN }, /^groupPages must be a whole number/],
    ];
    for (const [opts, message] of cases) {
      await assert.rejects(
        DelayqMetrics.create({ registry: new Registry(), ...opts }),
        (err: Error) => err instanceof ValidationError && message.test(err.message),
      );
    }
  });
});
