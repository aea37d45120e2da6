/**
 * A queue without groups that once had a rate limit, or a RateLimitSignal's hold, does not pay
 * for rate limits for good: meta `rated` stays '1', but a claim takes the path of a queue without
 * them while no limit is set, no hold is in force and no group waits for its tokens (_rate.lua
 * RL().live), and a new limit or hold is back in force at once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
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

/**
 * The commands that name one of the queue's rate keys while one job is claimed and acked. (That
 * such a claim takes the one pass of a plain queue shows in `bench:scripts`, not here: both
 * paths answer alike.)
 */
async function rateCommandsOfOneJob(store: RedisStore, q: string, id: string): Promise<string[]> {
  const k = queueKeys('dq', q);
  await store.add(q, [newJob(id, { delayMs: undefined, runAtMs: (await serverTimeMs(fx.client)) - 10 })]);
  const rateKeys = new Set([k.rate, k.rateLog, k.rateWake]);
  const seen = await commandsNaming(fx.client, [...rateKeys], async () => {
    const jobs = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
    assert.deepEqual(
      jobs.map((j) => j.id),
      [id],
    );
    assert.deepEqual(await store.complete(q, [{ id, token: jobs[0]!.token }]), ['ok']);
  });
  return seen.map((c) => c.command);
}

describe('rate limits cost nothing once none is in force', () => {
  test('a rate limit removed: claims read only whether a hold or a waiting group is left; a backlog goes out whole and in order; a new limit holds at once', async () => {
    const store = newStore();
    const q = uniqueName('was-rated');
    await store.setLimits(q, { rateLimit: { max: 1_000, perMs: 3_600_000 } });
    assert.equal((await rateCommandsOfOneJob(store, q, 'limited')).includes('ZADD'), true, 'a limit logs its tokens');
    await store.setLimits(q, { rateLimit: null });
    assert.deepEqual(await metaFields(fx.client, q, 'rated'), ['1'], 'the mark stays');
    assert.deepEqual(
      await rateCommandsOfOneJob(store, q, 'free'),
      ['HMGET', 'EXISTS'],
      "the queue's hold and whether a group waits are read; nothing is taken, logged or given back",
    );
    const now = await serverTimeMs(fx.client);
    const backlog = paddedIds('b-', 300);
    await store.add(
      q,
      backlog.map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 50 })),
    );
    assert.deepEqual(await claimAll(store, q, 100), backlog);
    // A limit set again takes hold with the next claim; the token taken under the first one is
    // still in its window (an hour) and counts.
    await store.setLimits(q, { rateLimit: { max: 3, perMs: 60_000 } });
    await store.add(
      q,
      paddedIds('c-', 5).map((id) => newJob(id, { delayMs: undefined, runAtMs: now - 40 })),
    );
    assert.equal((await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs.length, 2);
    assert.equal((await store.verify(q)).ok, true);
  });

  test("a RateLimitSignal's hold on a queue without a limit holds while in force; once it has passed, claims take the path of a queue without limits", async () => {
    const store = newStore();
    const q = uniqueName('was-held-back');
    const now = await serverTimeMs(fx.client);
    await store.add(q, [newJob('a', { delayMs: undefined, runAtMs: now - 100 }), newJob('b', { delayMs: undefined, runAtMs: now - 90 })]);
    const [a] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    // The handler met a 429: its job goes back and the queue holds 300 ms.
    assert.deepEqual(await store.release(q, [{ id: 'a', token: a!.token }], 300), ['ok']);
    assert.deepEqual(await metaFields(fx.client, q, 'rated'), ['1']);
    const held = await store.claim(q, 10, LEASE_MS, 3, 'w');
    assert.deepEqual(held.jobs, [], 'nothing starts while the hold is in force');
    const got = await until(async () => {
      const jobs = (await store.claim(q, 10, LEASE_MS, 3, 'w')).jobs;
      return jobs.length > 0 ? jobs : undefined;
    }, 'the hold to pass');
    assert.deepEqual(got.map((j) => j.id).sort(), ['a', 'b']);
    await store.complete(
      q,
      got.map((j) => ({ id: j.id, token: j.token })),
    );
    assert.deepEqual(await rateCommandsOfOneJob(store, q, 'after'), ['HMGET', 'EXISTS']);
  });
});
