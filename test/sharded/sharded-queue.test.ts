/**
 * What a sharded queue adds to the contract, on the memory store and a real redis-server:
 * resharding a live queue loses nothing, a producer or worker with an old layout finds its
 * way, adds stay idempotent and dedup stays atomic, lookups find a job wherever it is, idle
 * shards cost no claim, count caps are split over shards, listings merge in order.
 * (The conformance suite runs on 3-shard queues in test/conformance/sharded.test.ts, and on a
 * real cluster in test/redis/cluster-sharded.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { MemoryStore, Queue, RedisStore, Scheduler, ShardError, ShardedStore, type Store, ValidationError, Worker } from '../../src/index.js';
import { shardFor, shardIndex } from '../../src/store/sharded/layout.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import type { NewJob } from '../../src/store/store.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { useErrorLog } from '../helpers/errors.js';
import { until, within } from '../helpers/wait.js';

interface Kind {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Connection options of a process of its own (its own store, so its own layout cache). */
  process(): { store: Store } | { connection: string };
}

const fx = useRedis();
let memory: MemoryStore;
const kinds: Kind[] = [
  {
    name: 'memory',
    async start() {
      memory = new MemoryStore();
    },
    async stop() {},
    // A view of its own over the shared data: what a second process would have.
    process: () => ({ store: new ShardedStore(memory, false) }),
  },
  {
    name: 'redis',
    // The file's server (useRedis) is up before any test and stopped after the last.
    async start() {},
    async stop() {},
    process: () => ({ connection: fx.redis.url }),
  },
];

/** An id whose shard (of `count`) is `index`. */
function idIn(index: number, count: number, label: string): string {
  for (let n = 0; ; n++) if (shardIndex(`${label}-${n}`, count) === index) return `${label}-${n}`;
}

for (const kind of kinds) {
  describe(`sharded queues [${kind.name}]`, () => {
    let open: { close(): Promise<void> }[] = [];
    before(() => kind.start());
    after(() => kind.stop());
    afterEach(async () => {
      await Promise.all(open.map((o) => o.close()));
      open = [];
    });
    // After the hook above, so that errors from closing the test's workers count too.
    const errorLog = useErrorLog();
    function queue<T>(name: string, shards?: number): Queue<T> {
      const q = new Queue<T>(name, { ...kind.process(), ...(shards ? { shards } : {}) });
      open.push(q);
      return q;
    }
    /** A sharding view of its own (a process's) whose inner store's `method` is `wrap` of the real one. */
    function intercepted<K extends 'add' | 'cancel'>(method: K, wrap: (target: Store, original: Store[K]) => Store[K]): ShardedStore {
      const inner: Store = kind.name === 'memory' ? memory : new RedisStore({ connection: fx.redis.url });
      const view = new Proxy<Store>(inner, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== 'function') return v;
          const bound = v.bind(target);
          return prop === method ? wrap(target, bound) : bound;
        },
      });
      return new ShardedStore(view, kind.name !== 'memory');
    }
    function worker<T>(name: string, handler: (job: { id: string; data: T }) => unknown, opts: Record<string, unknown> = {}): Worker<T> {
      const w = new Worker<T>(name, handler as never, { ...kind.process(), concurrency: 20, ...opts });
      errorLog.watch(w);
      open.push(w);
      return w;
    }

    test('the layout is stored with the queue: a process without the option reads it; the option does not override it', async () => {
      const name = uniqueName('lay');
      const a = queue(name, 3);
      await a.add(1, { id: 'x' });
      assert.deepEqual(await a.shards(), { shards: 3, names: [`${name}#0`, `${name}#1`, `${name}#2`], draining: [] });
      const b = queue(name);
      assert.equal((await b.shards()).shards, 3);
      assert.equal((await b.get('x'))?.data, 1);
      const c = queue(name, 5);
      assert.equal((await c.shards()).shards, 3, 'the stored layout rules');
      await assert.rejects(a.reshard(0), /shards must be a whole number from 1 to 256/);
      assert.throws(() => new Queue(name, { ...kind.process(), shards: 1.5 }), /shards/);
    });

    test('a queue rate limit below the number of store queues is refused, by setLimits and by a reshard, and nothing changes', async () => {
      // Each store queue (the shards and the unsharded keys) takes a share of at least one token a
      // window (limit-shares.ts): with fewer tokens than store queues, one token each would let
      // more through than the limit the user set.
      const name = uniqueName('rsh');
      const a = queue<number>(name);
      await a.setLimits({ rateLimit: { max: 3, perMs: 1000 } });
      await assert.rejects(a.reshard(3), (e: Error) => e instanceof ValidationError && /rate limit of 3 cannot be split over 4 store queues/.test(e.message));
      assert.deepEqual(await a.shards(), { shards: 1, names: [name], draining: [] }, 'still unsharded');
      assert.equal((await a.reshard(2)).to, 2, 'one token a window on each of 2 shards and the unsharded keys');
      assert.deepEqual((await a.limits()).rateLimit, { max: 3, perMs: 1000 });
      await assert.rejects(
        a.setLimits({ rateLimit: { max: 2, perMs: 1000 } }),
        (e: Error) =>
          e instanceof ValidationError && /limits.rateLimit.max must be at least 3 on this queue: it is split over its 3 store queues/.test(e.message),
      );
      assert.deepEqual((await a.limits()).rateLimit, { max: 3, perMs: 1000 }, 'unchanged');
      assert.equal(await a.setLimits({ rateLimit: null }), true);
      assert.equal((await a.reshard(3)).to, 3, 'without a rate limit, any count');
    });

    test('two processes that shard a new queue at once make one layout', async () => {
      const name = uniqueName('race');
      const producers = Array.from({ length: 4 }, () => queue<number>(name, 3));
      await Promise.all(producers.map((p, i) => p.add(i, { id: `r${i}` })));
      for (const p of producers) assert.deepEqual((await p.shards()).names, [`${name}#0`, `${name}#1`, `${name}#2`]);
      assert.equal((await producers[0]!.stats()).scheduled, 4);
    });

    test('resharding a live queue (1 → 3 → 5) loses nothing: every job runs, the old shards drain and drop out', async () => {
      const name = uniqueName('live');
      const producer = queue<number>(name);
      const ran = new Map<number, number>();
      const w1 = worker<number>(name, (job) => void ran.set(job.data, (ran.get(job.data) ?? 0) + 1));
      const w2 = worker<number>(name, (job) => void ran.set(job.data, (ran.get(job.data) ?? 0) + 1));
      const admin = queue(name);
      let n = 0;
      const addSome = async (k: number) => {
        const jobs = Array.from({ length: k }, () => ({ data: n, opts: { id: `j${n++}`, delay: n % 3 === 0 ? 0 : 5 + (n % 40) } }));
        await producer.addBulk(jobs);
      };
      await addSome(200);
      // The producer's cached layout is the unsharded one: its next adds meet a retired shard and re-route.
      assert.deepEqual(await admin.reshard(3), { from: 1, to: 3, changed: true });
      await addSome(200);
      assert.equal((await admin.reshard(5)).to, 5);
      await addSome(200);
      await until(() => ran.size === n, `all ${n} jobs to run (ran ${ran.size})`, 20_000);
      assert.ok(
        [...ran.values()].every((c) => c === 1),
        'none ran twice',
      );
      await until(async () => (await admin.shards()).draining.length === 0, 'the old shards to drop out of the layout', 15_000);
      const s = await admin.shards();
      assert.equal(s.shards, 5);
      assert.equal((await admin.stats()).scheduled, 0);
      await Promise.all([w1.close(), w2.close()]);
      const report = await admin.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
      assert.equal(report.counts.bodies, 0);
    });

    test('a worker started on the unsharded queue follows a reshard at once (the layout signal)', async () => {
      const name = uniqueName('follow');
      const ran: string[] = [];
      const w = worker<string>(name, (job) => void ran.push(job.data));
      const q = queue<string>(name);
      await q.add('before', { id: 'a' });
      await until(() => ran.length === 1, 'the first job');
      await q.reshard(4);
      const t = performance.now();
      // Not due for a while: only the signal of the new shard, followed, can wake the worker in time.
      await q.add('after', { id: idIn(3, 4, 'z'), delay: 50 });
      await until(() => ran.length === 2, 'the job on a new shard', 5_000);
      assert.ok(performance.now() - t < 1_000, `ran after ${performance.now() - t} ms`);
      await w.close();
    });

    test('adds stay idempotent across a reshard; replace moves a job from a retired shard; dedup keys route the job', async () => {
      const name = uniqueName('idem');
      const q = queue<number>(name);
      await q.add(1, { id: 'keep', delay: 60_000 });
      await q.add(2, { id: 'swap', delay: 60_000 });
      await q.reshard(3);
      const again = await q.add(9, { id: 'keep', delay: 1 });
      assert.deepEqual([again.added, again.state], [false, 'scheduled']);
      const replaced = await q.add(3, { id: 'swap', delay: 120_000, replace: true });
      assert.equal(replaced.replaced, true);
      assert.equal((await q.get('swap'))?.data, 3);
      const stats = await q.stats();
      assert.equal(stats.scheduled, 2, 'one job per id');
      // Same dedup key, different ids: one shard, one atomic check.
      const first = await q.add(4, { id: 'order-1-a', dedup: { key: 'order-1', windowMs: 60_000 } });
      const dup = await q.add(5, { id: 'order-1-b', dedup: { key: 'order-1', windowMs: 60_000 } });
      assert.equal(first.added, true);
      assert.deepEqual([dup.added, dup.duplicateOf], [false, 'order-1-a']);
      // Found by id although it lives on its dedup key's shard.
      assert.equal((await q.get('order-1-a'))?.data, 4);
      assert.deepEqual(await q.cancel('order-1-a'), { id: 'order-1-a', cancelled: true, state: 'scheduled' });
      const report = await q.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
    });

    test('adds of one call during a drain, some answered by a retired shard, each write their own job (addBulk and the batcher)', async () => {
      const name = uniqueName('mix');
      const q = queue<string>(name);
      await q.add('old-1', { id: 'order:1', delay: 60_000 });
      await q.add('old-3', { id: 'order:3', delay: 60_000 });
      await q.reshard(2);
      const bulk = await q.addBulk([
        { data: 'new-1', opts: { id: 'order:1', delay: 60_000 } },
        { data: 'new-2', opts: { id: 'order:2', delay: 60_000 } },
        { data: 'new-3', opts: { id: 'order:3', delay: 60_000 } },
        { data: 'new-4', opts: { id: 'order:4', delay: 60_000 } },
      ]);
      assert.deepEqual(
        bulk.map((r) => [r.id, r.added]),
        [
          ['order:1', false],
          ['order:2', true],
          ['order:3', false],
          ['order:4', true],
        ],
      );
      // Two single adds of one turn go out in one batcher run.
      const [a, b] = await Promise.all([q.add('new-3', { id: 'order:3', delay: 60_000 }), q.add('new-5', { id: 'order:5', delay: 60_000 })]);
      assert.deepEqual([a.added, b.added, b.id], [false, true, 'order:5']);
      for (const [id, data] of [
        ['order:1', 'old-1'],
        ['order:2', 'new-2'],
        ['order:3', 'old-3'],
        ['order:4', 'new-4'],
        ['order:5', 'new-5'],
      ] as const) {
        assert.equal((await q.get(id))?.data, data, id);
      }
      assert.equal((await q.stats()).scheduled, 5, 'one job per id');
      const report = await q.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
    });

    test('a replace across a reshard takes the old job out before it writes the new one: one claimed in between is not doubled', async () => {
      const name = uniqueName('swap');
      const q = queue<string>(name);
      await q.add('old', { id: 'order:9', delay: 1 });
      await q.reshard(2);
      // A worker claims the old job between the lookup and the take-out (the inner store's
      // first cancel of that shard claims it first).
      const spy = intercepted('cancel', (target, cancel) => async (member, ids) => {
        if (member === name) await target.claim(member, 10, 30_000, 3);
        return cancel(member, ids);
      });
      const stale = new Queue<string>(name, { store: spy });
      open.push(stale);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const res = await stale.add('new', { id: 'order:9', delay: 60_000, replace: true });
      assert.deepEqual([res.added, res.replaced, res.state], [false, false, 'active']);
      const s = await q.stats();
      assert.deepEqual([s.active, s.scheduled], [1, 0], 'one job for the id');
      assert.equal((await q.get('order:9'))?.data, 'old');
    });

    test('adds of one turn to two shards, one of them failing, settle per shard: the written one resolves, the other rejects', async () => {
      const name = uniqueName('part');
      const broken = new Error('shard down');
      const store = intercepted(
        'add',
        (_target, add) =>
          ((member: string, jobs: NewJob[], guard?: undefined, epoch?: string) =>
            member === `${name}#1` ? Promise.reject(broken) : add(member, jobs, guard, epoch)) as Store['add'],
      );
      const q = new Queue<number>(name, { store, shards: 2 });
      open.push(q);
      const [ok, bad] = await Promise.allSettled([q.add(0, { id: idIn(0, 2, 'p') }), q.add(1, { id: idIn(1, 2, 'p') })]);
      assert.equal(ok.status, 'fulfilled');
      assert.equal((ok as PromiseFulfilledResult<{ added: boolean }>).value.added, true);
      assert.equal(bad.status, 'rejected');
      assert.equal((bad as PromiseRejectedResult).reason, broken);
      // addBulk answers the call as a whole: the shard's error; the other shard's part stays written.
      await assert.rejects(
        q.addBulk([
          { data: 2, opts: { id: idIn(0, 2, 'r') } },
          { data: 3, opts: { id: idIn(1, 2, 'r') } },
        ]),
        (e) => e === broken,
      );
      assert.equal((await q.get(idIn(0, 2, 'r')))?.data, 2);
      assert.equal((await q.stats()).scheduled, 2);
    });

    test('a debounce burst holds across a reshard: it moves to the new shards with its job, its data and its maxWaitMs bound', async () => {
      const name = uniqueName('deb');
      const q = queue<number>(name, 2);
      const key = { key: 'doc:7', delayMs: 60_000, maxWaitMs: 30_000 };
      const first = await q.add(1, { debounce: key });
      await q.reshard(3);
      const second = await q.add(2, { debounce: key });
      assert.deepEqual([second.debounced, second.id], [true, first.id], 'folded into the burst, whose job keeps its id');
      const third = await q.add(3, { debounce: key });
      assert.deepEqual([third.debounced, third.id], [true, first.id]);
      const s = await q.stats();
      assert.equal(s.scheduled, 1, 'one job for the burst');
      const job = (await q.get(first.id))!;
      assert.equal(job.data, 3, "the last add's data");
      assert.equal(job.dueAtMs, first.dueAtMs, 'still due at the first add + maxWaitMs, not the move + maxWaitMs');
      const report = await q.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
    });

    test('a job in a retired shard is found, cancelled, rescheduled and promoted by id', async () => {
      const name = uniqueName('old');
      const q = queue<number>(name, 2);
      const ids = Array.from({ length: 6 }, (_, i) => `o${i}`);
      await q.addBulk(ids.map((id, i) => ({ data: i, opts: { id, delay: 60_000 } })));
      await q.reshard(3);
      assert.equal((await q.shards()).draining.length, 2);
      assert.equal((await q.get('o0'))?.data, 0);
      assert.equal((await q.cancel('o1')).cancelled, true);
      assert.equal((await q.reschedule('o2', { delay: 120_000 })).rescheduled, true);
      assert.equal((await q.promote('o3')).rescheduled, true);
      const cm = await q.cancelMany(['o4', 'o5', 'nope']);
      assert.equal(cm.cancelled, 2);
      assert.equal(await q.get('nope'), null);
    });

    test('an idle shard costs no claim: a worker asks only shards that have work', async () => {
      const name = uniqueName('idle');
      const inner = new MemoryStore();
      const claims = new Map<string, number>();
      const counting = new Proxy(inner, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (prop !== 'claim') return typeof v === 'function' ? v.bind(target) : v;
          return (queue: string, ...rest: unknown[]) => {
            claims.set(queue, (claims.get(queue) ?? 0) + 1);
            return (v as (...a: unknown[]) => unknown).call(target, queue, ...rest);
          };
        },
      }) as MemoryStore;
      const q = new Queue<number>(name, { store: counting, shards: 4 });
      open.push(q);
      const ran: number[] = [];
      const w = new Worker<number>(name, (job) => void ran.push(job.data), { store: counting });
      open.push(w);
      await q.add(0, { id: idIn(2, 4, 'busy') });
      await until(() => ran.length === 1, 'the first job');
      const settled = new Map(claims);
      // 20 jobs, one after another, all on shard 2.
      for (let i = 1; i <= 20; i++) {
        await q.add(i, { id: idIn(2, 4, `busy${i}`), delay: 2 });
        await until(() => ran.length === i + 1, `job ${i}`);
      }
      const busy = `${name}#2`;
      assert.ok((claims.get(busy) ?? 0) - (settled.get(busy) ?? 0) >= 20, 'the busy shard was claimed for each job');
      for (const s of [name, `${name}#0`, `${name}#1`, `${name}#3`])
        assert.equal((claims.get(s) ?? 0) - (settled.get(s) ?? 0), 0, `${s} was never asked again`);
      await w.close();
    });

    test('a shard whose claim fails is reported as a ShardError naming it, costs the other shards nothing, and is asked again until it works', {
      skip: kind.name === 'memory' && 'the failure is a real Redis error (WRONGTYPE)',
    }, async () => {
      const name = uniqueName('bad');
      const q = queue<number>(name, 3);
      const ids = [0, 1, 2].flatMap((shard) => [0, 1, 2, 3].map((k) => idIn(shard, 3, `b${shard}x${k}`)));
      await q.addBulk(ids.map((id, i) => ({ data: i, opts: { id } })));
      // Shard 1's scheduled set is set aside and a string put in its place: its claim script
      // fails with WRONGTYPE on every call, as a shard whose key or node is broken would.
      const client = fx.client;
      const key = queueKeys('dq', `${name}#1`).scheduled;
      await client.rename(key, `${key}:aside`);
      await client.set(key, 'not a sorted set');
      const ran = new Set<string>();
      const errors: Error[] = [];
      const w = worker<number>(name, (job) => void ran.add(job.id));
      w.on('error', (err) => errors.push(err));
      const healthy = ids.filter((id) => shardIndex(id, 3) !== 1);
      await until(
        () => healthy.every((id) => ran.has(id)) && errors.length >= 2,
        `the healthy shards' jobs (${ran.size}) and the errors (${errors.length})`,
        5_000,
      );
      assert.equal(ran.size, healthy.length, 'no job of the broken shard ran');
      for (const err of errors) {
        assert.ok(err instanceof ShardError, `${err.name}: ${err.message}`);
        assert.equal(err.shard, `${name}#1`);
        assert.match(err.message, /WRONGTYPE/);
      }
      // Repaired: the shard is asked again after its back-off (at most 2 s) and its jobs run.
      await client.del(key);
      await client.rename(`${key}:aside`, key);
      await until(() => ran.size === ids.length, `the repaired shard's jobs (${ran.size} of ${ids.length})`, 5_000);
      await w.close();
      // The errors this test provoked, checked above; any other fails the test.
      errorLog.take((e) => e instanceof ShardError && e.shard === `${name}#1` && /WRONGTYPE/.test(e.message));
    });

    test('shardStats lists every shard with its counts and node: the current ones, the home keys, and what a reshard left draining', async () => {
      const name = uniqueName('figs');
      const q = queue<number>(name, 2);
      const ids = [idIn(0, 2, 'f'), idIn(1, 2, 'f'), idIn(1, 2, 'g')];
      await q.addBulk(ids.map((id, i) => ({ data: i, opts: { id, delay: i === 0 ? 0 : 600_000 } })));
      const before = await q.shardStats();
      assert.deepEqual(
        before.map((f) => [f.name, f.role, f.scheduled, f.ready]),
        [
          [name, 'home', 0, 0],
          [`${name}#0`, 'current', 1, 1],
          [`${name}#1`, 'current', 2, 0],
        ],
      );
      const home = before[0]!;
      if (kind.name === 'redis') assert.equal(home.node, `127.0.0.1:${fx.redis.port}`);
      else assert.equal(home.node, undefined);
      assert.ok(before[1]!.oldestDueAgeMs !== undefined && before[2]!.oldestDueAgeMs === undefined);
      assert.ok(before[2]!.nextDueInMs! > 500_000);
      await q.reshard(3);
      const after = await q.shardStats();
      assert.deepEqual(
        after.map((f) => [f.name, f.role, f.scheduled]),
        [
          [name, 'home', 0],
          [`${name}#2`, 'current', 0],
          [`${name}#3`, 'current', 0],
          [`${name}#4`, 'current', 0],
          [`${name}#0`, 'draining', 1],
          [`${name}#1`, 'draining', 2],
        ],
      );
      // An unsharded queue is its own one shard.
      const plain = queue<number>(uniqueName('plain'));
      await plain.add(1);
      assert.deepEqual(
        (await plain.shardStats()).map((f) => [f.name, f.role, f.scheduled]),
        [[plain.name, 'current', 1]],
      );
    });

    test('count caps are split over the shards (ceil(count / N) each); age caps hold as given', async () => {
      const name = uniqueName('caps');
      const q = queue<number>(name, 3);
      await q.setRetention({ completed: { count: 6 } });
      assert.deepEqual((await q.retention()).completed, { count: 6, ageMs: undefined });
      // 4 jobs on each shard: each keeps 2 of them.
      const jobs = [0, 1, 2].flatMap((s) => Array.from({ length: 4 }, (_, k) => ({ data: s * 10 + k, opts: { id: idIn(s, 3, `c${s}-${k}`) } })));
      await q.addBulk(jobs);
      const w = worker<number>(name, () => 'ok');
      await until(async () => (await q.stats()).completedTotal === 12, 'all twelve to complete');
      await w.close();
      assert.equal((await q.stats()).completed, 6);
      const page = await q.jobs.list({ state: 'completed', limit: 100 });
      assert.equal(page.jobs.length, 6);
      assert.deepEqual(
        [0, 1, 2].map((s) => page.jobs.filter((j) => shardFor(name, { from: 0, count: 3 }, j.id) === `${name}#${s}`).length),
        [2, 2, 2],
      );
    });

    test('listings merge the shards in order and page through every job exactly once; search walks every shard', async () => {
      const name = uniqueName('list');
      const q = queue<number>(name, 3);
      const base = Date.now() + 600_000;
      await q.addBulk(Array.from({ length: 40 }, (_, i) => ({ data: i, opts: { id: `s${i}`, runAt: base + ((i * 7919) % 40) * 1000 } })));
      const seen: string[] = [];
      const dues: number[] = [];
      let cursor: string | undefined;
      do {
        const page = await q.jobs.list({ state: 'scheduled', limit: 7, cursor });
        assert.equal(page.total, 40);
        for (const j of page.jobs) {
          seen.push(j.id);
          dues.push(j.dueAtMs);
        }
        cursor = page.cursor;
      } while (cursor);
      assert.equal(new Set(seen).size, 40);
      assert.equal(seen.length, 40);
      assert.deepEqual(
        dues,
        [...dues].sort((a, b) => a - b),
      );
      const found = await q.jobs.search({ text: 's3', budget: 1000 });
      assert.deepEqual(found.jobs.map((j) => j.id).sort(), ['s3', 's30', 's31', 's32', 's33', 's34', 's35', 's36', 's37', 's38', 's39']);
      assert.equal(found.scanned, 40);
    });

    test('the event feed follows every shard, in time order (live and from a backlog), and resumes from its cursor', async () => {
      const name = uniqueName('ev');
      const q = queue<number>(name, 3);
      await q.events.enable();
      const added = (events: { event: string; id: string }[]) => events.filter((e) => e.event === 'added').map((e) => e.id);
      const ac = new AbortController();
      const live: { event: string; id: string }[] = [];
      let last = '';
      // From the stream's start: the feed was just enabled, and no add can slip in before it.
      const following = (async () => {
        for await (const e of q.events.follow({ after: '0', signal: ac.signal })) {
          live.push(e);
          last = e.cursor;
          if (added(live).length === 9) ac.abort();
        }
      })();
      // Each add in a millisecond of its own: entries of different shards written in the same
      // millisecond may come in either order (docs/api.md), and this test is about the rest.
      for (let i = 0; i < 9; i++) {
        await q.add(i, { id: `e${i}`, delay: 60_000 });
        await new Promise((r) => setTimeout(r, 2));
      }
      await within(following, 5_000, 'the feed to deliver nine adds');
      const inOrder = Array.from({ length: 9 }, (_, i) => `e${i}`);
      assert.deepEqual(added(live), inOrder, 'followed live');
      // The same entries read as a backlog, a few per read, come out in the same order.
      const ac1 = new AbortController();
      const backlog: { event: string; id: string }[] = [];
      for await (const e of q.events.follow({ after: '0', batch: 2, signal: ac1.signal })) {
        backlog.push(e);
        if (added(backlog).length === 9) ac1.abort();
      }
      assert.deepEqual(added(backlog), inOrder, 'read as a backlog');
      await q.add(9, { id: 'e9', delay: 60_000 });
      const ac2 = new AbortController();
      for await (const e of q.events.follow({ after: last, signal: ac2.signal })) {
        assert.equal(e.id, 'e9');
        ac2.abort();
      }
    });

    test('recurring schedules run on a sharded queue (their jobs live with the schedule guard)', async () => {
      const name = uniqueName('cron');
      const q = queue<string>(name, 3);
      await q.schedules.upsert('tick', { every: 100, data: 'tick' });
      const scheduler = new Scheduler(name, kind.process());
      open.push(scheduler);
      const ran: string[] = [];
      worker<string>(name, (job) => void ran.push(job.data));
      await until(() => ran.length >= 2, 'two ticks', 5_000);
      assert.deepEqual(
        (await q.schedules.list()).map((s) => s.name),
        ['tick'],
      );
    });
  });
}
