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

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

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

  // Heap growth depends on the GC and the V8 version (Node 24 keeps up to ~2 MiB more of grown and
  // shrunk backing stores than Node 20 after the same work), so each test measures the same run twice:
  // once with the memory legitimately held (jobs not cancelled, dedup windows not over), which is
  // what a leak looks like and must show, and once freed, which must keep under a quarter of it.

  /** Heap bytes left behind by 2,000 jobs of 10 KB, `cancel`led or not. */
  async function payloadsRetained(cancel: boolean): Promise<number> {
    const store = new MemoryStore();
    await store.add('q', [at('first', 5_000_000)]);
    const before = heapUsed();
    // JSON.stringify makes each payload a flat string of its own, as a decoded request body is.
    for (let i = 0; i < 2000; i++)
      await store.add('q', [{ ...at(`j${i}`, 0), delayMs: 3_600_000, runAtMs: undefined, data: JSON.stringify(`${i}:${'x'.repeat(10_000)}`) }]);
    if (cancel) for (let i = 0; i < 2000; i++) await store.cancel('q', [`j${i}`]);
    const grown = heapUsed() - before;
    await store.get('q', 'first'); // the store stays reachable until it has been measured
    return grown;
  }

  test('a subscription closed leaves another of the same handlers subscribed (as two connections on Redis)', async () => {
    // The sharding view moves to a new layout by subscribing its handlers to the new shards,
    // then closing the old subscription: the retired shards' signals must still arrive.
    const now = 1_000;
    const store = new MemoryStore({ clock: () => now });
    const heard: string[] = [];
    const handlers = { onWake: (_due: number, queue: string) => heard.push(queue), onResubscribed() {}, onError() {} };
    const old = await store.subscribe(['q#0', 'q#1'], handlers);
    await store.subscribe(['q#0', 'q#1', 'q#2'], handlers);
    await old.close();
    await store.add('q#1', [at('a', now + 10)]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(heard, ['q#1']);
  });

  test("cancelled jobs' payloads are freed (2,000 jobs of 10 KB)", async () => {
    const held = await payloadsRetained(false);
    assert.ok(held > 10 * 1024 * 1024, `2,000 jobs of 10 KB held only ${mib(held)}: the measurement cannot see a leak`);
    const grown = await payloadsRetained(true);
    assert.ok(grown < held / 4, `heap grew ${mib(grown)} after cancelling them (${mib(held)} with them held)`);
  });

  /**
   * Heap bytes left behind by `keys` dedup keys of `windowMs`, each taken by an add that is then
   * cancelled, the clock moving 1 ms a key: with a short window only the last few are held at
   * any time, so what stays is the store's fixed cost, not the number of keys.
   */
  async function dedupRetained(keys: number, windowMs: number): Promise<number> {
    let now = 1_000;
    const store = new MemoryStore({ clock: () => now });
    await store.add('q', [at('first', 5_000_000)]);
    const before = heapUsed();
    for (let i = 0; i < keys; i++) {
      now++;
      await store.add('q', [at(`j${i}`, 5_000_000, { dedup: { key: `key-with-some-length-${i}`, windowMs } })]);
      await store.cancel('q', [`j${i}`]);
    }
    now += 100;
    await store.add('q', [at('last', 5_000_000)]); // expires what is left of short windows
    const grown = heapUsed() - before;
    await store.get('q', 'first');
    return grown;
  }

  test('expired dedup keys are freed (100,000 keys)', async () => {
    // About 220 B a held key (Node 20 to 24): 100,000 keys make a leak of ~20 MiB, far above the
    // ~2 MiB the GC leaves or not from one run to the next.
    const held = await dedupRetained(100_000, 3_600_000);
    assert.ok(held > 10 * 1024 * 1024, `100,000 held dedup keys took only ${mib(held)}: the measurement cannot see a leak`);
    const grown = await dedupRetained(100_000, 10);
    assert.ok(grown < held / 4, `heap grew ${mib(grown)} with 100,000 expired dedup keys (${mib(held)} with them held)`);
  });
});
