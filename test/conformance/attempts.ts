/**
 * The conformance suite of a job's attempt counts: the max attempts that applied to a job that
 * ran out of them (its own, or the worker's default), on every path to the dead set that counts
 * attempts (fail, a lease recovered by a claim, fail-now), as the reads show it; and a job added
 * with attempts already made (`add({ attemptsMade })`, the BullMQ importer's), which runs only
 * the attempts it has left. Run on every store by the files that run the group suite.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Queue, ValidationError } from '../../src/index.js';
import { until } from '../helpers/wait.js';
import { useHarness } from './harness.js';
import type { StoreKind } from './suite.js';

export function attemptsConformance(kind: StoreKind): void {
  describe(`attempt counts [${kind.name}]`, () => {
    const { queue, worker } = useHarness(kind, 'att');

    /** One job claimed with the store's own call (asked again until a shard hands it out). */
    async function claimOne(q: Queue<unknown>, leaseMs: number, defaultMax: number) {
      let job: Awaited<ReturnType<Queue<unknown>['store']['claim']>>['jobs'][number] | undefined;
      await until(async () => {
        job = (await q.store.claim(q.name, 1, leaseMs, defaultMax)).jobs[0];
        return job !== undefined;
      }, 'a job handed out');
      return job!;
    }

    /** What every read says of a dead job: dead.list, get, jobs.list({ state: 'dead' }). */
    async function deadReads(q: Queue<unknown>, id: string) {
      const listed = (await q.dead.list()).jobs.find((j) => j.id === id);
      const got = await q.get(id);
      const paged = (await q.jobs.list({ state: 'dead' })).jobs.find((j) => j.id === id);
      return {
        dead: [listed?.attempt, listed?.maxAttempts],
        get: [got?.state, got?.attempt, got?.maxAttempts],
        list: [paged?.attempt, paged?.maxAttempts],
      };
    }

    test("a job without attempts of its own that ran out of the worker's 3: every read says 3 of 3", async () => {
      const q = queue<string>();
      await q.add('x', { id: 'plain' });
      await q.add('x', { id: 'own', attempts: 2 });
      assert.equal((await q.get('plain'))?.maxAttempts, undefined, 'before it runs, the worker decides');
      const w = worker(
        q,
        () => {
          throw new Error('no');
        },
        { attempts: 3, backoff: { type: 'fixed', delay: 1 } },
      );
      await until(async () => (await q.stats()).dead === 2, 'both dead');
      assert.deepEqual(await deadReads(q as Queue<unknown>, 'plain'), { dead: [3, 3], get: ['dead', 3, 3], list: [3, 3] });
      assert.deepEqual(await deadReads(q as Queue<unknown>, 'own'), { dead: [2, 2], get: ['dead', 2, 2], list: [2, 2] });
      // Put back from the dead set, it starts afresh: the worker's default applies again.
      await w.close();
      assert.equal(await q.dead.retry(['plain']), 1);
      assert.deepEqual([(await q.get('plain'))?.attempt, (await q.get('plain'))?.maxAttempts], [0, undefined]);
      await q.cancel('plain');
    });

    test("a lease that ran out on the last of the worker's attempts: dead, 2 of 2", async () => {
      const q = queue<string>() as Queue<unknown>;
      await q.add('x', { id: 'stuck' });
      for (let attempt = 1; attempt <= 2; attempt++) {
        const job = await claimOne(q, 50, 2);
        assert.equal(job.attempt, attempt);
        await until(async () => (await kind.now()) > job.leaseExpiresAtMs, 'the lease to run out');
      }
      // The next claim recovers the lease: no attempts left.
      await until(async () => {
        await q.store.claim(q.name, 1, 50, 2);
        return (await q.stats()).dead === 1;
      }, 'the lease recovered into the dead set');
      const reads = await deadReads(q, 'stuck');
      assert.deepEqual(reads, { dead: [2, 2], get: ['dead', 2, 2], list: [2, 2] });
      assert.match((await q.get('stuck'))?.lastError ?? '', /lease expired during attempt 2 of 2/);
    });

    test("a running job failed from elsewhere on the last of the worker's attempts: dead, 1 of 1; one buried at once keeps no max", async () => {
      const q = queue<string>() as Queue<unknown>;
      await q.add('x', { id: 'last' });
      await q.add('x', { id: 'early' });
      await claimOne(q, 30_000, 1);
      await claimOne(q, 30_000, 1);
      assert.deepEqual([(await q.get('last'))?.state, (await q.get('early'))?.state], ['active', 'active']);
      const last = await q.store.failNow(q.name, { id: 'last', reason: 'stop', dead: false, retryDelayMs: 0, defaultMaxAttempts: 1 });
      assert.equal(last.outcome, 'dead');
      assert.deepEqual(await deadReads(q, 'last'), { dead: [1, 1], get: ['dead', 1, 1], list: [1, 1] });
      // Buried by request, not out of attempts: no max was reached, and the reads say as before.
      const early = await q.store.failNow(q.name, { id: 'early', reason: 'stop', dead: true, retryDelayMs: 0, defaultMaxAttempts: 5 });
      assert.equal(early.outcome, 'dead');
      assert.deepEqual(await deadReads(q, 'early'), { dead: [1, undefined], get: ['dead', 1, undefined], list: [1, undefined] });
    });

    test('attemptsMade: a job with attempts 5 and 2 made runs 3 more times, its first run attempt 3', async () => {
      const q = queue<string>();
      const r = await q.add('x', { id: 'moved', attempts: 5, attemptsMade: 2 });
      assert.equal(r.added, true);
      await q.add('x', { id: 'default', attemptsMade: 1 });
      await q.add('x', { id: 'none', attemptsMade: 0, attempts: 1 });
      const before = await q.get('moved');
      assert.deepEqual([before?.state, before?.attempt, before?.maxAttempts], ['scheduled', 2, 5]);
      assert.equal((await q.get('none'))?.attempt, 0);
      const seen: string[] = [];
      worker(
        q,
        (job) => {
          seen.push(`${job.id}:${job.attempt}/${job.maxAttempts}`);
          throw new Error('no');
        },
        { attempts: 3, backoff: { type: 'fixed', delay: 1 } },
      );
      await until(async () => (await q.stats()).dead === 3, 'all dead');
      assert.deepEqual(
        seen.filter((s) => s.startsWith('moved')),
        ['moved:3/5', 'moved:4/5', 'moved:5/5'],
      );
      // Without attempts of its own the worker's 3 apply: one made, two left.
      assert.deepEqual(
        seen.filter((s) => s.startsWith('default')),
        ['default:2/3', 'default:3/3'],
      );
      assert.deepEqual(
        seen.filter((s) => s.startsWith('none')),
        ['none:1/1'],
      );
      const dead = (await q.dead.list()).jobs.map((j) => [j.id, j.attempt, j.maxAttempts]).sort();
      assert.deepEqual(dead, [
        ['default', 3, 3],
        ['moved', 5, 5],
        ['none', 1, 1],
      ]);
    });

    test('attemptsMade with replace: the new job has the attempts made it was given; one replaced without starts at 0', async () => {
      const q = queue<string>();
      await q.add('a', { id: 'r', delay: 60_000 });
      const replaced = await q.add('b', { id: 'r', delay: 60_000, replace: true, attemptsMade: 4 });
      assert.equal(replaced.replaced, true);
      assert.deepEqual([(await q.get('r'))?.attempt, (await q.get('r'))?.data], [4, 'b']);
      await q.add('c', { id: 'r', delay: 60_000, replace: true });
      assert.deepEqual([(await q.get('r'))?.attempt, (await q.get('r'))?.data], [0, 'c']);
      // An id that exists, added again with attemptsMade (no replace), is left alone.
      await q.add('d', { id: 'r', attemptsMade: 2 });
      assert.equal((await q.get('r'))?.attempt, 0);
      // In one call: a job of the call replaced by a later one takes the later one's.
      await q.addBulk([
        { data: 'e', opts: { id: 's', delay: 60_000, attemptsMade: 3 } },
        { data: 'f', opts: { id: 's', delay: 60_000, replace: true } },
        { data: 'g', opts: { id: 't', delay: 60_000 } },
        { data: 'h', opts: { id: 't', delay: 60_000, replace: true, attemptsMade: 1 } },
      ]);
      assert.deepEqual([(await q.get('s'))?.attempt, (await q.get('t'))?.attempt], [0, 1]);
      await q.cancelMany(['r', 's', 't']);
    });

    test('attemptsMade: not a whole number from 0, or not below the attempts given, is refused naming the field; nothing is written', async () => {
      const q = queue<string>();
      const bad: [unknown, number | undefined, RegExp][] = [
        [-1, undefined, /attemptsMade must not be negative/],
        [1.5, undefined, /attemptsMade must be a whole number/],
        ['2', undefined, /attemptsMade must be a whole number/],
        [Number.NaN, undefined, /attemptsMade must be a whole number/],
        [3, 3, /attemptsMade must be below attempts \(3\)/],
        [4, 3, /attemptsMade must be below attempts \(3\)/],
        [1_000_000, undefined, /attemptsMade must be at most 999999/],
      ];
      for (const [attemptsMade, attempts, why] of bad) {
        await assert.rejects(
          q.add('x', { id: 'bad', attempts, attemptsMade } as never),
          (err: Error) => err instanceof ValidationError && why.test(err.message),
          `${String(attemptsMade)} of ${String(attempts)}`,
        );
      }
      await assert.rejects(
        q.addBulk([
          { data: 'ok', opts: { id: 'ok' } },
          { data: 'x', opts: { id: 'bad', attempts: 2, attemptsMade: 2 } },
        ]),
        (err: Error) => err instanceof ValidationError && /attemptsMade must be below attempts/.test(err.message),
      );
      assert.deepEqual([await q.get('bad'), await q.get('ok')], [null, null]);
      assert.equal((await q.stats()).scheduled, 0);
    });
  });
}
