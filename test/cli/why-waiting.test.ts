/**
 * A job's page and `delayq get` say why a scheduled job is not running (issue 38): due later, the
 * queue or its group paused, its group or the queue at a limit, a rate limit holding, no live
 * worker. On a real redis-server through the CLI and the HTTP API the dashboard reads, and the
 * same answers from the memory store and a sharded queue.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { MemoryStore, Queue, type Store, Worker } from '../../src/index.js';
import { explainWait, type WaitReasonCode } from '../../src/inspect/why-waiting.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { ApiClient } from '../server/client.js';
import { run } from './run-cli.js';

const fx = useRedis();

type Options = { store: Store } | { connection: string; prefix?: string; shards?: number };

/** Codes of why `id` waits, as the library says it. */
async function codes(q: Queue<string>, id: string): Promise<WaitReasonCode[]> {
  const job = await q.get(id);
  assert.ok(job, `job ${id}`);
  return (await explainWait(q, job)).map((r) => r.code);
}

/**
 * A tenant's group paused, another's full with hung handlers and jobs behind, a job not due yet;
 * then the queue paused. Returns the queue and what to close.
 */
async function groupScene(options: Options, release: (() => void)[], open: { close(): Promise<void> }[]) {
  const name = uniqueName('why');
  const q = new Queue<string>(name, options);
  open.push(q);
  const past = (await q.stats()).nowMs - 60_000;
  await q.groups.pause('tenant-a');
  await q.groups.setLimits('tenant-b', { concurrency: 2 });
  await q.addBulk([
    { data: 'a1', opts: { id: 'a1', group: 'tenant-a', runAt: past } },
    ...['b0', 'b1', 'b2', 'b3'].map((id, i) => ({ data: id, opts: { id, group: 'tenant-b', runAt: past + i } })),
    { data: 'later', opts: { id: 'later', delay: 600_000 } },
  ]);
  const w = new Worker<string>(name, () => new Promise<void>((resolve) => release.push(resolve)), { ...options, concurrency: 10, leaseMs: 120_000 });
  open.push(w);
  await until(async () => (await q.stats()).active === 2, 'two of tenant-b running', 10_000);
  return q;
}

describe('why a job is not running', () => {
  const release: (() => void)[] = [];
  const open: { close(): Promise<void> }[] = [];
  after(async () => {
    // Handlers started after this (the jobs behind the released ones) end at once.
    release.push = (...f: (() => void)[]) => {
      for (const g of f) g();
      return 0;
    };
    for (const f of release) f();
    for (const o of open.reverse()) await o.close().catch(() => {});
  });

  for (const [kind, options] of [
    ['memory store', () => ({ store: new MemoryStore() })],
    ['redis', () => ({ connection: fx.redis.url })],
    ['sharded queue (3 shards) on redis', () => ({ connection: fx.redis.url, shards: 3 })],
  ] as const) {
    test(`${kind}: group paused, group at its limit 2/2, not due yet, queue paused`, async () => {
      const q = await groupScene(options(), release, open);
      assert.deepEqual(await codes(q, 'a1'), ['group_paused']);
      const b3 = await q.get('b3');
      const reasons = await explainWait(q, b3!);
      assert.deepEqual(reasons, [{ code: 'group_at_limit', text: 'group at its limit 2/2', running: 2, limit: 2 }]);
      assert.deepEqual(await codes(q, 'later'), ['not_due']);
      assert.deepEqual(await codes(q, 'b0'), [], 'a running job is not waiting');
      await q.pause();
      assert.deepEqual(await codes(q, 'a1'), ['queue_paused', 'group_paused']);
      assert.deepEqual(await codes(q, 'later'), ['not_due', 'queue_paused']);
    });
  }

  test('a sharded queue during a live reshard: a job left on a retired shard, and a second process with the old layout', async () => {
    const name = uniqueName('whyrs');
    const options = { connection: fx.redis.url, shards: 2 };
    const q = new Queue<string>(name, options);
    const stale = new Queue<string>(name, options);
    open.push(q, stale);
    const past = (await q.stats()).nowMs - 60_000;
    await q.groups.pause('tenant-a');
    await q.addBulk(['a1', 'a2', 'a3', 'a4'].map((id, i) => ({ data: id, opts: { id, group: 'tenant-a', runAt: past + i } })));
    await stale.get('a1');
    // No worker runs: nothing drains the retired shards, so the jobs stay where they were added.
    assert.deepEqual((await q.reshard(3)).to, 3);
    for (const queue of [q, stale]) for (const id of ['a1', 'a2', 'a3', 'a4']) assert.deepEqual(await codes(queue, id), ['group_paused', 'no_worker'], `${id}`);
    await q.add('a5', { id: 'a5', group: 'tenant-a', runAt: past });
    assert.deepEqual(await codes(stale, 'a5'), ['group_paused', 'no_worker'], 'a job added after the reshard, read by the stale process');
  });

  test('redis: the CLI (get, jobs get, --json) and the HTTP API say it, for each reason', async () => {
    const prefix = uniqueName('whyp');
    const options = { connection: fx.redis.url, prefix };
    const tenants = await groupScene(options, release, open);
    const hang = () => new Promise<void>((resolve) => release.push(resolve));
    // A queue held by its rate limit, one at its concurrency limit, one with no worker.
    const rated = new Queue<string>(uniqueName('rated'), options);
    const capped = new Queue<string>(uniqueName('capped'), options);
    const idle = new Queue<string>(uniqueName('idle'), options);
    open.push(rated, capped, idle);
    const past = (await rated.stats()).nowMs - 60_000;
    await rated.setLimits({ rateLimit: { max: 1, perMs: 600_000 } });
    await capped.setLimits({ concurrency: 1 });
    await rated.addBulk(['r1', 'r2'].map((id, i) => ({ data: id, opts: { id, runAt: past + i } })));
    await capped.addBulk(['k1', 'k2'].map((id, i) => ({ data: id, opts: { id, runAt: past + i } })));
    await idle.add('n1', { id: 'n1', runAt: past });
    for (const q of [rated, capped]) open.push(new Worker<string>(q.name, hang, { ...options, concurrency: 5, leaseMs: 120_000 }));
    await until(async () => (await rated.stats()).active === 1 && (await capped.stats()).active === 1, 'r1 and k1 running', 10_000);

    const g = ['--redis', fx.redis.url, '--prefix', prefix];
    const get = async (queue: string, id: string, ...more: string[]) => {
      const r = await run([...g, '--queue', queue, ...more, id]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    };
    assert.match(await get(tenants.name, 'a1', 'get'), /^waiting {4}group paused$/m);
    assert.match(await get(tenants.name, 'b3', 'jobs', 'get'), /^waiting {4}group at its limit 2\/2$/m);
    assert.match(await get(tenants.name, 'later', 'get'), /^waiting {4}due in (9\.\d|10\.0) min \(\d\d:\d\d:\d\d UTC\)$/m);
    assert.match(await get(rated.name, 'r2', 'get'), /^waiting {4}rate limit holding until \d\d:\d\d:\d\d UTC$/m);
    assert.match(await get(capped.name, 'k2', 'get'), /^waiting {4}queue at its concurrency limit 1\/1$/m);
    assert.match(await get(idle.name, 'n1', 'get'), /^waiting {4}no live worker$/m);
    assert.doesNotMatch(await get(tenants.name, 'b0', 'get'), /^waiting/m, 'a running job');
    const json = JSON.parse(await get(tenants.name, 'b3', '--json', 'get'));
    assert.deepEqual(json.why, [{ code: 'group_at_limit', text: 'group at its limit 2/2', running: 2, limit: 2 }]);
    assert.deepEqual(JSON.parse(await get(tenants.name, 'b0', '--json', 'get')).why, []);

    // The HTTP API the job page reads.
    const dash = createDashboard({ ...options, sampleMs: 60_000 });
    open.push(dash);
    const api = new ApiClient(dash);
    const why = async (queue: string, id: string) => {
      const a = await api.get(`/api/queues/${queue}/jobs/${id}`);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      return a.body.why.map((r: { code: string }) => r.code);
    };
    assert.deepEqual(await why(tenants.name, 'a1'), ['group_paused']);
    assert.deepEqual(await why(tenants.name, 'b3'), ['group_at_limit']);
    assert.deepEqual(await why(tenants.name, 'later'), ['not_due']);
    assert.deepEqual(await why(rated.name, 'r2'), ['rate_limited']);
    assert.deepEqual(await why(capped.name, 'k2'), ['queue_at_limit']);
    assert.deepEqual(await why(idle.name, 'n1'), ['no_worker']);
    assert.deepEqual(await why(tenants.name, 'b0'), []);

    // A group held by its own rate limit: one token in ten minutes, taken by the job running.
    const grated = new Queue<string>(uniqueName('grated'), options);
    open.push(grated);
    await grated.groups.setLimits('g', { rateLimit: { max: 1, perMs: 600_000 } });
    await grated.addBulk(['g1', 'g2'].map((id, i) => ({ data: id, opts: { id, group: 'g', runAt: past + i } })));
    open.push(new Worker<string>(grated.name, hang, { ...options, concurrency: 5, leaseMs: 120_000 }));
    await until(async () => (await grated.stats()).active === 1, 'g1 running', 10_000);
    assert.deepEqual(await why(grated.name, 'g2'), ['group_rate_limited']);
    assert.match(await get(grated.name, 'g2', 'get'), /^waiting {4}group's rate limit holding until \d\d:\d\d:\d\d UTC$/m);
  });
});
