/**
 * `delayq demo` (what `npm run demo` runs) leaves nothing behind in Redis: its queue is
 * obliterated at the end of a run, and also when the run is stopped with Ctrl-C or SIGTERM.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listQueues } from '../../src/index.js';
import { SEQ_FLOOR_TTL_MS } from '../../src/store/store.js';
import { until, within } from '../helpers/wait.js';
import { run, start } from './run-cli.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();

/**
 * The keys on the server that stay: none may. Request memos (an add's or cancel's remembered
 * answer, see docs/api.md "Lost replies") are not counted as long as they expire by themselves,
 * nor is the sequence floor an obliterate leaves (docs/data-model.md), which expires in 30 days.
 */
async function keys(): Promise<string[]> {
  const client = fx.client;
  const left: string[] = [];
  for (const key of await client.keys('*')) {
    const ttl = await client.pttl(key);
    const memo = /:req:/.test(key) && ttl > 0 && ttl <= 60_000;
    const floor = /:seq$/.test(key) && ttl > 0 && ttl <= SEQ_FLOOR_TTL_MS;
    if (!memo && !floor) left.push(`${key} (ttl ${ttl})`);
  }
  return left.sort();
}

describe('delayq demo on Redis', () => {
  test('a finished run removes its queue: no name in the registry, no key left but expiring request memos', async () => {
    const r = await run(['--redis', fx.redis.url, 'demo', '--orders', '30', '--timeout-ms', '300', '--seed', '3', '--json']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as { ok: boolean; queue: string; interrupted: boolean };
    assert.equal(report.ok, true, r.stdout);
    assert.equal(report.interrupted, false);
    assert.match(report.queue, /^demo-orders-/);
    assert.deepEqual(
      (await listQueues({ connection: fx.redis.url })).map((q) => q.name),
      [],
    );
    assert.deepEqual(await keys(), []);
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`${signal} while orders are being placed stops the run at once and still removes its queue`, async () => {
      const { child, done } = start(['--redis', fx.redis.url, 'demo', '--orders', '300', '--timeout-ms', '2000']);
      // Wait until the run has registered its queue and placed some orders.
      await until(async () => (await listQueues({ connection: fx.redis.url })).some((q) => q.stats.scheduled > 0), 'the demo placing orders');
      const sentAt = Date.now();
      child.kill(signal);
      const r = await within(done, 10_000, `the demo to exit after ${signal}`);
      assert.ok(Date.now() - sentAt < 5000, `exited ${Date.now() - sentAt} ms after ${signal}`);
      assert.equal(r.code, signal === 'SIGINT' ? 130 : 143, r.stderr);
      assert.match(r.stdout, /^interrupted after \d+ of the orders were placed; the demo queue demo-orders-\w+ was removed\n$/);
      assert.deepEqual(
        (await listQueues({ connection: fx.redis.url })).map((q) => q.name),
        [],
      );
      assert.deepEqual(await keys(), []);
    });
  }
});
