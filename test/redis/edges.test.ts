/**
 * The contract at its edges (issue "Keep every guarantee at the edges"): corrupt stored data,
 * stale holders, re-sent commands, handler-given values and bad calls. Each test reproduces a
 * case that broke the contract, against a real redis-server (and the memory store where the
 * case applies to it).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore, SnoozeSignal, ValidationError, Worker, type Job } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { NewJob, Store } from '../../src/store/store.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { startProxy } from '../helpers/tcp-proxy.js';
import { deferred, serverTimeMs, until, within } from '../helpers/wait.js';

const fx = useRedis();

function job(id: string, delayMs = 0, extra: Partial<NewJob> = {}): NewJob {
  return newJob(id, { delayMs, ...extra });
}

function redisStore(extra: { testClockKey?: string; connection?: string } = {}): RedisStore {
  return fx.track(new RedisStore({ connection: extra.connection ?? fx.redis.url, testClockKey: extra.testClockKey }));
}

const jobsKey = (queue: string) => queueKeys('dq', queue).jobs;
const runsKey = (queue: string) => queueKeys('dq', queue).runs;

/** Replaces field `i` of a job's packed body header (wire.ts JOB_BODY) with `value`. */
async function corruptBody(queue: string, id: string, i: number, value: string): Promise<void> {
  const body = (await fx.client.hget(jobsKey(queue), id))!;
  const parts = body.split(':');
  parts[i] = value;
  await fx.client.hset(jobsKey(queue), id, parts.join(':'));
}

async function assertVerified(store: Store, queue: string): Promise<void> {
  const report = await store.verify(queue);
  assert.equal(report.ok, true, report.problems.join('; '));
}

/** A group's rate use when it took no token and is not held. */
const NO_RATE = { used: 0, heldUntilMs: undefined, nextRefillMs: undefined };

describe('corrupt stored data costs no other job and leaves no job in no state', () => {
  // Body header fields: 0 seq, 1 created, 2 priority, 3 max attempts, 4 backoff length, 5 trace length.
  // A claim reads seq, priority (it orders by them) and the run state, and buries what it cannot
  // read; the rest of the body is read by the worker, which gets the job as unreadable and buries it.
  for (const [what, where, value, reason, path] of [
    ['priority', 2, 'nan', 'bad priority', 'direct'],
    ['priority', 2, 'nan', 'bad priority', 'ready'],
    ['priority', 2, 'inf', 'bad priority', 'ready'],
    ['sequence', 0, '1e400', 'bad sequence', 'direct'],
    ['sequence', 0, '0x1A', 'bad sequence', 'ready'],
    ['max attempts', 3, 'abc', 'bad max attempts', 'direct'],
    ['created time', 1, '', 'bad created time', 'direct'],
    ['backoff length', 4, '99999', 'bad field lengths', 'ready'],
    ['attempt count', 'run', '-inf', 'bad attempt count', 'ready'],
  ] as const) {
    const byWorker = where === 3 || where === 4;
    test(`a job whose ${what} holds ${JSON.stringify(value)} goes dead with the reason; the others are handed out (${path} path)`, async () => {
      const store = redisStore();
      const queue = uniqueName('corrupt');
      const n = 41;
      await store.add(
        queue,
        Array.from({ length: n }, (_, i) => job(`j${i}`)),
      );
      if (where === 'run') await fx.client.hset(runsKey(queue), 'j7', `${value}:1::::`);
      else await corruptBody(queue, 'j7', where, value);
      // The direct path hands out everything due at once; the ready path passes due jobs through the ready set.
      const batch = path === 'direct' ? 50 : 10;
      const handed = new Set<string>();
      const unreadable: { id: string; token: string; reason: string }[] = [];
      for (let i = 0; i < 10 && handed.size < n - 1; i++) {
        const r = await store.claim(queue, batch, 30_000, 3);
        unreadable.push(...r.unreadable);
        for (const j of r.jobs) handed.add(j.id);
      }
      assert.equal(handed.size, n - 1);
      if (byWorker) {
        // What the worker does with an unreadable hand-out.
        assert.deepEqual(
          unreadable.map((u) => [u.id, u.reason]),
          [['j7', `corrupt job: ${reason}`]],
        );
        const u = unreadable[0]!;
        await store.fail(queue, { id: u.id, token: u.token, error: u.reason, retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 });
      } else {
        assert.deepEqual(unreadable, []);
      }
      assert.equal(handed.has('j7'), false);
      const dead = await store.deadList(queue, 0, 10);
      assert.equal(dead.total, 1);
      assert.equal(dead.jobs[0]!.id, 'j7');
      assert.equal(dead.jobs[0]!.lastError, `corrupt job: ${reason}`);
      await assertVerified(store, queue);
    });
  }

  test('a ready member that does not read does not stop a queue with groups from taking turns', async () => {
    const store = redisStore();
    const queue = uniqueName('badready');
    const keys = queueKeys('dq', queue);
    await store.add(queue, [job('a'), job('g1', 0, { group: 'g' })]);
    // Written by no version of delayq: its due time and seq are not digits.
    await fx.client.zadd(keys.ready, 0, 'not-a-ready-member-of-32-digits-x');
    const handed = new Set<string>();
    for (let i = 0; i < 5 && handed.size < 2; i++) for (const j of (await store.claim(queue, 10, 30_000, 3)).jobs) handed.add(j.id);
    assert.deepEqual([...handed].sort(), ['a', 'g1']);
  });

  test('a body that is not a packed body (a hand-written producer’s JSON) goes dead with the reason; the queue keeps running', async () => {
    const store = redisStore();
    const queue = uniqueName('wrongshape');
    await store.add(queue, [job('a'), job('b')]);
    await fx.client.hset(jobsKey(queue), 'x', '{"hello":1}');
    await fx.client.zadd(queueKeys('dq', queue).scheduled, 0, 'x');
    const r = await store.claim(queue, 10, 30_000, 3);
    assert.deepEqual(r.jobs.map((j) => j.id).sort(), ['a', 'b']);
    const dead = await store.deadList(queue, 0, 10);
    assert.deepEqual(
      dead.jobs.map((j) => [j.id, j.lastError, j.data]),
      [['x', 'corrupt job: unreadable body header', undefined]],
    );
    const got = await store.get(queue, 'x');
    assert.equal(got?.state, 'dead');
    assert.equal(got?.lastError, 'corrupt job: unreadable body header');
    // Cancel and reschedule answer instead of failing half-way; a retried corrupt job comes back dead.
    assert.deepEqual(await store.reschedule(queue, 'x', 0, undefined), { id: 'x', rescheduled: false, state: 'dead', dueAtMs: dead.jobs[0]!.dueAtMs });
    assert.equal((await store.cancel(queue, ['x']))[0]!.cancelled, false);
    assert.equal(await store.deadRetry(queue, ['x']), 1);
    assert.deepEqual((await store.claim(queue, 10, 30_000, 3)).jobs, []);
    assert.equal((await store.get(queue, 'x'))?.state, 'dead');
    assert.equal(await store.purge(queue, 'dead', { ids: ['x'] }), 1);
    await store.complete(
      queue,
      r.jobs.map((j) => ({ id: j.id, token: j.token })),
    );
    await assertVerified(store, queue);
  });

  test('an empty token holds no lease: a call with it on a job whose run state has no token (buried as corrupt) answers lease lost and changes nothing', async () => {
    const store = redisStore();
    const queue = uniqueName('emptytoken');
    await fx.client.hset(jobsKey(queue), 'x', '{"hello":1}');
    await fx.client.zadd(queueKeys('dq', queue).scheduled, 0, 'x');
    await store.claim(queue, 10, 30_000, 3);
    assert.equal((await store.get(queue, 'x'))?.state, 'dead');
    assert.match((await fx.client.hget(runsKey(queue), 'x'))!, /^0:\d+::/);
    assert.deepEqual(await store.complete(queue, [{ id: 'x', token: '' }]), ['lease_lost']);
    assert.deepEqual(await store.extend(queue, [{ id: 'x', token: '' }], 30_000), ['lease_lost']);
    assert.equal((await store.get(queue, 'x'))?.state, 'dead');
  });

  test('a member whose body is gone is dropped; a truncated body goes dead (fast path too)', async () => {
    const store = redisStore();
    const queue = uniqueName('nobody');
    await store.add(queue, [job('ok')]);
    await fx.client.hset(jobsKey(queue), 'trunc', '1:2:3');
    await fx.client.hset(runsKey(queue), 'gone', '1:1::::');
    await fx.client.zadd(queueKeys('dq', queue).scheduled, 0, 'gone', 0, 'trunc');
    const r = await store.claim(queue, 10, 30_000, 3);
    assert.deepEqual(
      r.jobs.map((j) => j.id),
      ['ok'],
    );
    const dead = await store.deadList(queue, 0, 10);
    assert.deepEqual(
      dead.jobs.map((j) => [j.id, j.lastError]),
      [['trunc', 'corrupt job: unreadable body header']],
    );
    assert.equal(await fx.client.hexists(runsKey(queue), 'gone'), 0);
    await store.complete(queue, [{ id: 'ok', token: r.jobs[0]!.token }]);
    await assertVerified(store, queue);
  });

  test('dead.list() and get() show a job buried for a corrupt body, and never throw', async () => {
    const queue = new Queue(uniqueName('deadlist'), { connection: fx.redis.url });
    fx.track(queue);
    await queue.add(1, { id: 'bad', delay: 0 });
    await corruptBody(queue.name, 'bad', 1, 'inf');
    await (queue.store as RedisStore).claim(queue.name, 10, 30_000, 3);
    const list = await queue.dead.list();
    assert.equal(list.total, 1);
    assert.equal(list.jobs[0]!.id, 'bad');
    assert.equal(list.jobs[0]!.createdAtMs, undefined);
    assert.equal(list.jobs[0]!.data, undefined);
    assert.equal(list.jobs[0]!.lastError, 'corrupt job: bad created time');
    const got = await queue.get('bad');
    assert.equal(got?.state, 'dead');
    assert.equal(got?.attempt, 0);
    assert.equal(got?.lastError, 'corrupt job: bad created time');
  });

  test('a worker runs the healthy jobs of a batch and buries the corrupt one (bad max attempts)', async () => {
    const name = uniqueName('worker-corrupt');
    const queue = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    await queue.addBulk([1, 2, 3, 4, 5, 6].map((i) => ({ data: i, opts: { id: `j${i}`, delay: 300 } })));
    await corruptBody(name, 'j3', 3, 'abc');
    const ran: number[] = [];
    const worker = fx.track(new Worker<number>(name, (j) => void ran.push(j.data), { connection: fx.redis.url, batch: 10 }));
    await until(async () => ran.length === 5 && (await queue.stats()).dead === 1, 'five jobs run and one dead');
    await worker.close();
    assert.deepEqual(ran.sort(), [1, 2, 4, 5, 6]);
    assert.match((await queue.dead.list()).jobs[0]!.lastError ?? '', /bad max attempts/);
    assert.equal((await queue.verify()).ok, true);
  });

  test('a handler throwing SnoozeSignal(NaN) fails the attempt with a ValidationError; the job stays in a state', async () => {
    const name = uniqueName('snooze-nan');
    const queue = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    await queue.add(1, { id: 's', attempts: 1 });
    const failed = deferred<unknown>();
    const worker = fx.track(
      new Worker<number>(
        name,
        () => {
          throw new SnoozeSignal(Number.NaN, undefined);
        },
        { connection: fx.redis.url },
      ),
    );
    worker.on('failed', (_j, err) => failed.resolve(err));
    const err = await within(failed.promise, 5000, 'failed event');
    assert.ok(err instanceof ValidationError && err.field === 'SnoozeSignal.delayMs', String(err));
    await until(async () => (await queue.stats()).dead === 1, 'the job dead after its one attempt');
    await worker.close();
    assert.equal((await queue.verify()).ok, true);
  });
});

describe('fencing: every call of a stale holder answers lease lost and changes nothing', () => {
  const kinds: [string, () => Promise<{ store: Store; step(ms: number): Promise<void> }>][] = [
    [
      'redis',
      async () => {
        const clockKey = `dqtest:clock:${uniqueName('c')}`;
        let now = 1_900_000_000_000;
        await fx.client.set(clockKey, String(now));
        return {
          store: redisStore({ testClockKey: clockKey }),
          step: async (ms) => {
            now += ms;
            await fx.client.set(clockKey, String(now));
          },
        };
      },
    ],
    [
      'memory',
      async () => {
        let now = 1_900_000_000_000;
        return {
          store: new MemoryStore({ clock: () => now }),
          step: async (ms) => {
            now += ms;
          },
        };
      },
    ],
  ];
  for (const [kind, open] of kinds) {
    test(`[${kind}] a lease recovered by a claim is not the holder's any more: fail, snooze, release, ack, extend`, async () => {
      const { store, step } = await open();
      const queue = uniqueName('fence');
      await store.add(queue, [job('j')]);
      const first = (await store.claim(queue, 1, 1000, 5)).jobs[0]!;
      await step(1001);
      // The lease ran out: this claim recovers it and hands the job out again.
      const second = (await store.claim(queue, 1, 60_000, 5)).jobs[0]!;
      assert.equal(second.id, 'j');
      const stale = { id: 'j', token: first.token };
      assert.deepEqual(await store.fail(queue, { ...stale, error: 'x', retryDelayMs: 0, dead: false, defaultMaxAttempts: 5 }), {
        outcome: 'lease_lost',
        dueAtMs: undefined,
      });
      assert.deepEqual(await store.snooze(queue, { ...stale, delayMs: 60_000, deadlineAtMs: undefined }), { outcome: 'lease_lost', dueAtMs: undefined });
      assert.deepEqual(await store.release(queue, [stale]), ['lease_lost']);
      assert.deepEqual(await store.complete(queue, [stale]), ['lease_lost']);
      assert.deepEqual(await store.extend(queue, [stale], 60_000), ['lease_lost']);
      const now = await store.get(queue, 'j');
      assert.equal(now?.state, 'active');
      assert.equal(now?.attempt, 2);
      assert.equal(now?.leaseExpiresAtMs, second.leaseExpiresAtMs);
      // The same calls after the recovery but before any new claim are stale too.
      await step(60_001);
      await store.claim(queue, 0, 1000, 5);
      const recovered = await store.get(queue, 'j');
      assert.equal(recovered?.state, 'scheduled');
      assert.deepEqual(await store.snooze(queue, { id: 'j', token: second.token, delayMs: 60_000, deadlineAtMs: undefined }), {
        outcome: 'lease_lost',
        dueAtMs: undefined,
      });
      assert.deepEqual(await store.release(queue, [{ id: 'j', token: second.token }]), ['lease_lost']);
      // Taken for a re-send, the snooze would have made it due in 60 s and the release would have lowered its attempts.
      assert.deepEqual(await store.get(queue, 'j'), recovered);
      await assertVerified(store, queue);
    });

    test(`[${kind}] the server clock steps back 60 s: a rate limiter holds its tokens one window at most, not the size of the step`, async () => {
      const { store, step } = await open();
      const queue = uniqueName('step');
      await store.setLimits(queue, { rateLimit: { max: 2, perMs: 500 } });
      // Due long before the step, so they stay due after it: what is held is the rate limit's.
      await store.add(
        queue,
        Array.from({ length: 6 }, (_, i) => newJob(`j${i}`, { delayMs: undefined, runAtMs: 1_000_000_000_000 })),
      );
      assert.equal((await store.claim(queue, 10, 60_000, 5)).jobs.length, 2);
      await step(-60_000);
      const held = await store.claim(queue, 10, 60_000, 5);
      assert.equal(held.jobs.length, 0, 'the window just taken still holds');
      assert.ok(held.nextWakeMs !== undefined && held.nextWakeMs <= held.nowMs + 500, `wakes within a window, not at ${held.nextWakeMs! - held.nowMs} ms`);
      await step(500);
      assert.equal((await store.claim(queue, 10, 60_000, 5)).jobs.length, 2, 'a window later the tokens are back');
      await step(499);
      assert.equal((await store.claim(queue, 10, 60_000, 5)).jobs.length, 0, 'and the next window is kept');
      await step(1);
      assert.equal((await store.claim(queue, 10, 60_000, 5)).jobs.length, 2);
    });

    test(`[${kind}] a holder's own re-sent give-up still answers as the first run did`, async () => {
      const { store } = await open();
      const queue = uniqueName('resend');
      await store.add(queue, [job('j')]);
      const c = (await store.claim(queue, 1, 60_000, 5)).jobs[0]!;
      const req = { id: 'j', token: c.token, delayMs: 60_000, deadlineAtMs: undefined };
      const first = await store.snooze(queue, req);
      assert.equal(first.outcome, 'snoozed');
      assert.deepEqual(await store.snooze(queue, req), first);
    });
  }
});

describe('a re-sent command gives the caller the truth (reply lost, connection cut, ioredis re-sends)', () => {
  async function viaProxy() {
    const proxy = await startProxy(fx.redis.port);
    fx.track({ close: () => proxy.close() });
    return proxy;
  }

  test('cancel answers cancelled: true, not "no such job"', async () => {
    const proxy = await viaProxy();
    const queue = fx.track(new Queue(uniqueName('re-cancel'), { connection: proxy.url }));
    await queue.add(1, { id: 'order:1', delay: 60_000 });
    const cut = proxy.cutOnNextReply();
    const answer = queue.cancel('order:1');
    await cut;
    proxy.release();
    assert.deepEqual(await within(answer, 5000, 'cancel'), { id: 'order:1', cancelled: true, state: 'scheduled' });
  });

  test('add of a new id answers added: true', async () => {
    const proxy = await viaProxy();
    const queue = fx.track(new Queue(uniqueName('re-add'), { connection: proxy.url }));
    await queue.stats(); // connected, so the reply cut is the add's
    const cut = proxy.cutOnNextReply();
    const answer = queue.add(1, { id: 'new', delay: 60_000 });
    await cut;
    proxy.release();
    const r = await within(answer, 5000, 'add');
    assert.equal(r.added, true);
    assert.equal(r.state, 'scheduled');
  });

  test('an add of a job due now, re-sent after a worker ran and acked it, does not enqueue it again', async () => {
    const proxy = await viaProxy();
    const name = uniqueName('re-add-done');
    const queue = fx.track(new Queue(name, { connection: proxy.url }));
    const runs: number[] = [];
    const worker = fx.track(new Worker(name, (j: Job) => void runs.push(j.attempt), { connection: fx.redis.url }));
    const completed = deferred();
    worker.on('completed', () => completed.resolve());
    await queue.stats(); // connected, so the reply cut is the add's
    const cut = proxy.cutOnNextReply();
    const answer = queue.add(1, { id: 'now' });
    await cut;
    await within(completed.promise, 5000, 'the first run');
    proxy.release();
    const r = await within(answer, 5000, 'add');
    assert.equal(r.added, true);
    // The re-send ran (its answer came back); had it added the job again, it would be scheduled or running now.
    const stats = await queue.stats();
    assert.equal(stats.scheduled + stats.active, 0);
    assert.equal(stats.completedTotal, 1);
    assert.deepEqual(runs, [1]);
  });

  /**
   * A claim of `count` whose reply is lost (the connection cut as it comes back; ioredis re-sends
   * it with the same request id): the ids it answers, each checked to hold its job's lease.
   */
  async function claimReplyLost(queue: string, count: number): Promise<string[]> {
    const proxy = await viaProxy();
    const viaCut = redisStore({ connection: proxy.url });
    await viaCut.stats(queue, 0); // connected before the cut
    const cut = proxy.cutOnNextReply();
    const answer = viaCut.claim(queue, count, 60_000, 3);
    await cut;
    proxy.release();
    const r = await within(answer, 5000, 'claim');
    for (const j of r.jobs) assert.equal((await fx.client.hget(runsKey(queue), j.id))?.split(':')[2], j.token);
    return r.jobs.map((j) => j.id);
  }

  test('a re-sent claim returns the batch the first run handed out', async () => {
    const queue = uniqueName('re-claim');
    const direct = redisStore();
    await direct.add(queue, [job('a'), job('b'), job('c')]);
    assert.deepEqual(await claimReplyLost(queue, 2), ['a', 'b']);
    // Nothing else was handed out: c is still waiting.
    assert.equal((await direct.get(queue, 'c'))?.state, 'scheduled');
  });

  test('a re-sent claim that buried a corrupt job on the way returns the same batch (the tokens of a batch are numbered without gaps)', async () => {
    const queue = uniqueName('re-claim-bury');
    const direct = redisStore();
    await direct.add(queue, [job('a'), job('x'), job('b'), job('c')]);
    await fx.client.hset(jobsKey(queue), 'x', 'not a packed body');
    assert.deepEqual(await claimReplyLost(queue, 3), ['a', 'b']);
    assert.equal((await direct.get(queue, 'x'))?.state, 'dead');
    assert.equal((await direct.get(queue, 'c'))?.state, 'scheduled');
  });

  test('a re-sent claim of a queue with jobs with a priority (higher, then the one pass with a burial, then lower) returns the same batch', async () => {
    const queue = uniqueName('re-claim-ranked');
    const direct = redisStore();
    const now = await serverTimeMs(fx.client);
    await direct.add(queue, [
      job('lo', 0, { delayMs: undefined, runAtMs: now - 1000, priority: -1 }),
      job('a', 0, { delayMs: undefined, runAtMs: now - 100 }),
      job('x', 0, { delayMs: undefined, runAtMs: now - 100 }),
      job('b', 0, { delayMs: undefined, runAtMs: now - 100 }),
      job('hi', 0, { delayMs: undefined, runAtMs: now - 10, priority: 5 }),
      job('later', 60_000, { priority: 5 }),
    ]);
    await fx.client.hset(jobsKey(queue), 'x', 'not a packed body');
    assert.deepEqual((await claimReplyLost(queue, 5)).sort(), ['a', 'b', 'hi', 'lo']);
    assert.equal((await direct.get(queue, 'x'))?.state, 'dead');
    assert.equal((await direct.get(queue, 'later'))?.state, 'scheduled');
    assert.equal((await direct.verify(queue)).ok, true);
  });

  test("a re-sent claim and a re-sent ack of jobs of a group take and give each group's slot once", async () => {
    const proxy = await viaProxy();
    const name = uniqueName('re-group');
    const direct = redisStore();
    await direct.setLimits(name, { groupConcurrency: 2 });
    await direct.add(name, [job('a', 0, { group: 'g' }), job('b', 0, { group: 'g' }), job('c', 0, { group: 'g' })]);
    const viaCut = redisStore({ connection: proxy.url });
    await viaCut.stats(name, 0); // connected before the cut
    let cut = proxy.cutOnNextReply();
    const claimed = viaCut.claim(name, 3, 60_000, 3);
    await cut;
    proxy.release();
    const r = await within(claimed, 5000, 'claim');
    assert.deepEqual(
      r.jobs.map((j) => j.id),
      ['a', 'b'],
    );
    assert.deepEqual(await direct.groups(name, ['g']), [
      { id: 'g', running: 2, waiting: 1, concurrency: undefined, rateLimit: undefined, rate: NO_RATE, paused: false },
    ]);
    // The ack of a alone is re-sent; b still runs, so a slot given back twice would show.
    cut = proxy.cutOnNextReply();
    const acked = viaCut.complete(name, [{ id: 'a', token: r.jobs[0]!.token }]);
    await cut;
    proxy.release();
    // The first run deleted the job (no retention): the re-send finds none, as any re-sent ack does.
    assert.deepEqual(await within(acked, 5000, 'ack'), ['not_found']);
    assert.deepEqual(await direct.groups(name, ['g']), [
      { id: 'g', running: 1, waiting: 1, concurrency: undefined, rateLimit: undefined, rate: NO_RATE, paused: false },
    ]);
    assert.equal((await direct.verify(name)).ok, true);
  });

  test('a re-sent claim takes no tokens twice; a re-sent RateLimitSignal release holds once and answers ok', async () => {
    const proxy = await viaProxy();
    const name = uniqueName('re-rate');
    const direct = redisStore();
    await direct.setLimits(name, { rateLimit: { max: 10, perMs: 60_000 }, groupRateLimit: { max: 3, perMs: 60_000 } });
    await direct.add(name, [job('a', 0, { group: 'g' }), job('b', 0, { group: 'g' }), job('c', 0), job('d', 0, { group: 'g' })]);
    const viaCut = redisStore({ connection: proxy.url });
    await viaCut.stats(name, 0); // connected before the cut
    let cut = proxy.cutOnNextReply();
    const claimed = viaCut.claim(name, 3, 60_000, 3);
    await cut;
    proxy.release();
    const r = await within(claimed, 5000, 'claim');
    assert.deepEqual(r.jobs.map((j) => j.id).sort(), ['a', 'b', 'c']);
    assert.equal((await direct.rateStatus(name)).queue.used, 3, "the queue's tokens taken once");
    assert.equal((await direct.groups(name, ['g']))[0]!.rate.used, 2, "the group's tokens taken once");
    // The release of a with a hold is re-sent: ok both times, one hold.
    const a = r.jobs.find((j) => j.id === 'a')!;
    cut = proxy.cutOnNextReply();
    const released = viaCut.release(name, [{ id: 'a', token: a.token }], 5000);
    await cut;
    proxy.release();
    assert.deepEqual(await within(released, 5000, 'release'), ['ok']);
    const g = (await direct.groups(name, ['g']))[0]!;
    assert.ok(g.rate.heldUntilMs !== undefined, 'the group is held');
    assert.equal((await direct.get(name, 'a'))!.attempt, 0, 'the attempt was given back once');
    assert.deepEqual((await direct.claim(name, 5, 60_000, 3)).jobs, [], 'nothing of g (a, d) during the hold, though g has a token left');
    assert.equal((await direct.verify(name)).ok, true);
  });

  test('a debounced add re-sent after its reply was lost answers debounced into the same job, and folds once', async () => {
    const proxy = await viaProxy();
    const name = uniqueName('re-deb');
    const direct = redisStore();
    const deb = { key: 'doc', delayMs: 60_000, maxWaitMs: undefined };
    const [first] = await direct.add(name, [job('burst', 0, { debounce: deb })]);
    assert.equal(first!.code, 'added');
    const viaCut = redisStore({ connection: proxy.url });
    await viaCut.stats(name, 0);
    const cut = proxy.cutOnNextReply();
    const folded = viaCut.add(name, [{ ...job('other', 0, { debounce: deb }), data: '"second"' }]);
    await cut;
    proxy.release();
    const [r] = await within(folded, 5000, 'add');
    assert.deepEqual([r!.code, r!.duplicateOf], ['debounced', 'burst']);
    assert.equal((await direct.get(name, 'burst'))!.data, '"second"');
    assert.equal(await direct.get(name, 'other'), null, 'the re-send wrote no job of its own');
    assert.equal((await direct.stats(name, 0)).scheduled, 1);
    assert.equal((await direct.verify(name)).ok, true);
  });

  test('a folded debounced add re-sent after a new burst began answers the burst its data went into', async () => {
    const proxy = await viaProxy();
    const name = uniqueName('re-deb2');
    const direct = redisStore();
    const deb = { key: 'doc', delayMs: 60_000, maxWaitMs: undefined };
    await direct.add(name, [job('burst-1', 0, { debounce: deb })]);
    const viaCut = redisStore({ connection: proxy.url });
    await viaCut.stats(name, 0);
    const cut = proxy.cutOnNextReply();
    const folded = viaCut.add(name, [{ ...job('other', 0, { debounce: deb }), data: '"second"' }]);
    await cut;
    // Before the re-send: the burst's job starts (its burst ends) and another add begins a new one.
    await direct.reschedule(name, 'burst-1', 0, undefined);
    assert.equal((await direct.claim(name, 1, 60_000, 3)).jobs[0]?.id, 'burst-1');
    const [next] = await direct.add(name, [job('burst-2', 0, { debounce: deb })]);
    assert.equal(next!.code, 'added');
    proxy.release();
    const [r] = await within(folded, 5000, 'add');
    assert.deepEqual([r!.code, r!.duplicateOf], ['debounced', 'burst-1']);
  });
});

describe('handler-given values and timer options', () => {
  test('extendLease(Infinity), (-60000), (0) and (NaN) are refused with a ValidationError; the lease stands', async () => {
    const name = uniqueName('extend');
    const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
    await queue.add(1, { id: 'e' });
    const errors = deferred<unknown[]>();
    const worker = fx.track(
      new Worker(
        name,
        async (j) => {
          const out: unknown[] = [];
          for (const v of [Infinity, -60_000, 0, Number.NaN]) await j.extendLease(v).catch((e: unknown) => out.push(e));
          errors.resolve(out);
        },
        { connection: fx.redis.url },
      ),
    );
    const errs = await within(errors.promise, 5000, 'the handler');
    assert.equal(errs.length, 4);
    for (const e of errs) assert.ok(e instanceof ValidationError && e.field === 'ms', String(e));
    await worker.close();
  });

  test('timeoutMs of 30 days does not time a handler out at once; idleCheckMs of 30 days does not spin', async () => {
    const name = uniqueName('long-timers');
    const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
    const day = 24 * 3600 * 1000;
    const ran = deferred();
    const release = deferred();
    const worker = fx.track(
      new Worker(
        name,
        async () => {
          ran.resolve();
          await release.promise;
        },
        { connection: fx.redis.url, timeoutMs: 30 * day, idleCheckMs: 30 * day },
      ),
    );
    let failed = 0;
    worker.on('failed', () => failed++);
    await queue.add(1, { id: 'slow' });
    await within(ran.promise, 5000, 'the handler start');
    const before = Number((await fx.client.info('stats')).match(/total_commands_processed:(\d+)/)![1]);
    // A wrapped timer would fire within a millisecond, again and again; 300 ms shows hundreds of claims.
    await new Promise((r) => setTimeout(r, 300));
    const after = Number((await fx.client.info('stats')).match(/total_commands_processed:(\d+)/)![1]);
    assert.equal(failed, 0, 'the handler was timed out');
    assert.ok(after - before < 20, `${after - before} commands in 300 ms while idle`);
    release.resolve();
    await until(async () => (await queue.stats()).completedTotal === 1, 'completion');
  });
});

describe('smaller contract gaps', () => {
  test('dedup: an add of the same id after the first one completed, within the window, is deduplicated', async () => {
    for (const store of [redisStore(), new MemoryStore()] as Store[]) {
      const queue = uniqueName('dedup-done');
      const d = { key: 'reminder:1', windowMs: 60_000 };
      assert.equal((await store.add(queue, [job('r', 0, { dedup: d })]))[0]!.code, 'added');
      const c = (await store.claim(queue, 1, 30_000, 3)).jobs[0]!;
      await store.complete(queue, [{ id: 'r', token: c.token }]);
      const again = (await store.add(queue, [job('r', 0, { dedup: d })]))[0]!;
      assert.deepEqual(again, { code: 'deduplicated', state: 'finished', dueAtMs: c.dueAtMs, duplicateOf: 'r' });
    }
  });

  test('an add of an existing id takes no sequence number and no dedup key', async () => {
    const store = redisStore();
    const queue = uniqueName('exists');
    await store.add(queue, [job('x', 60_000)]);
    const seq = await fx.client.get(queueKeys('dq', queue).seq);
    const r = await store.add(queue, [job('x', 60_000, { dedup: { key: 'k', windowMs: 60_000 } })]);
    assert.equal(r[0]!.code, 'exists');
    assert.equal(await fx.client.get(queueKeys('dq', queue).seq), seq);
    assert.equal(await fx.client.exists(`${queueKeys('dq', queue).root}dedup:k`), 0);
  });

  test('bad calls get a ValidationError naming the field and the expected type', async () => {
    const queue = fx.track(new Queue(uniqueName('bad-calls'), { connection: fx.redis.url }));
    const cases: [() => Promise<unknown>, string, RegExp][] = [
      [() => queue.addBulk('x' as never), 'jobs', /must be an array/],
      [() => queue.addBulk(5 as never), 'jobs', /must be an array/],
      [() => queue.addBulk([null] as never), 'jobs[0]', /must be an object/],
      [() => queue.cancel(undefined as never), 'id', /must be a string/],
      [() => queue.add(1, { id: 'a\u009bb' }), 'id', /control characters/],
      [() => queue.add(1, { id: 'a\u0085b' }), 'id', /control characters/],
      [() => queue.add(1, { runAt: 1_763_900_000 }), 'runAt', /not seconds/],
      [() => queue.reschedule('a', { runAt: 1_000 }), 'runAt', /not seconds/],
    ];
    for (const [call, field, message] of cases) {
      await assert.rejects(
        call(),
        (e: unknown) => e instanceof ValidationError && e.field === field && message.test(e.message),
        `${field}: ${String(message)}`,
      );
    }
    assert.deepEqual(await fx.client.keys(`${queueKeys('dq', queue.name).root}*`), []);
  });
});
