/**
 * The testing kit itself: long delays resolved in milliseconds, due order, the gate (nothing runs
 * between drives), deterministic jitter, rate-limit refills, debounce deadlines, lease expiry after
 * a crash, a stuck handler failing in seconds, and bad input refused with a clear error.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ValidationError, type Worker } from '../../src/index.js';
import { createTestEnv, TestEnvError } from '../../src/testing/index.js';

const MIN = 60_000;
const DAY = 86_400_000;

describe('createTestEnv: time', () => {
  for (const [label, delay] of [
    ['30 minutes', 30 * MIN],
    ['7 days', 7 * DAY],
    ['1 year', 365 * DAY],
  ] as const) {
    test(`a ${label} delay runs on the dot, in milliseconds of real time`, async () => {
      const env = createTestEnv();
      const ran: number[] = [];
      const queue = env.queue('delays');
      env.worker('delays', () => void ran.push(env.now()));
      const t0 = env.now();
      const real = performance.now();
      await queue.add({}, { delay });
      await env.advance(delay - 1);
      assert.deepEqual(ran, []);
      await env.advance(1);
      assert.deepEqual(ran, [t0 + delay]);
      const took = performance.now() - real;
      await env.close();
      assert.ok(took < 500, `${label} took ${took} ms`);
    });
  }

  test('every job in the span runs at its own due time, in due order, then the clock is at the end', async () => {
    const env = createTestEnv();
    const queue = env.queue<{ n: number }>('order');
    const ran: [number, number][] = [];
    env.worker<{ n: number }>('order', (job) => void ran.push([job.data.n, env.now()]));
    const t0 = env.now();
    const delays = [50_000, 10, 999_999, 3_600_000, 10, 7, 123_456, 86_400_000];
    for (const [n, delay] of delays.entries()) await queue.add({ n }, { delay });
    await env.advance(DAY + 1);
    const expected = [...delays.entries()].sort((a, b) => a[1] - b[1] || a[0] - b[0]).map(([n, d]) => [n, t0 + d]);
    assert.deepEqual(ran, expected);
    assert.equal(env.now(), t0 + DAY + 1);
    await env.close();
  });

  test('nothing runs between drives; runUntilIdle runs what is due without moving the clock', async () => {
    const env = createTestEnv();
    const queue = env.queue('gate');
    let runs = 0;
    env.worker('gate', () => void runs++);
    await queue.add({ a: 1 });
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.equal(runs, 0);
    assert.equal((await env.enqueued('gate')).length, 1);
    const before = env.now();
    await env.runUntilIdle();
    assert.equal(runs, 1);
    assert.equal(env.now(), before);
    await env.close();
  });

  test('a jittered backoff draws from the seed: the same seed, the same retry times', async () => {
    async function retries(seed: number): Promise<number[]> {
      const env = createTestEnv({ seed });
      const queue = env.queue('flaky');
      env.worker(
        'flaky',
        () => {
          throw new Error('no');
        },
        { attempts: 5 },
      );
      await queue.add({}, { id: 'j' });
      await env.advance(DAY);
      const times = env.history('flaky', 'j').map((a) => a.startedAtMs - env.history('flaky', 'j')[0]!.startedAtMs);
      await env.close();
      return times;
    }
    const a = await retries(7);
    assert.equal(a.length, 5);
    assert.deepEqual(await retries(7), a);
    assert.notDeepEqual(await retries(8), a);
  });

  test('a rate limit refills on virtual time', async () => {
    const env = createTestEnv();
    const queue = env.queue('api');
    await queue.setLimits({ rateLimit: { max: 2, perMs: MIN } });
    const t0 = env.now();
    const ran: number[] = [];
    env.worker('api', () => void ran.push(env.now() - t0));
    for (let i = 0; i < 5; i++) await queue.add({ i });
    await env.advance(10 * MIN);
    assert.deepEqual(ran, [0, 0, MIN, MIN, 2 * MIN]);
    await env.close();
  });

  test('a debounce deadline (maxWaitMs) falls inside the span', async () => {
    const env = createTestEnv();
    const queue = env.queue<{ v: number }>('search-index');
    const ran: [number, number][] = [];
    const t0 = env.now();
    env.worker<{ v: number }>('search-index', (job) => void ran.push([job.data.v, env.now() - t0]));
    for (let v = 0; v < 4; v++) {
      await queue.add({ v }, { debounce: { key: 'doc:1', delayMs: 5 * MIN, maxWaitMs: 12 * MIN } });
      await env.advance(4 * MIN);
    }
    await env.advance(30 * MIN);
    // Adds at 0, 4, 8 and 12 min, each pushing the run 5 min on, but never past 12 min after the first.
    assert.deepEqual(ran, [
      [2, 12 * MIN],
      [3, 17 * MIN],
    ]);
    await env.close();
  });

  test('a crashed worker: its job runs again when the lease runs out, on another worker', async () => {
    const env = createTestEnv();
    const queue = env.queue('crashy');
    const t0 = env.now();
    let a!: Worker;
    a = env.worker(
      'crashy',
      () => {
        env.crash(a);
        return new Promise(() => {});
      },
      { leaseMs: 30_000 },
    );
    await queue.add({}, { id: 'c' });
    await env.runUntilIdle();
    env.worker('crashy', () => 'second time lucky', { leaseMs: 30_000 });
    await env.advance(MIN);
    const [done] = env.completed('crashy');
    assert.equal(done!.atMs, t0 + 30_000);
    assert.deepEqual(
      done!.history.map((h) => [h.attempt, h.outcome]),
      [
        [1, 'leaseExpired'],
        [2, 'completed'],
      ],
    );
    await env.close();
  });

  test('a crashed worker with no attempt left: the job dies when its lease runs out', async () => {
    const env = createTestEnv();
    const queue = env.queue('crashy');
    let a!: Worker;
    a = env.worker(
      'crashy',
      () => {
        env.crash(a);
        return new Promise(() => {});
      },
      { leaseMs: 10_000, attempts: 1 },
    );
    env.worker('crashy', () => 'never', { autostart: true });
    const t0 = env.now();
    await queue.add({}, { id: 'c', attempts: 1, delay: 5 });
    await env.advance(MIN);
    const [dead] = env.dead('crashy');
    assert.equal(dead?.id, 'c');
    assert.equal(dead.atMs, t0 + 5 + 10_000);
    assert.deepEqual(env.completed('crashy'), []);
    await env.close();
  });
});

describe('createTestEnv: failing loudly', () => {
  test('a handler that never settles fails the drive within stallMs, naming the job', async () => {
    const env = createTestEnv({ stallMs: 300 });
    const queue = env.queue('stuck');
    env.worker('stuck', () => new Promise(() => {}));
    await queue.add({}, { id: 'forever' });
    const real = performance.now();
    await assert.rejects(
      env.advance(MIN),
      (err: Error) => err instanceof TestEnvError && /did not come to rest within 300 ms/.test(err.message) && /stuck forever \(attempt 1/.test(err.message),
    );
    assert.ok(performance.now() - real < 2000);
    await env.close();
  });

  test('a job that re-adds itself at once for ever fails the drive, not the test runner', async () => {
    const env = createTestEnv({ stallMs: 300 });
    const queue = env.queue('loop');
    env.worker('loop', async () => void (await queue.add({})));
    await queue.add({});
    await assert.rejects(env.runUntilIdle(), TestEnvError);
    await env.close();
  });

  test('more instants than maxSteps fail the advance with a hint', async () => {
    const env = createTestEnv({ maxSteps: 10 });
    const queue = env.queue('often');
    env.worker('often', () => {});
    await queue.schedules.upsert('every-second', { every: 1000 });
    await assert.rejects(env.advance(DAY), /stopped after 10 instants/);
    await env.close();
  });

  test('bad input is refused at the call, naming the field', async () => {
    assert.throws(
      () => createTestEnv({ startAt: 'yesterday' }),
      (e: Error) => e instanceof ValidationError && /^startAt /.test(e.message),
    );
    assert.throws(() => createTestEnv({ startAt: 1_700_000_000 }), ValidationError);
    assert.throws(() => createTestEnv({ stalMs: 10 } as never), /unknown field "stalMs"/);
    assert.throws(() => createTestEnv({ seed: 1.5 }), /seed must be a whole number/);
    assert.throws(() => createTestEnv({ stallMs: 0 }), /stallMs must be/);
    const env = createTestEnv();
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5' as never, undefined as never]) {
      await assert.rejects(env.advance(bad), (e: Error) => e instanceof ValidationError && /^ms /.test(e.message), String(bad));
    }
    await assert.rejects(env.advanceTo(env.now() - 1), /only moves forward/);
    await assert.rejects(env.advanceTo('soon'), /^ValidationError: time /);
    assert.throws(() => env.worker('q', () => {}, { connection: 'redis://127.0.0.1:1' } as never), /options\.connection is set by the test env/);
    assert.throws(() => env.queue('q', { shards: 4 } as never), /options\.shards is set by the test env/);
    assert.throws(() => env.queue('bad name with spaces'), ValidationError);
    await assert.rejects(env.enqueued('q', { state: 'dead' } as never), /unknown field "state"/);
    assert.throws(() => env.completed('q', { id: 7 } as never), /filter\.id must be a string/);
    const first = env.advance(1000);
    await assert.rejects(env.advance(1000), /another advance or runUntilIdle is under way/);
    await first;
    await env.close();
    await assert.rejects(env.advance(1), /closed/);
    assert.throws(() => env.queue('q'), /closed/);
  });

  test('filters match by id, group, data in part, or a function', async () => {
    const env = createTestEnv();
    const queue = env.queue('f');
    await queue.add({ order: { id: 1, total: 30 }, tags: ['a'] }, { id: 'x', group: 'g1', delay: 10 });
    await queue.add({ order: { id: 2, total: 50 }, tags: ['b'] }, { id: 'y', delay: 5 });
    const ids = async (f: object) => (await env.enqueued('f', f)).map((j) => j.id);
    assert.deepEqual(await ids({}), ['y', 'x']);
    assert.deepEqual(await ids({ group: 'g1' }), ['x']);
    assert.deepEqual(await ids({ data: { order: { id: 2 } } }), ['y']);
    assert.deepEqual(await ids({ data: { tags: ['a'] } }), ['x']);
    assert.deepEqual(await ids({ data: { tags: ['a', 'b'] } }), []);
    assert.deepEqual(await ids({ data: (d: { order: { total: number } }) => d.order.total > 40 }), ['y']);
    assert.deepEqual(await ids({ id: 'nope' }), []);
    const [first] = await env.enqueued('f');
    assert.equal(first!.dueAtMs, env.now() + 5);
    await env.close();
  });

  test('what the helpers return is a copy', async () => {
    const env = createTestEnv();
    const queue = env.queue('copies');
    env.worker('copies', () => ({ total: 1 }));
    await queue.add({ order: { id: 1 } }, { id: 'k' });
    await env.runUntilIdle();
    const [a] = env.completed<{ order: { id: number } }>('copies');
    a!.data.order.id = 99;
    (a!.result as { total: number }).total = 99;
    a!.history.length = 0;
    const [b] = env.completed<{ order: { id: number } }>('copies');
    assert.equal(b!.data.order.id, 1);
    assert.deepEqual(b!.result, { total: 1 });
    assert.equal(b!.history.length, 1);
    await env.close();
  });
});
