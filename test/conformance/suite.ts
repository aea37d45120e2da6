/**
 * The conformance suite: one set of behaviours, written against the public API, that every
 * store must show. redis.test.ts and memory.test.ts run it; a difference is a bug in one store.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { listQueues, type Queue, UnrecoverableError, ValidationError, type ConnectionOptions, type Job, type ListState } from '../../src/index.js';
import { shardIndex } from '../../src/store/sharded/layout.js';
import { deferred, until, within } from '../helpers/wait.js';
import { useHarness } from './harness.js';

export interface StoreKind {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Connection options for a new Queue or Worker on this store (with `shards`, a sharded queue). */
  options(): ConnectionOptions & { shards?: number };
  /** The store's clock (the Redis server's, or the process's). */
  now(): Promise<number>;
  /** Shards each queue is resharded to right after its first add that writes jobs (the sharded matrix). */
  reshardsTo?: number;
}

export function conformance(kind: StoreKind): void {
  /** Queues of N shards (the kind's name says so): order across shards and count caps are documented apart (docs/api.md). */
  const sharded = /shards/.test(kind.name);
  describe(`conformance [${kind.name}]`, () => {
    // Queues and workers made through the harness are closed after each test, each queue left
    // consistent (verify), and any error a worker emitted fails the test.
    const { queue, worker } = useHarness(kind, 'cf');

    /**
     * A claim that needs `count` jobs. A sharded store's claim hands out what its shards
     * answered within 200 ms, and what a slower shard leased goes out with the next claim (a
     * loaded host makes a cluster node that slow): on a sharded queue this asks again, as a
     * worker does, until the jobs are all in. Elsewhere one claim must give them.
     */
    async function claimJobs(store: Queue<unknown>['store'], name: string, count: number, leaseMs: number, maxAttempts: number, workerId?: string) {
      let res = await store.claim(name, count, leaseMs, maxAttempts, workerId);
      if (!sharded) return res;
      const jobs = [...res.jobs];
      await until(
        async () => {
          if (jobs.length >= count) return true;
          res = await store.claim(name, count - jobs.length, leaseMs, maxAttempts, workerId);
          jobs.push(...res.jobs);
          return jobs.length >= count;
        },
        `${count} jobs from the shards`,
        5_000,
      );
      return { ...res, jobs };
    }

    test('add: delay from the store clock, runAt as given, idempotent ids, replace', async () => {
      const q = queue<string>();
      const before = await kind.now();
      const a = await q.add('a', { id: 'a', delay: 5000 });
      const afterNow = await kind.now();
      assert.equal(a.added, true);
      assert.ok(a.dueAtMs >= before + 5000 && a.dueAtMs <= afterNow + 5000);
      const at = Date.UTC(2031, 0, 1);
      assert.equal((await q.add('b', { id: 'b', runAt: at })).dueAtMs, at);
      const again = await q.add('a2', { id: 'a', delay: 1 });
      assert.deepEqual([again.added, again.replaced, again.dueAtMs], [false, false, a.dueAtMs]);
      assert.equal((await q.get('a'))?.data, 'a');
      const replaced = await q.add('a3', { id: 'a', runAt: at + 1, replace: true });
      assert.deepEqual([replaced.added, replaced.replaced, replaced.dueAtMs], [true, true, at + 1]);
      assert.equal((await q.get('a'))?.data, 'a3');
      assert.equal((await q.stats()).scheduled, 2);
    });

    test('adds made at once are each answered as if made alone: in order, one refused fails alone, a later call sees them', async () => {
      // Queue.add gathers the adds of one turn of the event loop into one script run.
      const q = queue<number>();
      await q.setLimits({ rateLimit: { max: 30, perMs: 60_000 } });
      const later = { delay: 60_000 };
      const adds = [
        q.add(1, { id: 'a', ...later }),
        q.add(2, { id: 'a', ...later }),
        q.add(3, { id: 'b', ...later, cost: 100 }),
        q.add(4, { id: 'c', ...later, dedup: { key: 'k', windowMs: 60_000 } }),
        q.add(5, { id: 'd', ...later, dedup: { key: 'k', windowMs: 60_000 } }),
        q.add(6, { id: 'e', ...later }),
      ];
      // Called after the adds, not awaiting them: it finds what they wrote (on a sharded queue
      // a call waits for the layout first, and calls are not kept in order).
      const got = sharded ? undefined : q.get('a');
      const cancelled = sharded ? undefined : q.cancel('e');
      const [a, a2, b, c, d, e] = await Promise.allSettled(adds);
      assert.deepEqual(a.status === 'fulfilled' && [a.value.added, a.value.id], [true, 'a']);
      assert.deepEqual(a2.status === 'fulfilled' && [a2.value.added, a2.value.replaced], [false, false], 'the first add of the id holds it');
      assert.ok(b.status === 'rejected' && b.reason instanceof ValidationError && /^cost is above the max/.test(b.reason.message), 'only the costly add fails');
      assert.equal(c.status === 'fulfilled' && c.value.added, true);
      assert.equal(d.status === 'fulfilled' && d.value.duplicateOf, 'c');
      assert.equal(e.status === 'fulfilled' && e.value.added, true);
      if (got) assert.equal((await got)?.data, 1);
      if (cancelled) assert.equal((await cancelled).cancelled, true);
      assert.equal(await q.get('b'), null);
    });

    test('a job rescheduled out of the ready set is handed out with its new due time from behind a backlog', async () => {
      // The regression: a claim that promoted the job again read the run state its first
      // promotion left (the old due time) and wrote that into the hand-out's run state.
      const q = queue<string>();
      const t0 = (await kind.now()) - 60_000;
      await q.addBulk([
        { data: 'b', opts: { id: 'b', runAt: t0 } },
        { data: 'a', opts: { id: 'a', runAt: t0 } },
      ]);
      const first = await claimJobs(q.store, q.name, 1, 60_000, 3);
      assert.equal(first.jobs.length, 1);
      const left = first.jobs[0]!.id === 'a' ? 'b' : 'a';
      await q.reschedule(left, { runAt: t0 + 5 });
      await q.addBulk([
        { data: 'c', opts: { id: 'c', runAt: t0 + 10 } },
        { data: 'd', opts: { id: 'd', runAt: t0 + 10 } },
      ]);
      const second = await claimJobs(q.store, q.name, 1, 60_000, 3);
      if (!sharded) {
        assert.deepEqual(
          second.jobs.map((j) => [j.id, j.dueAtMs]),
          [[left, t0 + 5]],
        );
      } else {
        // Across shards a claim of one job may take another shard's first (docs/operations.md,
        // "Order": by at most one batch; here c and d sit on other shards): claim on until it comes.
        const handed = [...second.jobs];
        for (let i = 0; i < 4 && !handed.some((j) => j.id === left); i++) handed.push(...(await claimJobs(q.store, q.name, 1, 60_000, 3)).jobs);
        assert.deepEqual(
          handed.filter((j) => j.id === left).map((j) => j.dueAtMs),
          [t0 + 5],
          'handed out once, with its new due time',
        );
      }
      assert.equal((await q.get(left))?.dueAtMs, t0 + 5);
    });

    test('cancel, reschedule and promote change only scheduled jobs', async () => {
      const q = queue<string>();
      await q.add('x', { id: 'x', delay: 60_000 });
      await q.add('y', { id: 'y', delay: 60_000 });
      assert.deepEqual(await q.cancel('x'), { id: 'x', cancelled: true, state: 'scheduled' });
      assert.deepEqual(await q.cancel('x'), { id: 'x', cancelled: false, state: undefined });
      const at = Date.UTC(2032, 5, 1);
      assert.deepEqual(await q.reschedule('y', { runAt: at }), { id: 'y', rescheduled: true, state: 'scheduled', dueAtMs: at });
      const now = await kind.now();
      const p = await q.promote('y');
      assert.ok(p.rescheduled && p.dueAtMs! >= now && p.dueAtMs! < now + 1000);
      assert.equal((await q.get('y'))?.ready, true);
      assert.equal((await q.reschedule('nope', { delay: 1 })).rescheduled, false);
    });

    test('a worker never runs a job early, and runs every job once', async () => {
      const q = queue<number>();
      const ran = new Map<number, number>();
      const done = deferred();
      const early: string[] = [];
      for (let i = 0; i < 30; i++) await q.add(i, { delay: 10 + (i % 6) * 20 });
      worker(
        q,
        async (job) => {
          const now = await kind.now();
          if (now < job.dueAtMs) early.push(`${job.id} at ${now} < ${job.dueAtMs}`);
          ran.set(job.data, (ran.get(job.data) ?? 0) + 1);
          if (ran.size === 30) done.resolve();
        },
        { concurrency: 4 },
      );
      await within(done.promise, 10_000, 'every job to run');
      assert.deepEqual(early, []);
      assert.ok([...ran.values()].every((n) => n === 1));
    });

    test('order among due jobs: priority, then due time, then add order', async () => {
      const q = queue<string>();
      const base = (await kind.now()) - 10_000;
      const jobs = [
        ...Array.from({ length: 5 }, (_, i) => ({ data: `low-${i}`, opts: { runAt: base } })),
        ...Array.from({ length: 5 }, (_, i) => ({ data: `high-${i}`, opts: { runAt: base, priority: 10 } })),
        { data: 'high-older', opts: { runAt: base - 1, priority: 10 } },
        { data: 'low-older', opts: { runAt: base - 1 } },
      ];
      await q.addBulk(jobs);
      const order: string[] = [];
      const done = deferred();
      // Across shards the order holds among the jobs one claim takes (docs/api.md, "Order"): here
      // one claim takes them all, and jobs of equal priority and due time keep their add order
      // only within a shard.
      worker(
        q,
        (job) => {
          order.push(job.data);
          if (order.length === jobs.length) done.resolve();
        },
        !sharded ? { concurrency: 1, batch: 1 } : { concurrency: jobs.length },
      );
      await within(done.promise, 10_000, 'every job to run, in order');
      const want = ['high-older', 'high-0', 'high-1', 'high-2', 'high-3', 'high-4', 'low-older', 'low-0', 'low-1', 'low-2', 'low-3', 'low-4'];
      if (!sharded) assert.deepEqual(order, want);
      else
        assert.deepEqual(
          order.map((d) => d.replace(/-\d$/, '-n')),
          want.map((d) => d.replace(/-\d$/, '-n')),
        );
    });

    test('claim hands out up to N per call; two workers never share a job', async () => {
      const q = queue<number>();
      await q.addBulk(Array.from({ length: 12 }, (_, i) => ({ data: i })));
      const first = await claimJobs(q.store, q.name, 5, 30_000, 3);
      assert.equal(first.jobs.length, 5);
      assert.equal(first.more, true);
      assert.equal(new Set(first.jobs.map((j) => j.token)).size, 5);
      await q.store.complete(
        q.name,
        first.jobs.map((j) => ({ id: j.id, token: j.token })),
      );
      await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ data: 100 + i })));
      const seen = new Map<string, number>();
      const done = deferred();
      const handler = (job: Job<number>) => {
        seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
        if (seen.size === 207) done.resolve();
      };
      worker(q, handler, { concurrency: 3, batch: 2 });
      worker(q, handler, { concurrency: 3, batch: 2 });
      await within(done.promise, 10_000, 'every job to run');
      await until(async () => (await q.stats()).active === 0, 'acks to land');
      assert.ok(
        [...seen.values()].every((n) => n === 1),
        'no job ran twice',
      );
    });

    test("a claim's next wake is the earliest of the next due time and the earliest lease deadline, whatever it handed out", {
      skip: sharded ? "a sharded claim's next wake is its planner's (test/unit/claim-planner.test.ts)" : false,
    }, async () => {
      const q = queue<number>();
      const s = q.store;
      await q.add(0, { id: 'a' });
      const later = await q.add(0, { id: 'later', delay: 600_000 });
      // No lease yet: the one handed out is the earliest.
      const first = await s.claim(q.name, 5, 30_000, 3);
      assert.deepEqual(
        first.jobs.map((j) => j.id),
        ['a'],
      );
      assert.equal(first.nextWakeMs, first.jobs[0]!.leaseExpiresAtMs);
      // Nothing due: the lease held.
      const none = await s.claim(q.name, 5, 30_000, 3);
      assert.deepEqual([none.jobs.length, none.more, none.nextWakeMs], [0, false, first.jobs[0]!.leaseExpiresAtMs]);
      // A lease shorter than the one held is the earliest; a longer one leaves the held one so.
      await q.add(0, { id: 'b' });
      const short = await s.claim(q.name, 5, 5_000, 3);
      assert.deepEqual([short.jobs.map((j) => j.id), short.nextWakeMs], [['b'], short.jobs[0]!.leaseExpiresAtMs]);
      await q.add(0, { id: 'c' });
      const long = await s.claim(q.name, 5, 60_000, 3);
      assert.deepEqual([long.jobs.map((j) => j.id), long.nextWakeMs], [['c'], short.jobs[0]!.leaseExpiresAtMs]);
      // No lease: the next due time.
      await s.complete(
        q.name,
        [first, short, long].map((c) => ({ id: c.jobs[0]!.id, token: c.jobs[0]!.token })),
      );
      const idle = await s.claim(q.name, 5, 30_000, 3);
      assert.deepEqual([idle.jobs.length, idle.nextWakeMs], [0, later.dueAtMs]);
      // Two due and one asked for: more (the worker asks again at once, whatever the next wake).
      await q.addBulk([
        { data: 1, opts: { id: 'd' } },
        { data: 2, opts: { id: 'e' } },
      ]);
      const one = await s.claim(q.name, 1, 30_000, 3);
      assert.deepEqual([one.jobs.map((j) => j.id), one.more], [['d'], true]);
      // A lease run out is recovered, and the wake is the next deadline after it.
      const gone = await s.claim(q.name, 1, 50, 3);
      await until(async () => (await kind.now()) > gone.jobs[0]!.leaseExpiresAtMs, 'the lease to run out');
      const after = await s.claim(q.name, 5, 30_000, 3);
      assert.deepEqual(after.jobs.map((j) => j.id).sort(), ['e']);
      assert.equal(after.nextWakeMs, one.jobs[0]!.leaseExpiresAtMs);
    });

    test('handlers that return a value, a promise, a thenable or throw at once each settle their job once; a thenable whose then throws fails the attempt', async () => {
      const q = queue<string>();
      const kinds = ['value', 'promise', 'thenable', 'bad-thenable', 'then-getter', 'throws-proxy', 'throws'];
      await q.addBulk(kinds.map((kind) => ({ data: kind, opts: { id: kind, attempts: 1 } })));
      // A trapping Proxy: every read of it throws (a `then` getter that throws, an error whose stack cannot be read).
      const trap = () =>
        new Proxy(
          {},
          {
            get: () => {
              throw new Error('trapped read');
            },
            getPrototypeOf: () => {
              throw new Error('trapped prototype');
            },
            ownKeys: () => {
              throw new Error('trapped keys');
            },
          },
        );
      const handler = (job: Job<string>): unknown => {
        switch (job.data) {
          case 'value':
            return 1;
          case 'promise':
            return Promise.resolve(2);
          case 'thenable':
            // biome-ignore lint/suspicious/noThenProperty: a thenable is what this case tests
            return { then: (ok: (v: number) => void) => ok(3) };
          case 'bad-thenable':
            return {
              // biome-ignore lint/suspicious/noThenProperty: a thenable whose then throws is what this case tests
              then() {
                throw new Error('then threw');
              },
            };
          case 'then-getter':
            return trap();
          case 'throws-proxy':
            throw trap();
          default:
            throw new Error('threw at once');
        }
      };
      const w = worker(q, handler, { concurrency: 10, batch: 10 });
      const completed: string[] = [];
      const dead = new Map<string, string>();
      w.on('completed', (job) => completed.push(job.id));
      w.on('dead', (job, error) => dead.set(job.id, error));
      await until(async () => completed.length + dead.size === kinds.length && (await q.stats()).active === 0, 'every job to settle');
      assert.deepEqual(completed.sort(), ['promise', 'thenable', 'value']);
      assert.match(dead.get('bad-thenable') ?? '', /then threw/);
      assert.match(dead.get('then-getter') ?? '', /trapped read/);
      assert.match(dead.get('throws-proxy') ?? '', /not readable|trapped/);
      assert.match(dead.get('throws') ?? '', /threw at once/);
    });

    test('a throwing handler is retried with backoff, then dead with its last error; UnrecoverableError skips retries', async () => {
      const q = queue<string>();
      const attempts: number[] = [];
      const dead = deferred<string>();
      const deaths: string[] = [];
      const w = worker(
        q,
        (job) => {
          if (job.data === 'fatal') throw new UnrecoverableError('give up');
          attempts.push(job.attempt);
          throw new Error(`boom ${job.attempt}`);
        },
        { attempts: 3, backoff: { type: 'fixed', delay: 20 } },
      );
      w.on('dead', (job) => {
        deaths.push(job.id);
        if (deaths.length === 2) dead.resolve('');
      });
      await q.add('flaky', { id: 'flaky' });
      await q.add('fatal', { id: 'fatal' });
      await within(dead.promise, 10_000, 'the failing job to go dead');
      assert.deepEqual(attempts, [1, 2, 3]);
      const info = await q.get('flaky');
      assert.equal(info?.state, 'dead');
      assert.equal(info?.attempt, 3);
      assert.match(info?.lastError ?? '', /boom 3/);
      assert.equal((await q.get('fatal'))?.attempt, 1);
      assert.match((await q.dead.get('fatal'))?.lastError ?? '', /give up/);
      // Every failed attempt is in the history, as the worker sent it: message and stack.
      assert.deepEqual(
        info?.errors?.map((e) => e.attempt),
        [1, 2, 3],
      );
      info?.errors?.forEach((e, i) => assert.match(e.error, new RegExp(`^Error: boom ${i + 1}\\n\\s+at `)));
      assert.equal(info?.errors?.at(-1)?.error, info?.lastError);
      assert.deepEqual(
        (await q.get('fatal'))?.errors?.map((e) => [e.attempt, e.error.split('\n')[0]]),
        [[1, 'UnrecoverableError: give up']],
      );
    });

    test('error history: the last 10 failed attempts, oldest first; a re-sent fail adds none; kept through a dead retry, gone with the job', async () => {
      const q = queue<string>();
      const store = (q as Queue<unknown>).store;
      await q.add('x', { id: 'e', attempts: 20 });
      const before = await kind.now();
      const claimOne = async (leaseMs = 30_000) => {
        const c = await claimJobs(store, q.name, 1, leaseMs, 3);
        assert.equal(c.jobs[0]?.id, 'e');
        return c.jobs[0]!;
      };
      const text = (i: number) => `boom ${i}: naïve ✓ "quoted" / back\\slash\n    at line ${i}`;
      for (let i = 1; i <= 12; i++) {
        const c = await claimOne();
        const req = { id: 'e', token: c.token, error: text(i), retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 };
        assert.equal((await store.fail(q.name, req)).outcome, 'retried');
        if (i === 1) {
          // A re-send (ioredis after a reconnect) finds the give-up mark: same answer, no second entry.
          assert.equal((await store.fail(q.name, req)).outcome, 'retried');
          assert.equal((await q.get('e'))?.errors?.length, 1);
        }
      }
      const after = await kind.now();
      let info = await q.get('e');
      assert.deepEqual(
        info?.errors?.map((e) => [e.attempt, e.error]),
        Array.from({ length: 10 }, (_, k) => [k + 3, text(k + 3)]),
      );
      const times = info!.errors!.map((e) => e.atMs);
      assert.ok(
        times.every((t, k) => t >= before && t <= after && (k === 0 || t >= times[k - 1]!)),
        `times in order: ${times.join(', ')}`,
      );
      // The dead path appends too, and its re-send does not.
      const last = await claimOne();
      const deadReq = { id: 'e', token: last.token, error: 'fatal', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 };
      assert.equal((await store.fail(q.name, deadReq)).outcome, 'dead');
      assert.equal((await store.fail(q.name, deadReq)).outcome, 'dead');
      info = await q.get('e');
      assert.equal(info?.state, 'dead');
      assert.deepEqual(
        info?.errors?.map((e) => e.attempt),
        [4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
      );
      assert.deepEqual([info?.errors?.at(-1)?.error, info?.lastError], ['fatal', 'fatal']);
      assert.equal((await q.dead.get('e'))?.errors?.length, 10);
      // A person retrying a dead job sees what went wrong before; attempts count from 1 again.
      assert.equal(await q.dead.retry('e'), 1);
      info = await q.get('e');
      assert.deepEqual([info?.state, info?.attempt, info?.errors?.length], ['scheduled', 0, 10]);
      const again = await claimOne();
      assert.equal(again.attempt, 1);
      await store.fail(q.name, { id: 'e', token: again.token, error: 'after retry', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 });
      assert.deepEqual(
        (await q.get('e'))?.errors?.slice(-2).map((e) => [e.attempt, e.error]),
        [
          [13, 'fatal'],
          [1, 'after retry'],
        ],
      );
      // Listings stay cheap: no logs, no history.
      const listedJob = (await q.jobs.list({ state: 'ready' })).jobs.find((j) => j.id === 'e');
      assert.equal(listedJob?.errors, undefined);
      assert.equal((await q.jobs.search({ text: 'x' })).jobs[0]?.errors, undefined);
      // Acked and not kept: the history goes with the job (verify() after the test finds no orphan).
      const done = await claimOne();
      assert.deepEqual(await store.complete(q.name, [{ id: 'e', token: done.token }]), ['ok']);
      assert.equal(await q.get('e'), null);
      await q.add('x', { id: 'e' });
      assert.equal((await q.get('e'))?.errors, undefined, 'an id added again starts without history');
    });

    test('error history: replace clears it; a lease that runs out is not an entry; a kept completed job keeps it', async () => {
      const q = queue<string>();
      const store = (q as Queue<unknown>).store;
      await q.add('x', { id: 'r' });
      const c = (await claimJobs(store, q.name, 1, 30_000, 3)).jobs[0]!;
      await store.fail(q.name, { id: 'r', token: c.token, error: 'boom', retryDelayMs: 60_000, dead: false, defaultMaxAttempts: 3 });
      assert.equal((await q.get('r'))?.errors?.length, 1);
      const replaced = await q.add('y', { id: 'r', replace: true });
      assert.equal(replaced.replaced, true);
      assert.deepEqual([(await q.get('r'))?.errors, (await q.get('r'))?.lastError], [undefined, undefined]);
      // A lease that runs out: lastError says so, the history has nothing (no worker sent an error).
      const first = (await claimJobs(store, q.name, 1, 50, 3)).jobs[0]!;
      await until(async () => (await kind.now()) > first.leaseExpiresAtMs, 'the lease to run out');
      const second = (await claimJobs(store, q.name, 1, 30_000, 3)).jobs[0]!;
      assert.equal(second.attempt, 2);
      const info = await q.get('r');
      assert.match(info?.lastError ?? '', /lease expired during attempt 1/);
      assert.equal(info?.errors, undefined);
      await store.fail(q.name, { id: 'r', token: second.token, error: 'second', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 });
      await q.setRetention({ completed: { count: 10 } });
      const third = (await claimJobs(store, q.name, 1, 30_000, 3)).jobs[0]!;
      await store.complete(q.name, [{ id: 'r', token: third.token, result: '1' }]);
      const kept = await q.get('r');
      assert.equal(kept?.state, 'completed');
      assert.deepEqual(
        kept?.errors?.map((e) => [e.attempt, e.error]),
        [[2, 'second']],
      );
      assert.equal(await q.completed.purge('r'), 1);
    });

    test('timeline: scheduled jobs not yet due, counted per bucket by the store clock; bad options refused by field', async () => {
      const q = queue<number>();
      const now = await kind.now();
      // Well inside their buckets, so the few ms between now and the call move nothing.
      const delays = [30_000, 30_000, 90_000, 150_000, 155_000, 3_600_000 - 30_000, 3_600_000 + 30_000, 86_400_000];
      for (const [i, d] of delays.entries()) await q.add(i, { id: `t${i}`, runAt: now + d, priority: i % 3 });
      await q.add(-1, { id: 'due', runAt: now - 5000 });
      const t = await q.timeline();
      assert.equal(t.bucketMs, 60_000);
      assert.equal(t.counts.length, 60);
      assert.ok(t.nowMs >= now && t.fromMs === t.nowMs, 'from the store clock by default');
      const want = new Array(60).fill(0);
      for (const d of delays) if (d < 3_600_000) want[Math.floor(d / 60_000)]++;
      assert.deepEqual(t.counts, want);
      // Hours from a given start; a due job is not counted, even in a bucket before now.
      const byHour = await q.timeline({ bucketMs: 3_600_000, buckets: 25, fromMs: now - 60_000 });
      assert.equal(byHour.fromMs, now - 60_000);
      const hours = new Array(25).fill(0);
      for (const d of delays) hours[Math.floor((d + 60_000) / 3_600_000)]++;
      assert.deepEqual(byHour.counts, hours);
      // Active jobs are not scheduled: handing one out takes it off the timeline.
      await q.promote('t0');
      const c = await claimJobs(q.store, q.name, 2, 30_000, 3);
      assert.deepEqual(c.jobs.map((j) => j.id).sort(), ['due', 't0']);
      assert.equal((await q.timeline({ buckets: 1 })).counts[0], 1);
      await q.store.complete(
        q.name,
        c.jobs.map((j) => ({ id: j.id, token: j.token })),
      );
      assert.deepEqual((await q.timeline({ fromMs: now + 86_400_000 + 1, buckets: 3 })).counts, [0, 0, 0]);
      const bad: [unknown, RegExp][] = [
        [{ bucketMs: 999 }, /^bucketMs/],
        [{ bucketMs: 86_400_001 }, /^bucketMs/],
        [{ bucketMs: 1500.5 }, /^bucketMs/],
        [{ buckets: 0 }, /^buckets/],
        [{ buckets: 1441 }, /^buckets/],
        [{ buckets: '5' }, /^buckets/],
        [{ fromMs: -1 }, /^fromMs/],
        [{ fromMs: Number.NaN }, /^fromMs/],
        [{ fromMs: '2030-01-01' }, /^fromMs/],
        [{ bucket: 1000 }, /^bucket\b/],
        ['hourly', /^opts/],
      ];
      for (const [opts, message] of bad) {
        await assert.rejects(q.timeline(opts as never), (e: unknown) => e instanceof ValidationError && message.test(e.message), JSON.stringify(opts));
      }
      assert.equal((await q.timeline({ bucketMs: 1000, buckets: 1440 })).counts.length, 1440);
      assert.equal((await q.timeline(null)).counts.length, 60);
    });

    test('snooze runs again without spending an attempt, and dies at its deadline', async () => {
      const q = queue<string>();
      const seen: number[] = [];
      const w = worker(
        q,
        (job) => {
          seen.push(job.attempt);
          job.snooze(20, { deadlineAtMs: job.createdAtMs + 150 });
        },
        { attempts: 1 },
      );
      const dead = new Promise<[unknown, string]>((r) => w.once('dead', (j, reason) => r([j, reason])));
      await q.add('pending', { id: 'p' });
      const [, reason] = await within(dead, 10_000, 'the snoozed job to go dead');
      assert.ok(seen.length >= 3, `looked ${seen.length} times`);
      assert.ok(
        seen.every((a) => a === 1),
        'a snooze does not count as an attempt',
      );
      assert.match(reason, /snooze deadline/);
      assert.match((await q.get('p'))?.lastError ?? '', /snooze deadline passed/);
    });

    test('an expired lease is handed out again with a new token; the stale ack and extend are refused', async () => {
      const q = queue<string>();
      await q.add('x', { id: 'x' });
      const first = (await claimJobs(q.store, q.name, 1, 100, 3)).jobs[0]!;
      await until(async () => (await kind.now()) > first.leaseExpiresAtMs, 'the lease to run out');
      const second = (await claimJobs(q.store, q.name, 1, 30_000, 3)).jobs[0]!;
      assert.equal(second.id, 'x');
      assert.notEqual(second.token, first.token);
      assert.equal(second.attempt, 2);
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'x', token: first.token }]), ['lease_lost']);
      assert.deepEqual(await q.store.extend(q.name, [{ id: 'x', token: first.token }], 1000), ['lease_lost']);
      assert.deepEqual(await q.store.extend(q.name, [{ id: 'x', token: second.token }], 1000), ['ok']);
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'x', token: second.token }]), ['ok']);
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'x', token: second.token }]), ['not_found']);
    });

    test('a handler can extend its own lease', async () => {
      const q = queue<string>();
      const extended = deferred<number>();
      const finish = deferred();
      worker(
        q,
        async (job) => {
          const before = (await q.get(job.id))!.leaseExpiresAtMs!;
          await job.extendLease(60_000);
          const afterExtend = (await q.get(job.id))!.leaseExpiresAtMs!;
          extended.resolve(afterExtend - before);
          await finish.promise;
        },
        { leaseMs: 2_000 },
      );
      await q.add('x', { id: 'x' });
      assert.ok((await within(extended.promise, 10_000, 'the handler to extend its lease')) > 50_000);
      finish.resolve();
      await until(async () => (await q.get('x')) === null, 'the ack');
    });

    test('close hands running jobs back at once, due now, without counting the attempt', async () => {
      const q = queue<string>();
      const started = deferred();
      const w = worker(
        q,
        async (job) => {
          started.resolve();
          await new Promise((r) => job.signal.addEventListener('abort', r));
          await new Promise((r) => setTimeout(r, 10_000));
        },
        { closeTimeoutMs: 50 },
      );
      const released = new Promise((r) => w.once('released', r));
      await q.add('x', { id: 'x' });
      await within(started.promise, 10_000, 'the handler to start');
      await within(w.close(), 10_000, 'close()');
      await within(released, 10_000, "the 'released' event");
      const info = await q.get('x');
      assert.equal(info?.state, 'scheduled');
      assert.equal(info?.attempt, 0);
      assert.equal(info?.ready, true);
    });

    test('a handler that fails while the worker closes has failed: its error kept, the attempt counted; one that gives up on its signal is handed back', async () => {
      const q = queue<string>();
      await q.addBulk([
        { data: 'fails', opts: { id: 'fails', attempts: 2 } },
        { data: 'gives-up', opts: { id: 'gives-up', attempts: 2 } },
      ]);
      const started = new Set<string>();
      const w = worker(
        q,
        async (job) => {
          started.add(job.id);
          await new Promise((r) => job.signal.addEventListener('abort', r));
          if (job.data === 'fails') throw new Error('upstream broke during shutdown');
          job.signal.throwIfAborted();
        },
        { concurrency: 2, batch: 2, closeTimeoutMs: 5_000 },
      );
      const failed: string[] = [];
      w.on('failed', (job, err) => failed.push(`${job.id}: ${(err as Error).message}`));
      await until(() => started.size === 2, 'both handlers to start');
      await within(w.close(), 10_000, 'close()');
      assert.deepEqual(failed, ['fails: upstream broke during shutdown']);
      const fails = await q.get('fails');
      assert.equal(fails?.attempt, 1, 'the failed attempt counts');
      assert.match(fails?.lastError ?? '', /upstream broke during shutdown/);
      const gaveUp = await q.get('gives-up');
      assert.deepEqual([gaveUp?.state, gaveUp?.attempt, gaveUp?.lastError], ['scheduled', 0, undefined]);
    });

    test('dead set: list, get, retry, purge, caps', async () => {
      const q = queue<number>();
      const w = worker(q, () => {
        throw new UnrecoverableError('no');
      });
      let deaths = 0;
      w.on('dead', () => deaths++);
      for (let i = 0; i < 5; i++) await q.add(i, { id: `d${i}` });
      await until(() => deaths === 5, 'five deaths');
      await w.close();
      const page = await q.dead.list({ offset: 1, limit: 2 });
      assert.equal(page.total, 5);
      assert.equal(page.jobs.length, 2);
      assert.equal(await q.dead.retry('d0'), 1);
      assert.equal((await q.get('d0'))?.state, 'scheduled');
      assert.equal(await q.dead.purge(['d1', 'd2', 'nope']), 2);
      await q.dead.setCaps({ maxCount: 1 });
      // On a sharded queue each shard keeps ceil(1 / shards) = 1: d3 and d4 may sit apart.
      const kept = (await q.stats()).dead;
      if (!sharded) assert.equal(kept, 1);
      else assert.ok(kept === 1 || kept === 2, `${kept} kept`);
      assert.equal(await q.dead.purge({ all: true }), kept);
      assert.equal((await q.stats()).dead, 0);
    });

    test('pause holds claims; resume lets them through in order', async () => {
      const q = queue<string>();
      await q.pause();
      const now = await kind.now();
      // Due order is exact within a shard; across shards each shard's resume signal may bring its
      // own claim (docs/api.md, "Order"), so on a sharded queue both jobs share one shard.
      // A queue resharded after its first add takes that add on its first shard set, so a job
      // added first (not due within the test) takes it, and both ids share a shard in both sets.
      if (kind.reshardsTo !== undefined) await q.add('first', { id: 'first', delay: 600_000 });
      const [idA, idB] = sharded ? sameShardIds(kind.options().shards ?? 1, kind.reshardsTo ?? 1) : ['a', 'b'];
      await q.add('b', { id: idB, runAt: now + 20 });
      await q.add('a', { id: idA, runAt: now + 10 });
      const ran: string[] = [];
      worker(q, (job) => void ran.push(job.data), { concurrency: 1, batch: 1 });
      await until(async () => (await q.stats()).ready === 2, 'both to fall due');
      const stats = await q.stats();
      assert.equal(stats.paused, true);
      assert.deepEqual(ran, []);
      await q.resume();
      await until(() => ran.length === 2, 'both to run');
      assert.deepEqual(ran, ['a', 'b']);
    });

    test('dedup window: a second add with the key is skipped, naming the first', async () => {
      const q = queue<string>();
      await q.add('1', { id: 'one', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } });
      const dup = await q.add('2', { id: 'two', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } });
      assert.deepEqual([dup.added, dup.duplicateOf, dup.state], [false, 'one', 'scheduled']);
      await q.cancel('one');
      assert.equal((await q.add('3', { id: 'three', dedup: { key: 'k', windowMs: 60_000 } })).state, 'finished');
      // The window outlives obliterate (docs/api.md): wiping the queue does not let the job run twice.
      assert.equal((await q.obliterate({ force: true })).removed, true);
      const after = await q.add('4', { id: 'four', dedup: { key: 'k', windowMs: 60_000 } });
      assert.deepEqual([after.added, after.duplicateOf, after.state], [false, 'one', 'finished']);
      assert.equal(await q.get('four'), null);
    });

    test('the event feed reports what happened, in order', async () => {
      const q = queue<string>();
      await q.events.enable({ maxLen: 100 });
      worker(q, () => undefined);
      await q.add('x', { id: 'x' });
      const seen: string[] = [];
      const ac = new AbortController();
      // Bounded: a feed that misses an entry fails here, naming what it saw, instead of hanging.
      const bound = setTimeout(() => ac.abort(), 10_000);
      for await (const e of q.events.follow({ after: '0', signal: ac.signal })) {
        seen.push(`${e.event}:${e.id}`);
        if (e.event === 'completed') ac.abort();
      }
      clearTimeout(bound);
      assert.deepEqual(seen, ['added:x', 'claimed:x', 'completed:x']);
      assert.equal((await q.stats()).eventStreamLength, 3);
    });

    test('the event feed reports each job written once: one replaced or debounced within the same call is reported as written', async () => {
      const q = queue<string>();
      await q.events.enable({ maxLen: 100 });
      const results = await q.addBulk([
        { data: '1', opts: { id: 'r', delay: 60_000 } },
        { data: '2', opts: { id: 'r', delay: 60_000, replace: true } },
        { data: '3', opts: { debounce: { key: 'k', delayMs: 60_000 } } },
        { data: '4', opts: { debounce: { key: 'k', delayMs: 60_000 } } },
        { data: '5', opts: { id: 's', delay: 60_000 } },
      ]);
      const burst = results[2]!.id;
      assert.equal(results[3]!.debounced, true);
      const reader = q.store.eventReader(q.name);
      const events = await reader.read('0', 100, 0);
      await reader.close();
      const added = events.filter((e) => e.event === 'added').map((e) => e.id);
      // Shards report in their own order: the ids, as a set, and each once.
      assert.deepEqual([...added].sort(), ['r', 's', burst].sort());
      assert.equal((await q.get('r'))?.data, '2');
      assert.equal((await q.get(burst))?.data, '4');
    });

    test('bad input is refused by field and writes nothing', async () => {
      const q = queue<unknown>();
      const bad: [unknown, unknown, RegExp][] = [
        [1, { delay: -1 }, /^delay/],
        [1, { delay: Number.NaN }, /^delay/],
        [1, { id: '' }, /^id/],
        [1, { id: 'x'.repeat(300) }, /^id/],
        [1, { nope: true }, /nope/],
        ['x'.repeat(600_000), {}, /^data/],
      ];
      for (const [data, opts, message] of bad) {
        await assert.rejects(q.add(data, opts as never), (e: unknown) => e instanceof ValidationError && message.test(e.message));
      }
      await assert.rejects(q.addBulk([{ data: 1 }, { data: 2, opts: { delay: -5 } }]), /jobs\[1\]\.opts\.delay/);
      const s = await q.stats();
      assert.deepEqual([s.scheduled, s.active, s.dead], [0, 0, 0]);
    });

    test('retention: completed jobs kept with result, times and worker; trimmed by count; a kept id holds it until replaced', {
      skip: sharded && 'count caps are split over shards: test/sharded/sharded-queue.test.ts',
    }, async () => {
      const q = queue<number>();
      assert.deepEqual(await q.retention(), { completed: null, dead: null });
      await q.setRetention({ completed: { count: 3 } });
      assert.deepEqual((await q.retention()).completed, { count: 3, ageMs: undefined });
      const done = deferred();
      let n = 0;
      const w = worker(q, async (job) => {
        await job.progress({ step: 2, of: 2 });
        await job.log(`ran ${job.data}`);
        if (++n === 5) done.resolve();
        return { doubled: job.data * 2 };
      });
      const before = await kind.now();
      for (let i = 0; i < 5; i++) await q.add(i, { id: `c${i}` });
      await within(done.promise, 10_000, 'five jobs to complete');
      // The fifth handler resolves `done` before it returns: its ack comes after.
      await until(async () => (await q.get('c4'))?.state === 'completed' && (await q.stats()).completed === 3, 'the last acked, three kept');
      const kept = await q.get('c4');
      assert.ok(kept);
      assert.equal(kept.state, 'completed');
      assert.deepEqual(kept.result, { doubled: 8 });
      assert.deepEqual(kept.progress, { step: 2, of: 2 });
      assert.deepEqual(kept.logs, ['ran 4']);
      // What get() answers is a copy: a caller's edit changes nothing stored.
      kept.logs!.push('edited by a caller');
      assert.deepEqual((await q.get('c4'))?.logs, ['ran 4']);
      assert.equal(kept.attempt, 1);
      assert.equal(kept.workerId, w.id);
      assert.ok(kept.startedAtMs! >= before && kept.finishedAtMs! >= kept.startedAtMs!, 'started, then finished');
      assert.equal(await q.get('c0'), null, 'the oldest beyond the count are gone');
      const again = await q.add(99, { id: 'c4' });
      assert.deepEqual([again.added, again.state], [false, 'completed']);
      assert.deepEqual(await q.cancel('c4'), { id: 'c4', cancelled: false, state: 'completed' });
      const replaced = await q.add(99, { id: 'c4', replace: true, delay: 60_000 });
      assert.equal(replaced.replaced, true);
      const fresh = await q.get('c4');
      assert.deepEqual([fresh?.state, fresh?.result, fresh?.progress, fresh?.logs], ['scheduled', undefined, undefined, undefined]);
      const page = await q.jobs.list({ state: 'completed' });
      assert.deepEqual(
        page.jobs.map((j) => j.id),
        ['c2', 'c3'],
      );
      assert.deepEqual(page.jobs[1]!.result, { doubled: 6 });
      assert.equal(await q.completed.purge({ all: true }), 2);
      await q.setRetention({ completed: null });
      assert.deepEqual(await q.retention(), { completed: null, dead: null });
    });

    test('progress and logs are fenced by the lease: a stale holder writes nothing', async () => {
      const q = queue<number>();
      await q.add(1, { id: 'p' });
      const store = (q as Queue<unknown>).store;
      const first = (await claimJobs(store, q.name, 1, 1, 3)).jobs[0]!;
      await until(async () => (await store.claim(q.name, 1, 30_000, 3)).jobs.length === 1, 'the lease to run out and the job to be handed out again');
      const stale = await store.update(q.name, { id: 'p', token: first.token, progress: '50', lines: ['late'], logCap: 10 });
      assert.equal(stale, 'lease_lost');
      const got = await q.get('p');
      assert.deepEqual([got?.progress, got?.logs], [undefined, undefined]);
      assert.equal(got?.state, 'active');
    });

    test('listings: every state, in order, paged with a stable cursor; bad input refused', async () => {
      const q = queue<number>();
      const now = await kind.now();
      for (let i = 0; i < 7; i++) await q.add(i, { id: `s${i}`, runAt: now + 600_000 + (6 - i) * 1000 });
      await q.add(100, { id: 'r-low', runAt: now - 5000 });
      await q.add(101, { id: 'r-high', runAt: now - 1000, priority: 5 });
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await q.jobs.list({ state: 'scheduled', limit: 3, cursor });
        assert.equal(page.total, pages === 0 ? 7 : 6);
        seen.push(...page.jobs.map((j) => j.id));
        cursor = page.cursor;
        pages++;
        // A job moving away between pages changes nothing for the others.
        if (pages === 1) await q.cancel('s5');
      } while (cursor);
      assert.deepEqual(seen, ['s6', 's5', 's4', 's3', 's2', 's1', 's0']);
      const ready = await q.jobs.list({ state: 'ready' });
      assert.deepEqual(
        ready.jobs.map((j) => [j.id, j.ready, j.state]),
        // Neither was promoted yet: the due members of the scheduled set, by due time.
        [
          ['r-low', true, 'scheduled'],
          ['r-high', true, 'scheduled'],
        ],
      );
      const store = (q as Queue<unknown>).store;
      const claimed = await claimJobs(store, q.name, 1, 60_000, 3, 'w-1');
      assert.equal(claimed.jobs[0]!.id, 'r-high', 'priority first');
      const active = await q.jobs.list({ state: 'active' });
      assert.deepEqual(
        active.jobs.map((j) => [j.id, j.workerId, j.leaseExpiresAtMs]),
        [['r-high', 'w-1', claimed.jobs[0]!.leaseExpiresAtMs]],
      );
      assert.equal((await q.jobs.list({ state: 'dead' })).total, 0);
      await assert.rejects(q.jobs.list({ state: 'nope' as never }), /^ValidationError: state/);
      await assert.rejects(q.jobs.list({ state: 'dead', limit: 0 }), /limit/);
      await assert.rejects(q.jobs.list({ state: 'dead', cursor: 'garbage!' }), /cursor/);
      const sched = await q.jobs.list({ state: 'scheduled', limit: 1 });
      await assert.rejects(q.jobs.list({ state: 'dead', cursor: sched.cursor }), /cursor belongs to the scheduled listing/);
      await store.complete(q.name, [{ id: 'r-high', token: claimed.jobs[0]!.token }]);
    });

    test('listings newest first: every state backwards, paged both ways, each cursor bound to its order', async () => {
      const q = queue<number>();
      const now = await kind.now();
      // Scheduled: due in 10 min + i s; two share a due time (the id breaks the tie).
      for (let i = 0; i < 7; i++) await q.add(i, { id: `s${i}`, runAt: now + 600_000 + Math.min(i, 5) * 1000 });
      await q.add(100, { id: 'r-old', runAt: now - 5000 });
      await q.add(101, { id: 'r-new', runAt: now - 1000 });
      const walk = async (state: ListState, order: 'asc' | 'desc', limit: number, on: Queue<number> = q) => {
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await on.jobs.list({ state, order, limit, cursor });
          seen.push(...page.jobs.map((j) => j.id));
          cursor = page.cursor;
        } while (cursor);
        return seen;
      };
      const asc = await walk('scheduled', 'asc', 3);
      assert.deepEqual(asc, ['s0', 's1', 's2', 's3', 's4', 's5', 's6']);
      for (const limit of [1, 2, 3, 7, 50]) assert.deepEqual(await walk('scheduled', 'desc', limit), [...asc].reverse(), `scheduled desc by ${limit}`);
      const readyAsc = await walk('ready', 'asc', 1);
      // A sharded queue lists ready jobs shard by shard, and newest first from the last shard back
      // (docs/api.md, listings): across shards the hand-out order is not promised, only that the
      // two orders are each other's reverse. (On 3 shards both ids share shard 1; after a reshard
      // to 2 they do not.)
      if (sharded) assert.deepEqual([...readyAsc].sort(), ['r-new', 'r-old']);
      else assert.deepEqual(readyAsc, ['r-old', 'r-new']);
      assert.deepEqual(await walk('ready', 'desc', 1), [...readyAsc].reverse());

      // Dead and completed: by time of death and finish; newest first is the reverse.
      const dq = queue<number>();
      await dq.setRetention({ completed: { count: 100 } });
      const w = worker(
        dq,
        async (job) => {
          if (job.data % 2) throw new Error(`boom ${job.data}`);
          return job.data;
        },
        { attempts: 1 },
      );
      for (let i = 0; i < 8; i++) {
        await dq.add(i, { id: `j${i}` });
        // One at a time, a few ms apart, so the times differ and the order is known.
        await until(async () => (await dq.stats()).completed + (await dq.stats()).dead === i + 1, `j${i} to finish`);
        await new Promise((r) => setTimeout(r, 3));
      }
      await w.close();
      for (const state of ['dead', 'completed'] as const) {
        const oldest = await walk(state, 'asc', 2, dq);
        assert.equal(oldest.length, 4, state);
        const newest = await walk(state, 'desc', 3, dq);
        assert.deepEqual(newest, [...oldest].reverse(), `${state}: newest first`);
        const first = await dq.jobs.list({ state, order: 'desc', limit: 1 });
        assert.equal(first.total, 4);
        assert.ok(first.jobs[0]!.finishedAtMs! >= (await dq.get(oldest[0]!))!.finishedAtMs!, 'the newest first');
      }
      // A cursor is bound to its order: an oldest-first cursor is refused by a newest-first listing and back.
      const a = await dq.jobs.list({ state: 'dead', limit: 1 });
      const d = await dq.jobs.list({ state: 'dead', order: 'desc', limit: 1 });
      await assert.rejects(
        dq.jobs.list({ state: 'dead', order: 'desc', cursor: a.cursor }),
        (e: unknown) => e instanceof ValidationError && e.field === 'cursor',
      );
      await assert.rejects(dq.jobs.list({ state: 'dead', cursor: d.cursor }), (e: unknown) => e instanceof ValidationError && e.field === 'cursor');
      await assert.rejects(dq.jobs.list({ state: 'dead', order: 'up' as never }), (e: unknown) => e instanceof ValidationError && e.field === 'order');
      const forge = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
      for (const cursor of [
        forge(['dead', 'dead', '1', 'j1', 'down']),
        forge(['dead', 'dead', '1', 'j1', 'desc', 'x']),
        forge(['dead', 'dead', '1', 'j1', 1]),
      ]) {
        await assert.rejects(
          dq.jobs.list({ state: 'dead', order: 'desc', cursor }),
          (e: unknown) => e instanceof ValidationError && e.field === 'cursor',
          cursor,
        );
      }
    });

    test('search: text in id or data, JSON path equality, a budget the caller sees', async () => {
      const q = queue<{ email: string; items: { sku: string }[] }>();
      for (let i = 0; i < 30; i++) await q.add({ email: `user${i}@shop.test`, items: [{ sku: `sku-${i % 3}` }] }, { id: `order-${i}`, delay: 60_000 });
      const byText = await q.jobs.search({ text: 'user7@' });
      assert.deepEqual(
        byText.jobs.map((j) => j.id),
        ['order-7'],
      );
      assert.deepEqual([byText.scanned, byText.total, byText.cursor], [30, 30, undefined]);
      const byPath = await q.jobs.search({ path: 'items[0].sku', equals: 'sku-1', limit: 100 });
      assert.equal(byPath.jobs.length, 10);
      assert.ok(byPath.jobs.every((j) => j.data.items[0]!.sku === 'sku-1'));
      const byId = await q.jobs.search({ text: 'order-29' });
      assert.deepEqual(
        byId.jobs.map((j) => j.id),
        ['order-29'],
      );
      // idsOnly: the data is never matched (the dashboard searches so when payloads are redacted).
      assert.deepEqual((await q.jobs.search({ text: 'user7@', idsOnly: true })).jobs, []);
      assert.deepEqual(
        (await q.jobs.search({ text: 'order-29', idsOnly: true })).jobs.map((j) => j.id),
        ['order-29'],
      );
      await assert.rejects(q.jobs.search({ path: 'email', equals: 'x', idsOnly: true }), /idsOnly/);
      // A small budget reads part of the queue and says so; the cursor goes on.
      let scanned = 0;
      let cursor: string | undefined;
      let found = 0;
      let calls = 0;
      do {
        const r = await q.jobs.search({ text: '@shop.test', budget: 5, limit: 1000, cursor });
        assert.ok(r.scanned <= 30);
        scanned += r.scanned;
        found += r.jobs.length;
        cursor = r.cursor;
        calls++;
      } while (cursor && calls < 100);
      assert.ok(calls > 1, 'the budget made the search stop early');
      assert.ok(found >= 30 && scanned >= 30, `found ${found} of 30 over ${scanned} read`);
      // A limit below the matches stops mid-step; the cursor goes on after the last job it read,
      // even when jobs it already passed are removed in between.
      const paged: string[] = [];
      cursor = undefined;
      calls = 0;
      do {
        const r = await q.jobs.search({ text: '@shop.test', limit: 4, cursor });
        assert.ok(r.jobs.length <= 4);
        paged.push(...r.jobs.map((j) => j.id));
        if (calls === 0) await q.cancel(r.jobs[0]!.id);
        cursor = r.cursor;
        calls++;
      } while (cursor && calls < 100);
      assert.deepEqual([...new Set(paged)].sort(), Array.from({ length: 30 }, (_, i) => `order-${i}`).sort());
      await assert.rejects(q.jobs.search({ text: 'a', cursor: '0~%%' }), /^ValidationError: cursor/);
      await assert.rejects(q.jobs.search({ text: 'a', path: 'b', equals: 1 } as never), /exactly one/);
      await assert.rejects(q.jobs.search({ path: 'a..b', equals: 1 }), /^ValidationError: path/);
    });

    test('search paged with its own cursors finds every match once, whatever the budget (a resumed step reads what it read before)', async () => {
      // 2,000 jobs, past the size where Redis keeps a hash compact, so HSCAN goes a step at a
      // time; one in ten has an 'x' in its id.
      const q = queue<{ n: number }>();
      const ids = Array.from({ length: 2000 }, (_, n) => `${randomUUID()}-${n % 10 === 0 ? 'x' : ''}${n}`);
      await q.addBulk(ids.map((id, n) => ({ data: { n }, opts: { id, delay: 60_000 } })));
      const marked = ids.filter((id) => id.includes('x'));
      // Budget 1500 reads a step of 1000 and one of 500 (about 100 and 50 matches): a limit of
      // 130 stops in the short step, and the next call must read that step with its own count.
      // Budget 250 and limit 7 stop in the middle of most steps.
      for (const [text, budget, limit, want] of [
        ['x', 1500, 130, marked],
        ['-', 250, 7, ids],
      ] as const) {
        const seen: string[] = [];
        let cursor: string | undefined;
        let calls = 0;
        do {
          const r = await q.jobs.search({ text, budget, limit, cursor });
          seen.push(...r.jobs.map((j) => j.id));
          cursor = r.cursor;
          calls++;
        } while (cursor && calls < 1000);
        assert.equal(cursor, undefined, 'the search came to an end');
        assert.equal(new Set(seen).size, seen.length, `budget ${budget}: no job was found twice`);
        assert.equal(seen.length, want.length, `budget ${budget}, limit ${limit}: found ${seen.length} of ${want.length}`);
      }
      // Jobs of a step removed between calls (so its re-read walks further) do not make the
      // search skip one that stayed.
      const seen = new Set<string>();
      let cursor: string | undefined;
      let calls = 0;
      do {
        const r = await q.jobs.search({ text: '-', limit: 5, cursor });
        for (const j of r.jobs) seen.add(j.id);
        if (calls < 20) await q.cancelMany(r.jobs.map((j) => j.id));
        cursor = r.cursor;
        calls++;
      } while (cursor && calls < 1000);
      for (const id of ids) assert.ok(seen.has(id) || (await q.get(id)) === null, `${id} was skipped`);
    });

    test('oldestDueAgeMs is the wait of the longest-waiting due job, also a starved low-priority one behind a claim', async () => {
      const q = queue<string>();
      const now = await kind.now();
      await q.add('low', { id: 'low', priority: -5, runAt: now - 1500 });
      await q.add('high-1', { id: 'high-1', priority: 10, runAt: now - 10 });
      await q.add('high-2', { id: 'high-2', priority: 10, runAt: now - 10 });
      await q.add('mid', { id: 'mid', priority: 3, runAt: now - 700 });
      // A claim moves what is due to the ready set (ordered by priority) and takes one job.
      const claimed = await claimJobs(q.store, q.name, 1, 60_000, 3);
      // One store hands out the highest priority; a shard hands out its own best.
      if (!sharded)
        assert.deepEqual(
          claimed.jobs.map((j) => j.id),
          ['high-1'],
        );
      const waited: Record<string, number> = { low: 1500, 'high-1': 10, 'high-2': 10, mid: 700 };
      const longest = Math.max(
        ...Object.keys(waited)
          .filter((id) => !claimed.jobs.some((j) => j.id === id))
          .map((id) => waited[id]!),
      );
      const stats = await q.stats();
      assert.equal(stats.ready, 3);
      assert.ok(stats.oldestDueAgeMs !== undefined && stats.oldestDueAgeMs >= longest, `lag ${stats.oldestDueAgeMs} ms, a job waited ${longest} ms`);
      assert.ok(stats.oldestDueAgeMs < longest + 10_000, `lag ${stats.oldestDueAgeMs} ms`);
      await q.store.release(
        q.name,
        claimed.jobs.map((j) => ({ id: j.id, token: j.token })),
      );
    });

    test('an edited cursor is refused with a ValidationError naming the cursor, never a Redis error or a silent empty page', async () => {
      const q = queue<number>();
      await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ data: i, opts: { id: `c${i}`, delay: 60_000 } })));
      const forge = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
      const places = (inner: unknown) => JSON.stringify({ [q.name]: inner });
      const lists: [ListState, string][] = [
        ['dead', forge(['dead', 'active', '1', 'c1'])], // a phase the dead listing has not
        ['scheduled', forge(['scheduled', 'dead', '1', 'c1'])],
        ['scheduled', forge(['scheduled', 'scheduled', ' 1', 'c1'])], // Number() takes it, Redis does not
        ['scheduled', forge(['scheduled', 'scheduled', '0x10', 'c1'])],
        ['scheduled', forge(['scheduled', 'scheduled', '1e999', 'c1'])],
        ['scheduled', forge(['scheduled', 'shards', '0', places(['scheduled', ' 1', 'c1'])])],
        ['scheduled', forge(['scheduled', 'shards', '0', places(['dead', '1', 'c1'])])],
        ['ready', forge(['ready', 'shards', '0', places(['active', '1', 'c1'])])],
        ['scheduled', forge(['scheduled', 'shards', '0', '[]'])],
      ];
      for (const [state, cursor] of lists) {
        await assert.rejects(q.jobs.list({ state, cursor }), (e: unknown) => e instanceof ValidationError && e.field === 'cursor', `${state} ${cursor}`);
      }
      for (const cursor of ['99999999999999999999', '18446744073709551616', '0~0~0~YQ', '0~5~x~YQ', '0~5~0~', '0~1001~0~YQ', '0.9999', '-1']) {
        await assert.rejects(q.jobs.search({ text: 'c', cursor }), (e: unknown) => e instanceof ValidationError && e.field === 'cursor', cursor);
      }
    });

    test('bulk: cancel many, drain (all or due before T), obliterate refuses while active unless forced', async () => {
      const q = queue<number>();
      const now = await kind.now();
      for (let i = 0; i < 10; i++) await q.add(i, { id: `b${i}`, runAt: now + 60_000 + i * 1000 });
      const many = await q.cancelMany(['b0', 'b1', 'nope']);
      assert.equal(many.cancelled, 2);
      assert.deepEqual(
        many.results.map((r) => [r.id, r.cancelled, r.state]),
        [
          ['b0', true, 'scheduled'],
          ['b1', true, 'scheduled'],
          ['nope', false, undefined],
        ],
      );
      assert.deepEqual(await q.drain({ dueBefore: now + 60_000 + 5000 }), { removed: 3 });
      assert.deepEqual(
        (await q.jobs.list({ state: 'scheduled' })).jobs.map((j) => j.id),
        ['b5', 'b6', 'b7', 'b8', 'b9'],
      );
      await q.add(1, { id: 'due-now' });
      const store = (q as Queue<unknown>).store;
      const c = await claimJobs(store, q.name, 1, 60_000, 3);
      assert.equal(c.jobs[0]!.id, 'due-now');
      const refused = await q.obliterate();
      assert.deepEqual([refused.removed, refused.counts.active, refused.counts.scheduled], [false, 1, 5]);
      assert.equal((await q.stats()).scheduled, 5, 'a refused obliterate removes nothing');
      assert.deepEqual(await q.drain(), { removed: 5 });
      await q.setRetention({ completed: { count: 10 } });
      const gone = await q.obliterate({ force: true });
      assert.deepEqual([gone.removed, gone.counts.active], [true, 1]);
      const s = await q.stats();
      assert.deepEqual([s.scheduled, s.active, s.dead, s.completed], [0, 0, 0, 0]);
      assert.deepEqual(await q.retention(), { completed: null, dead: null });
      assert.equal((await store.complete(q.name, [{ id: 'due-now', token: c.jobs[0]!.token }]))[0], 'not_found');
      // The queue's next life goes on from the old sequence, so a stale holder's token is never
      // handed out again, even by a claim in the same millisecond (the differential test freezes it).
      await q.add(1, { id: 'due-now' });
      const again = await claimJobs(store, q.name, 1, 60_000, 3);
      const seqOf = (token: string) => Number(token.slice(token.lastIndexOf('-') + 1));
      assert.ok(seqOf(again.jobs[0]!.token) > seqOf(c.jobs[0]!.token), `${again.jobs[0]!.token} after ${c.jobs[0]!.token}`);
      assert.equal((await store.complete(q.name, [{ id: 'due-now', token: c.jobs[0]!.token }]))[0], 'lease_lost');
      assert.equal((await store.complete(q.name, [{ id: 'due-now', token: again.jobs[0]!.token }]))[0], 'ok');
    });

    test('dead retry and purge by filter', async () => {
      const q = queue<{ kind: string }>();
      const w = worker(q, (job) => {
        throw new UnrecoverableError(job.data.kind === 'a' ? 'timeout talking to bank' : 'bad card');
      });
      let deaths = 0;
      w.on('dead', () => deaths++);
      for (let i = 0; i < 6; i++) await q.add({ kind: i % 2 ? 'a' : 'b' }, { id: `f${i}` });
      await until(() => deaths === 6, 'six deaths');
      await w.close();
      assert.equal(await q.dead.retry({ errorContains: 'timeout' }), 3);
      assert.equal((await q.get('f1'))?.state, 'scheduled');
      assert.equal(await q.dead.purge({ dataContains: '"b"' }), 3);
      assert.equal((await q.stats()).dead, 0);
      await assert.rejects(q.dead.retry({ nope: 1 } as never), /nope/);
    });

    test('live workers: listed while running with their details, gone when closed; stats count them', async () => {
      const q = queue<number>();
      assert.deepEqual(await q.workers(), []);
      const w = worker(q, () => {}, { concurrency: 3 });
      const listed = await until(async () => (await q.workers()).find((x) => x.id === w.id), 'the worker to register');
      assert.deepEqual([listed.queue, listed.concurrency, listed.pid], [q.name, 3, process.pid]);
      assert.ok(listed.lastSeenAtMs > 0 && listed.expiresAtMs > listed.lastSeenAtMs);
      assert.equal((await q.stats()).workers, 1);
      await w.close();
      assert.deepEqual(await q.workers(), []);
      assert.equal((await q.stats()).workers, 0);
    });

    test('queues: the registry lists every queue added to, with its counts', async () => {
      const q = queue<number>();
      await q.add(1, { delay: 60_000 });
      const found = (await listQueues(kind.options())).find((x) => x.name === q.name);
      assert.equal(found?.stats.scheduled, 1);
      await q.drain();
      await q.obliterate();
      assert.equal(
        (await listQueues(kind.options())).find((x) => x.name === q.name),
        undefined,
      );
    });
  });
}

/** Two job ids that a queue routes to the same shard, whether of `shards` or of `alsoShards` shards. */
function sameShardIds(shards: number, alsoShards = 1): [string, string] {
  const first = 'pa-0';
  const same = (id: string, n: number) => shardIndex(id, n) === shardIndex(first, n);
  for (let i = 1; ; i++) if (same(`pa-${i}`, shards) && same(`pa-${i}`, alsoShards)) return [first, `pa-${i}`];
}
