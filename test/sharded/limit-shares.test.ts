/**
 * A queue limit is the queue's, whatever its layout (issue 34, item 4): the queue's concurrency
 * and rate limit are split over every store queue that hands out jobs (the current shards, the
 * unsharded keys that hold schedule jobs and the jobs from before sharding, and shards still
 * draining after a reshard), so their shares add up to the limit, never more. Checked by the
 * shares each store queue enforces (exact) and by jobs run through a live reshard made by a
 * second process (the starts counted). On the memory store, a real redis-server and a real
 * local Redis Cluster (3 masters).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ValidationError } from '../../src/index.js';
import { formatLayout, memberNames, parseLayout } from '../../src/store/sharded/layout.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { type SimProcess, useWorld, type WorldKind } from '../helpers/two-processes.js';
import { deferred, until } from '../helpers/wait.js';

for (const kind of ['memory', 'redis', 'cluster'] as WorldKind[]) {
  describe(`queue limits on a sharded queue are the queue's [${kind}]`, () => {
    const fixture = useWorld(kind);
    const proc = fixture.proc;

    /** Every store queue's enforced concurrency and rate max, as the layout stands. */
    async function shares(p: SimProcess, name: string): Promise<{ member: string; concurrency?: number; rate?: number }[]> {
      const members = memberNames(name, parseLayout(await p.store.inner.layout(name)));
      return Promise.all(
        members.map(async (member) => {
          const l = await p.store.inner.limits(member);
          return { member, concurrency: l.concurrency, rate: l.rateLimit?.max };
        }),
      );
    }
    const sum = (xs: (number | undefined)[]) => xs.reduce<number>((n, x) => n + (x ?? 0), 0);

    test('the shares add up to the limit: sharded from the start, across a reshard from a stale process, and after the old keys drain', async () => {
      const name = uniqueName('share');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 3 });
      await qa.setLimits({ concurrency: 10, rateLimit: { max: 9, perMs: 60_000 } });
      let s = await shares(a, name);
      assert.equal(s.length, 4, 'the unsharded keys and 3 shards');
      assert.equal(sum(s.map((x) => x.concurrency)), 10, JSON.stringify(s));
      assert.equal(sum(s.map((x) => x.rate)), 9, JSON.stringify(s));
      assert.ok(
        s.every((x) => (x.concurrency ?? 0) >= 1 && (x.rate ?? 0) >= 1),
        'each takes at least one',
      );
      assert.deepEqual((await qa.limits()).concurrency, 10, 'limits() answers the limit as given');
      assert.deepEqual((await qa.limits()).rateLimit, { max: 9, perMs: 60_000 });
      // A job on each old shard keeps them draining.
      for (let i = 0; i < 12; i++) await qa.add(i, { id: `old-${i}`, delay: 60_000 });
      // b has read the 3-shard layout; a reshards to 4: 3 old shards drain beside 4 new ones.
      const qb = b.queue<number>(name);
      assert.equal((await qb.stats()).scheduled, 12);
      await a.reshard(name, 4);
      s = await shares(a, name);
      assert.equal(s.length, 8, 'the unsharded keys, 4 new shards, 3 draining');
      assert.equal(sum(s.map((x) => x.concurrency)), 10, JSON.stringify(s));
      assert.equal(sum(s.map((x) => x.rate)), 9, JSON.stringify(s));
      assert.deepEqual((await qb.limits()).concurrency, 10);
      // b (stale) lowers the limit below what 8 store queues can share: refused, nothing written.
      await assert.rejects(
        qb.setLimits({ concurrency: 7 }),
        (e: Error) => e instanceof ValidationError && /limits\.concurrency must be at least 8/.test(e.message),
      );
      assert.equal(sum((await shares(a, name)).map((x) => x.concurrency)), 10, 'unchanged');
      // b changes the limit it can: every store queue's share follows.
      assert.equal(await qb.setLimits({ concurrency: 20 }), true);
      assert.equal(sum((await shares(a, name)).map((x) => x.concurrency)), 20);
      // The old shards drain: their shares go to the rest, and the sum stays the limit.
      assert.deepEqual(await qa.drain(), { removed: 12 });
      await until(async () => (await qa.shards()).draining.length === 0, 'the old shards dropped');
      s = await shares(a, name);
      assert.equal(s.length, 5);
      assert.equal(sum(s.map((x) => x.concurrency)), 20, JSON.stringify(s));
      assert.equal(sum(s.map((x) => x.rate)), 9, JSON.stringify(s));
      // Removed: removed everywhere.
      assert.equal(await qa.setLimits({ concurrency: null, rateLimit: null }), true);
      assert.ok((await shares(a, name)).every((x) => x.concurrency === undefined && x.rate === undefined));
      assert.equal((await qb.limits()).concurrency, undefined);
    });

    test('a reshard and a limit set at the same moment by two processes: the shares add up to the new limit on the new layout', async () => {
      for (let round = 0; round < 3; round++) {
        const name = uniqueName('race');
        const [a, b] = [proc(), proc()];
        const qa = a.queue<number>(name, { shards: 2 });
        await qa.setLimits({ concurrency: 12, rateLimit: { max: 12, perMs: 1000 } });
        await qa.add(1, { id: 'keep-draining', delay: 60_000 });
        const qb = b.queue<number>(name);
        assert.equal((await qb.limits()).concurrency, 12, 'b has read the layout');
        await Promise.all([a.reshard(name, 4), qb.setLimits({ concurrency: 20, rateLimit: { max: 16, perMs: 1000 } })]);
        const s = await shares(a, name);
        assert.equal(s.length, 7, 'the unsharded keys, 4 shards, 2 draining');
        assert.equal(sum(s.map((x) => x.concurrency)), 20, JSON.stringify(s));
        assert.equal(sum(s.map((x) => x.rate)), 16, JSON.stringify(s));
        assert.deepEqual([(await qa.limits()).concurrency, (await qb.limits()).rateLimit?.max], [20, 16]);
      }
    });

    test('a reshard that would leave a store queue no share is refused and writes nothing', async () => {
      const name = uniqueName('refuse');
      const a = proc();
      const q = a.queue<number>(name);
      await q.setLimits({ concurrency: 3, rateLimit: { max: 3, perMs: 1000 } });
      await q.add(1, { delay: 60_000 });
      await assert.rejects(q.reshard(3), (e: Error) => e instanceof ValidationError && /cannot be split over 4 store queues/.test(e.message));
      assert.equal((await q.shards()).shards, 1, 'still unsharded');
      assert.equal((await q.limits()).concurrency, 3);
      assert.equal((await q.reshard(2)).to, 2, 'the unsharded keys and 2 shards: one each');
      assert.deepEqual(
        (await shares(a, name)).map((x) => [x.concurrency, x.rate]),
        [
          [1, 1],
          [1, 1],
          [1, 1],
        ],
      );
    });

    test('a layout written before shares (the unsharded keys holding the whole limit) is put right by the next process that reads it', async () => {
      const name = uniqueName('legacy');
      const a = proc();
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.setLimits({ concurrency: 6, rateLimit: { max: 6, perMs: 1000 } });
      // What the version before wrote: the layout without the limit, the unsharded keys enforcing
      // all of it and each shard ceil(c / N) and floor(max / N).
      const raw = await a.store.inner.layout(name);
      const { limits: _, ...old } = JSON.parse(raw!) as Record<string, unknown>;
      assert.ok(await a.store.inner.setLayout(name, raw, JSON.stringify(old), parseLayout(raw).epoch!));
      await a.store.inner.setLimits(name, { concurrency: 6, rateLimit: { max: 6, perMs: 1000 } });
      for (const n of [0, 1]) await a.store.inner.setLimits(`${name}#${n}`, { concurrency: 3, rateLimit: { max: 3, perMs: 1000 } });
      const b = proc();
      const qb = b.queue<number>(name);
      assert.equal((await qb.limits()).concurrency, 6, 'the limit as the old version kept it');
      await until(async () => sum((await shares(b, name)).map((x) => x.concurrency)) === 6, 'the shares put right');
      assert.equal(sum((await shares(b, name)).map((x) => x.rate)), 6);
      assert.ok((parseLayout(await b.store.inner.layout(name)) as { limits?: unknown }).limits, 'the layout keeps the limit now');
      assert.equal(formatLayout(parseLayout(await b.store.inner.layout(name))), await b.store.inner.layout(name));
    });

    test('jobs through a live reshard by another process: once the jobs running at the reshard end, never more running than the concurrency limit', async () => {
      const name = uniqueName('live');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name);
      await qa.setLimits({ concurrency: 5 });
      let running = 0;
      let peak = 0;
      let counting = false;
      const ran = new Set<string>();
      const gate = deferred();
      a.worker<number>(
        name,
        async (job) => {
          running++;
          if (counting) peak = Math.max(peak, running);
          try {
            if (job.data < 0) await gate.promise;
            await new Promise((r) => setTimeout(r, 5));
          } finally {
            running--;
            ran.add(job.id);
          }
        },
        { concurrency: 30 },
      );
      // Five jobs hold the unsharded keys' whole limit while b reshards.
      await qa.addBulk(Array.from({ length: 5 }, (_, i) => ({ data: -1, opts: { id: `held-${i}` } })));
      await until(() => running === 5, 'the limit reached on the unsharded keys');
      await qa.addBulk(Array.from({ length: 20 }, (_, i) => ({ data: i, opts: { id: `before-${i}` } })));
      await b.reshard(name, 3);
      await b.queue<number>(name).addBulk(Array.from({ length: 30 }, (_, i) => ({ data: i, opts: { id: `after-${i}` } })));
      // Jobs running at the reshard count where they run (a share applies to new starts): the new
      // shards start theirs meanwhile. Once they end, every start is within the shares.
      await until(() => ran.size >= 4, 'the new shards to start theirs');
      gate.resolve();
      await until(() => [0, 1, 2, 3, 4].every((i) => ran.has(`held-${i}`)), 'the held jobs to end');
      counting = true;
      peak = running;
      await until(() => ran.size === 55, `all 55 jobs to run (ran ${ran.size})`, 20_000);
      assert.ok(peak <= 5, `at most 5 running at once after the held jobs ended, saw ${peak}`);
      assert.deepEqual(a.errors, []);
    });

    test('schedule jobs (on the unsharded keys) and shard jobs together start no more than the rate limit a window', async () => {
      const name = uniqueName('rate');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.setLimits({ rateLimit: { max: 4, perMs: 60_000 } });
      await until(async () => (await qa.shards()).draining.length === 0, 'the unsharded keys (empty) dropped from the drain');
      // Jobs where a schedule puts its jobs (the unsharded keys, each add under its guard), and jobs on the shards.
      for (let i = 0; i < 6; i++) {
        const job = newJob(`sched-${i}`);
        assert.ok(await a.store.inner.add(name, [job], { name: 'nightly', occurrenceMs: i + 1 }));
      }
      await qa.addBulk(Array.from({ length: 6 }, (_, i) => ({ data: i, opts: { id: `shard-${i}` } })));
      const started: string[] = [];
      b.worker<number>(name, (job) => void started.push(job.id), { concurrency: 20 });
      await until(() => started.length >= 4, 'the first window to start');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(started.length, 4, `4 starts in a 4-a-minute window, saw ${started.join(', ')}`);
    });
  });
}
