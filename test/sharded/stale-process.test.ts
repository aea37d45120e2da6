/**
 * The stale second process (issue 22): two processes with their own connections and caches on
 * one store; one obliterates or reshards a queue, and the other's next call must still land
 * where every process looks. Nothing an add answers "added" for may be orphaned (in keys no
 * layout names), no internal error may escape an add, a re-made queue must take adds, the
 * registry must name a queue that holds jobs, and a dedup window must hold across a reshard.
 * Runs on the memory store, a real redis-server and a real local Redis Cluster (3 masters),
 * with the two-process harness (test/helpers/two-processes.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ShardError } from '../../src/index.js';
import { formatLayout, parseLayout, reshardedLayout, shardIndex, shardNames } from '../../src/store/sharded/layout.js';
import { uniqueName } from '../helpers/names.js';
import { useWorld, type WorldKind } from '../helpers/two-processes.js';
import { until, within } from '../helpers/wait.js';

/** An id (or dedup key) that a layout of `count` shards routes to its shard `index`. */
function keyIn(index: number, count: number, label: string): string {
  for (let n = 0; ; n++) if (shardIndex(`${label}-${n}`, count) === index) return `${label}-${n}`;
}

for (const kind of ['memory', 'redis', 'cluster'] as WorldKind[]) {
  describe(`the stale second process [${kind}]`, () => {
    const fixture = useWorld(kind);
    const proc = fixture.proc;

    test('item 8: an add after another process obliterated a sharded queue lands where every process looks, and runs', async () => {
      const name = uniqueName('obl');
      const [a, b, c] = [proc(), proc(), proc()];
      const qa = a.queue<string>(name, { shards: 3 });
      await qa.add('before', { id: 'x' });
      // And one that does not give the option: its cached layout is the sharded one all the same.
      const plain = a.queue<string>(name);
      await b.obliterate(name);
      const added = await qa.add('after', { id: 'y' });
      assert.equal(added.added, true);
      const alsoAdded = await plain.add('after, too', { id: 'z' });
      assert.equal(alsoAdded.added, true);
      // A third process, which never saw the old layout, finds both, and its worker runs both.
      const qc = c.queue<string>(name);
      assert.equal((await qc.get('y'))?.data, 'after');
      assert.equal((await qc.get('z'))?.data, 'after, too');
      assert.equal(await qc.get('x'), null, 'obliterated');
      const ran: string[] = [];
      c.worker<string>(name, (job) => void ran.push(job.id));
      await until(() => ran.length === 2, `both jobs to run (ran ${ran.join(', ')})`, 10_000);
      assert.deepEqual(ran.sort(), ['y', 'z']);
      const report = await qc.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
    });

    test('item 8: shard numbers are never addressed by a stale cache: obliterated and made again with fewer shards, a stale add is re-routed', async () => {
      const name = uniqueName('renum');
      const [a, b, c] = [proc(), proc(), proc()];
      const qa = a.queue<number>(name, { shards: 3 });
      await qa.add(0, { id: 'first' });
      await b.obliterate(name);
      // Made again by another process, with 2 shards: the stale cache of `a` still says 3.
      const qb = b.queue<number>(name, { shards: 2 });
      await qb.add(1, { id: 'again' });
      // Routed to shard 2 by the stale 3-shard layout: a shard the new layout does not have.
      const id = keyIn(2, 3, 'stale');
      assert.equal((await qa.add(2, { id })).added, true);
      const qc = c.queue<number>(name);
      assert.equal((await qc.get(id))?.data, 2);
      assert.equal((await qc.stats()).scheduled, 2);
      const ran = new Set<string>();
      c.worker<number>(name, (job) => void ran.add(job.id));
      await until(() => ran.size === 2, `both jobs to run (ran ${[...ran].join(', ')})`, 10_000);
      assert.deepEqual([...ran].sort(), ['again', id].sort());
    });

    test('item 9: obliterate removes every shard ever used: the queue made again takes adds, and no key is left', async () => {
      const name = uniqueName('ever');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.add(1, { id: 'one' });
      a.worker<number>(name, () => {});
      await until(async () => (await qa.stats()).scheduled + (await qa.stats()).active === 0, 'the job to run');
      await qa.reshard(3);
      // The retired shards hold no job: they leave the layout (their keys stayed, retired).
      await until(async () => (await qa.shards()).draining.length === 0, 'the retired shards to drop out', 10_000);
      // (A process that gives `shards` makes the layout again when it next finds none: this one is done.)
      await a.close();
      await b.obliterate(name);
      const left = await fixture.world().keysOf(name);
      // Request memos, dedup keys and the sequence floor obliterate leaves expire by themselves
      // (docs/data-model.md).
      if (left !== undefined)
        assert.deepEqual(
          left.filter((k) => !/\}:(req|dedup):|\}:seq$/.test(k)),
          [],
          'no key of the queue or of any shard it ever had is left',
        );
      // Made again with 2 shards, by a process that never saw it: numbers 0 and 1 again.
      const qb = b.queue<number>(name, { shards: 2 });
      const ids = [keyIn(0, 2, 'new'), keyIn(1, 2, 'new')];
      for (const id of ids) assert.equal((await qb.add(1, { id })).added, true, `add of ${id}`);
      const ran = new Set<string>();
      b.worker<number>(name, (job) => void ran.add(job.id));
      await until(() => ran.size === 2, 'both jobs to run', 10_000);
    });

    test('item 9: no internal error escapes an add: a shard the layout names that refuses adds fails it with a ShardError', {
      skip: kind === 'cluster' && 'the same code path as redis; it waits out the re-route deadline',
    }, async () => {
      const name = uniqueName('refuse');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.add(0, { id: keyIn(0, 2, 'ok') });
      // Shard 1 refuses adds while the layout still names it: its keys went (an obliterate that
      // stopped half way) — every add routed to it must fail loudly, never as an internal error.
      await b.store.inner.obliterate(`${name}#1`, true);
      const started = performance.now();
      const err = await within(
        qa.add(1, { id: keyIn(1, 2, 'refused') }).then(
          () => undefined,
          (e: unknown) => e,
        ),
        15_000,
        'the refused add',
      );
      assert.ok(err instanceof ShardError, `${(err as Error)?.name}: ${(err as Error)?.message}`);
      assert.equal(err.shard, `${name}#1`);
      assert.ok(performance.now() - started < 10_000);
      // Obliterate run again (to the end): adds work again, on a queue made afresh.
      await b.obliterate(name);
      assert.equal((await qa.add(2, { id: keyIn(1, 2, 'refused') })).added, true);
    });

    test('item 14: after another process obliterates a queue, the next add of a running producer registers it again', async () => {
      for (const shards of [undefined, 3]) {
        const name = uniqueName(shards ? 'regs' : 'reg');
        const [a, b, c] = [proc(), proc(), proc()];
        const qa = a.queue<number>(name, shards ? { shards } : {});
        await qa.add(1);
        assert.ok((await c.listQueues()).includes(name));
        await b.obliterate(name);
        assert.ok(!(await c.listQueues()).includes(name), 'gone from the registry');
        await qa.add(2, { id: 'back' });
        assert.ok((await c.listQueues()).includes(name), `${shards ? 'sharded' : 'unsharded'}: registered again by the add that made its keys`);
        // The CLI's `delayq queues` and the dashboard's overview read the same registry.
        assert.ok((await c.store.queues()).includes(name));
      }
    });

    test('item 21: a dedup window holds across a reshard, for this process, a stale one and a fresh one, until it ends', async () => {
      for (const shards of [undefined, 2]) {
        const name = uniqueName(shards ? 'dds' : 'dd');
        const [a, b, c] = [proc(), proc(), proc()];
        const qa = a.queue<number>(name, shards ? { shards } : {});
        const windowMs = 600_000;
        const dedup = { key: 'order-7', windowMs };
        const first = await qa.add(1, { id: 'd1', dedup, delay: 60_000 });
        assert.equal(first.added, true);
        const qc = c.queue<number>(name);
        assert.equal((await qc.get('d1'))?.data, 1, 'c has read the layout');
        // Another process reshards: the key routes to another shard from now on.
        await b.reshard(name, 3);
        for (const [who, q, id] of [
          ['the stale process that took the key', qa, 'd2'],
          ['another stale process', qc, 'd3'],
          ['the process that resharded', b.queue<number>(name), 'd4'],
        ] as const) {
          const again = await q.add(2, { id, dedup });
          assert.deepEqual([again.added, again.duplicateOf, again.state], [false, 'd1', 'scheduled'], `${who} (${shards ?? 1} shards)`);
          assert.equal(await qc.get(id), null);
        }
        // The job runs once; its window outlives it, and the old shards stay until it ends.
        await qa.promote('d1');
        const ran: string[] = [];
        c.worker<number>(name, (job) => void ran.push(job.id));
        await until(() => ran.length === 1, 'the job to run');
        await until(async () => (await qc.stats()).active === 0, 'its ack');
        assert.ok((await b.queue(name).shards()).draining.length > 0, 'the retired shards stay while a dedup window there is open');
        const late = await qc.add(3, { id: 'd5', dedup });
        assert.deepEqual([late.added, late.duplicateOf, late.state], [false, 'd1', 'finished']);
        assert.deepEqual(ran, ['d1']);
      }
    });

    test('item 21, raced: adds of stale and fresh processes during reshards never take one dedup key twice (no moment has two shards taking adds for a key)', async () => {
      const name = uniqueName('race');
      const admin = proc();
      const producers = [proc(), proc(), proc()];
      const queues = producers.map((p) => p.queue<number>(name, { shards: 2 }));
      // The first producer's process also runs a worker: it hears the layout signal and follows a
      // reshard at once, while the others add by their cached layout until a shard refuses them.
      producers[0]!.worker<number>(name, () => {});
      await Promise.all(queues.map((q, i) => q.add(-1, { id: `warm-${i}`, delay: 600_000 })));
      let added = 0;
      let keys = 0;
      for (let round = 0; round < 3; round++) {
        const roundKeys = Array.from({ length: 30 }, (_, i) => `key-${round}-${i}`);
        keys += roundKeys.length;
        // Each producer walks the keys one add at a time, in its own order, across the reshard.
        const walks = queues.map(async (q, p) => {
          const order =
            p === 1 ? [...roundKeys].reverse() : p === 2 ? roundKeys.filter((_, i) => i % 2 === 1).concat(roundKeys.filter((_, i) => i % 2 === 0)) : roundKeys;
          for (const key of order) {
            const r = await q.add(round, { id: `${key}-${p}`, delay: 600_000, dedup: { key, windowMs: 600_000 } });
            if (r.added) added++;
          }
        });
        const reshard = (async () => {
          await until(() => added > keys - roundKeys.length + 3, 'a few adds of the round first');
          await admin.reshard(name, 3 + round);
        })();
        await Promise.all([reshard, ...walks]);
      }
      assert.equal(added, keys, 'one job per dedup key');
      assert.equal((await admin.queue(name).stats()).scheduled, keys + queues.length);
    });

    test('settings and drains by a process with a stale layout reach the shards of a reshard it has not seen (pause, retention, event stream, drain)', async () => {
      const name = uniqueName('set');
      const [a, b, d] = [proc(), proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.add(0, { id: 'x', delay: 60_000 });
      const qb = b.queue<number>(name);
      const qd = d.queue<number>(name);
      assert.equal((await qb.stats()).paused, false, 'b has read the 2-shard layout');
      assert.equal((await qd.stats()).scheduled, 1, 'd has read the 2-shard layout');
      await a.reshard(name, 3);
      // A job on a new shard, then a drain by d, which has not seen the reshard: it goes too.
      await qa.add(1, { id: 'y', delay: 60_000 });
      assert.deepEqual(await qd.drain(), { removed: 2 });
      assert.equal((await qa.stats()).scheduled, 0);
      // b has not seen the reshard: it pauses the queue, sets a retention rule, turns events on.
      assert.equal(await qb.pause(), true);
      await qb.setRetention({ completed: { count: 30 } });
      await qb.events.enable({ maxLen: 500 });
      for (const shard of (await qa.shards()).names) {
        const set = await a.store.inner.settings(shard);
        assert.deepEqual(
          [set.paused, set.retention.completed.maxCount, set.eventsMaxLen],
          [true, 10, 500],
          `${shard}: paused, keeps 30 / 3 completed jobs, events on`,
        );
      }
    });

    test('a process with a stale layout is refused a rate limit below the number of store queues, as a fresh one is, and writes nothing', async () => {
      const name = uniqueName('rsplit');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.add(0, { id: 'x', delay: 60_000 });
      const qb = b.queue<number>(name);
      assert.equal((await qb.stats()).scheduled, 1, 'b has read the 2-shard layout');
      await a.reshard(name, 4);
      // 4 shards, the 2 old ones draining (a job on one keeps their set) and the unsharded keys: 7.
      await assert.rejects(
        qb.setLimits({ rateLimit: { max: 6, perMs: 1000 } }),
        /limits.rateLimit.max must be at least 7 on this queue: it is split over its 7 store queues \(4 shards, 2 draining and the unsharded keys\)/,
      );
      await assert.rejects(qa.setLimits({ rateLimit: { max: 6, perMs: 1000 } }), /must be at least 7/);
      assert.equal((await qa.limits()).rateLimit, undefined, 'nothing written');
      for (const shard of (await qa.shards()).names) assert.equal((await a.store.inner.settings(shard)).limits.rateLimit, undefined, shard);
    });

    test("a group's own limits and pause reach its new shard: copied by a reshard, and set by a process that has not seen one", async () => {
      const name = uniqueName('grp');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.groups.setLimits('tenant-1', { concurrency: 3, rateLimit: { max: 5, perMs: 1000 } });
      await qa.groups.pause('tenant-1');
      const qb = b.queue<number>(name);
      assert.equal((await qb.groups.get('tenant-2')).paused, false, 'b has read the 2-shard layout');
      await a.reshard(name, 3);
      // Copied by the reshard to tenant-1's new shard: its new jobs wait there.
      assert.deepEqual(await qa.groups.get('tenant-1'), {
        id: 'tenant-1',
        running: 0,
        waiting: 0,
        concurrency: 3,
        rateLimit: { max: 5, perMs: 1000 },
        rate: { used: 0, heldUntilMs: undefined, nextRefillMs: undefined },
        paused: true,
      });
      // b pauses another group by the layout it has not seen change: the new shard has it too.
      assert.equal(await qb.groups.pause('tenant-2'), true);
      await a.reshard(name, 4);
      for (const g of ['tenant-1', 'tenant-2']) assert.equal((await qa.groups.get(g)).paused, true, g);
      await qa.add(1, { id: 'held', group: 'tenant-2' });
      const res = await qa.store.claim(name, 10, 30_000, 3);
      assert.deepEqual(res.jobs, [], 'a paused group hands out nothing on its new shard');
      assert.equal(await qb.groups.resume('tenant-2'), true);
      // a has no worker subscribed to the shards' signals: its claims ask every shard a second
      // after the last (ClaimPlanner's safety net).
      await until(async () => (await qa.store.claim(name, 10, 30_000, 3)).jobs.length === 1, 'the resumed group hands out its job', 10_000, 1_100);
    });

    test('issue 34 item 13: groups.list lists each group once over the whole queue, while a reshard drains and from a process whose layout is stale', async () => {
      const name = uniqueName('gls');
      const [a, b] = [proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      await qa.groups.setLimits('limited', { concurrency: 2 });
      await qa.groups.pause('paused');
      // A paused group's jobs wait on its home shard: these keep the 2-shard set draining.
      await qa.groups.pause('drain');
      await qa.add(1, { id: 'd-old', group: 'drain' });
      assert.deepEqual((await qa.groups.list()).groups.map((g) => g.id).sort(), ['drain', 'limited', 'paused'], 'before the reshard');
      // b reshards; a does not see it (its cached layout says 2 shards, none retired).
      await b.reshard(name, 3);
      const qb = b.queue<number>(name);
      assert.ok((await qb.shards()).draining.length > 0, 'the old shards drain');
      // Jobs on the new shards: one more of drain (its group has jobs on both sets now), one of a new group.
      await qb.groups.pause('new');
      await qb.add(2, { id: 'd-new', group: 'drain' });
      await qb.add(3, { id: 'n1', group: 'new' });
      // A claim puts the due jobs of paused groups in their lines (waiting), and hands out none.
      assert.deepEqual((await qb.store.claim(name, 10, 30_000, 3)).jobs, []);
      const want = ['drain', 'limited', 'new', 'paused'];
      for (const [who, q] of [
        ['the stale process', qa],
        ['the process that resharded', qb],
      ] as const) {
        const one = (await q.groups.list()).groups;
        assert.deepEqual(one.map((g) => g.id).sort(), want, `${who}: each group once`);
        for (const g of one) assert.deepEqual(g, await qb.groups.get(g.id), `${who}: ${g.id} merged over its homes`);
        assert.equal(one.find((g) => g.id === 'drain')!.waiting, 2, `${who}: drain's jobs on the old shard and the new one`);
        const ids: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await q.groups.list({ cursor, limit: 1 });
          ids.push(...page.groups.map((g) => g.id));
          cursor = page.cursor;
        } while (cursor !== undefined && ++pages < 50);
        assert.deepEqual(ids.sort(), want, `${who}: page by page, each group once`);
      }
    });

    test('a reshard whose process died half way (kill -9) loses nothing: after each step adds land where every process looks, and the next reshard goes through', async () => {
      const name = uniqueName('half');
      const [a, b, c] = [proc(), proc(), proc()];
      const qa = a.queue<number>(name, { shards: 2 });
      const dedup = { key: 'order-9', windowMs: 600_000 };
      await qa.add(0, { id: 'before', dedup, delay: 60_000 });
      const inner = b.store.inner;
      const raw = await inner.layout(name);
      const layout = parseLayout(raw);
      const next = reshardedLayout(layout, 3);
      const epoch = layout.epoch!;
      // Died after marking the new shards, before storing the layout: nothing to see.
      for (const n of shardNames(name, next.current!)) await inner.markShard(n, epoch);
      assert.equal((await qa.add(1, { id: 'one' })).added, true);
      // Died after storing the layout, before marking the old shards retired: a producer with the
      // old layout still adds there (a retired set: drained, searched) until a process reads the
      // new layout, which marks them retired first.
      assert.equal(await inner.setLayout(name, raw, formatLayout(next), epoch), true);
      assert.equal((await qa.add(2, { id: 'two' })).added, true);
      const qc = c.queue<number>(name);
      assert.deepEqual((await qc.shards()).names, shardNames(name, next.current!));
      const three = await qa.add(3, { id: 'three' });
      assert.equal(three.added, true);
      const dup = await qa.add(4, { id: 'again', dedup });
      assert.deepEqual([dup.added, dup.duplicateOf], [false, 'before']);
      // The next reshard, by yet another process, goes through.
      await b.reshard(name, 4);
      assert.equal((await qc.shards()).shards, 4);
      await qc.promote('before');
      const ran = new Set<string>();
      c.worker<number>(name, (job) => void ran.add(job.id));
      await until(() => ran.size === 4, `every job to run (ran ${[...ran].join(', ')})`, 10_000);
      assert.deepEqual([...ran].sort(), ['before', 'one', 'three', 'two']);
      const report = await qc.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
    });
  });
}
