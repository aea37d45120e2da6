/**
 * A queue written by an earlier version keeps working after the upgrade. The fixture
 * (test/fixtures/upgrade-<commit>.json, made by test/fixtures/make-upgrade-fixture.mjs with that
 * version's code) is every key that version left: jobs scheduled far ahead, due, in the ready set,
 * active with leases long run out, dead with an error history, completed and kept with a result,
 * groups at their limit and paused with jobs waiting, a dedup key, a debounce burst, a recurring
 * schedule, the event stream. It is restored into a fresh server, and the current code must read
 * it, verify it clean and run every job that should run exactly once — and none that should not.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

interface Fixture {
  version: string;
  commit: string;
  redis: string;
  expect: Record<'far' | 'due' | 'ready' | 'active' | 'dead' | 'completed' | 'grouped' | 'paused' | 'debounced', string[]>;
  keys: { key: string; ttlMs: number; dump: string }[];
}

const FIXTURES = ['upgrade-03629d2.json', 'upgrade-f40019d.json'];

for (const file of FIXTURES) {
  const fixture = JSON.parse(readFileSync(new URL(`../../../test/fixtures/${file}`, import.meta.url), 'utf8')) as Fixture;
  describe(`a queue left by delayq ${fixture.version} (${fixture.commit})`, () => {
    test('is read, verifies clean, runs every job that should run once and none that should not', async (t) => {
      const admin = fx.client;
      await admin.flushall();
      for (const k of fixture.keys) {
        try {
          await admin.restore(k.key, k.ttlMs, Buffer.from(k.dump, 'base64'), 'REPLACE');
        } catch (err) {
          throw new Error(`RESTORE ${k.key}: ${(err as Error).message} (the fixture was dumped by Redis ${fixture.redis})`);
        }
      }
      const connection = fx.redis.url;
      const queue = new Queue<{ k: string }>('shop', { connection });
      // Closed when this test ends, not with the file: a worker left running would take the next
      // fixture's jobs into this test's count.
      t.after(() => queue.close());
      const e = fixture.expect;

      const before = await queue.verify();
      assert.equal(before.ok, true, JSON.stringify(before));
      const done = await queue.get(e.completed[0]!);
      assert.equal(done?.state, 'completed');
      assert.deepEqual(done?.result, { ok: true });
      const dead = await queue.get(e.dead[0]!);
      assert.equal(dead?.state, 'dead');
      assert.match(dead?.lastError ?? '', /boom/);
      assert.deepEqual(
        (await queue.schedules.list()).map((s) => s.name),
        ['nightly'],
      );

      const runs = new Map<string, number>();
      const worker = new Worker<{ k: string }>('shop', (job) => void runs.set(job.id, (runs.get(job.id) ?? 0) + 1), { connection });
      errorLog.watch(worker);
      t.after(() => worker.close());
      const shouldRun = [...e.due, ...e.ready, ...e.active, ...e.grouped, ...e.debounced];
      try {
        await until(() => shouldRun.every((id) => runs.has(id)), 'every due, ready, once-active, grouped and debounced job to run', 15_000);
      } catch (err) {
        const missing = shouldRun.filter((id) => !runs.has(id));
        const states = await Promise.all(missing.map(async (id) => `${id}: ${JSON.stringify(await queue.get(id))}`));
        throw new Error(`${(err as Error).message}; not run:\n${states.join('\n')}`);
      }
      // Nothing else is due: a short look for stray runs, then the counts.
      await until(async () => (await queue.stats()).active === 0, 'the last handlers to finish');
      for (const id of shouldRun) assert.equal(runs.get(id), 1, `${id} ran once`);
      for (const id of [...e.far, ...e.paused, ...e.dead, ...e.completed]) assert.equal(runs.has(id), false, `${id} did not run`);
      for (const id of e.far) assert.equal((await queue.get(id))?.state, 'scheduled');

      // The paused group resumes, a dead job is retried, the dedup key still holds.
      await queue.groups.resume('tenant-b');
      assert.equal(await queue.dead.retry(e.dead), 1);
      await until(() => [...e.paused, ...e.dead].every((id) => runs.get(id) === 1), 'the resumed group and the retried job to run');
      const again = await queue.add({ k: 'dedup' }, { dedup: { key: 'order-7', windowMs: 60_000 } });
      assert.equal(again.added, false);
      assert.equal(again.duplicateOf, 'dedup-1');

      await until(async () => (await queue.stats()).active === 0, 'the last handlers to finish');
      const after = await queue.verify();
      assert.equal(after.ok, true, JSON.stringify(after));
      assert.equal((await queue.stats()).dead, 0);
    });
  });
}
