/**
 * The index of scheduled jobs with a priority (wire.ts RANKED_SUFFIX, `<root>ranked`): on a queue
 * with such a job, claims move only the due jobs with a priority into the ready set and hand out
 * the rest of a backlog in the scheduled set's order, in the order the general path gives
 * (higher priorities, then every due job of priority 0 by due time and add order, then lower
 * ones). Every write and removal of a scheduled member keeps the index; an entry an older
 * version's claim left behind is dropped; a queue an older version counted takes the general path
 * until its count starts again.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RedisStore } from '../../src/index.js';
import { queueKeys, rankedKey } from '../../src/store/redis/keys.js';
import { scheduledMemberId } from '../../src/store/zset-order.js';
import { LIMIT } from '../../src/store/lifecycle.js';
import { uniqueName } from '../helpers/names.js';
import { claimAll, paddedIds } from '../helpers/claims.js';
import { metaFields } from '../helpers/meta-fields.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { scheduledEntries } from '../helpers/scheduled.js';
import { serverTimeMs } from '../helpers/wait.js';

const fx = useRedis();
const LEASE_MS = 60_000;

function newStore(): RedisStore {
  return fx.track(new RedisStore({ connection: fx.redis.url }));
}

/** The index as [id, due] pairs in its order. */
const indexed = (queue: string) => scheduledEntries(fx.client, rankedKey(queueKeys('dq', queue)));

/** The scheduled set's entries of these ids, as [id, due] pairs in the set's order. */
async function scheduledOf(queue: string, ids: string[]): Promise<[string, number][]> {
  return (await scheduledEntries(fx.client, queueKeys('dq', queue).scheduled)).filter(([id]) => ids.includes(id));
}

/** The index holds exactly the scheduled entries of the jobs with a priority named. */
async function assertIndexed(queue: string, ranked: string[], message: string): Promise<void> {
  assert.deepEqual(await indexed(queue), await scheduledOf(queue, ranked), message);
}

describe('the index of scheduled jobs with a priority', () => {
  test('a backlog beside jobs with a priority: only those pass through the ready set, in the order priority, then due time, then add order', async () => {
    const store = newStore();
    const q = uniqueName('ranked-order');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    const backlog = paddedIds('b-', 300);
    await store.add(q, [newJob('lower', { delayMs: undefined, runAtMs: now - 2000, priority: -2 })]);
    await store.add(
      q,
      backlog.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await store.add(q, [newJob('higher', { delayMs: undefined, runAtMs: now - 10, priority: 5 }), newJob('later', { delayMs: 3_600_000, priority: 9 })]);
    assert.deepEqual(await metaFields(fx.client, q, 'prioritized', 'ranked', 'rankedSet'), ['1', '3', '1']);
    await assertIndexed(q, ['lower', 'higher', 'later'], 'the adds index the jobs with a priority, and only those');
    const first = (await store.claim(q, 50, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.deepEqual(first, ['higher', ...backlog.slice(0, 49)]);
    assert.deepEqual(
      await fx.client.zrange(k.ready, '0', '-1', 'WITHSCORES').then((f) => f.filter((_, i) => i % 2 === 1)),
      ['2'],
      'the ready set holds the due job of a lower priority alone',
    );
    assert.equal(await fx.client.zcard(k.scheduled), 300 - 49 + 1, 'the backlog stays in the scheduled set');
    await assertIndexed(q, ['later'], 'the due jobs with a priority left the index');
    assert.deepEqual(await claimAll(store, q, 50), [...backlog.slice(49), 'lower']);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('the index follows every write and removal: cancel, reschedule, a retry, a lease recovered, a dead job retried, replace, drain', async () => {
    const store = newStore();
    const q = uniqueName('ranked-keep');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [
      newJob('a', { delayMs: 3_600_000, priority: 1 }),
      newJob('b', { delayMs: 3_600_000, priority: 2 }),
      newJob('c', { delayMs: undefined, runAtMs: now - 100, priority: 3, maxAttempts: 1 }),
      newJob('d', { delayMs: undefined, runAtMs: now - 50, priority: 4, maxAttempts: 5 }),
      newJob('e', { delayMs: 3_600_000, priority: 5 }),
      newJob('plain', { delayMs: 3_600_000 }),
    ]);
    await assertIndexed(q, ['a', 'b', 'c', 'd', 'e'], 'after the add');
    assert.equal((await store.cancel(q, ['a']))[0]?.cancelled, true);
    await assertIndexed(q, ['b', 'c', 'd', 'e'], 'after a cancel');
    assert.equal((await store.reschedule(q, 'b', 7_200_000, undefined)).rescheduled, true);
    await assertIndexed(q, ['b', 'c', 'd', 'e'], 'after a reschedule (at its new due time)');
    const [d, c] = (await store.claim(q, 2, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual([d?.id, c?.id], ['d', 'c'], 'the higher priority first');
    await assertIndexed(q, ['b', 'e'], 'the claimed jobs left it');
    // A retry goes back into the scheduled set, and into the index.
    assert.equal((await store.fail(q, { id: 'd', token: d!.token, error: 'x', retryDelayMs: 60_000, dead: false, defaultMaxAttempts: 3 })).outcome, 'retried');
    await assertIndexed(q, ['b', 'd', 'e'], 'after a retry');
    // A lease that ran out (its deadline moved into the past) is recovered by the next claim;
    // paused, the claim hands nothing out. 'c' had one attempt, so it is dead; a job with
    // attempts left goes back to the scheduled set, and into the index.
    await store.add(q, [newJob('f', { delayMs: undefined, runAtMs: now - 10, priority: 6 })]);
    const [f] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.equal(f?.id, 'f');
    await fx.client.zadd(k.active, 'XX', '1', 'c', '1', 'f');
    await store.setPaused(q, true);
    assert.deepEqual((await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs, []);
    await store.setPaused(q, false);
    assert.equal((await store.get(q, 'c'))?.state, 'dead');
    assert.equal((await store.get(q, 'f'))?.state, 'scheduled');
    await assertIndexed(q, ['b', 'd', 'e', 'f'], 'after a lease recovered');
    assert.equal(await store.deadRetry(q, ['c']), 1);
    await assertIndexed(q, ['b', 'c', 'd', 'e', 'f'], 'after a dead job retried');
    assert.deepEqual(
      (await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs.map((j) => j.id),
      ['f', 'c'],
    );
    await assertIndexed(q, ['b', 'd', 'e'], 'the claimed jobs left it');
    await store.add(q, [newJob('e', { delayMs: 3_600_000, priority: 0, replace: true })]);
    await assertIndexed(q, ['b', 'd'], 'a job replaced by one without a priority left it');
    assert.equal(await store.drain(q, undefined), 4);
    assert.deepEqual(await indexed(q), [], 'after a drain');
    assert.deepEqual(await metaFields(fx.client, q, 'prioritized', 'ranked', 'rankedSet'), ['1', '2', '1'], "'c' and 'f' run");
    assert.equal((await store.verify(q)).ok, true);
    // Their ends take the count to 0: no mark, no index left.
    await fx.client.zadd(k.active, 'XX', '1', 'c');
    assert.deepEqual((await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs, []);
    assert.equal((await store.get(q, 'c'))?.state, 'dead');
    assert.equal((await store.cancel(q, ['f'], { running: true }))[0]?.cancelled, true);
    assert.deepEqual(await metaFields(fx.client, q, 'prioritized', 'ranked', 'rankedSet'), [null, null, null]);
    assert.equal(await fx.client.exists(rankedKey(k)), 0);
    assert.equal((await store.verify(q)).ok, true);
  });

  test("an entry whose job an older version's claim took is dropped; the jobs it names are handed out once, in order", async () => {
    const store = newStore();
    const q = uniqueName('ranked-stale');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [
      newJob('gone', { delayMs: undefined, runAtMs: now - 300, priority: 2 }),
      newJob('kept', { delayMs: undefined, runAtMs: now - 200, priority: 1 }),
      ...paddedIds('b-', 20).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 100 })),
    ]);
    // An older version's claim took 'gone' out of the scheduled set (through the ready set,
    // which it left empty) and did not know the index.
    const [member] = (await fx.client.zrange(k.scheduled, '0', '-1')).filter((m) => scheduledMemberId(m) === 'gone');
    await fx.client.zrem(k.scheduled, member!);
    // An entry whose score disagrees with the scheduled set's: the scheduled set decides.
    const [kept] = (await fx.client.zrange(k.scheduled, '0', '-1')).filter((m) => scheduledMemberId(m) === 'kept');
    await fx.client.zadd(k.scheduled, 'XX', String(now + 3_600_000), kept!);
    assert.deepEqual(await claimAll(store, q, 7), paddedIds('b-', 20));
    assert.deepEqual(await indexed(q), [['kept', now + 3_600_000]]);
  });

  test('a queue an older version counted (no rankedSet) takes the general path, in the same order, until its count starts again', async () => {
    const store = newStore();
    const q = uniqueName('ranked-legacy');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('urgent', { delayMs: undefined, runAtMs: now - 10, priority: 3 })]);
    await store.add(
      q,
      paddedIds('b-', 100).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    // As the version before the index left it: counted, no index.
    await fx.client.multi().hdel(k.meta, 'rankedSet').del(rankedKey(k)).exec();
    const first = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(
      first.map((j) => j.id),
      ['urgent', ...paddedIds('b-', 9)],
    );
    assert.equal(await fx.client.zcard(k.ready), 91, 'the general path moved the backlog into the ready set');
    assert.deepEqual(await store.complete(q, [{ id: 'urgent', token: first[0]!.token }]), ['ok']);
    assert.deepEqual(await metaFields(fx.client, q, 'prioritized', 'ranked', 'rankedSet'), [null, null, null]);
    await store.add(q, [newJob('next', { delayMs: 3_600_000, priority: 1 })]);
    assert.deepEqual(await metaFields(fx.client, q, 'prioritized', 'ranked', 'rankedSet'), ['1', '1', '1'], 'the count starts again, with the index');
    await assertIndexed(q, ['next'], 'the index holds it');
    assert.deepEqual(await claimAll(store, q, 30), paddedIds('b-', 100).slice(9));
  });

  for (const priority of [1, -1]) {
    test(`more jobs with a priority ${priority} due than one claim promotes: the order holds, and no claim comes back empty`, async () => {
      const store = newStore();
      const q = uniqueName('ranked-many');
      const k = queueKeys('dq', q);
      const now = await serverTimeMs(fx.client);
      const ranked = paddedIds('r-', LIMIT.promote_per_claim + 5);
      const plain = paddedIds('b-', 50);
      await store.add(
        q,
        plain.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 2000 })),
      );
      await store.add(
        q,
        ranked.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000, priority })),
      );
      const first = (await store.claim(q, 100, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
      if (priority > 0) {
        assert.deepEqual(first, ranked.slice(0, 100), 'those promoted go first');
        assert.equal(await fx.client.zcount(k.ready, '0', '0'), 0, 'no job of priority 0 went through the ready set');
      } else {
        assert.deepEqual(first, [...plain, ...ranked.slice(0, 50)], 'the general path: jobs of priority 0 first');
      }
      const got = [...first, ...(await claimAll(store, q, 100))];
      assert.deepEqual(got, priority > 0 ? [...ranked, ...plain] : [...plain, ...ranked]);
      assert.deepEqual(await indexed(q), []);
      assert.equal((await store.verify(q)).ok, true);
    });
  }

  test('a pass left short by a burial, with jobs of priority 0 still due, hands out no job of a lower priority before them', async () => {
    const store = newStore();
    const q = uniqueName('ranked-short');
    const now = await serverTimeMs(fx.client);
    await store.add(q, [
      newJob('lo', { delayMs: undefined, runAtMs: now - 1000, priority: -1 }),
      ...['a', 'x', 'b', 'c'].map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 100 })),
    ]);
    await fx.client.hset(queueKeys('dq', q).jobs, 'x', 'not a packed body');
    // Three wanted: a and b (x is buried on the way); c is still due, so lo waits for it.
    const first = (await store.claim(q, 3, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.deepEqual(first, ['a', 'b']);
    assert.deepEqual(await claimAll(store, q, 3), ['c', 'lo']);
    assert.equal((await store.get(q, 'x'))?.state, 'dead');
  });

  test('obliterate removes the index; the name used again starts without one, and its count starts afresh', async () => {
    const store = newStore();
    const q = uniqueName('ranked-obliterate');
    const k = queueKeys('dq', q);
    await store.add(q, [newJob('p', { delayMs: 3_600_000, priority: 2 }), newJob('o', { delayMs: 3_600_000 })]);
    assert.equal(await fx.client.zcard(rankedKey(k)), 1);
    assert.equal((await store.obliterate(q, true)).removed, true);
    assert.equal(await fx.client.exists(rankedKey(k)), 0);
    await store.add(q, [newJob('again', { delayMs: 3_600_000, priority: 1 })]);
    assert.deepEqual(await metaFields(fx.client, q, 'prioritized', 'ranked', 'rankedSet'), ['1', '1', '1']);
    await assertIndexed(q, ['again'], 'only the new job');
    assert.equal((await store.verify(q)).ok, true);
  });

  test('verify names a scheduled job with a priority missing from the index', async () => {
    const store = newStore();
    const q = uniqueName('ranked-verify');
    const k = queueKeys('dq', q);
    await store.add(q, [newJob('p', { delayMs: 3_600_000, priority: 2 }), newJob('o', { delayMs: 3_600_000 })]);
    assert.equal((await store.verify(q)).ok, true);
    await fx.client.del(rankedKey(k));
    const report = await store.verify(q);
    assert.equal(report.ok, false);
    assert.ok(
      report.problems.some((p) => /^job p: scheduled with a priority at \d+, but not in the index of such jobs$/.test(p)),
      JSON.stringify(report.problems),
    );
  });
});
