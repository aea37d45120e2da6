/**
 * Sharded queues on a real Redis Cluster (3 masters, no replicas, no AOF):
 * - the conformance, group, rate and flow suites on 3-shard queues, as
 *   test/conformance/sharded.test.ts runs them on the memory store and a standalone redis-server;
 * - no CROSSSLOT, ever: every public operation of Queue, Worker and Scheduler on a 3-shard queue
 *   whose shards sit on 3 different masters, with every node's CROSSSLOT counter read before
 *   and after;
 * - each shard's keys live on the master that owns its slot, and jobs really spread.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { listQueues, Queue, Scheduler, type StreamEvent, UnrecoverableError, Worker } from '../../src/index.js';
import { shardIndex } from '../../src/store/sharded/layout.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { flowConformance } from '../conformance/flows.js';
import { groupConformance } from '../conformance/groups.js';
import { rateConformance } from '../conformance/rates.js';
import { conformance, type StoreKind } from '../conformance/suite.js';
import { useErrorLog } from '../helpers/errors.js';
import { clusterErrorStats, newErrors, nodeClient, shardTag, spreadQueueName } from '../helpers/cluster-tools.js';
import { type RedisCluster, startCluster } from '../helpers/redis-cluster.js';
import { serverTimeMs, until, within } from '../helpers/wait.js';

const errorLog = useErrorLog();

// One cluster for the file, started by whichever part runs first.
let started: Promise<RedisCluster> | undefined;
const cluster = () => (started ??= startCluster(3));
after(async () => {
  await (await started)?.stop();
});

let clock: Redis | undefined;
let seeds: { host: string; port: number }[] = [];
const kind: StoreKind = {
  name: 'redis cluster, 3 shards',
  async start() {
    const c = await cluster();
    seeds = c.seeds;
    clock = nodeClient(c.nodes[0]!.port);
  },
  async stop() {
    clock?.disconnect();
  },
  options: () => ({ connection: { cluster: seeds }, shards: 3 }),
  // Every node runs on this host: any node's TIME is the clock every script reads.
  now: () => serverTimeMs(clock!),
};
conformance(kind);
groupConformance(kind);
rateConformance(kind);
flowConformance(kind);

type Kind = 'ack' | 'flaky' | 'snooze' | 'die' | 'hold' | 'far' | 'tick' | 'late';
interface P {
  kind: Kind;
  n: number;
}

/** Ids `<kind>-<i>`, i from 0, enough of them that every one of `shards` shards gets at least one. */
function spreadIds(kind: string, atLeast: number, shards: number): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < atLeast || new Set(ids.map((id) => shardIndex(id, shards))).size < shards; i++) ids.push(`${kind}-${i}`);
  return ids;
}

describe('sharded queues on a Redis Cluster (3 masters)', () => {
  test('no CROSSSLOT, ever: every public operation of Queue, Worker and Scheduler on 3 shards over 3 masters', async () => {
    const c = await cluster();
    const connection = { cluster: c.seeds };
    const { name, ports } = await spreadQueueName(c, 3, { label: 'xs' });
    const statsBefore = await clusterErrorStats(c);
    /** Every error anything reported, with where. */
    const errors: string[] = [];
    const open: { close(): Promise<void> }[] = [];
    const q = new Queue<P>(name, { connection, shards: 3 });
    open.push(q);
    /** Runs one public call; an error is recorded with the call's name and fails the test. */
    const step = async <R>(what: string, call: () => Promise<R>): Promise<R> => {
      try {
        return await within(call(), 20_000, what);
      } catch (err) {
        errors.push(`${what}: ${(err as Error).message}`);
        throw new Error(`${what} failed: ${(err as Error).message}`);
      }
    };
    try {
      await step('waitUntilReady', () => q.waitUntilReady());
      assert.deepEqual(
        (await step('shards', () => q.shards())).names,
        [0, 1, 2].map((i) => shardTag(name, i)),
      );

      // Events: on, and followed from the start in the background.
      assert.equal(await step('events.enable', () => q.events.enable({ maxLen: 10_000 })), true);
      const seen: StreamEvent[] = [];
      const stopFollowing = new AbortController();
      const following = (async () => {
        for await (const e of q.events.follow({ after: '0', signal: stopFollowing.signal })) seen.push(e);
      })().catch((err: Error) => void errors.push(`events.follow: ${err.message}`));

      await step('setRetention', () => q.setRetention({ completed: { count: 1000 }, dead: { count: 1000, ageMs: 3_600_000 } }));
      const retention = await step('retention', () => q.retention());
      assert.equal(retention.completed?.count, 1000);
      assert.equal(retention.dead?.ageMs, 3_600_000);
      await step('dead.setCaps', () => q.dead.setCaps({ maxCount: 1000 }));
      assert.equal(await step('pause', () => q.pause()), true);

      // Adds while paused: far jobs and due ones of every kind, each kind over every shard.
      const far = spreadIds('far', 30, 3);
      const due = {
        ack: spreadIds('ack', 6, 3),
        flaky: spreadIds('flaky', 3, 3),
        snooze: spreadIds('snooze', 3, 3),
        die: spreadIds('die', 6, 3),
        hold: spreadIds('hold', 3, 3),
      };
      const bulk = await step('addBulk (far)', () => q.addBulk(far.map((id, n) => ({ data: { kind: 'far' as const, n }, opts: { id, delay: 600_000 } }))));
      assert.ok(bulk.every((r) => r.added));
      for (const [kind, ids] of Object.entries(due)) {
        const res = await step(`addBulk (${kind})`, () => q.addBulk(ids.map((id, n) => ({ data: { kind: kind as Kind, n }, opts: { id, attempts: 3 } }))));
        assert.ok(res.every((r) => r.added));
      }
      const one = await step('add', () => q.add({ kind: 'far', n: -1 }, { id: 'one', delay: 600_000 }));
      assert.equal(one.added, true);
      const again = await step('add (same id)', () => q.add({ kind: 'far', n: -2 }, { id: 'one', delay: 1 }));
      assert.deepEqual([again.added, again.replaced], [false, false]);
      const replaced = await step('add (replace)', () => q.add({ kind: 'far', n: -3 }, { id: 'one', delay: 700_000, replace: true }));
      assert.deepEqual([replaced.added, replaced.replaced], [true, true]);
      assert.equal((await step('get', () => q.get('one')))?.data.n, -3);
      assert.equal(await step('get (missing)', () => q.get('nope')), null);

      // Dedup: keys that route to every shard, each added twice.
      const keys = spreadIds('key', 3, 3);
      for (const key of keys) {
        const first = await step('add (dedup)', () => q.add({ kind: 'far', n: 0 }, { id: `dd-${key}`, delay: 600_000, dedup: { key, windowMs: 600_000 } }));
        const second = await step('add (dedup again)', () =>
          q.add({ kind: 'far', n: 1 }, { id: `dd2-${key}`, delay: 600_000, dedup: { key, windowMs: 600_000 } }),
        );
        assert.equal(first.added, true);
        assert.deepEqual([second.added, second.duplicateOf], [false, `dd-${key}`]);
      }
      const dedupIds = keys.map((k) => `dd-${k}`);

      // Cancel one, cancel many (from every shard), reschedule, promote.
      assert.equal((await step('cancel', () => q.cancel(dedupIds[0]!))).cancelled, true);
      const cancelled = far.slice(0, 6);
      const many = await step('cancelMany', () => q.cancelMany([...cancelled, 'nope']));
      assert.equal(many.cancelled, 6);
      assert.equal(new Set(cancelled.map((id) => shardIndex(id, 3))).size, 3, 'the cancelled ids span every shard');
      assert.equal((await step('reschedule', () => q.reschedule(far[6]!, { delay: 500_000 }))).rescheduled, true);
      assert.equal((await step('promote', () => q.promote(far[7]!))).rescheduled, true);
      const farLeft = far.length - cancelled.length - 1; // far[7] is due now
      const scheduledNotDue = farLeft + 1 + (dedupIds.length - 1); // + 'one' + the dedup jobs left

      const dueCount = Object.values(due).flat().length + 1;
      const s1 = await step('stats', () => q.stats());
      assert.deepEqual([s1.scheduled, s1.ready, s1.active, s1.paused], [scheduledNotDue + dueCount, dueCount, 0, true]);
      const tl = await step('timeline', () => q.timeline({ bucketMs: 60_000, buckets: 20 }));
      assert.equal(
        tl.counts.reduce((a, b) => a + b, 0),
        scheduledNotDue,
      );

      /** Every page of a listing, `limit` at a time, through the cursors. */
      const listAll = async (state: 'scheduled' | 'ready' | 'active' | 'dead' | 'completed', limit: number) => {
        const ids: string[] = [];
        let cursor: string | undefined;
        let total = 0;
        for (let pages = 0; ; pages++) {
          assert.ok(pages < 100, `listing ${state} does not end`);
          const page = await step(`jobs.list ${state}`, () => q.jobs.list({ state, limit, cursor }));
          total = page.total;
          ids.push(...page.jobs.map((j) => j.id));
          if (page.cursor === undefined) break;
          cursor = page.cursor;
        }
        assert.equal(new Set(ids).size, ids.length, `${state}: no job twice over the pages`);
        assert.equal(ids.length, total, `${state}: the pages hold every job`);
        return ids;
      };
      // A listing's 'scheduled' is the jobs not due yet; the due ones are 'ready'.
      assert.equal((await listAll('scheduled', 7)).length, scheduledNotDue);
      assert.equal((await listAll('ready', 4)).length, dueCount);

      // Search: by text over every shard, a budget at a time through the cursors; by JSON path.
      // (A `limit` below the matches loses the rest: see the search test below.)
      const found: string[] = [];
      let cursor: string | undefined;
      for (let calls = 0; ; calls++) {
        assert.ok(calls < 100, 'search does not end');
        const r = await step('jobs.search', () => q.jobs.search({ text: 'far-', budget: 5, limit: 1000, cursor }));
        found.push(...r.jobs.map((j) => j.id));
        if (r.cursor === undefined) break;
        cursor = r.cursor;
      }
      assert.deepEqual(found.sort(), far.filter((id) => !cancelled.includes(id)).sort());
      const dies = await step('jobs.search (path)', () => q.jobs.search({ path: 'kind', equals: 'die', limit: 100 }));
      assert.deepEqual(dies.jobs.map((j) => j.id).sort(), [...due.die].sort());
      assert.ok((await step('listQueues', () => listQueues({ connection }))).some((x) => x.name === name));

      // A worker, and a scheduler with a recurring schedule.
      const runs = new Map<string, number>();
      const holding = new Set<string>();
      const ticks: string[] = [];
      const outcomes = { completed: [] as string[], retried: [] as string[], snoozed: [] as string[], dead: [] as string[], released: [] as string[] };
      const worker = (label: string) => {
        const w = new Worker<P>(
          name,
          async (job) => {
            const n = (runs.get(job.id) ?? 0) + 1;
            runs.set(job.id, n);
            switch (job.data.kind) {
              case 'ack':
                await job.progress({ pct: 50 });
                await job.log(`ran ${job.id}`);
                await job.extendLease(10_000);
                return { ok: job.id };
              case 'flaky':
                if (job.attempt === 1) throw new Error(`flaky ${job.id}`);
                return 'second time';
              case 'snooze':
                if (n === 1) job.snooze(50);
                return 'woke';
              case 'die':
                throw new UnrecoverableError(`boom ${job.data.n % 2 === 0 ? 'even' : 'odd'}`);
              case 'hold':
                if (n > 1) return 'held once';
                // Held until the worker closes; it gives up on its signal, and is handed back.
                holding.add(job.id);
                await new Promise((r) => job.signal.addEventListener('abort', r, { once: true }));
                job.signal.throwIfAborted();
                return 'not reached';
              case 'tick':
                ticks.push(job.id);
                return;
              default:
                return;
            }
          },
          { connection, concurrency: 20, backoff: { type: 'fixed', delay: 20 }, closeTimeoutMs: 300, leaseMs: 10_000 },
        );
        w.on('error', (e) => errors.push(`${label} error: ${e.message}`));
        w.on('settleFailed', (j, e) => errors.push(`${label} settleFailed ${j.id}: ${e.message}`));
        for (const ev of Object.keys(outcomes) as (keyof typeof outcomes)[]) w.on(ev, (j: { id: string }) => outcomes[ev].push(j.id));
        open.push(w);
        return w;
      };
      const w1 = worker('worker 1');
      const scheduler = new Scheduler(name, { connection, leadMs: 50, onError: (e) => errors.push(`scheduler: ${e.message}`) });
      open.push(scheduler);
      assert.equal(await step('resume', () => q.resume()), true);

      const settledIds = [...due.ack, ...due.flaky, ...due.snooze, far[7]!];
      await until(
        () =>
          settledIds.every((id) => outcomes.completed.includes(id)) && due.die.every((id) => outcomes.dead.includes(id)) && holding.size === due.hold.length,
        'every due job to settle (and the holds to be held)',
        15_000,
      );
      assert.deepEqual([...new Set(outcomes.retried)].sort(), [...due.flaky].sort());
      assert.deepEqual([...new Set(outcomes.snoozed)].sort(), [...due.snooze].sort());

      const ack0 = await step('get (completed)', () => q.get(due.ack[0]!));
      assert.equal(ack0?.state, 'completed');
      assert.deepEqual(ack0?.progress, { pct: 50 });
      assert.deepEqual(ack0?.logs, [`ran ${due.ack[0]}`]);
      assert.deepEqual(ack0?.result, { ok: due.ack[0] });
      assert.equal((await step('get (flaky)', () => q.get(due.flaky[0]!)))?.errors?.length, 1);
      assert.deepEqual((await listAll('active', 2)).sort(), [...due.hold].sort());
      assert.deepEqual((await listAll('dead', 4)).sort(), [...due.die].sort());
      assert.deepEqual((await listAll('completed', 5)).sort(), [...settledIds].sort());
      const s2 = await step('stats', () => q.stats());
      assert.deepEqual([s2.active, s2.dead, s2.completed, s2.paused], [due.hold.length, due.die.length, settledIds.length, false]);
      const live = await step('workers', () => q.workers());
      assert.ok(
        live.some((x) => x.id === w1.id),
        `workers() lists the worker (got ${live.map((x) => x.id).join(', ')})`,
      );

      // The dead set: list, get, retry (one, by filter, all), purge (ids, filters, all).
      const deadPage = await step('dead.list', () => q.dead.list({ limit: 100 }));
      assert.equal(deadPage.total, due.die.length);
      assert.ok(await step('dead.get', () => q.dead.get(due.die[0]!)));
      /** Retries dead jobs and waits for each to run once more and die again. */
      const retryDead = async (what: string, target: Parameters<typeof q.dead.retry>[0], ids: string[]) => {
        const was = new Map(ids.map((id) => [id, runs.get(id) ?? 0]));
        assert.equal(await step(`dead.retry (${what})`, () => q.dead.retry(target)), ids.length);
        await until(
          async () => ids.every((id) => runs.get(id) === was.get(id)! + 1) && (await q.stats()).dead === due.die.length,
          `${ids.join(', ')} to run once more and die again`,
          10_000,
        );
      };
      await retryDead('id', due.die[0]!, [due.die[0]!]);
      const even = due.die.filter((_, n) => n % 2 === 0);
      await retryDead('errorContains', { errorContains: 'even' }, even);
      await retryDead('all', { all: true }, due.die);
      assert.equal(await step('dead.purge (id)', () => q.dead.purge(due.die[1]!)), 1);
      assert.equal(await step('dead.purge (dataContains)', () => q.dead.purge({ dataContains: '"n":3' })), 1);
      const odd = due.die.filter((_, n) => n % 2 === 1 && n !== 1 && n !== 3);
      assert.equal(await step('dead.purge (errorContains)', () => q.dead.purge({ errorContains: 'odd' })), odd.length);
      assert.equal(await step('dead.purge (olderThanMs)', () => q.dead.purge({ olderThanMs: 3_600_000 })), 0);
      assert.equal(await step('dead.purge (all)', () => q.dead.purge({ all: true })), even.length);

      // Kept completed jobs: purge by id, by ids, by age, all.
      assert.equal(await step('completed.purge (id)', () => q.completed.purge(due.ack[0]!)), 1);
      assert.equal(await step('completed.purge (ids)', () => q.completed.purge([due.ack[1]!, due.ack[2]!])), 2);
      assert.equal(await step('completed.purge (olderThanMs)', () => q.completed.purge({ olderThanMs: 3_600_000 })), 0);
      assert.equal(await step('completed.purge (all)', () => q.completed.purge({ all: true })), settledIds.length - 3);

      // Recurring jobs, enqueued by the scheduler and run by the worker.
      assert.equal(await step('schedules.upsert', () => q.schedules.upsert('tick', { every: 200, data: { kind: 'tick', n: 0 } })), true);
      assert.deepEqual(
        (await step('schedules.list', () => q.schedules.list())).map((s) => s.name),
        ['tick'],
      );
      assert.equal((await step('schedules.get', () => q.schedules.get('tick')))?.every, 200);
      await until(() => ticks.length >= 2, 'the schedule to run twice', 10_000);
      assert.equal(await step('schedules.remove', () => q.schedules.remove('tick')), true);
      assert.deepEqual(await step('schedules.list', () => q.schedules.list()), []);

      // Closing hands the held jobs back.
      await within(w1.close(), 10_000, 'worker 1 to close');
      assert.deepEqual([...new Set(outcomes.released)].sort(), [...due.hold].sort());
      assert.equal((await step('stats', () => q.stats())).active, 0);
      const v1 = await step('verify', () => q.verify());
      assert.equal(v1.ok, true, v1.problems.join('; '));

      // Reshard to 5: adds go to the new shards, lookups and a new worker find the old ones.
      assert.deepEqual(await step('reshard', () => q.reshard(5)), { from: 3, to: 5, changed: true });
      const status = await step('shards', () => q.shards());
      assert.deepEqual([status.shards, status.names], [5, [3, 4, 5, 6, 7].map((i) => shardTag(name, i))]);
      assert.ok(
        status.draining.some((d) => d.name === shardTag(name, 0)),
        JSON.stringify(status.draining),
      );
      const late = spreadIds('late', 10, 5);
      const lateRes = await step('addBulk (after reshard)', () =>
        q.addBulk(late.map((id, n) => ({ data: { kind: 'late' as const, n }, opts: { id, delay: 600_000 } }))),
      );
      assert.ok(lateRes.every((r) => r.added));
      assert.equal((await step('add (existing id, old shard)', () => q.add({ kind: 'far', n: 9 }, { id: far[8]! }))).added, false);
      assert.equal((await step('get (old shard)', () => q.get(far[9]!)))?.state, 'scheduled');
      assert.equal((await step('cancel (old shard)', () => q.cancel(far[9]!))).cancelled, true);
      assert.equal((await step('reschedule (new shard)', () => q.reschedule(late[0]!, { delay: 400_000 }))).rescheduled, true);
      worker('worker 2');
      await until(() => due.hold.every((id) => runs.get(id) === 2), 'the handed-back jobs to run on the old shards', 10_000);
      const drained = await step('drain (dueBefore)', () => q.drain({ dueBefore: 1_000 }));
      assert.equal(drained.removed, 0);
      const rest = await step('drain', () => q.drain());
      assert.ok(rest.removed >= late.length, `drain removed ${rest.removed}`);
      assert.equal((await step('stats', () => q.stats())).scheduled, 0);
      const v2 = await step('verify', () => q.verify());
      assert.equal(v2.ok, true, v2.problems.join('; '));

      // The event feed saw the steps, from every shard.
      stopFollowing.abort();
      await within(following, 5_000, 'the event feed to stop');
      const names = new Set(seen.map((e) => e.event));
      for (const e of [
        'added',
        'claimed',
        'completed',
        'retried',
        'snoozed',
        'dead',
        'cancelled',
        'rescheduled',
        'released',
        'deadRetried',
        'purged',
        'paused',
        'resumed',
      ])
        assert.ok(names.has(e), `the feed has '${e}' (got ${[...names].join(', ')})`);
      const feedShards = new Set(seen.filter((e) => e.event === 'added').map((e) => shardIndex(e.id, 3)));
      assert.equal(feedShards.size, 3);
      assert.equal(await step('events.disable', () => q.events.disable()), true);

      await Promise.all(open.splice(1).map((o) => within(o.close(), 10_000, 'a worker or scheduler to close')));
      const gone = await step('obliterate', () => q.obliterate({ force: true }));
      assert.equal(gone.removed, true);
      const after = await step('stats', () => q.stats());
      assert.deepEqual([after.scheduled, after.active, after.dead, after.completed], [0, 0, 0, 0]);
    } finally {
      await Promise.all(open.map((o) => o.close().catch(() => {})));
    }

    const statsAfter = await clusterErrorStats(c);
    const grown = newErrors(statsBefore, statsAfter);
    console.log(`# no-CROSSSLOT run on shards at :${ports.join(', :')}: errors the nodes counted meanwhile: ${grown.join(', ') || 'none'}`);
    assert.deepEqual(newErrors(statsBefore, statsAfter, /CROSSSLOT/), [], 'no node counted a CROSSSLOT error');
    const slotErrors = errors.filter((e) => /CROSSSLOT|non local key|MOVED|ASK /.test(e));
    assert.deepEqual(slotErrors, [], 'no error names a slot problem');
    assert.deepEqual(errors, [], 'nothing reported an error');
  });

  test('a worker started just before the adds runs them at once, not at its idle check', async () => {
    // The Worker claims once more when its subscription goes live, for jobs whose signal was
    // published before; on a sharded queue that claim must ask every shard (the planner cannot
    // know which signals it missed), or such a job waits for the idle check (30 s).
    const c = await cluster();
    const connection = { cluster: c.seeds };
    const late: string[] = [];
    for (let round = 0; round < 8; round++) {
      const q = new Queue<number>((await spreadQueueName(c, 3, { label: 'wk' })).name, { connection, shards: 3 });
      const ran = new Set<string>();
      const w = new Worker<number>(q.name, (job) => void ran.add(job.id), { connection });
      errorLog.watch(w);
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push((await q.add(i, { id: `j${i}` })).id);
        await until(() => ran.size === ids.length, 'the jobs', 3_000).catch(() => {
          late.push(`round ${round}: ${ids.filter((id) => !ran.has(id)).join(', ')} not run within 3 s`);
        });
      } finally {
        await w.close();
        await q.obliterate({ force: true }).catch(() => {});
        await q.close();
      }
    }
    assert.deepEqual(late, []);
  });

  test('search with a limit below the matches: the cursor goes on to every match', async () => {
    // A search that reaches its limit in the middle of a scan step goes on from that step
    // (src/inspect/search-scan.ts), so the rest of the step is not dropped.
    const c = await cluster();
    const connection = { cluster: c.seeds };
    for (const shards of [1, 3]) {
      const q = new Queue<number>((await spreadQueueName(c, 1, { label: 'se' })).name, { connection, shards });
      try {
        const ids = Array.from({ length: 24 }, (_, i) => `far-${i}`);
        await q.addBulk(ids.map((id, i) => ({ data: i, opts: { id, delay: 600_000 } })));
        const found: string[] = [];
        let cursor: string | undefined;
        let calls = 0;
        do {
          const r = await q.jobs.search({ text: 'far-', limit: 5, cursor });
          found.push(...r.jobs.map((j) => j.id));
          cursor = r.cursor;
          calls++;
        } while (cursor !== undefined && calls < 100);
        assert.deepEqual([...new Set(found)].sort(), [...ids].sort(), `${shards} shard(s): found ${found.length} of 24 over ${calls} calls of limit 5`);
      } finally {
        await q.obliterate({ force: true }).catch(() => {});
        await q.close();
      }
    }
  });

  test('a claim does not wait for a slow shard: what that shard hands out later goes with the next claim, once', async () => {
    const c = await cluster();
    const connection = { cluster: c.seeds };
    const { name, ports } = await spreadQueueName(c, 3, { label: 'sl' });
    const q = new Queue<number>(name, { connection, shards: 3 });
    const store = q.store;
    const slow = nodeClient(ports[0]!);
    const probe = nodeClient(ports[0]!);
    try {
      const ids = spreadIds('s', 9, 3);
      await q.addBulk(ids.map((id, i) => ({ data: i, opts: { id } })));
      const onSlow = ids.filter((id) => shardIndex(id, 3) === 0);
      // The first shard's master stops answering for 1.5 s (as during a failover); a PING that
      // gets no answer in 100 ms shows the pause took hold before the claim goes out.
      await slow.call('CLIENT', 'PAUSE', '1500', 'ALL');
      const asleep = await Promise.race([probe.ping().then(() => false), new Promise((r) => setTimeout(() => r(true), 100))]);
      assert.equal(asleep, true, 'the master is paused');
      const sentAt = performance.now();
      const first = await store.claim(name, 100, 30_000, 3);
      const tookMs = performance.now() - sentAt;
      assert.ok(tookMs < 1_000, `the claim waited ${Math.round(tookMs)} ms for the slow shard`);
      assert.deepEqual(first.jobs.map((j) => j.id).sort(), ids.filter((id) => !onSlow.includes(id)).sort());
      assert.equal(first.more, false, 'the slow shard is not asked again at once');
      // Once the master answers, the claim that was under way has leased its jobs: the next
      // claim hands them out, and none twice.
      await within(probe.ping(), 5_000, 'the master to answer again');
      const late = await until(async () => {
        const r = await store.claim(name, 100, 30_000, 3);
        return r.jobs.length > 0 ? r : undefined;
      }, "the slow shard's jobs");
      assert.deepEqual(late.jobs.map((j) => j.id).sort(), [...onSlow].sort());
      assert.ok(late.jobs.every((j) => j.attempt === 1));
      assert.deepEqual((await store.claim(name, 100, 30_000, 3)).jobs, []);
      const all = [...first.jobs, ...late.jobs];
      assert.deepEqual(
        await store.complete(
          name,
          all.map((j) => ({ id: j.id, token: j.token })),
        ),
        all.map(() => 'ok'),
      );
      assert.equal((await q.stats()).active, 0);
    } finally {
      slow.disconnect();
      probe.disconnect();
      await q.obliterate({ force: true }).catch(() => {});
      await q.close();
    }
  });

  test("each shard's keys live on the master that owns its slot, and 300 jobs spread over every master", async () => {
    const c = await cluster();
    const connection = { cluster: c.seeds };
    const { name, ports } = await spreadQueueName(c, 3, { label: 'sp' });
    const q = new Queue<number>(name, { connection, shards: 3 });
    try {
      const res = await q.addBulk(Array.from({ length: 300 }, (_, n) => ({ data: n, opts: { delay: 600_000 } })));
      assert.ok(res.every((r) => r.added));
      await q.add(-1, { id: 'dead-one', delay: 600_000 });
      const masters = (await c.masters()).map((m) => m.port);
      const perMaster = new Map<number, number>();
      for (let i = 0; i < 3; i++) {
        const tag = shardTag(name, i);
        const owner = (await c.nodeFor(queueKeys('dq', tag).scheduled)).port;
        assert.equal(owner, ports[i]);
        const node = nodeClient(owner);
        try {
          // Every key of the shard, as the owning node holds it: one slot, and it is this node's.
          const keys: string[] = [];
          let cursor = '0';
          do {
            const [next, batch] = await node.scan(cursor, 'MATCH', `${queueKeys('dq', tag).root}*`, 'COUNT', 1000);
            keys.push(...batch);
            cursor = next;
          } while (cursor !== '0');
          assert.ok(
            keys.includes(queueKeys('dq', tag).scheduled) && keys.includes(queueKeys('dq', tag).jobs),
            `shard ${i} keys on :${owner}: ${keys.join(', ')}`,
          );
          const slots = new Set(await Promise.all(keys.map((k) => node.call('CLUSTER', 'KEYSLOT', k).then(Number))));
          assert.equal(slots.size, 1, `shard ${i}: one slot for ${keys.join(', ')}`);
          const [slot] = [...slots];
          const own = (await node.call('CLUSTER', 'COUNTKEYSINSLOT', slot!)) as number;
          assert.ok(own >= keys.length, `:${owner} holds the slot ${slot} it answers for`);
          // No other master holds any key of this shard.
          for (const other of masters.filter((p) => p !== owner)) {
            const o = nodeClient(other);
            try {
              const [, stray] = await o.scan('0', 'MATCH', `${queueKeys('dq', tag).root}*`, 'COUNT', 100_000);
              assert.deepEqual(stray, [], `:${other} holds keys of shard ${i}`);
            } finally {
              o.disconnect();
            }
          }
          const scheduled = await node.zcard(queueKeys('dq', tag).scheduled);
          const expected = res.filter((r) => shardIndex(r.id, 3) === i).length + (shardIndex('dead-one', 3) === i ? 1 : 0);
          assert.equal(scheduled, expected, `shard ${i} holds the jobs its ids route to`);
          perMaster.set(owner, (perMaster.get(owner) ?? 0) + scheduled);
        } finally {
          node.disconnect();
        }
      }
      console.log(`# 301 jobs over 3 shards: ${[...perMaster].map(([p, n]) => `:${p} ${n}`).join(', ')}`);
      assert.equal(perMaster.size, 3);
      for (const [port, n] of perMaster) assert.ok(n >= 50, `master :${port} holds only ${n} of 301 jobs`);
      assert.equal((await q.stats()).scheduled, 301);
      // shardStats names the master of each shard and counts what the master holds.
      const figures = await q.shardStats();
      for (let i = 0; i < 3; i++) {
        const f = figures.find((x) => x.name === shardTag(name, i));
        assert.equal(f?.role, 'current');
        assert.equal(f?.node?.split(':')[1], String(ports[i]), `shard ${i} is on :${ports[i]}, shardStats says ${f?.node}`);
        assert.equal(f?.scheduled, res.filter((r) => shardIndex(r.id, 3) === i).length + (shardIndex('dead-one', 3) === i ? 1 : 0));
      }
      assert.equal(figures.find((x) => x.name === name)?.role, 'home');
      const report = await q.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
      await q.obliterate({ force: true });
    } finally {
      await q.close();
    }
  });
});
