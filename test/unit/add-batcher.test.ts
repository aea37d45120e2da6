/**
 * The add batcher alone, with a fake `send`: what goes out in one run, and how each add of a run
 * is settled when only part of it was written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AddBatcher } from '../../src/queue/add-batcher.js';
import { type NewJob, PartialAddError, type StoredAddResult } from '../../src/store/store.js';

const job = (id: string, data = '1'): NewJob =>
  ({ id, data, priority: 0, replace: false, cost: 1, delayMs: 0, runAtMs: undefined, maxAttempts: undefined }) as unknown as NewJob;
const added = (): StoredAddResult => ({ code: 'added', state: 'scheduled', dueAtMs: 1, duplicateOf: undefined });

test('a run is cut at 1 MiB of UTF-8, as sent: non-ASCII payloads count their bytes, not their UTF-16 units', async () => {
  const runs: number[] = [];
  const b = new AddBatcher(async (jobs) => {
    runs.push(jobs.length);
    return jobs.map(added);
  }, 500);
  // 300k 'é' = 600 kB of UTF-8 each: two reach 1 MiB, the third goes in a run of its own.
  const big = 'é'.repeat(300_000);
  await Promise.all([b.add(job('a', big)), b.add(job('b', big)), b.add(job('c', big))]);
  assert.deepEqual(runs, [2, 1]);
});

test('a run is cut at 1 MiB of UTF-8 counted exactly, not at the bound of three bytes a UTF-16 unit that spares measuring small payloads', async () => {
  const runs: number[] = [];
  const b = new AddBatcher(async (jobs) => {
    runs.push(jobs.length);
    return jobs.map(added);
  }, 500);
  // 300k ASCII = 300 kB each: the bound (900 kB each) passes 1 MiB at the second, the bytes at the fourth.
  const ascii = 'a'.repeat(300_000);
  await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => b.add(job(id, ascii))));
  assert.deepEqual(runs, [4, 1]);
});

test('a run written in part (one shard failed) resolves the adds that were written and rejects only the others', async () => {
  const broken = new Error('shard 1 is down');
  const b = new AddBatcher(async (jobs) => {
    throw new PartialAddError([added(), undefined, added()].slice(0, jobs.length), new Map([[1, broken]]));
  }, 500);
  const settled = await Promise.allSettled([b.add(job('a')), b.add(job('b')), b.add(job('c'))]);
  assert.deepEqual(
    settled.map((s) => s.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  assert.equal((settled[1] as PromiseRejectedResult).reason, broken);
});

test('a run goes out as soon as it holds `max` adds, before the turn ends: Redis starts on it while the rest are made', async () => {
  const runs: number[] = [];
  const b = new AddBatcher(async (jobs) => {
    runs.push(jobs.length);
    return jobs.map(added);
  }, 100);
  const adds: Promise<StoredAddResult>[] = [];
  for (let i = 0; i < 100; i++) adds.push(b.add(job(`a${i}`)));
  assert.deepEqual(runs, [100], 'the 100th add sent the run at once');
  for (let i = 0; i < 150; i++) adds.push(b.add(job(`b${i}`)));
  assert.deepEqual(runs, [100, 100], 'each full run goes out as it fills');
  await Promise.all(adds);
  assert.deepEqual(runs, [100, 100, 50], 'the rest go out when the turn ends');
});
