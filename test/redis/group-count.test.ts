/**
 * A queue that once had a job of a group does not take turns for good: meta `groupJobs` counts
 * the jobs of a group that have not ended (scheduled, waiting, held, active), and while it is 0
 * claims take the path of a queue without groups (the one pass: no ready set, no lanes) and acks
 * give no group's slot back (_groups.lua LIVE). Meta `grouped` stays: reads keep answering
 * each job's group. A queue an older version marked (no count) takes turns until a claim finds no
 * job of a group at all.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { claimAll, paddedIds } from '../helpers/claims.js';
import { metaFields } from '../helpers/meta-fields.js';
import { commandsNaming } from '../helpers/monitor.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until } from '../helpers/wait.js';

const fx = useRedis();
const LEASE_MS = 60_000;

function newStore(): RedisStore {
  return fx.track(new RedisStore({ connection: fx.redis.url }));
}

/** The queue's group mark and count as stored. */
const groupMark = (queue: string) => metaFields(fx.client, queue, 'grouped', 'groupJobs');

const ids = paddedIds;

describe('the jobs of a group are counted', () => {
  test('once the last job of a group ended, a backlog is claimed in one pass (no ready set, no lanes); a new one brings turns and its group’s limit back', async () => {
    const store = newStore();
    const q = uniqueName('was-grouped');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('g-1', { delayMs: undefined, runAtMs: now - 100, group: 'tenant' })]);
    assert.deepEqual(await groupMark(q), ['1', '1']);
    const [g1] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(await store.complete(q, [{ id: 'g-1', token: g1!.token }]), ['ok']);
    assert.deepEqual(await groupMark(q), ['1', '0'], 'marked grouped still, with no job of a group left');
    const plain = ids('p-', 300);
    await store.add(
      q,
      plain.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 50 })),
    );
    const lanesBefore = await fx.client.zcard(k.lanes);
    const first = (await store.claim(q, 50, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.equal(await fx.client.zcard(k.ready), 0, 'the one pass: no ready set');
    assert.equal(await fx.client.zcard(k.lanes), lanesBefore, 'no lane joined');
    assert.deepEqual([...first, ...(await claimAll(store, q, 50))], plain);
    // A new job of a group takes turns again, and its group's limit holds.
    await store.setGroup(q, 'tenant', { concurrency: 1 });
    await store.add(q, [
      newJob('g-2', { delayMs: undefined, runAtMs: now - 20, group: 'tenant' }),
      newJob('g-3', { delayMs: undefined, runAtMs: now - 10, group: 'tenant' }),
      newJob('p-last', { delayMs: undefined, runAtMs: now - 5 }),
    ]);
    assert.deepEqual(await groupMark(q), ['1', '2']);
    const got = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.deepEqual(got.sort(), ['g-2', 'p-last'], 'one job of the group at a time');
    assert.equal((await store.get(q, 'g-2'))?.group, 'tenant');
    assert.equal((await store.verify(q)).ok, true);
  });

  test('every end counts a job of a group off (dead, cancelled, drained, completed and kept, replaced without a group); a retried dead one counts again and its group is still read', async () => {
    const store = newStore();
    const q = uniqueName('group-ends');
    const now = await serverTimeMs(fx.client);
    await store.setRetention(q, 'completed', 100, 3_600_000);
    await store.add(q, [
      newJob('dies', { delayMs: undefined, runAtMs: now - 100, group: 'a', maxAttempts: 1 }),
      newJob('kept', { delayMs: undefined, runAtMs: now - 90, group: 'b' }),
      newJob('cancelled', { delayMs: 3_600_000, group: 'a' }),
      newJob('drained', { delayMs: 1_000, group: 'c' }),
      newJob('swapped', { delayMs: 3_600_000, group: 'c' }),
      newJob('joins', { delayMs: 3_600_000 }),
    ]);
    assert.deepEqual(await groupMark(q), ['1', '5']);
    const jobs = (await store.claim(q, 2, LEASE_MS, 3, 'w')).jobs;
    const byId = new Map(jobs.map((j) => [j.id, j]));
    const failed = { id: 'dies', token: byId.get('dies')!.token, error: 'x', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 };
    const first = await store.fail(q, failed);
    assert.deepEqual(await store.fail(q, failed), first, 'a re-sent fail');
    assert.deepEqual(await groupMark(q), ['1', '4']);
    const ack = [{ id: 'kept', token: byId.get('kept')!.token }];
    assert.deepEqual(await store.complete(q, ack), ['ok']);
    assert.deepEqual(await store.complete(q, ack), ['ok'], 'a re-sent ack');
    assert.deepEqual(await groupMark(q), ['1', '3']);
    assert.equal((await store.cancel(q, ['cancelled']))[0]?.cancelled, true);
    assert.deepEqual(await groupMark(q), ['1', '2']);
    assert.equal((await store.add(q, [newJob('swapped', { delayMs: 3_600_000, replace: true })]))?.[0]?.code, 'replaced');
    assert.deepEqual(await groupMark(q), ['1', '1']);
    assert.equal((await store.add(q, [newJob('joins', { delayMs: 3_600_000, replace: true, group: 'd' })]))?.[0]?.code, 'replaced');
    assert.deepEqual(await groupMark(q), ['1', '2']);
    assert.equal(await store.drain(q, undefined), 3);
    assert.deepEqual(await groupMark(q), ['1', '0']);
    // Reads still answer the group of the dead and the kept job.
    assert.equal((await store.get(q, 'dies'))?.group, 'a');
    assert.equal((await store.get(q, 'kept'))?.group, 'b');
    assert.equal(await store.deadRetry(q, ['dies']), 1);
    assert.equal(await store.deadRetry(q, ['dies']), 0);
    assert.deepEqual(await groupMark(q), ['1', '1']);
    const [again] = (await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs;
    assert.equal(again?.id, 'dies');
    assert.equal((await store.groups(q, ['a']))[0]?.running, 1, 'it takes its group’s slot');
    assert.equal((await store.verify(q)).ok, true);
  });

  test('a queue an older version marked (no count) takes turns until a claim finds no job of a group; a dead one keeps it', async () => {
    const store = newStore();
    const q = uniqueName('uncounted-groups');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [
      newJob('x', { delayMs: undefined, runAtMs: now - 100, group: 'a', maxAttempts: 1 }),
      newJob('y', { delayMs: undefined, runAtMs: now - 90, group: 'a' }),
    ]);
    await fx.client.hdel(k.meta, 'groupJobs');
    const [x, y] = (await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs;
    await store.fail(q, { id: x!.id, token: x!.token, error: 'x', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 });
    assert.deepEqual(await store.complete(q, [{ id: y!.id, token: y!.token }]), ['ok']);
    await store.claim(q, 5, LEASE_MS, 3, 'w');
    assert.deepEqual(await groupMark(q), ['1', null], 'a dead job of a group is still there: no count');
    assert.equal(await store.purge(q, 'dead', { all: true }), 1);
    await store.claim(q, 5, LEASE_MS, 3, 'w');
    assert.deepEqual(await groupMark(q), ['1', '0'], 'no job of a group at all: the count starts');
  });

  test('an ack reads its jobs’ groups once: the slots it gives back and the count it takes off come from the same read', async () => {
    const store = newStore();
    const q = uniqueName('ack-reads-once');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    const grouped = ['a', 'b', 'c', 'd', 'e', 'f'].map((id, i) => newJob(id, { delayMs: undefined, runAtMs: now - 100 + i, group: `g${i % 3}` }));
    const plain = ['p', 'q'].map((id, i) => newJob(id, { delayMs: undefined, runAtMs: now - 50 + i }));
    await store.add(q, [...grouped, ...plain]);
    assert.deepEqual(await groupMark(q), ['1', '6']);
    const held = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
    assert.equal(held.length, 8);
    // Acked: four of a group, one of none, and one whose token is stale (not ended: not counted).
    const byId = new Map(held.map((j) => [j.id, j]));
    const acks = ['a', 'b', 'c', 'e', 'p'].map((id) => ({ id, token: byId.get(id)!.token }));
    let answers: string[] = [];
    const extras = [k.groupOf, k.flowOf, k.results, k.errors, k.logs, k.progress];
    const seen = await commandsNaming(fx.client, extras, async () => {
      answers = await store.complete(q, [...acks, { id: 'f', token: `${byId.get('f')!.token}0` }]);
    });
    assert.deepEqual(answers, ['ok', 'ok', 'ok', 'ok', 'ok', 'lease_lost']);
    assert.deepEqual(
      seen.filter((c) => c.command === 'HMGET'),
      [{ command: 'HMGET', keys: [k.groupOf] }],
      `one read of the jobs' groups: ${JSON.stringify(seen)}`,
    );
    // The jobs' extras go with them: one EXISTS of them all says only group-of is there, so no
    // other is asked about on its own (a look key by key asked all eight).
    assert.deepEqual(
      seen.filter((c) => c.command === 'EXISTS' && c.keys.length === 1),
      [{ command: 'EXISTS', keys: [k.groupOf] }],
      JSON.stringify(seen),
    );
    assert.deepEqual(await groupMark(q), ['1', '2'], 'd and f have not ended');
    // The same ack re-sent (its reply lost): it ends nothing again, and counts nothing off again.
    // (Completed jobs are not kept here: the re-send finds them gone, as the Worker expects.)
    assert.deepEqual(await store.complete(q, acks), ['not_found', 'not_found', 'not_found', 'not_found', 'not_found']);
    assert.deepEqual(await groupMark(q), ['1', '2'], 'a re-sent ack counts nothing off');
    assert.equal((await store.verify(q)).ok, true, 'group states and the count agree with the sets');
    // The rest end too: the count reaches 0.
    assert.deepEqual(
      await store.complete(
        q,
        ['d', 'f', 'q'].map((id) => ({ id, token: byId.get(id)!.token })),
      ),
      ['ok', 'ok', 'ok'],
    );
    assert.deepEqual(await groupMark(q), ['1', '0']);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('verify() reports a count below the jobs of a group that have not ended', async () => {
    const store = newStore();
    const q = uniqueName('low-group-count');
    const k = queueKeys('dq', q);
    await store.add(q, [newJob('a', { delayMs: 60_000, group: 'g' }), newJob('b', { delayMs: 60_000, group: 'h' })]);
    assert.equal((await store.verify(q)).ok, true);
    await fx.client.hset(k.meta, 'groupJobs', '1');
    assert.match(JSON.stringify(await store.verify(q)), /2 jobs of a group have not ended, but meta groupJobs counts 1/);
  });
});

describe('the jobs with a cost or a debounce key are counted', () => {
  test('once the last one ended, a backlog is claimed in one pass; a debounce burst still ends when its job starts', async () => {
    const store = newStore();
    const q = uniqueName('was-flowed');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    const flowMark = () => metaFields(fx.client, q, 'flowed', 'flowJobs');
    await store.add(q, [newJob('burst', { debounce: { key: 'user-1', delayMs: 1, maxWaitMs: undefined } }), newJob('costly', { delayMs: 3_600_000, cost: 2 })]);
    assert.deepEqual(await flowMark(), ['1', '2']);
    // A second add of the key folds into the waiting job.
    assert.equal((await store.add(q, [newJob('other', { debounce: { key: 'user-1', delayMs: 1, maxWaitMs: undefined } })]))?.[0]?.code, 'debounced');
    assert.deepEqual(await flowMark(), ['1', '2']);
    // Due a millisecond after the fold: claimed as soon as it is (no sleep).
    const [burst] = await until(async () => {
      const got = (await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs;
      return got.length > 0 ? got : undefined;
    }, 'the debounced job to come due');
    assert.equal(burst?.id, 'burst');
    // Its start ended the burst: the key starts a new one.
    assert.equal((await store.add(q, [newJob('next', { debounce: { key: 'user-1', delayMs: 3_600_000, maxWaitMs: undefined } })]))?.[0]?.code, 'added');
    assert.deepEqual(await flowMark(), ['1', '3']);
    assert.deepEqual(await store.complete(q, [{ id: 'burst', token: burst!.token }]), ['ok']);
    assert.equal((await store.cancel(q, ['costly', 'next'])).filter((c) => c.cancelled).length, 2);
    assert.deepEqual(await flowMark(), ['1', '0']);
    const plain = ids('p-', 300);
    await store.add(
      q,
      plain.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 50 })),
    );
    const first = (await store.claim(q, 50, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.equal(await fx.client.zcard(k.ready), 0, 'the one pass: no ready set');
    assert.deepEqual([...first, ...(await claimAll(store, q, 50))], plain);
    assert.equal((await store.verify(q)).ok, true);
    await fx.client.hset(k.meta, 'flowJobs', '0');
    await store.add(q, [newJob('c1', { delayMs: 60_000, cost: 3 })]);
    await fx.client.hset(k.meta, 'flowJobs', '0');
    assert.match(JSON.stringify(await store.verify(q)), /1 jobs with a cost or a debounce key have not ended, but meta flowJobs counts 0/);
  });
});
