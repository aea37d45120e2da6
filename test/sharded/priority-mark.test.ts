/**
 * The priority mark on a sharded queue: each store queue (the unsharded keys, every shard, shards
 * draining after a reshard) counts its own jobs with a priority that have not ended (meta
 * `ranked`, docs/data-model.md "The mark counts its jobs"). Jobs with a priority worked through a
 * live reshard made by a second process whose layout is stale still go out by priority on each
 * store queue, and once the last one ended no store queue is left marked: its next backlog is
 * claimed in one pass; each store queue indexes its own scheduled jobs with a priority, and no
 * index is left. On a real redis-server and a real local Redis Cluster (3 masters).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { memberNames, parseLayout } from '../../src/store/sharded/layout.js';
import { queueKeys, rankedKey } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { type SimProcess, useWorld, type WorldKind } from '../helpers/two-processes.js';
import { deferred, within } from '../helpers/wait.js';

for (const kind of ['redis', 'cluster'] as WorldKind[]) {
  describe(`the priority mark on a sharded queue [${kind}]`, () => {
    const fixture = useWorld(kind);
    const proc = fixture.proc;

    /** Every store queue of the layout (current and draining shards, and the unsharded keys) with its mark and count. */
    async function marks(
      p: SimProcess,
      name: string,
    ): Promise<{ member: string; prioritized: string | null; ranked: string | null; rankedSet: string | null; indexed: number }[]> {
      const members = memberNames(name, parseLayout(await p.store.inner.layout(name)));
      return Promise.all(
        members.map(async (member) => {
          const keys = queueKeys('dq', member);
          const client = (await fixture.world().nodeClient(keys.meta))!;
          const [prioritized, ranked, rankedSet] = await client.hmget(keys.meta, 'prioritized', 'ranked', 'rankedSet');
          const indexed = await client.zcard(rankedKey(keys));
          return { member, prioritized: prioritized ?? null, ranked: ranked ?? null, rankedSet: rankedSet ?? null, indexed };
        }),
      );
    }

    test('jobs with a priority through a live reshard from a stale process: every one runs once, and then no store queue is marked', async () => {
      const name = uniqueName('prio-shards');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<string>(name, { shards: 3 });
      for (let i = 0; i < 30; i++) await qa.add(`u${i}`, { id: `u${i}`, priority: 1 + (i % 3), delay: 300 });
      for (let i = 0; i < 30; i++) await qa.add(`p${i}`, { id: `p${i}`, delay: 300 });
      const before = await marks(a, name);
      assert.equal(before.filter((m) => m.prioritized === '1').length, 3, JSON.stringify(before));
      assert.equal(
        before.reduce((n, m) => n + Number(m.ranked ?? 0), 0),
        30,
        'the shards count the 30 jobs with a priority between them',
      );
      assert.deepEqual(
        before.filter((m) => m.prioritized === '1').map((m) => [m.rankedSet, m.indexed]),
        before.filter((m) => m.prioritized === '1').map((m) => ['1', Number(m.ranked)]),
        "each shard's index holds its scheduled jobs with a priority",
      );
      // b read the 3-shard layout; a reshards to 4 while every job still waits on an old shard.
      const qb = b.queue<string>(name);
      assert.equal((await qb.stats()).scheduled, 60);
      await a.reshard(name, 4);
      assert.deepEqual((await qa.verify()).problems, [], 'the old shards keep their indexes through the reshard');
      const seen = new Map<string, number>();
      const all = deferred();
      const w = b.worker<string>(
        name,
        (job) => {
          seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
          if (seen.size === 70) all.resolve();
        },
        { concurrency: 5 },
      );
      // Added through the new layout while the old shards drain.
      for (let i = 0; i < 10; i++) await qa.add(`n${i}`, { id: `n${i}`, priority: 4 });
      await within(all.promise, 15_000, 'every job to run');
      await w.close();
      assert.ok(
        [...seen.values()].every((n) => n === 1),
        'each ran once',
      );
      const left = await marks(a, name);
      assert.deepEqual(
        left.filter((m) => m.prioritized !== null || m.ranked !== null || m.rankedSet !== null || m.indexed !== 0),
        [],
        'no store queue marked or indexed once every job with a priority ended',
      );
      assert.equal((await qa.verify()).ok, true);
    });
  });
}
