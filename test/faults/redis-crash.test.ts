import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { WorkerFleet } from '../helpers/worker-fleet.js';

const aof = ['--appendonly', 'yes', '--appendfsync', 'always'];
const fx = useRedis({ args: aof });
const fleets: WorkerFleet[] = [];
fx.after(async () => {
  await Promise.all(fleets.map((f) => f.stopAll()));
});

describe('Redis crash', () => {
  test('kill -9 Redis (appendfsync always) mid-run and restart it on the same data: no added job is lost, workers recover by themselves', async () => {
    const first = fx.redis;
    const name = uniqueName('aof');
    const n = 400;
    const windowMs = 3000;
    const queue = new Queue<number>(name, { connection: first.url });
    await queue.events.enable({ maxLen: 1_000_000 });
    const results = await queue.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { id: `a${i}`, delay: 100 + Math.floor((i / n) * windowMs) } })));
    assert.equal(results.filter((r) => r.added).length, n, 'every add resolved');
    await queue.close();

    const fleet = new WorkerFleet({ url: first.url, queue: name, concurrency: 10, leaseMs: 1000, workMs: 5 });
    fleets.push(fleet);
    await fleet.start();
    await fleet.start();
    await until(() => fleet.completedIds().size >= 50, 'some jobs to run before the crash');
    await fx.stop({ kill9: true });
    const downAt = Date.now();
    // Down long enough that jobs fall due during the outage.
    await new Promise((r) => setTimeout(r, 1000));
    // Nothing can complete while Redis is down; count before the restart, since the workers may
    // be back at work before fx.start() has seen the server answer.
    const doneBefore = fleet.completedIds().size;
    const upAt = Date.now();
    await fx.start();
    const second = fx.redis;
    await until(() => fleet.completedIds().size > doneBefore, 'the first completion after the restart', 15_000);
    const firstAfterMs = Date.now() - upAt;

    const check = new Queue<number>(name, { connection: second.url });
    try {
      await until(
        async () => {
          const s = await check.stats();
          return s.scheduled === 0 && s.active === 0;
        },
        'every job to finish after the restart',
        30_000,
      );
      const s = await check.stats();
      assert.equal(s.dead, 0);
      // Completions recorded by the store itself (the stream is in the AOF too) cover every job.
      const raw = (await fx.client.xrange(queueKeys('dq', name).events, '-', '+')) as [string, string[]][];
      const completed = new Set(raw.filter(([, f]) => f[1] === 'completed').map(([, f]) => f[3]!));
      // A job acked just before the crash by a worker that reported it may be missing from
      // neither: each one is either recorded completed or was reported by a worker.
      const all = new Set([...completed, ...fleet.completedIds()]);
      const lost = Array.from({ length: n }, (_, i) => `a${i}`).filter((id) => !all.has(id));
      assert.deepEqual(lost, [], 'lost: 0');
      assert.equal((await check.verify()).ok, true);
      console.log(`# redis kill -9: down ${upAt - downAt} ms, first job done ${firstAfterMs} ms after restart, ${n} jobs, lost 0`);
    } finally {
      await check.close();
    }
  });
});
