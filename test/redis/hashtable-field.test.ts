import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore } from '../../src/index.js';
import { historyKey, queueKeys } from '../../src/store/redis/keys.js';
import { HASHTABLE_FIELD } from '../../src/store/redis/wire.js';
import { jobFields } from '../helpers/job-fields.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();

const encoding = (key: string) => fx.client.object('ENCODING', key);

describe('the jobs, runs and history hashes stay hashtables (wire.ts HASHTABLE_FIELD)', () => {
  test('a small queue: bodies and run states are hashtables from the first write, and nothing that reads the queue counts or lists the field', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const queue = fx.track(new Queue<{ n: number }>(uniqueName('ht'), { store }));
    const k = queueKeys('dq', queue.name);
    for (let n = 0; n < 3; n++) await queue.add({ n }, { id: `j${n}` });
    // Three short bodies: Redis would keep them as a listpack (up to 512 fields of ≤ 64 bytes).
    assert.equal(await encoding(k.jobs), 'hashtable');
    const claimed = await store.claim(queue.name, 2, 60_000, 3, 'w');
    assert.equal(claimed.jobs.length, 2);
    assert.equal(await encoding(k.runs), 'hashtable');
    assert.equal(await encoding(historyKey(k)), 'hashtable', 'the claim noted its minute');
    assert.equal(
      (await queue.history({ minutes: 2 })).reduce((n, m) => n + m.started, 0),
      2,
      'and the history reads the same',
    );
    assert.equal(await jobFields(fx.client, k.jobs), 3);
    assert.equal(await jobFields(fx.client, k.runs), 2);

    const report = await queue.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
    const step = await store.scan(queue.name, '0', 100);
    assert.deepEqual(step.entries.map((e) => e.id).sort(), ['j0', 'j1', 'j2'], 'the scan lists jobs only');
    assert.equal(step.total, 3);

    // Acked, the run states go; the field stays, so the hash is not made again as a listpack.
    assert.deepEqual(
      (
        await store.complete(
          queue.name,
          claimed.jobs.map((j) => ({ id: j.id, token: j.token })),
        )
      ).map(String),
      ['ok', 'ok'],
    );
    assert.equal(await jobFields(fx.client, k.runs), 0);
    assert.equal(await encoding(k.runs), 'hashtable');

    // A foreign client that names the field (reads do not check ids) finds no job there.
    assert.equal(await store.get(queue.name, HASHTABLE_FIELD), null);
    assert.deepEqual(
      (await store.cancel(queue.name, [HASHTABLE_FIELD])).map((r) => r.cancelled),
      [false],
    );
    assert.equal(await encoding(k.jobs), 'hashtable');
    assert.equal(await fx.client.hexists(k.jobs, HASHTABLE_FIELD), 1, 'the field is still there');

    const gone = await queue.obliterate({ force: true });
    assert.equal(gone.counts.jobs, 1, 'the jobs obliterate counts are jobs only');
  });

  test('the groups hash is a hashtable from its first write (a listpack of a few hundred groups was read field by field on every claim and ack), and no read of the groups lists, counts or revives the field', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const queue = fx.track(new Queue<{ n: number }>(uniqueName('ht'), { store }));
    const k = queueKeys('dq', queue.name);
    await queue.setLimits({ groupConcurrency: 1 });
    await queue.addBulk([0, 1, 2].map((n) => ({ data: { n }, opts: { id: `g${n}`, group: `t${n % 2}` } })));
    const claimed = await store.claim(queue.name, 10, 60_000, 3, 'w');
    assert.deepEqual(claimed.jobs.map((j) => j.id).sort(), ['g0', 'g1']);
    assert.equal(await encoding(k.groups), 'hashtable');

    const page = await queue.groups.list();
    assert.deepEqual(page.groups.map((g) => [g.id, g.running, g.waiting]).sort(), [
      ['t0', 1, 1],
      ['t1', 1, 0],
    ]);
    assert.equal((await queue.groups.get('t1')).running, 1);
    // A limit raised sweeps the groups hash (limits.lua): the field is no group to put in turn.
    await queue.setLimits({ groupConcurrency: 5 });
    assert.deepEqual(
      (await store.claim(queue.name, 10, 60_000, 3, 'w')).jobs.map((j) => j.id),
      ['g2'],
    );
    const stats = await queue.stats();
    assert.equal(stats.active, 3);
    const report = await queue.verify();
    assert.equal(report.ok, true, report.problems.join('; '));

    // Every group back to nothing: their states go, the field stays (the hash is not made again
    // as a listpack), and the groups read as none.
    await store.complete(
      queue.name,
      [...claimed.jobs].map((j) => ({ id: j.id, token: j.token })),
    );
    const rest = await store.claim(queue.name, 10, 60_000, 3, 'w');
    assert.deepEqual(rest.jobs, []);
    assert.equal(await encoding(k.groups), 'hashtable');
    assert.equal(await fx.client.hexists(k.groups, HASHTABLE_FIELD), 1);
    assert.equal(await jobFields(fx.client, k.groups), 1, "t0's state stays: its job g2 still runs");
  });

  test('a queue an older version left with listpack hashes turns them into hashtables on its next add and claim', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const queue = fx.track(new Queue<{ n: number }>(uniqueName('ht'), { store }));
    const k = queueKeys('dq', queue.name);
    await queue.add({ n: 0 }, { id: 'old' });
    const first = await store.claim(queue.name, 1, 60_000, 3, 'w');
    assert.equal(first.jobs.length, 1);
    // As an older version wrote them: no field, so Redis makes them listpacks again.
    for (const key of [k.jobs, k.runs]) {
      const flat = await fx.client.hgetall(key);
      delete flat[HASHTABLE_FIELD];
      await fx.client.multi().del(key).hset(key, flat).exec();
      assert.equal(await encoding(key), 'listpack');
    }
    await queue.add({ n: 1 }, { id: 'new' });
    assert.equal(await encoding(k.jobs), 'hashtable');
    const second = await store.claim(queue.name, 1, 60_000, 3, 'w');
    assert.deepEqual(
      second.jobs.map((j) => j.id),
      ['new'],
    );
    assert.equal(await encoding(k.runs), 'hashtable');
    assert.equal(await jobFields(fx.client, k.runs), 2);
    const report = await queue.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
  });
});
