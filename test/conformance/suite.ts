/**
 * The conformance suite: one set of behaviours, written against the public API, that every
 * store must show. redis.test.ts and memory.test.ts run it; a difference is a bug in one store.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { Queue, UnrecoverableError, ValidationError, Worker, type ConnectionOptions, type Job, type WorkerOptions } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { deferred, until, within } from '../helpers/wait.js';

export interface StoreKind {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Connection options for a new Queue or Worker on this store. */
  options(): ConnectionOptions;
  /** The store's clock (the Redis server's, or the process's). */
  now(): Promise<number>;
}

export function conformance(kind: StoreKind): void {
  describe(`conformance [${kind.name}]`, () => {
    let open: { close(): Promise<void> }[] = [];
    let queues: Queue<unknown>[] = [];
    before(() => kind.start());
    after(() => kind.stop());
    let workers: Worker<never>[] = [];
    afterEach(async () => {
      // Every test leaves its queues consistent, whatever it did. verify() reads without a
      // lock, so the workers stop (and their acks land) first.
      await Promise.all(workers.map((w) => w.close()));
      for (const q of queues) {
        const report = await q.verify();
        assert.equal(report.ok, true, `${q.name}: ${report.problems.join('; ')}`);
      }
      await Promise.all(open.map((o) => o.close()));
      open = [];
      queues = [];
      workers = [];
    });

    function queue<T>(): Queue<T> {
      const q = new Queue<T>(uniqueName('cf'), kind.options());
      open.push(q);
      queues.push(q as Queue<unknown>);
      return q;
    }
    function worker<T>(q: Queue<T>, handler: (job: Job<T>) => unknown, opts: WorkerOptions<T> = {}): Worker<T> {
      const w = new Worker<T>(q.name, handler, { ...kind.options(), ...opts } as WorkerOptions<T>);
      w.on('error', () => {});
      workers.push(w as unknown as Worker<never>);
      return w;
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
      await done.promise;
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
      worker(
        q,
        (job) => {
          order.push(job.data);
          if (order.length === jobs.length) done.resolve();
        },
        { concurrency: 1, batch: 1 },
      );
      await done.promise;
      assert.deepEqual(order, ['high-older', 'high-0', 'high-1', 'high-2', 'high-3', 'high-4', 'low-older', 'low-0', 'low-1', 'low-2', 'low-3', 'low-4']);
    });

    test('claim hands out up to N per call; two workers never share a job', async () => {
      const q = queue<number>();
      await q.addBulk(Array.from({ length: 12 }, (_, i) => ({ data: i })));
      const first = await q.store.claim(q.name, 5, 30_000, 3);
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
      await done.promise;
      await until(async () => (await q.stats()).active === 0, 'acks to land');
      assert.ok(
        [...seen.values()].every((n) => n === 1),
        'no job ran twice',
      );
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
      await dead.promise;
      assert.deepEqual(attempts, [1, 2, 3]);
      const info = await q.get('flaky');
      assert.equal(info?.state, 'dead');
      assert.equal(info?.attempt, 3);
      assert.match(info?.lastError ?? '', /boom 3/);
      assert.equal((await q.get('fatal'))?.attempt, 1);
      assert.match((await q.dead.get('fatal'))?.lastError ?? '', /give up/);
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
      const [, reason] = await dead;
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
      const first = (await q.store.claim(q.name, 1, 100, 3)).jobs[0]!;
      await until(async () => (await kind.now()) > first.leaseExpiresAtMs, 'the lease to run out');
      const second = (await q.store.claim(q.name, 1, 30_000, 3)).jobs[0]!;
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
      assert.ok((await extended.promise) > 50_000);
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
      assert.equal((await q.stats()).dead, 1);
      assert.equal(await q.dead.purge({ all: true }), 1);
      assert.equal((await q.stats()).dead, 0);
    });

    test('pause holds claims; resume lets them through in order', async () => {
      const q = queue<string>();
      await q.pause();
      const now = await kind.now();
      await q.add('b', { runAt: now + 20 });
      await q.add('a', { runAt: now + 10 });
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
    });

    test('the event feed reports what happened, in order', async () => {
      const q = queue<string>();
      await q.events.enable({ maxLen: 100 });
      worker(q, () => undefined);
      await q.add('x', { id: 'x' });
      const seen: string[] = [];
      const ac = new AbortController();
      for await (const e of q.events.follow({ after: '0', signal: ac.signal })) {
        seen.push(`${e.event}:${e.id}`);
        if (e.event === 'completed') ac.abort();
      }
      assert.deepEqual(seen, ['added:x', 'claimed:x', 'completed:x']);
      assert.equal((await q.stats()).eventStreamLength, 3);
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
  });
}
