/**
 * The scheduled set keeps add order (wire.ts SCHEDULED_MEMBER): a queue made by this version
 * writes members that sort by due time, then add order, so claims on a queue without priorities
 * take the set's first members and write no ready set; a queue with a priority still orders
 * through the ready set; a queue an older version made (members of the id form) keeps working,
 * and `migrate` converts it in bounded steps while producers and workers of this version run.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { scheduledMemberId } from '../../src/store/zset-order.js';
import { uniqueName } from '../helpers/names.js';
import { claimAll, paddedIds } from '../helpers/claims.js';
import { metaFields } from '../helpers/meta-fields.js';
import { newJob } from '../helpers/new-job.js';
import { callScript } from '../helpers/protocol-call.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { scheduledIds } from '../helpers/scheduled.js';
import { serverTimeMs } from '../helpers/wait.js';
import { jobFields } from '../helpers/job-fields.js';

const fx = useRedis();
const LEASE_MS = 60_000;

function newStore(): RedisStore {
  return fx.track(new RedisStore({ connection: fx.redis.url }));
}

/** Rewrites a queue's scheduled members to the id form and forgets `ordered`: a queue as an older version left it. */
async function toIdForm(queue: string): Promise<void> {
  const k = queueKeys('dq', queue);
  const flat = await fx.client.zrange(k.scheduled, '0', '-1', 'WITHSCORES');
  const tx = fx.client.multi().del(k.scheduled);
  for (let i = 0; i < flat.length; i += 2) tx.zadd(k.scheduled, flat[i + 1]!, scheduledMemberId(flat[i]!));
  tx.hdel(k.meta, 'ordered');
  await tx.exec();
}

/**
 * Adds a job with `priority`, hands it out and acks it, and marks the queue as a version before
 * the count left it: marked `prioritized` (with no count) while it holds no job with a priority.
 */
async function priorityEnded(store: RedisStore, queue: string, now: number, priority: number): Promise<void> {
  await store.add(queue, [newJob('ended', { delayMs: undefined, runAtMs: now - 5000, priority })]);
  const [job] = (await store.claim(queue, 1, LEASE_MS, 3, 'w')).jobs;
  assert.deepEqual(await store.complete(queue, [{ id: 'ended', token: job!.token }]), ['ok']);
  await legacyMark(queue);
}

/** Marks the queue `prioritized` without a count: as a version before the count left a queue that ever had a job with a priority. */
async function legacyMark(queue: string): Promise<void> {
  const k = queueKeys('dq', queue);
  await fx.client.multi().hset(k.meta, 'prioritized', '1').hdel(k.meta, 'ranked').exec();
}

/** The queue's mark and count: [prioritized, ranked] as stored. */
const mark = (queue: string) => metaFields(fx.client, queue, 'prioritized', 'ranked');

const ids = paddedIds;

describe('the scheduled set keeps add order', () => {
  test('a new queue: a backlog due at one millisecond is handed out in add order, claim after claim, with no ready set and no run state for a job not handed out', async () => {
    const store = newStore();
    const q = uniqueName('order');
    const k = queueKeys('dq', q);
    const due = (await serverTimeMs(fx.client)) - 1000;
    // Ids whose text order is not the add order: the set's order must come from the add.
    const added = Array.from({ length: 1000 }, (_, i) => `z${(1000 - i) * 7}`);
    for (let i = 0; i < added.length; i += 250)
      await store.add(
        q,
        added.slice(i, i + 250).map((id) => newJob(id, { delayMs: undefined, runAtMs: due })),
      );
    assert.equal(await fx.client.hget(k.meta, 'ordered'), '2');
    let claimed = 0;
    const order = await claimAll(store, q, 100, async () => {
      claimed += 100;
      assert.equal(await fx.client.exists(k.ready), 0, 'no ready set');
      assert.equal(await jobFields(fx.client, k.runs), claimed, 'run states only for the jobs handed out');
    });
    assert.deepEqual(order, added);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('due times first, then add order, across claims and members of both forms', async () => {
    const store = newStore();
    const q = uniqueName('order');
    const now = await serverTimeMs(fx.client);
    const late = ids('late-', 150);
    const early = ids('early-', 150);
    await store.add(
      q,
      late.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await store.add(
      q,
      early.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 2000 })),
    );
    // A member of the id form (an older producer's add) is read as well: it sorts after the
    // members of its due time, since its add order cannot be known from the set.
    await store.add(q, [newJob('old-form', { delayMs: undefined, runAtMs: now - 1000 })]);
    const k = queueKeys('dq', q);
    const oldMember = (await fx.client.zrange(k.scheduled, '0', '-1')).find((m) => scheduledMemberId(m) === 'old-form')!;
    await fx.client
      .multi()
      .zrem(k.scheduled, oldMember)
      .zadd(k.scheduled, now - 1000, 'old-form')
      .exec();
    assert.equal((await store.get(q, 'old-form'))?.state, 'scheduled');
    assert.deepEqual(await claimAll(store, q, 40), [...early, ...late, 'old-form']);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('a queue that had a job with a priority orders its backlog through the ready set: priority, then due time, then add order', async () => {
    const store = newStore();
    const q = uniqueName('prio');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    const plain = ids('p-', 300);
    const urgent = ids('u-', 60);
    await store.add(
      q,
      plain.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await store.add(
      q,
      urgent.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 500, priority: 5 })),
    );
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1');
    assert.deepEqual(await claimAll(store, q, 50), [...urgent, ...plain]);
  });

  test('cancel, reschedule, get and replace find a job by its member, and verify() tells a member whose seq is not its body’s', async () => {
    const store = newStore();
    const q = uniqueName('find');
    const k = queueKeys('dq', q);
    await store.add(q, [newJob('a', { delayMs: 60_000 }), newJob('b', { delayMs: 60_000 }), newJob('c', { delayMs: 60_000 })]);
    assert.equal((await store.get(q, 'a'))?.state, 'scheduled');
    const [cancelled] = await store.cancel(q, ['a']);
    assert.equal(cancelled?.cancelled, true);
    const later = (await serverTimeMs(fx.client)) + 120_000;
    assert.equal((await store.reschedule(q, 'b', undefined, later)).rescheduled, true);
    assert.equal((await store.get(q, 'b'))?.dueAtMs, later);
    const [replaced] = await store.add(q, [newJob('c', { delayMs: 30_000, replace: true, data: '"new"' })]);
    assert.equal(replaced?.code, 'replaced');
    assert.deepEqual((await scheduledIds(fx.client, k.scheduled)).sort(), ['b', 'c']);
    assert.equal((await store.verify(q)).ok, true);
    // A member carrying another seq than its body: the scripts would not find it by its body.
    const member = (await fx.client.zrange(k.scheduled, '0', '-1')).find((m) => scheduledMemberId(m) === 'b')!;
    const wrong = `\x01${String.fromCharCode(48 + 4)}9999b`;
    await fx.client.multi().zrem(k.scheduled, member).zadd(k.scheduled, later, wrong).exec();
    const report = await store.verify(q);
    assert.equal(report.ok, false);
    assert.match(JSON.stringify(report), /job b: its scheduled member carries seq 9999/);
  });
});

describe('the mark counts the jobs with a priority that have not ended', () => {
  test('a job with a priority marks the queue while it waits or runs; once it is acked the mark goes, and the next backlog is claimed in one pass', async () => {
    const store = newStore();
    const q = uniqueName('counted');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(
      q,
      ids('p-', 100).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await store.add(q, [newJob('urgent', { delayMs: undefined, runAtMs: now - 10, priority: 3 }), newJob('minus', { delayMs: 3_600_000, priority: -1 })]);
    assert.deepEqual(await mark(q), ['1', '2']);
    const first = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
    assert.equal(first[0]?.id, 'urgent', 'the priority still orders');
    assert.deepEqual(await mark(q), ['1', '2'], 'a running job with a priority may come back');
    // A second ack of it ends nothing twice.
    const ack = [{ id: 'urgent', token: first[0]!.token }];
    assert.deepEqual(await store.complete(q, ack), ['ok']);
    assert.deepEqual(await store.complete(q, ack), ['not_found']);
    assert.deepEqual(await mark(q), ['1', '1']);
    assert.equal((await store.cancel(q, ['minus']))[0]?.cancelled, true);
    assert.deepEqual(await mark(q), [null, null], 'no job with a priority is left: no mark, with no migrate');
    const rest = ids('p-', 100).slice(9);
    const batch = (await store.claim(q, 50, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.deepEqual(batch, rest.slice(0, 50));
    // What the earlier claims moved into the ready set goes first; then the one pass.
    const more = ids('n-', 200);
    await store.add(
      q,
      more.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 500 })),
    );
    assert.deepEqual(await claimAll(store, q, 50), [...rest.slice(50), ...more]);
    assert.equal(await fx.client.zcard(k.ready), 0);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('every end takes a job off the count (fail to dead, cancel, drain, completed and kept, replaced without a priority), and a retried dead one marks again and goes first', async () => {
    const store = newStore();
    const q = uniqueName('ends');
    const now = await serverTimeMs(fx.client);
    await store.setRetention(q, 'completed', 100, 3_600_000);
    await store.add(q, [
      newJob('dies', { delayMs: undefined, runAtMs: now - 100, priority: 9, maxAttempts: 1 }),
      newJob('kept', { delayMs: undefined, runAtMs: now - 50, priority: 8 }),
      newJob('drained', { delayMs: 1_000, priority: 2 }),
      newJob('swapped', { delayMs: 3_600_000, priority: 2 }),
      newJob('swapped-ranked', { delayMs: 3_600_000, priority: 2 }),
    ]);
    assert.deepEqual(await mark(q), ['1', '5']);
    const [dies, kept] = (await store.claim(q, 2, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual([dies?.id, kept?.id], ['dies', 'kept']);
    // Each call re-sent (its reply lost): it answers as the first did and counts nothing twice.
    const failed = { id: 'dies', token: dies!.token, error: 'x', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 };
    const first = await store.fail(q, failed);
    assert.deepEqual(await store.fail(q, failed), first);
    assert.deepEqual(await mark(q), ['1', '4']);
    const ack = [{ id: 'kept', token: kept!.token }];
    assert.deepEqual(await store.complete(q, ack), ['ok']);
    assert.deepEqual(await store.complete(q, ack), ['ok']);
    assert.equal((await store.get(q, 'kept'))?.state, 'completed');
    assert.deepEqual(await mark(q), ['1', '3']);
    // Replaced by a job with a priority: still one; by one without: none.
    assert.equal((await store.add(q, [newJob('swapped-ranked', { delayMs: 3_600_000, priority: 4, replace: true })]))?.[0]?.code, 'replaced');
    assert.deepEqual(await mark(q), ['1', '3']);
    assert.equal((await store.add(q, [newJob('swapped', { delayMs: 3_600_000, replace: true })]))?.[0]?.code, 'replaced');
    assert.deepEqual(await mark(q), ['1', '2']);
    assert.equal((await store.cancel(q, ['swapped-ranked']))[0]?.cancelled, true);
    assert.deepEqual(await mark(q), ['1', '1']);
    assert.equal(await store.drain(q, undefined), 2);
    assert.deepEqual(await mark(q), [null, null]);
    // A dead job with a priority is retried: the queue is marked again, and it goes first.
    await store.add(
      q,
      ids('p-', 20).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    assert.equal(await store.deadRetry(q, ['dies']), 1);
    assert.equal(await store.deadRetry(q, ['dies']), 0);
    assert.deepEqual(await mark(q), ['1', '1']);
    assert.equal((await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs[0]?.id, 'dies');
    assert.equal((await store.verify(q)).ok, true);
  });

  test('a queue an older version marked keeps its mark when its jobs end (they were never counted), adds count nothing on it, and migrate takes it off', async () => {
    const store = newStore();
    const q = uniqueName('uncounted');
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('old', { delayMs: undefined, runAtMs: now - 100, priority: 1 })]);
    await legacyMark(q);
    await store.add(q, [newJob('new', { delayMs: undefined, runAtMs: now - 50, priority: 1 })]);
    assert.deepEqual(await mark(q), ['1', null]);
    const jobs = (await store.claim(q, 2, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(
      await store.complete(
        q,
        jobs.map((j) => ({ id: j.id, token: j.token })),
      ),
      ['ok', 'ok'],
    );
    assert.deepEqual(await mark(q), ['1', null], 'uncounted: only migrate knows none is left');
    assert.equal(await store.migrate(q), 1, 'the mark it took off');
    assert.deepEqual(await mark(q), [null, null]);
    // From then on it counts.
    await store.add(q, [newJob('later', { delayMs: 60_000, priority: 1 })]);
    assert.deepEqual(await mark(q), ['1', '1']);
    assert.equal(await store.migrate(q), 0);
    assert.deepEqual(await mark(q), ['1', '1'], 'a counted mark needs no walk');
  });

  test('verify() reports a count below the jobs with a priority that have not ended', async () => {
    const store = newStore();
    const q = uniqueName('low-count');
    const k = queueKeys('dq', q);
    await store.add(q, [newJob('a', { delayMs: 60_000, priority: 1 }), newJob('b', { delayMs: 60_000, priority: 2 })]);
    assert.equal((await store.verify(q)).ok, true);
    await fx.client.hset(k.meta, 'ranked', '1');
    assert.match(JSON.stringify(await store.verify(q)), /2 jobs with a priority have not ended, but the priority mark counts 1/);
    await fx.client.hdel(k.meta, 'prioritized', 'ranked');
    assert.match(JSON.stringify(await store.verify(q)), /2 jobs with a priority have not ended, but the priority mark counts 0/);
  });

  test('a count that does not read is no count: the queue keeps ordering through the ready set until migrate', async () => {
    const store = newStore();
    const q = uniqueName('bad-count');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('a', { delayMs: undefined, runAtMs: now - 100, priority: 1 })]);
    await fx.client.hset(k.meta, 'ranked', 'nan');
    const [a] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(await store.complete(q, [{ id: 'a', token: a!.token }]), ['ok']);
    assert.equal((await mark(q))[0], '1');
    assert.equal(await store.migrate(q), 1, 'the mark it took off');
    assert.deepEqual(await mark(q), [null, null]);
  });
});

describe('a queue an older version made', () => {
  test('keeps working in the id form (add order through the ready set), and migrate converts it in bounded steps beside adds, cancels and claims: nothing lost, nothing twice', async () => {
    const store = newStore();
    const q = uniqueName('legacy');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    const dueIds = Array.from({ length: 400 }, (_, i) => `d${(400 - i) * 3}`);
    const farIds = ids('far-', 600);
    await store.add(
      q,
      dueIds.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await store.add(
      q,
      farIds.map((id) => newJob(id, { delayMs: 3_600_000 })),
    );
    await toIdForm(q);
    assert.equal(
      (await fx.client.zrange(k.scheduled, '0', '-1')).some((m) => m.charCodeAt(0) === 1),
      false,
    );

    // In the id form a backlog still goes out in add order (through the ready set).
    const first = (await store.claim(q, 100, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.deepEqual(first, dueIds.slice(0, 100));
    // New adds while the queue is not converted keep the id form.
    await store.add(q, [newJob('mid-1', { delayMs: 3_600_000 })]);
    assert.ok((await fx.client.zrange(k.scheduled, '0', '-1')).includes('mid-1'));

    // Step by step, 50 members a call, with a write between steps.
    let steps = 0;
    let converted = 0;
    const handed: string[] = [...first];
    for (;;) {
      const reply = (await callScript(fx.client, 'migrate', q, { count: 50 })) as number[];
      converted += Number(reply[0]);
      steps++;
      if (Number(reply[1]) === 1) break;
      if (steps === 1) assert.equal(await fx.client.hget(k.meta, 'ordered'), '1');
      // Writes while converting take the new form; reads find either.
      await store.add(q, [newJob(`during-${steps}`, { delayMs: 3_600_000 })]);
      if (steps === 2) assert.equal((await store.cancel(q, [farIds[0]!]))[0]?.cancelled, true);
      if (steps === 3) assert.equal((await store.reschedule(q, farIds[1]!, 7_200_000, undefined)).rescheduled, true);
      handed.push(...(await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs.map((j) => j.id));
      assert.ok(steps < 200, 'migrate ends');
    }
    assert.ok(steps > 5, `converted in ${steps} steps`);
    assert.ok(converted > 0);
    assert.equal(await fx.client.hget(k.meta, 'ordered'), '2');
    assert.equal(await fx.client.hget(k.meta, 'orderScan'), null);
    const members = await fx.client.zrange(k.scheduled, '0', '-1');
    assert.equal(
      members.every((m) => m.charCodeAt(0) === 1),
      true,
      'every member converted',
    );
    assert.equal((await store.verify(q)).ok, true);
    // Again: nothing to do.
    assert.equal(await store.migrate(q), 0);

    // The rest of the due backlog, in add order, with no ready set written from here.
    handed.push(...(await claimAll(store, q, 100)));
    assert.deepEqual(handed, dueIds);
    assert.equal(new Set(handed).size, handed.length, 'none twice');
    const left = (await scheduledIds(fx.client, k.scheduled)).sort();
    const expected = [...farIds.slice(1), 'mid-1', ...Array.from({ length: steps - 1 }, (_, i) => `during-${i + 1}`)].sort();
    assert.deepEqual(left, expected);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('migrate finds a job with a priority wherever it is (one running may come back): the queue keeps ordering through the ready set', async () => {
    const store = newStore();
    const q = uniqueName('legacy-prio');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('urgent', { delayMs: undefined, runAtMs: now - 5000, priority: 9 })]);
    const [running] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.equal(running?.id, 'urgent');
    // Due before the running job will be when it comes back: only its priority puts it first.
    await store.add(
      q,
      ids('p-', 30).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await toIdForm(q);
    await fx.client.hdel(k.meta, 'prioritized');
    assert.equal(await store.migrate(q), 30);
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1', 'the running job with a priority was seen');
    // It fails and comes back: it goes out first again, ahead of the due backlog.
    await store.fail(q, { id: 'urgent', token: running!.token, error: 'x', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 });
    assert.equal((await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs[0]?.id, 'urgent');
  });

  test('a queue whose jobs with a priority have all ended: migrate clears `prioritized`, and claims of a backlog go back to the one pass', async () => {
    const store = newStore();
    const q = uniqueName('was-prio');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await priorityEnded(store, q, now, 5);
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1');
    assert.equal(await store.migrate(q), 1, 'the mark taken off is an entry rewritten (the CLI said "nothing to convert")');
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), null, 'no job with a priority is left');
    assert.equal(await store.migrate(q), 0, 'and once off, there is nothing left to do');
    const plain = ids('p-', 300);
    await store.add(
      q,
      plain.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    const first = (await store.claim(q, 50, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
    assert.equal(await fx.client.zcard(k.ready), 0, 'the one pass: no ready set');
    assert.deepEqual([...first, ...(await claimAll(store, q, 50))], plain);
    // A priority again marks the queue again, and orders it again.
    await store.add(
      q,
      ids('l-', 20).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    await store.add(q, [newJob('urgent-2', { delayMs: undefined, runAtMs: now, priority: 5 })]);
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1');
    assert.equal((await store.claim(q, 5, LEASE_MS, 3, 'w')).jobs[0]?.id, 'urgent-2');
    assert.equal((await store.verify(q)).ok, true);
  });

  test('migrate keeps an uncounted `prioritized` while a job with a priority is anywhere: waiting far ahead, or dead (it may be retried)', async () => {
    const store = newStore();
    const q = uniqueName('still-prio');
    const k = queueKeys('dq', q);
    await store.add(q, [newJob('later', { delayMs: 3_600_000, priority: -2 }), newJob('plain', { delayMs: 3_600_000 })]);
    // Marked as a version before the count left it: only migrate's walk can take the mark off.
    await legacyMark(q);
    assert.equal(await store.migrate(q), 0);
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1');
    assert.equal((await store.cancel(q, ['later']))[0]?.cancelled, true);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('buried', { delayMs: undefined, runAtMs: now - 10, priority: 3, maxAttempts: 1 })]);
    const [b] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    await store.fail(q, { id: 'buried', token: b!.token, error: 'x', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 });
    assert.equal(await store.migrate(q), 0);
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1', 'the dead job with a priority was seen');
  });

  test('an add with a priority while migrate checks keeps the mark; claims meanwhile keep ordering through the ready set', async () => {
    const store = newStore();
    const q = uniqueName('racing-prio');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await priorityEnded(store, q, now, 1);
    await store.add(
      q,
      ids('p-', 300).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 1000 })),
    );
    // A step of one job at a time: the check is under way.
    const step = async () => (await callScript(fx.client, 'migrate', q, { count: 1 })) as number[];
    assert.equal(Number((await step())[1]), 0);
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '2', 'still marked while it checks');
    await store.claim(q, 10, LEASE_MS, 3, 'w');
    assert.ok((await fx.client.zcard(k.ready)) > 0, 'a claim meanwhile orders through the ready set');
    await store.add(q, [newJob('urgent', { delayMs: 3_600_000, priority: 7 })]);
    let steps = 0;
    while (Number((await step())[1]) !== 1) assert.ok(++steps < 2000, 'migrate ends');
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), '1');
    assert.equal(await fx.client.hget(k.meta, 'orderScan'), null);
  });

  test('one migrate of a queue an older version made converts it, then checks its priorities: none left, the mark goes', async () => {
    const store = newStore();
    const q = uniqueName('legacy-was-prio');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await priorityEnded(store, q, now, 4);
    await store.add(
      q,
      ids('p-', 40).map((id) => newJob(id, { delayMs: 60_000 })),
    );
    await toIdForm(q);
    assert.equal(await store.migrate(q), 41, '40 members and the mark');
    assert.equal(await fx.client.hget(k.meta, 'ordered'), '2');
    assert.equal(await fx.client.hget(k.meta, 'prioritized'), null);
  });

  test('migrate of a queue never made writes nothing', async () => {
    const store = newStore();
    const q = uniqueName('never');
    assert.equal(await store.migrate(q), 0);
    assert.deepEqual(await fx.client.keys(`dq:{${q}}:*`), []);
  });

  test('Queue.migrate() converts a whole queue in one call, and a queue made by this version needs none', async () => {
    const q = uniqueName('legacy');
    const queue = fx.track(new Queue(q, { connection: fx.redis.url }));
    await queue.addBulk(ids('j-', 2500).map((id) => ({ data: { id }, opts: { id, delay: 60_000 } })));
    assert.equal(await queue.migrate(), 0);
    await toIdForm(q);
    assert.equal(await queue.migrate(), 2500);
    assert.equal(await queue.migrate(), 0);
    assert.equal((await queue.get('j-0042'))?.state, 'scheduled');
    assert.equal((await queue.verify()).ok, true);
  });
});
