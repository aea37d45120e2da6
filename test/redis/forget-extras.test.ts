/**
 * What an end forgets (_helpers.lua forget_extras): every hash of a job's extras that holds it
 * (its group, its cost, its error history, logs, progress, result) loses the job's entry, and no
 * other job's; the look key by key stops once it has met every key that exists, and goes on to
 * the keys of holds while one exists. The ack that reads its jobs' groups once is in
 * group-count.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';

const fx = useRedis();
const LEASE_MS = 60_000;

describe('an end forgets its jobs’ extras', () => {
  test('every extra of the ended job goes, another job’s stay, and a pending hold is untouched', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const q = uniqueName('extras');
    const k = queueKeys('dq', q);
    const now = await serverTimeMs(fx.client);
    await store.add(q, [
      newJob('ended', { delayMs: undefined, runAtMs: now - 10, group: 'g', cost: 2 }),
      newJob('other', { delayMs: 60_000, group: 'g', cost: 2 }),
    ]);
    // A parent held for a child due in a minute: the keys of holds exist meanwhile.
    const queue = fx.track(new Queue(q, { connection: fx.redis.url }));
    await queue.addFlow({ data: {}, opts: { id: 'parent' }, children: [{ data: {}, opts: { id: 'child', delay: 60_000 } }] });
    const holds = `dq:{${q}}:holds`;
    assert.equal(await fx.client.hexists(holds, 'parent'), 1);

    // A failed attempt (its error history), then a run that reports progress and logs.
    const [first] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.equal(first?.id, 'ended');
    assert.equal(
      (await store.fail(q, { id: 'ended', token: first.token, error: 'boom', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 })).outcome,
      'retried',
    );
    const [second] = (await store.claim(q, 1, LEASE_MS, 3, 'w')).jobs;
    assert.equal(second?.id, 'ended');
    assert.equal(await store.update(q, { id: 'ended', token: second.token, progress: '50', lines: ['half way'], logCap: 10 }), 'ok');
    const extras = { groupOf: k.groupOf, flowOf: k.flowOf, errors: k.errors, logs: k.logs, progress: k.progress };
    for (const [name, key] of Object.entries(extras)) assert.equal(await fx.client.hexists(key, 'ended'), 1, `${name} holds the job before it ends`);

    assert.deepEqual(await store.complete(q, [{ id: 'ended', token: second.token, result: '"done"' }]), ['ok']);
    for (const [name, key] of Object.entries({ ...extras, results: k.results }))
      assert.equal(await fx.client.hexists(key, 'ended'), 0, `${name} forgot the job`);
    assert.equal(await fx.client.hexists(k.groupOf, 'other'), 1, 'the other job keeps its group');
    assert.equal(await fx.client.hexists(k.flowOf, 'other'), 1, 'and its cost');
    assert.equal(await fx.client.hexists(holds, 'parent'), 1, 'the pending hold is untouched');
    assert.equal((await store.verify(q)).ok, true);

    // The other job ends by cancel: its entries go too; the flow still waits.
    assert.equal((await store.cancel(q, ['other']))[0]?.cancelled, true);
    assert.equal(await fx.client.hexists(k.groupOf, 'other'), 0);
    assert.equal(await fx.client.hexists(k.flowOf, 'other'), 0);
    assert.equal(await fx.client.hexists(holds, 'parent'), 1);
    assert.equal((await store.verify(q)).ok, true);
  });
});
