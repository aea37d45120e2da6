/**
 * The worker's claim and ack through the sharding view: an unsharded queue's go straight to the
 * inner store, a sharded queue's never do, and a reshard under a running worker routes each ack
 * by its token (what it was handed out under), the fence on a miss kept on either path.
 * (A live reshard under running workers, on memory and Redis: sharded-queue.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore, Queue, ShardedStore, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { until } from '../helpers/wait.js';

/** A memory store whose claims and acks are noted, as `claim <store queue>` / `complete <store queue> <tokens>`. */
function spied(): { memory: MemoryStore; calls: string[] } {
  const memory = new MemoryStore();
  const calls: string[] = [];
  const claim = memory.claim.bind(memory);
  const complete = memory.complete.bind(memory);
  memory.claim = (q, ...rest) => {
    calls.push(`claim ${q}`);
    return claim(q, ...rest);
  };
  memory.complete = (q, leases) => {
    calls.push(`complete ${q} ${leases.map((l) => l.token).join(',')}`);
    return complete(q, leases);
  };
  return { memory, calls };
}

test('an unsharded queue: claim and ack go to its own keys, tokens as the store made them', async () => {
  const { memory, calls } = spied();
  const store = new ShardedStore(memory, false);
  const name = uniqueName('plain');
  const q = new Queue<number>(name, { store });
  await q.addBulk([1, 2, 3].map((n) => ({ data: n, opts: { id: `j${n}` } })));
  const res = await store.claim(name, 10, 30_000, 3);
  assert.equal(res.jobs.length, 3);
  assert.ok(
    res.jobs.every((j) => !j.token.includes('/')),
    'no shard tag',
  );
  assert.deepEqual(await store.complete(name, res.jobs), ['ok', 'ok', 'ok']);
  assert.deepEqual(calls, [`claim ${name}`, `complete ${name} ${res.jobs.map((j) => j.token).join(',')}`]);
  await q.close();
});

test('a sharded queue: claims go to its shards, never only to its own keys, and acks to the shard in each token', async () => {
  const { memory, calls } = spied();
  const store = new ShardedStore(memory, false);
  const name = uniqueName('split');
  const q = new Queue<number>(name, { store });
  await q.reshard(3);
  await q.addBulk(Array.from({ length: 30 }, (_, n) => ({ data: n, opts: { id: `j${n}` } })));
  calls.length = 0;
  const jobs = [];
  for (let i = 0; i < 10 && jobs.length < 30; i++) jobs.push(...(await store.claim(name, 30, 30_000, 3)).jobs);
  assert.equal(jobs.length, 30);
  const claimed = new Set(calls.filter((c) => c.startsWith('claim ')).map((c) => c.slice(6)));
  assert.ok(
    [0, 1, 2].every((i) => claimed.has(`${name}#${i}`)),
    `claims went to ${[...claimed].join(', ')}`,
  );
  assert.ok(
    jobs.every((j) => /^\d+\//.test(j.token)),
    'every token names its shard',
  );
  calls.length = 0;
  assert.deepEqual(await store.complete(name, jobs), Array(30).fill('ok'));
  const acked = calls.map((c) => c.split(' ')[1]);
  assert.ok(!acked.includes(name), `no ack to the unsharded keys: ${acked.join(', ')}`);
  assert.deepEqual(new Set(acked), new Set([0, 1, 2].map((i) => `${name}#${i}`)));
  await q.close();
});

test('a reshard under a running worker: jobs handed out before it are acked to the old keys, after it to their shards; a stale ack is still fenced', async () => {
  const { memory, calls } = spied();
  const store = new ShardedStore(memory, false);
  const name = uniqueName('reshard');
  const q = new Queue<number>(name, { store });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const ran = new Map<number, string>();
  const w = new Worker<number>(
    name,
    async (job) => {
      ran.set(job.data, job.token);
      // The first jobs hold their leases across the reshard.
      if (job.data < 5) await gate;
    },
    { store, concurrency: 10 },
  );
  await q.addBulk(Array.from({ length: 5 }, (_, n) => ({ data: n, opts: { id: `a${n}` } })));
  await until(() => ran.size === 5, 'the first jobs to start');
  await q.reshard(3);
  await q.addBulk(Array.from({ length: 15 }, (_, n) => ({ data: 5 + n, opts: { id: `b${n}` } })));
  await until(() => ran.size === 20, `every job to run (ran ${ran.size})`);
  release();
  const completed = new Set<number>();
  w.on('completed', (job) => completed.add(job.data));
  await until(() => completed.size >= 5, 'the held jobs to be acked');
  await w.close();
  for (let n = 0; n < 5; n++) assert.ok(!ran.get(n)!.includes('/'), 'handed out before the reshard: untagged');
  for (let n = 5; n < 20; n++) assert.match(ran.get(n)!, /^\d+\//, 'handed out after it: tagged');
  const acks = calls.filter((c) => c.startsWith('complete '));
  const toOwn = acks.filter((c) => c.split(' ')[1] === name).flatMap((c) => c.split(' ')[2]!.split(','));
  assert.deepEqual(new Set(toOwn), new Set([0, 1, 2, 3, 4].map((n) => ran.get(n)!)), 'the old keys got exactly the untagged acks');
  assert.equal((await q.stats()).active, 0);
  // An untagged ack whose job lives on a shard now (added again after the reshard): lease lost, not "not found".
  await q.add(99, { id: 'a0' });
  assert.deepEqual(await store.complete(name, [{ id: 'a0', token: ran.get(0)! }]), ['lease_lost']);
  await q.close();
});
