/**
 * The forecast only a delay queue has (issue 38): how many jobs fall due in the next 1, 5 and 15
 * minutes, as `delayq_upcoming_due_jobs{within_seconds}`, on the memory store, Redis and a
 * sharded queue, and through the dashboard's /metrics.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { DelayqMetrics, MemoryStore, Queue } from '../../src/index.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { parseScrape } from '../helpers/prometheus-text.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { ApiClient } from '../server/client.js';

const fx = useRedis();

/** 1 job due now, 2 in 10 s, 3 in 2 min, 4 in 10 min, 5 in 20 min: 2, 5 and 9 fall due within 1, 5 and 15 min. */
async function fill(q: Queue<number>): Promise<void> {
  const at = [0, 10_000, 10_000, 120_000, 120_000, 120_000, ...Array(4).fill(600_000), ...Array(5).fill(1_200_000)] as number[];
  await q.addBulk(at.map((delay, i) => ({ data: i, opts: { id: `j${i}`, delay } })));
}

const forecast = (m: Map<string, number>, queue: string) =>
  ['60', '300', '900'].map((s) => m.get(`delayq_upcoming_due_jobs{queue="${queue}",within_seconds="${s}"}`));

describe('forecast metrics: jobs falling due in the next 1, 5 and 15 minutes', () => {
  for (const [kind, options] of [
    ['memory store', () => ({ store: new MemoryStore() })],
    ['redis', () => ({ connection: fx.redis.url })],
    ['sharded queue (3 shards) on redis', () => ({ connection: fx.redis.url, shards: 3 })],
  ] as const) {
    test(`${kind}: 2, 5 and 9; a job due now is ready, not in the forecast`, async () => {
      const q = new Queue<number>(uniqueName('fc'), options());
      try {
        await fill(q);
        const registry = new Registry();
        const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0 });
        metrics.observeQueue(q);
        const m = parseScrape(await registry.metrics());
        assert.deepEqual(forecast(m, q.name), [2, 5, 9]);
        assert.equal(m.get(`delayq_jobs{queue="${q.name}",state="ready"}`), 1);
        await q.promote('j1');
        assert.deepEqual(forecast(parseScrape(await registry.metrics()), q.name), [1, 4, 8], 'a promoted job leaves the forecast');
      } finally {
        await q.close();
      }
    });
  }

  test("the dashboard's /metrics has it", async () => {
    const q = new Queue<number>(uniqueName('fcd'), { connection: fx.redis.url });
    const dash = createDashboard({ connection: fx.redis.url, sampleMs: 60_000 });
    try {
      await fill(q);
      const r = await new ApiClient(dash).get('/metrics');
      assert.equal(r.status, 200);
      assert.deepEqual(forecast(parseScrape(r.body), q.name), [2, 5, 9]);
    } finally {
      await dash.close();
      await q.close();
    }
  });
});
