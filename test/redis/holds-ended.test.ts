/**
 * A queue that once held a job (a flow's parent, a job waiting for a signal) does not pay for
 * holds for good: meta `holds` stays '1' (reads answer holds by it), but claims and ends look at
 * holds only while one of their keys exists — a job held, a hold record, a job waiting for another
 * (_holds.lua HOLDS.live). With none left, a backlog is claimed in the one pass (no ready set) and
 * an ack reads no dependents; a new hold brings the hold path back at once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { HOLD_SUFFIXES } from '../../src/store/redis/wire.js';
import { claimAll, paddedIds } from '../helpers/claims.js';
import { metaFields } from '../helpers/meta-fields.js';
import { commandsNaming } from '../helpers/monitor.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until } from '../helpers/wait.js';

const fx = useRedis();
const LEASE_MS = 60_000;

function newStore(): RedisStore {
  return fx.track(new RedisStore({ connection: fx.redis.url }));
}

/** The keys of holds a queue keeps (wire.ts HOLD_SUFFIXES) that exist now. */
async function holdKeys(queue: string): Promise<string[]> {
  const root = queueKeys('dq', queue).root;
  const out: string[] = [];
  for (const suffix of Object.values(HOLD_SUFFIXES)) {
    if ((await fx.client.exists(root + suffix)) === 1) out.push(suffix);
  }
  return out;
}

/** The commands that name one of the queue's keys of holds while `fn` runs. */
async function holdCommands(queue: string, fn: () => Promise<void>): Promise<string[]> {
  const root = queueKeys('dq', queue).root;
  const seen = await commandsNaming(
    fx.client,
    Object.values(HOLD_SUFFIXES).map((s) => root + s),
    fn,
  );
  return seen.map((c) => c.command);
}

/** Claims everything due in one call and acks it; returns the ids in hand-out order. */
async function runAll(store: RedisStore, q: string): Promise<string[]> {
  const jobs = (await store.claim(q, 100, LEASE_MS, 3, 'w')).jobs;
  if (jobs.length > 0)
    await store.complete(
      q,
      jobs.map((j) => ({ id: j.id, token: j.token })),
    );
  return jobs.map((j) => j.id);
}

/** A backlog of 300 due jobs, claimed 50 at a time: asserts the first claim took the one pass. */
async function claimedInOnePass(store: RedisStore, q: string, prefix: string, now: number): Promise<void> {
  const k = queueKeys('dq', q);
  const plain = paddedIds(prefix, 300);
  await store.add(
    q,
    plain.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 50 })),
  );
  const first = (await store.claim(q, 50, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
  assert.equal(await fx.client.zcard(k.ready), 0, 'the one pass: no ready set');
  assert.deepEqual([...first, ...(await claimAll(store, q, 50))], plain);
}

describe('holds cost nothing once they have all ended', () => {
  test('a flow that ended: its keys are gone, a backlog is claimed in one pass, and a new flow holds and releases again', async () => {
    const store = newStore();
    const q = uniqueName('was-held');
    const now = await serverTimeMs(fx.client);
    await store.add(q, [
      newJob('child', { delayMs: undefined, runAtMs: now - 100 }),
      newJob('parent', { delayMs: undefined, runAtMs: now - 100, hold: { dependsOn: ['child'], onChildFailure: 'fail' } }),
    ]);
    assert.deepEqual(await metaFields(fx.client, q, 'holds'), ['1']);
    assert.deepEqual(await runAll(store, q), ['child']);
    assert.deepEqual(await runAll(store, q), ['parent']);
    assert.deepEqual(await holdKeys(q), [], 'every key of holds went with the flow');
    assert.deepEqual(await metaFields(fx.client, q, 'holds'), ['1'], 'the mark stays');
    await store.add(q, [newJob('one', { delayMs: undefined, runAtMs: now - 60 })]);
    const looked = await holdCommands(q, async () => {
      assert.deepEqual(await runAll(store, q), ['one']);
    });
    // The claim asks once, the ack once before it settles and once among the keys its jobs may have
    // entries in (forget_extras); neither reads a hold.
    assert.deepEqual(looked, ['EXISTS', 'EXISTS', 'EXISTS'], 'a claim and an ack ask whether a hold exists, and read none');
    await claimedInOnePass(store, q, 'p-', now);
    // A new flow: the parent waits for its child, then runs with the child's result.
    await store.add(q, [
      newJob('child-2', { delayMs: 3_600_000 }),
      newJob('parent-2', { delayMs: undefined, runAtMs: now - 10, hold: { dependsOn: ['child-2'], onChildFailure: 'fail' } }),
    ]);
    assert.deepEqual(await runAll(store, q), [], 'the parent is held');
    await store.reschedule(q, 'child-2', undefined, now - 5);
    const child = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(
      child.map((j) => j.id),
      ['child-2'],
    );
    assert.deepEqual(await store.complete(q, [{ id: 'child-2', token: child[0]!.token, result: '"done"' }]), ['ok']);
    const parent = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(
      parent.map((j) => j.id),
      ['parent-2'],
    );
    assert.equal(parent[0]!.hold?.timedOut, false, 'released by its child, as its run sees it');
    const held = await store.holdOf(q, 'parent-2');
    assert.deepEqual([held?.children[0]?.outcome, held?.children[0]?.value], ['completed', '"done"']);
    assert.equal((await store.verify(q)).ok, true);
  });

  test('a job that waited for a signal and ended: a backlog is claimed in one pass; a held job whose deadline passes still runs', async () => {
    const store = newStore();
    const q = uniqueName('was-waiting');
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('s', { delayMs: undefined, runAtMs: now - 100 })]);
    const [s] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.equal((await store.waitSignal(q, { id: 's', token: s!.token, name: 'paid', timeoutMs: undefined })).outcome, 'waiting');
    assert.equal((await store.signal(q, 's', 'paid', '{}')).outcome, 'released');
    assert.deepEqual(await runAll(store, q), ['s']);
    assert.deepEqual(await holdKeys(q), []);
    await store.add(q, [newJob('one', { delayMs: undefined, runAtMs: now - 60 })]);
    assert.deepEqual(await holdCommands(q, async () => void (await runAll(store, q))), ['EXISTS', 'EXISTS', 'EXISTS']);
    await claimedInOnePass(store, q, 'q-', now);
    // A parent whose deadline has passed runs though its child waits an hour: the claim still
    // looks for it once a hold exists again.
    await store.add(q, [
      newJob('late-child', { delayMs: 3_600_000 }),
      newJob('late-parent', { delayMs: undefined, runAtMs: now - 10, hold: { dependsOn: ['late-child'], deadlineMs: 1, onChildFailure: 'ignore' } }),
    ]);
    const got = await until(async () => {
      const ids = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs.map((j) => j.id);
      return ids.length > 0 ? ids : undefined;
    }, 'the parent whose deadline passed to be handed out');
    assert.deepEqual(got, ['late-parent']);
  });
});
