/**
 * The embedded store at its edges: heap order with stale entries, and memory freed for jobs
 * and dedup keys that are gone (Redis frees both by itself).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { NewJob } from '../../src/store/store.js';
import { newJob } from '../helpers/new-job.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function at(id: string, runAtMs: number, extra: Partial<NewJob> = {}): NewJob {
  return newJob(id, { data: '1', delayMs: undefined, runAtMs, ...extra });
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('memory store edges', () => {
  test('a due job is handed out although stale heap entries above it changed their due times', async () => {
    // Found by fast-check: heap entries compared on the jobs' current due times, so rescheduled
    // (stale) entries broke the heap's order and hid d and a, which were due.
    let now = 0;
    const store = new MemoryStore({ clock: () => now });
    for (const [id, due] of [
      ['g', 2],
      ['a', 2],
      ['e', 1],
      ['d', 0],
    ] as const)
      await store.add('q', [at(id, due)]);
    await store.reschedule('q', 'e', undefined, 3);
    await store.reschedule('q', 'g', undefined, 3);
    now = 2;
    const got = (await store.claim('q', 100, 1000, 3)).jobs.map((j) => j.id);
    assert.deepEqual(got, ['d', 'a']);
  });

  test("cancelled jobs' payloads are freed (2,000 jobs of 10 KB)", async () => {
    const store = new MemoryStore();
    const before = heapUsed();
    // JSON.stringify makes each payload a flat string of its own, as a decoded request body is.
    for (let i = 0; i < 2000; i++)
      await store.add('q', [{ ...at(`j${i}`, 0), delayMs: 3_600_000, runAtMs: undefined, data: JSON.stringify(`${i}:${'x'.repeat(10_000)}`) }]);
    for (let i = 0; i < 2000; i++) await store.cancel('q', [`j${i}`]);
    const grown = heapUsed() - before;
    assert.ok(grown < 2 * 1024 * 1024, `heap grew ${(grown / 1048576).toFixed(1)} MiB`);
  });

  test('expired dedup keys are freed (20,000 keys)', async () => {
    let now = 1_000;
    const store = new MemoryStore({ clock: () => now });
    const before = heapUsed();
    for (let i = 0; i < 20_000; i++) {
      await store.add('q', [at(`j${i}`, 5_000_000, { dedup: { key: `key-with-some-length-${i}`, windowMs: 10 } })]);
      await store.cancel('q', [`j${i}`]);
    }
    now += 100;
    await store.add('q', [at('last', 5_000_000)]);
    const grown = heapUsed() - before;
    assert.ok(grown < 1024 * 1024, `heap grew ${(grown / 1048576).toFixed(1)} MiB`);
  });
});
