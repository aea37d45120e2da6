/**
 * Holds and rate limits that have ended, on a sharded queue: each store queue (the shards, those
 * draining after a reshard) keeps its own `holds` and `rated` marks, and looks at holds and rate
 * limits only while one bears on it (_holds.lua HOLDS.live, _rate.lua RL().live). Flows and a
 * RateLimitSignal worked through a live reshard made by a second process whose layout is stale:
 * every job runs once and every parent after its children; then no store queue keeps a key of
 * holds, and a backlog added afterwards goes out whole, once. On a real redis-server and a real
 * local Redis Cluster (3 masters).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RateLimitSignal } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { HOLD_SUFFIXES } from '../../src/store/redis/wire.js';
import { memberNames, parseLayout } from '../../src/store/sharded/layout.js';
import { uniqueName } from '../helpers/names.js';
import { type SimProcess, useWorld, type WorldKind } from '../helpers/two-processes.js';
import { deferred, within } from '../helpers/wait.js';

for (const kind of ['redis', 'cluster'] as WorldKind[]) {
  describe(`holds and rate limits that ended, on a sharded queue [${kind}]`, () => {
    const fixture = useWorld(kind);
    const proc = fixture.proc;

    /** Each store queue of the layout with its marks and the keys of holds it still has. */
    async function storeQueues(p: SimProcess, name: string): Promise<{ member: string; holds: string | null; rated: string | null; holdKeys: string[] }[]> {
      const members = memberNames(name, parseLayout(await p.store.inner.layout(name)));
      return Promise.all(
        members.map(async (member) => {
          const keys = queueKeys('dq', member);
          const client = (await fixture.world().nodeClient(keys.meta))!;
          const [holds, rated] = await client.hmget(keys.meta, 'holds', 'rated');
          const holdKeys: string[] = [];
          for (const suffix of Object.values(HOLD_SUFFIXES)) if ((await client.exists(keys.root + suffix)) === 1) holdKeys.push(suffix);
          return { member, holds: holds ?? null, rated: rated ?? null, holdKeys };
        }),
      );
    }

    test('flows and a RateLimitSignal through a live reshard from a stale process: each job runs once, parents after their children; then no hold is left and a backlog goes out whole', async () => {
      const name = uniqueName('marks-shards');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<string>(name, { shards: 3 });
      const FLOWS = 8;
      for (let i = 0; i < FLOWS; i++) {
        await qa.addBulk([
          { data: `c${i}a`, opts: { id: `c${i}a`, delay: 300 } },
          { data: `c${i}b`, opts: { id: `c${i}b`, delay: 300 } },
          { data: `p${i}`, opts: { id: `p${i}`, dependsOn: [`c${i}a`, `c${i}b`] } },
        ]);
      }
      await qa.add('limited', { id: 'limited', delay: 300 });
      const held = await storeQueues(a, name);
      assert.ok(
        held.some((m) => m.holds === '1' && m.holdKeys.includes('held')),
        JSON.stringify(held),
      );
      // b read the 3-shard layout; a reshards to 4 while every flow still waits on an old shard.
      const qb = b.queue<string>(name);
      assert.equal((await qb.stats()).heldJobs, FLOWS);
      await a.reshard(name, 4);
      const order: string[] = [];
      let signalled = false;
      const all = deferred();
      const total = FLOWS * 3 + 1;
      const w = b.worker<string>(
        name,
        (job) => {
          // A 429 from the service this job calls: the queue holds back 50 ms, then it runs again.
          if (job.id === 'limited' && !signalled) {
            signalled = true;
            throw new RateLimitSignal(50);
          }
          order.push(job.id);
          if (order.length === total) all.resolve();
        },
        { concurrency: 5 },
      );
      await within(all.promise, 15_000, 'every job to run');
      assert.equal(new Set(order).size, total, 'each ran once');
      for (let i = 0; i < FLOWS; i++) {
        assert.ok(order.indexOf(`p${i}`) > Math.max(order.indexOf(`c${i}a`), order.indexOf(`c${i}b`)), `p${i} after its children: ${order.join(',')}`);
      }
      const ended = await storeQueues(a, name);
      assert.deepEqual(
        ended.filter((m) => m.holdKeys.length > 0),
        [],
        'no store queue keeps a key of holds once its flows ended',
      );
      assert.ok(
        ended.some((m) => m.holds === '1'),
        'the marks stay',
      );
      assert.ok(
        ended.some((m) => m.rated === '1'),
        'the signal marked its store queue',
      );
      // A backlog through the new layout, claimed by the worker of the stale process.
      const more = deferred();
      let backlog = 0;
      const w2 = b.worker<string>(
        name,
        () => {
          if (++backlog === 100) more.resolve();
        },
        { concurrency: 10 },
      );
      await w.close();
      await qa.addBulk(Array.from({ length: 100 }, (_, i) => ({ data: `n${i}`, opts: { id: `n${i}` } })));
      await within(more.promise, 15_000, 'the backlog to run');
      await w2.close();
      assert.equal(backlog, 100);
      assert.deepEqual((await qa.verify()).problems, []);
    });
  });
}
