/**
 * A packed add (add.lua `item_fields` 'packed', _add_packed.lua): the producer sends each job's
 * body from its priority on (wire.ts PACKED_TAIL), and the script writes it after the seq and
 * created time. It must write what the general path writes, answer as it answers, and refuse a
 * tail that would corrupt the queue before its first write.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { packable, packedTail } from '../../src/store/redis/packed-tail.js';
import { protocolManifest } from '../../src/store/redis/protocol.js';
import { runScript } from '../../src/store/redis/scripts.js';
import type { NewJob } from '../../src/store/store.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { callHead } from '../helpers/protocol-call.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { scheduledIds } from '../helpers/scheduled.js';
import { queueDump } from '../helpers/queue-dump.js';

const fx = useRedis();
const manifest = protocolManifest();

/** add.lua run by hand with packed items [id, data (the tail), delay_ms, run_at], as a foreign producer would. */
function packedCall(q: string, items: (string | number)[][], args: Record<string, string | number> = {}) {
  const { keys, argv } = callHead('add', q, { item_fields: 'packed', memo_ms: 60_000, ...args });
  for (const item of items) argv.push(...item.map(String));
  return runScript(fx.client, 'add', keys, argv);
}

const snapshot = (q: string) => queueDump(fx.client, q);

/** A stored body without its seq and created time: what the producer decided. */
const decided = (body: string | null) => body?.replace(/^\d+:\d+:/, '');

const JOBS: NewJob[] = [
  newJob('plain'),
  newJob('ranked', { priority: -7, delayMs: 5_000 }),
  newJob('limits', { priority: 3, maxAttempts: 4, timeoutMs: 1_500 }),
  newJob('timeout-only', { timeoutMs: 20 }),
  newJob('backoff', { backoff: 'e:100:5000:1', maxAttempts: 9 }),
  newJob('traced', { traceContext: JSON.stringify({ traceparent: '00-abc-def-01', note: 'ünï' }) }),
  newJob('named', { name: 'send-email', data: JSON.stringify({ to: 'a@b.c' }) }),
  newJob('unicode name', { name: 'rappel · 名前 🚀', data: JSON.stringify({ text: 'é 名 🚀', nested: [1, { x: null }] }) }),
  newJob('run-at', { delayMs: undefined, runAtMs: 4_102_444_800_000 }),
  newJob('empty data', { data: '' }),
];

describe('packed add', () => {
  test('writes the body, member and answers the general path writes for the same jobs', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const packed = uniqueName('packed');
    const general = uniqueName('general');
    assert.ok(JOBS.every(packable), 'every job here takes the packed path');
    // replace: true takes the general path (a new id is added all the same).
    const [a, b] = await Promise.all([
      store.add(packed, JOBS),
      store.add(
        general,
        JOBS.map((j) => ({ ...j, replace: true })),
      ),
    ]);
    assert.deepEqual(
      a?.map((r) => [r.code, r.state, r.dueAtMs > 0]),
      b?.map((r) => [r.code === 'replaced' ? 'added' : r.code, r.state, r.dueAtMs > 0]),
    );
    const kp = queueKeys('dq', packed);
    const kg = queueKeys('dq', general);
    for (const j of JOBS) {
      const [bp, bg] = await Promise.all([fx.client.hget(kp.jobs, j.id), fx.client.hget(kg.jobs, j.id)]);
      assert.equal(decided(bp), decided(bg), `${j.id}: the same body`);
      assert.equal(decided(bp), packedTail(j), `${j.id}: the tail as packed`);
      const [gp, gg] = await Promise.all([store.get(packed, j.id), store.get(general, j.id)]);
      const strip = (x: typeof gp) => x && { ...x, createdAtMs: 0, dueAtMs: j.delayMs === undefined ? x.dueAtMs : 0 };
      assert.deepEqual(strip(gp), strip(gg), `${j.id}: read back the same`);
    }
    assert.deepEqual(await scheduledIds(fx.client, kp.scheduled), await scheduledIds(fx.client, kg.scheduled));
    assert.deepEqual(await fx.client.hmget(kp.meta, 'ordered', 'prioritized'), ['2', '1'], 'a job with a priority marks the queue');
    assert.equal((await store.verify(packed)).ok, true);
  });

  test('a job that exists, or that an earlier item of the call adds, is left alone; a re-sent call answers as the first run did', async () => {
    const q = uniqueName('packed');
    const tail = packedTail(newJob('x'));
    const first = (await packedCall(q, [['a', tail, 0, '']], { request_id: 'r1' })) as unknown[];
    assert.equal(first.length, 5);
    const call = () =>
      packedCall(
        q,
        [
          ['a', tail, 0, ''],
          ['b', tail, 1000, ''],
          ['b', tail, 0, ''],
        ],
        { request_id: 'r2' },
      );
    const answer = (await call()) as unknown[];
    const codes = (r: unknown[]) => [r[1], r[5], r[9]];
    assert.deepEqual(codes(answer), [manifest.scripts.add.codes!.exists, manifest.scripts.add.codes!.added, manifest.scripts.add.codes!.exists]);
    const before = await snapshot(q);
    assert.deepEqual(await call(), answer, 're-sent: the same answer');
    const after = await snapshot(q);
    delete before[`dq:{${q}}:req:r2`];
    delete after[`dq:{${q}}:req:r2`];
    assert.deepEqual(after, before, 're-sent: nothing written');
  });

  test('a tail that would corrupt the queue is refused before anything is written', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const q = uniqueName('packed');
    await store.add(q, [newJob('seed', { delayMs: 60_000 })]);
    const good = packedTail(newJob('ok'));
    const bad: [string, RegExp][] = [
      ['{"json":1}', /data of item 2 must be a packed body tail/],
      ['0::0:0', /data of item 2 must be a packed body tail/],
      ['x:3:0:0:1', /data of item 2 must be a packed body tail/],
      ['0:3:5:0:ab', /lengths past its end/],
      ['0::0:2:a', /lengths past its end/],
      ['0::0:0/0:x', /bad name length/],
      ['0::0:0/3:a', /lengths past its end/],
      ['0::0:0/2:\u0001a1', /name of item 2/],
      ['0:0:0:0:1', /max_attempts of item 2 must be at least 1/],
      ['0:/0:0:0:1', /timeout_ms of item 2/],
      ['0:3/:0:0:1', /bad limits/],
      ['0:3/5/6:0:0:1', /bad limits/],
      ['007::0:0:1', /priority of item 2 must be written as a plain whole number/],
      ['-0::0:0:1', /priority of item 2 must be written as a plain whole number/],
      ['0:03:0:0:1', /max_attempts of item 2 must be written as a plain whole number/],
      ['99999999999::0:0:1', /priority of item 2 must be at most/],
      ['nan::0:0:1', /data of item 2 must be a packed body tail/],
      ['0x1A::0:0:1', /data of item 2 must be a packed body tail/],
    ];
    const before = await snapshot(q);
    for (const [tail, why] of bad) {
      await assert.rejects(
        packedCall(
          q,
          [
            ['fine', good, 0, ''],
            ['bad', tail, 0, ''],
          ],
          { request_id: 'r' },
        ),
        why,
        JSON.stringify(tail),
      );
      assert.deepEqual(await snapshot(q), before, `${JSON.stringify(tail)}: nothing written`);
    }
    await assert.rejects(packedCall(q, [['fine', good, 0, '']], { schedule: 'nightly', occurrence: 1 }), /not for a schedule's add/);
    await assert.rejects(packedCall(q, [['fine', good, '', '']]), /exactly one must be set/);
    await assert.rejects(packedCall(q, [['fine', good, 0]]), /items of 4 arguments/);
    assert.deepEqual(await snapshot(q), before, 'nothing written');
  });
});
