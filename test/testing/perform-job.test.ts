/** performJob: one handler, once, with a real Job; what the attempt did. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RateLimitSignal, UnrecoverableError, ValidationError } from '../../src/index.js';
import { performJob } from '../../src/testing/index.js';

describe('performJob', () => {
  test('completed: the result, progress and log lines, and the Job it was given', async () => {
    const r = await performJob<{ orderId: number }, string>(
      async (job) => {
        await job.progress(50);
        await job.log('charging');
        assert.ok(job.token.length > 0);
        assert.equal(job.signal.aborted, false);
        return `charged ${job.data.orderId}`;
      },
      { orderId: 9 },
      { id: 'order:9' },
    );
    assert.equal(r.outcome, 'completed');
    assert.equal(r.result, 'charged 9');
    assert.equal(r.progress, 50);
    assert.deepEqual(r.logs, ['charging']);
    assert.equal(r.job.id, 'order:9');
    assert.equal(r.job.attempt, 1);
  });

  test('a throw with attempts left: retried, with the delay its backoff gives', async () => {
    const err = new Error('503');
    const r = await performJob(
      () => {
        throw err;
      },
      {},
      { backoff: { type: 'fixed', delay: 5000 } },
    );
    assert.equal(r.outcome, 'retried');
    assert.equal(r.error, err);
    assert.equal(r.delayMs, 5000);
    assert.equal(r.dueAtMs, r.atMs + 5000);
  });

  test('the last attempt, or an UnrecoverableError: dead', async () => {
    const last = await performJob(
      (job) => {
        throw new Error(`attempt ${job.attempt} of ${job.maxAttempts}`);
      },
      {},
      { attempt: 3, maxAttempts: 3 },
    );
    assert.equal(last.outcome, 'dead');
    assert.match(last.reason!, /attempt 3 of 3/);
    const fatal = await performJob(() => {
      throw new UnrecoverableError('bad card');
    }, {});
    assert.equal(fatal.outcome, 'dead');
    assert.ok(fatal.error instanceof UnrecoverableError);
  });

  test('a snooze and a rate-limit signal', async () => {
    const s = await performJob((job) => job.snooze(30_000), {});
    assert.equal(s.outcome, 'snoozed');
    assert.equal(s.delayMs, 30_000);
    const rl = await performJob(() => {
      throw new RateLimitSignal(2000);
    }, {});
    assert.equal(rl.outcome, 'rateLimited');
    assert.equal(rl.delayMs, 2000);
  });

  test('bad input is refused, naming the field', async () => {
    await assert.rejects(performJob('nope' as never, {}), (e: Error) => e instanceof ValidationError && /^handler /.test(e.message));
    await assert.rejects(
      performJob(() => {}, {}, { attempt: 4, maxAttempts: 3 }),
      /attempt must be a whole number from 1 to maxAttempts \(3\)/,
    );
    await assert.rejects(
      performJob(() => {}, {}, { attempts: 2 } as never),
      /unknown field "attempts"/,
    );
    await assert.rejects(
      performJob(() => {}, {}, { maxAttempts: 0 }),
      /maxAttempts must be/,
    );
  });
});
