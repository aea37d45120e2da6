/**
 * The conformance suite of job control: cancelling a running job and failing a job from outside
 * its holder (`queue.cancel(id, { running })`, `queue.fail`), per-job timeouts (`add({ timeoutMs
 * })`), and waiting for a job's end (`queue.waitFor`, `addAndWait`). Each is done from a second
 * Queue of its own (on Redis, another connection: another process as far as the store can tell)
 * while a Worker holds the job. Run on every store by the files that run the group suite.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  HandlerTimeoutError,
  JobCancelledError,
  JobFailedError,
  JobNotFoundError,
  Queue,
  ValidationError,
  WaitTimeoutError,
  type Job,
} from '../../src/index.js';
import { MARK } from '../../src/store/lifecycle.js';
import { deferred, until, within } from '../helpers/wait.js';
import { useHarness } from './harness.js';
import type { StoreKind } from './suite.js';

/** A handler that never settles, and the jobs it was given (by id). */
function hanging<T>() {
  const started = new Map<string, Job<T>>();
  const waiters = new Map<string, (job: Job<T>) => void>();
  return {
    handler: (job: Job<T>) => {
      started.set(job.id, job);
      waiters.get(job.id)?.(job);
      return new Promise<never>(() => {});
    },
    started: (id: string): Promise<Job<T>> => {
      const job = started.get(id);
      if (job) return Promise.resolve(job);
      return new Promise((resolve) => waiters.set(id, resolve));
    },
  };
}

/** Resolves with the signal's reason once it aborts. */
function aborted(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }));
}

export function jobControlConformance(kind: StoreKind): void {
  describe(`job control [${kind.name}]`, () => {
    const { queue, worker } = useHarness(kind, 'jc');

    /** A second Queue on the same queue: another connection, as another process would have. */
    async function elsewhere<T, R>(q: Queue<T>, fn: (other: Queue<T>) => Promise<R>): Promise<R> {
      const other = new Queue<T>(q.name, kind.options());
      try {
        return await fn(other);
      } finally {
        await other.close();
      }
    }

    test('a token that is not one handed out holds nothing: the empty token, and a token with the mark the store keeps once a lease ended, answer lease lost and change nothing', async () => {
      const q = queue<number>();
      await q.add(1, { id: 'm', attempts: 3 });
      const [job] = (await q.store.claim(q.name, 1, 30_000, 3)).jobs;
      const retry = await q.store.fail(q.name, { id: 'm', token: job!.token, error: 'first try', retryDelayMs: 60_000, dead: false, defaultMaxAttempts: 3 });
      assert.equal(retry.outcome, 'retried');
      const before = await q.get('m');
      // The stored token is now given up (MARK.given_up): a caller that sends the marked form
      // must not pass for the holder. A sharded token is `<shard tag>/<token>`: the mark goes on
      // the shard's token.
      const slash = job!.token.indexOf('/');
      for (const token of ['', ...Object.values(MARK).map((mark) => job!.token.slice(0, slash + 1) + mark + job!.token.slice(slash + 1))]) {
        const what = `token ${JSON.stringify(token)}`;
        assert.deepEqual(await q.store.complete(q.name, [{ id: 'm', token, result: '' }]), ['lease_lost'], what);
        assert.deepEqual(await q.store.extend(q.name, [{ id: 'm', token }], 30_000), ['lease_lost'], what);
        assert.deepEqual(await q.store.release(q.name, [{ id: 'm', token }]), ['lease_lost'], what);
        assert.equal(await q.store.update(q.name, { id: 'm', token, progress: '1', lines: [], logCap: 10 }), 'lease_lost', what);
        assert.equal(
          (await q.store.fail(q.name, { id: 'm', token, error: 'x', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 })).outcome,
          'lease_lost',
          what,
        );
        assert.equal((await q.store.snooze(q.name, { id: 'm', token, delayMs: 0, deadlineAtMs: undefined })).outcome, 'lease_lost', what);
      }
      const after = await q.get('m');
      assert.equal(after?.state, 'scheduled');
      assert.equal(after?.dueAtMs, before?.dueAtMs);
      assert.equal(after?.attempt, 1);
      assert.equal(after?.progress, undefined);
    });

    test('a token with the rest of the run state after it (its first start, as the Redis store keeps it) holds nothing; the token alone then acks', async () => {
      const q = queue<number>();
      await q.add(1, { id: 'r' });
      const [job] = (await q.store.claim(q.name, 1, 30_000, 3, 'w1')).jobs;
      // A token is `<claim ms>-<n>` (after `<shard tag>/` on a sharded queue); the Redis store's
      // run state follows it with `:<first started ms>:<worker>:`, the claim's ms on a first run.
      const shardToken = job!.token.slice(job!.token.indexOf('/') + 1);
      const started = shardToken.slice(0, shardToken.indexOf('-'));
      for (const token of [`${job!.token}:${started}`, `${job!.token}:${started}:w1:`, `${job!.token}:`]) {
        assert.deepEqual(await q.store.complete(q.name, [{ id: 'r', token, result: '' }]), ['lease_lost'], token);
      }
      assert.equal((await q.get('r'))?.state, 'active');
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'r', token: job!.token, result: '' }]), ['ok']);
    });

    test('a running job cancelled from elsewhere: its signal aborts with "cancelled", its group slot frees, its holder is told lease lost, the job is gone', async () => {
      const q = queue<number>();
      const h = hanging<number>();
      const revoked: [string, string][] = [];
      const w = worker(q, (job) => (job.id === 'next' ? 'ran' : h.handler(job)), { concurrency: 5 });
      w.on('revoked', (job, why) => revoked.push([job.id, why]));
      const done = deferred<string>();
      w.on('completed', (job) => job.id === 'next' && done.resolve(job.id));
      await q.groups.setLimits('tenant', { concurrency: 1 });
      await q.add(1, { id: 'hung', group: 'tenant' });
      const job = await within(h.started('hung'), 5000, 'the job starts');
      await q.add(2, { id: 'next', group: 'tenant' });
      // An active job says since when this attempt runs (server clock).
      const running = await q.get('hung');
      assert.ok(running?.runningSinceMs !== undefined && running.runningSinceMs >= running.createdAtMs, JSON.stringify(running));
      assert.equal((await q.get('next'))?.runningSinceMs, undefined);

      const before = await elsewhere(q, (o) => o.cancel('hung'));
      assert.deepEqual(before, { id: 'hung', cancelled: false, state: 'active' }, 'without running: left alone');
      assert.equal(job.signal.aborted, false);

      const t0 = Date.now();
      const res = await elsewhere(q, (o) => o.cancel('hung', { running: true, reason: 'upstream is down' }));
      assert.deepEqual(res, { id: 'hung', cancelled: true, state: 'active' });
      assert.equal(await within(aborted(job.signal), 5000, 'the signal aborts'), 'cancelled');
      const tookMs = Date.now() - t0;
      // The group's one slot is free at once: the next job of the group runs.
      assert.equal(await within(done.promise, 5000, 'the next job of the group runs'), 'next');
      assert.deepEqual(revoked, [['hung', 'cancelled']]);
      assert.equal(await q.get('hung'), null);
      // The holder's calls: lease lost (not "no such job", which a re-sent ack also hears).
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'hung', token: job.token, result: '' }]), ['lease_lost']);
      assert.deepEqual(await q.store.extend(q.name, [{ id: 'hung', token: job.token }], 30_000), ['lease_lost']);
      await assert.rejects(job.progress(50), { name: 'LeaseLostError' });
      assert.equal(w.running, 0, 'the hung handler holds no slot of the worker');
      assert.ok(tookMs < 5000, `cancelled in ${tookMs} ms`);
    });

    test('fail now: a running attempt fails with the reason (retries apply), its signal aborts with "failed"; with dead: true it is buried, running or waiting', async () => {
      const q = queue<number>();
      const h = hanging<number>();
      let second: Job<number> | undefined;
      const w = worker(q, (job) => {
        if (job.id === 'f' && job.attempt === 2) {
          second = job;
          return 'second';
        }
        return h.handler(job);
      });
      const completed = deferred<void>();
      w.on('completed', (job) => job.id === 'f' && completed.resolve());
      await q.add(1, { id: 'f', attempts: 3 });
      const first = await within(h.started('f'), 5000, 'the job starts');

      const r = await elsewhere(q, (o) => o.fail('f', { reason: 'stuck on a dead upstream', retryDelayMs: 300 }));
      assert.equal(r.outcome, 'retried');
      assert.equal(r.state, 'active');
      // The old holder, while the job waits for its retry: lease lost.
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'f', token: first.token, result: '' }]), ['lease_lost']);
      assert.equal(await within(aborted(first.signal), 5000, 'the signal aborts'), 'failed');
      await within(completed.promise, 5000, 'the retry runs and completes');
      assert.equal(second?.attempt, 2);

      // dead: true on a running job.
      await q.add(2, { id: 'g', attempts: 5 });
      const g = await within(h.started('g'), 5000, 'g starts');
      const dead = await elsewhere(q, (o) => o.fail('g', { reason: 'poison', dead: true }));
      assert.equal(dead.outcome, 'dead');
      assert.equal(await within(aborted(g.signal), 5000, 'the signal aborts'), 'failed');
      const info = await q.get('g');
      assert.equal(info?.state, 'dead');
      assert.equal(info?.lastError, 'poison');
      assert.deepEqual(
        info?.errors?.map((e) => [e.attempt, e.error]),
        [[1, 'poison']],
      );
      assert.deepEqual(await q.store.complete(q.name, [{ id: 'g', token: g.token, result: '' }]), ['lease_lost']);

      // A waiting job: refused without dead, buried with it.
      await q.add(3, { id: 'later', delay: 60_000 });
      assert.deepEqual(await q.fail('later'), { id: 'later', outcome: 'refused', state: 'scheduled', dueAtMs: undefined });
      assert.equal((await q.get('later'))?.state, 'scheduled');
      assert.equal((await q.fail('later', { dead: true, reason: 'not needed' })).outcome, 'dead');
      assert.equal((await q.get('later'))?.lastError, 'not needed');
      // Dead, unknown.
      assert.deepEqual(await q.fail('later', { dead: true }), { id: 'later', outcome: 'refused', state: 'dead', dueAtMs: undefined });
      assert.equal((await q.fail('nope', { dead: true })).outcome, 'not_found');
    });

    test('bad options of cancel, fail and waitFor are refused at the call, and nothing is written', async () => {
      const q = queue<number>();
      await q.add(1, { id: 'a', delay: 60_000 });
      await assert.rejects(q.cancel('a', { running: 'yes' as unknown as boolean }), ValidationError);
      await assert.rejects(q.cancel('a', { bogus: 1 } as never), ValidationError);
      await assert.rejects(q.fail('a', { dead: true, retryDelayMs: -1 }), ValidationError);
      await assert.rejects(q.fail('a', { dead: true, reason: 7 as unknown as string }), ValidationError);
      await assert.rejects(q.waitFor('a', { timeoutMs: 0 }), ValidationError);
      await assert.rejects(q.waitFor('a', { timeoutMs: 1.5 }), ValidationError);
      await assert.rejects(q.addAndWait(1, { timeoutMs: -5 }), ValidationError);
      await assert.rejects(q.addAndWait(1, { debounce: { key: 'k', delayMs: 10 } }), ValidationError);
      assert.equal((await q.get('a'))?.state, 'scheduled');
      assert.equal((await q.stats()).scheduled, 1);
    });

    test("a job's own timeout fails an attempt that runs longer (HandlerTimeoutError, retries apply); jobs without one take the worker's", async () => {
      const q = queue<number>();
      const failures: [string, string, number | undefined][] = [];
      const w = worker(
        q,
        async (job) => {
          if (job.id === 'slow') await new Promise(() => {});
          await new Promise((r) => setTimeout(r, 400));
          return job.timeoutMs ?? 'none';
        },
        { backoff: { type: 'fixed', delay: 1 }, timeoutMs: 5000 },
      );
      const deadDone = deferred<string>();
      const results = new Map<string, unknown>();
      w.on('failed', (job, err) => failures.push([job.id, (err as Error).name, job.timeoutMs]));
      w.on('dead', (job, reason) => deadDone.resolve(`${job.id}: ${reason.split('\n')[0]}`));
      w.on('completed', (job, result) => results.set(job.id, result));
      await q.add(1, { id: 'slow', timeoutMs: 150, attempts: 2 });
      await q.add(2, { id: 'plain' });
      assert.match(await within(deadDone.promise, 10_000, 'slow goes dead'), /^slow: HandlerTimeoutError: handler did not finish within 150 ms/);
      assert.deepEqual(failures, [
        ['slow', 'HandlerTimeoutError', 150],
        ['slow', 'HandlerTimeoutError', 150],
      ]);
      await until(() => results.has('plain'), 'plain completes', 10_000);
      assert.equal(results.get('plain'), 5000, "the worker's timeout applies to a job without one");
      assert.ok(new HandlerTimeoutError(1) instanceof Error);
    });

    test('waitFor from elsewhere resolves with the final result once (after retries), whether or not completed jobs are kept; addAndWait too', async () => {
      const q = queue<number>();
      let tries = 0;
      worker(
        q,
        (job) => {
          if (job.id === 'flaky' && ++tries < 3) throw new Error(`try ${tries}`);
          return { doubled: job.data * 2, attempt: job.attempt };
        },
        { backoff: { type: 'fixed', delay: 1 } },
      );
      await q.add(21, { id: 'flaky', delay: 300, attempts: 5 });
      const result = await elsewhere(q, (o) => o.waitFor('flaky', { timeoutMs: 10_000 }));
      assert.deepEqual(result, { doubled: 42, attempt: 3 });
      assert.equal(await q.get('flaky'), null, 'not kept, and its result still came');

      assert.deepEqual(await q.addAndWait(5, { id: 'now' }, { timeoutMs: 10_000 }), { doubled: 10, attempt: 1 });
      assert.deepEqual(await q.addAndWait(6, undefined, { timeoutMs: 10_000 }), { doubled: 12, attempt: 1 });

      await q.setRetention({ completed: { count: 10 } });
      await q.add(4, { id: 'kept' });
      await until(async () => (await q.get('kept'))?.state === 'completed', 'kept completes');
      assert.deepEqual(await q.waitFor('kept'), { doubled: 8, attempt: 1 }, 'a kept completed job answers at once');
      // addAndWait of an id that exists (kept, completed): its result, at once.
      assert.deepEqual(await q.addAndWait(99, { id: 'kept' }, { timeoutMs: 5_000 }), { doubled: 8, attempt: 1 });
      // Deduplicated: it waits for the job holding the key.
      await q.add(7, { id: 'holder', delay: 200, dedup: { key: 'once', windowMs: 60_000 } });
      assert.deepEqual(await q.addAndWait(8, { id: 'other', dedup: { key: 'once', windowMs: 60_000 } }, { timeoutMs: 10_000 }), { doubled: 14, attempt: 1 });
    });

    test('waitFor rejects with JobFailedError, JobCancelledError, JobNotFoundError and WaitTimeoutError; the job goes on after a wait times out', async () => {
      const q = queue<number>();
      worker(q, (job) => {
        throw new Error(`boom ${job.id}`);
      });
      await q.add(1, { id: 'doomed', attempts: 1, delay: 200 });
      const failed = await q.waitFor('doomed', { timeoutMs: 10_000 }).catch((e: unknown) => e);
      assert.ok(failed instanceof JobFailedError, String(failed));
      assert.match(failed.reason, /boom doomed/);
      assert.match(((await q.waitFor('doomed').catch((e: unknown) => e)) as Error).name, /JobFailedError/, 'a dead job answers at once');

      // addAndWait registers its wait before it adds: once the job is there, the wait is too.
      const waiting = q.addAndWait(2, { id: 'off', delay: 60_000 }, { timeoutMs: 10_000 }).catch((e: unknown) => e);
      await until(async () => (await q.get('off')) !== null, 'the job is added');
      await elsewhere(q, (o) => o.cancel('off', { reason: 'paid' }));
      const cancelled = await waiting;
      assert.ok(cancelled instanceof JobCancelledError, String(cancelled));
      assert.equal(cancelled.reason, 'paid');

      await assert.rejects(q.waitFor('never-added'), JobNotFoundError);

      await q.add(3, { id: 'far', delay: 60_000 });
      const t0 = Date.now();
      await assert.rejects(q.waitFor('far', { timeoutMs: 150 }), WaitTimeoutError);
      assert.ok(Date.now() - t0 >= 140);
      assert.equal((await q.get('far'))?.state, 'scheduled', 'the job goes on');
      assert.deepEqual(await q.store.watch(q.name, ['far'], 0), [{ state: 'waiting' }]);
    });
  });
}
