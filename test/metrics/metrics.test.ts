import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { DelayqMetrics, MemoryStore, Queue, ShardError, UnrecoverableError, Worker, type Store } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

/** Parses the text format into series -> value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

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
      const m = parse(text);
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
      const m = parse(await registry.metrics());
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
      const m = parse(await registry.metrics());
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
      const m = parse(await registry.metrics());
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
      assert.equal([...parse(await plainMetrics.registry.metrics()).keys()].filter((k) => k.startsWith('delayq_shard_')).length, 0, 'off by default');
    } finally {
      await Promise.all([sharded.close(), plain.close()]);
    }
  });

  test('delayq_shard_errors_total counts each ShardError a worker reports, by queue and shard', async () => {
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry });
    const name = uniqueName('me');
    const queue = new Queue<number>(name, { connection: fx.redis.url, shards: 3 });
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ data: i })));
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
      const m = parse(await registry.metrics());
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
});
