/**
 * The on-call scene of issue 38 on a real redis-server: one tenant's group paused, another's at its
 * limit with hung handlers and jobs behind, a queue held by its rate limit. Every surface must show
 * the wait and say why: stats(), `delayq stats`, `delayq queues` (trouble first) and /metrics.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { DelayqMetrics, Queue, Worker } from '../../src/index.js';
import { queueKeys, waitingDueKey } from '../../src/store/redis/keys.js';
import { run } from '../cli/run-cli.js';
import { parseScrape } from '../helpers/prometheus-text.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

describe('held due jobs show their wait, and say why', () => {
  test('a paused group, a full group with hung handlers, a rate limit holding: stats(), the CLI and /metrics', async () => {
    const prefix = uniqueName('held');
    const tenants = `${prefix}-tenants`;
    const rated = `${prefix}-rated`;
    const calm = `${prefix}-calm`;
    const connection = { connection: fx.redis.url, prefix };
    const q = new Queue<string>(tenants, connection);
    const r = new Queue<string>(rated, connection);
    const c = new Queue<string>(calm, connection);
    const release: (() => void)[] = [];
    const workers: Worker<string>[] = [];
    try {
      const minuteAgo = (await q.stats()).nowMs - 60_000;
      await q.groups.pause('tenant-a');
      await q.groups.setLimits('tenant-b', { concurrency: 2 });
      await q.addBulk([
        ...['a1', 'a2', 'a3'].map((id) => ({ data: id, opts: { id, group: 'tenant-a', runAt: minuteAgo } })),
        ...Array.from({ length: 7 }, (_, i) => ({ data: `b${i}`, opts: { id: `b${i}`, group: 'tenant-b', runAt: minuteAgo + i } })),
      ]);
      await r.setLimits({ rateLimit: { max: 1, perMs: 600_000 } });
      await r.addBulk(['r1', 'r2', 'r3'].map((id, i) => ({ data: id, opts: { id, runAt: minuteAgo + 1_000 * i } })));
      await c.add('c', { id: 'c', delay: 600_000 });
      // Hung handlers: they end when the test lets them.
      const hang = async () => new Promise<void>((resolve) => release.push(resolve));
      workers.push(new Worker<string>(tenants, hang, { ...connection, concurrency: 10, leaseMs: 120_000 }));
      workers.push(new Worker<string>(rated, hang, { ...connection, concurrency: 10, leaseMs: 120_000 }));
      workers.push(new Worker<string>(calm, hang, { ...connection, concurrency: 1 }));
      await until(async () => (await q.stats()).active === 2 && (await r.stats()).active === 1, 'two of tenant-b and one rated job running', 10_000);

      const s = await q.stats();
      assert.equal(s.ready, 8, '3 in the paused group, 5 behind the full one');
      assert.ok((s.oldestDueAgeMs ?? 0) >= 60_000, `oldest due age ${s.oldestDueAgeMs}`);
      assert.deepEqual(
        { ...s.held, rateLimitedUntilMs: undefined },
        {
          queuePaused: false,
          queueAtLimit: false,
          pausedGroups: 1,
          pausedGroupsWaiting: 3,
          groupsAtLimit: 1,
          groupsAtLimitWaiting: 5,
          groupsComplete: true,
          rateLimitedUntilMs: undefined,
          rateLimitedGroups: 0,
        },
      );
      // A keyspace from before the index (or an index lost): the first read puts the lines back in it.
      const index = waitingDueKey(queueKeys(prefix, tenants));
      assert.equal(await fx.client.zcard(index), 2, 'both lines are in the index');
      await fx.client.del(index);
      const again = await q.stats();
      assert.equal(again.oldestDueAgeMs! - (again.nowMs - s.nowMs), s.oldestDueAgeMs, 'the same oldest due job after the index was lost');
      assert.equal(await fx.client.zcard(index), 2, 'the read put both lines back');
      const rs = await r.stats();
      assert.equal(rs.ready, 2);
      assert.ok((rs.oldestDueAgeMs ?? 0) >= 59_000, `rated: oldest due age ${rs.oldestDueAgeMs}`);
      assert.ok(rs.held.rateLimitedUntilMs !== undefined && rs.held.rateLimitedUntilMs > rs.nowMs, 'the rate limit holds until a time to come');

      // The CLI says it, in words.
      const g = ['--redis', fx.redis.url, '--prefix', prefix];
      const stats = await run([...g, '--queue', tenants, 'stats']);
      assert.equal(stats.code, 0, stats.stderr);
      assert.match(stats.stdout, /next due: now \(8 due, the oldest since 6\d\.\d s ago\)/);
      assert.match(stats.stdout, /held: 1 group paused with 3 waiting · 1 group at its limit with 5 waiting/);
      const rstats = await run([...g, '--queue', rated, 'stats']);
      assert.match(rstats.stdout, /held: rate limit holding until \d\d:\d\d:\d\d UTC/);
      const json = JSON.parse((await run([...g, '--queue', tenants, 'stats', '--json'])).stdout);
      assert.equal(json.held.groupsAtLimitWaiting, 5);
      // Trouble first: the two held queues (the longest wait first), then the calm one.
      const queues = await run([...g, 'queues']);
      assert.equal(queues.code, 0, queues.stderr);
      const order = queues.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[0]);
      assert.deepEqual(order, [tenants, rated, calm]);
      assert.match(queues.stdout, /oldest wait 6\d\.\d s {2}held: 1 group paused with 3 waiting/);

      // /metrics: the backlog alert's series sees the wait.
      const registry = new Registry();
      const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0 });
      metrics.observeQueue(q).observeQueue(r);
      const m = parseScrape(await registry.metrics());
      assert.ok((m.get(`delayq_oldest_ready_age_seconds{queue="${tenants}"}`) ?? 0) >= 60, 'tenants lag in /metrics');
      assert.ok((m.get(`delayq_oldest_ready_age_seconds{queue="${rated}"}`) ?? 0) >= 59, 'rated lag in /metrics');
      assert.equal(m.get(`delayq_groups_paused{queue="${tenants}"}`), 1);
      assert.equal(m.get(`delayq_groups_at_limit{queue="${tenants}"}`), 1);
    } finally {
      for (const f of release) f();
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all([q.close(), r.close(), c.close()]);
    }
  });
});
