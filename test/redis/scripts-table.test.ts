/**
 * Script table tests, asynq style: seed a queue's keys (with corrupt data or for a bad
 * argument), run one script, and compare every key of the queue before and after. A script
 * that refuses must have written nothing at all; one that copes must have changed only what
 * its row says. Redis keeps the writes a script made before an error, so "refused" and
 * "unchanged" are checked together.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Redis } from 'ioredis';
import { RedisStore } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { runScript, type ScriptName } from '../../src/store/redis/scripts.js';
import type { NewJob } from '../../src/store/store.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();

/** Every key of the queue with its type and whole content (request memos left out: an answer's cache, not state). */
async function dump(client: Redis, queue: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const keys = (await client.keys(`dq:{${queue}}:*`)).filter((k) => !k.includes('}:req:')).sort();
  for (const k of keys) {
    const type = await client.type(k);
    if (type === 'hash') out[k] = { type, v: await client.hgetall(k) };
    else if (type === 'zset') out[k] = { type, v: await client.zrange(k, '0', '-1', 'WITHSCORES') };
    else if (type === 'string') out[k] = { type, v: await client.get(k) };
    else out[k] = { type };
  }
  return out;
}

function job(id: string, delayMs = 0): NewJob {
  return newJob(id, { data: '1', delayMs });
}

/** Runs a script with hand-made arguments, as a foreign producer or a bug would. */
function raw(queue: string, name: ScriptName, args: (string | number)[], extraKeys: string[] = []) {
  const k = queueKeys('dq', queue);
  return runScript(fx.client, name, [...k.base, ...extraKeys], [...k.baseArgs, ...args]);
}

interface Row {
  name: string;
  seed: (store: RedisStore, q: string) => Promise<void>;
  run: (store: RedisStore, q: string) => Promise<unknown>;
  /** 'refused': rejects with this pattern and writes nothing. Otherwise: checks the answer and the keys. */
  expect: RegExp | ((answer: unknown, before: Record<string, unknown>, after: Record<string, unknown>, q: string) => void);
}

const key = (q: string, suffix: string) => `dq:{${q}}:${suffix}`;
const stringJob = async (q: string, id: string, set: string) => {
  await fx.client.set(key(q, `job:${id}`), 'hello');
  await fx.client.zadd(key(q, set), 0, id);
};
const unchanged = (_a: unknown, before: Record<string, unknown>, after: Record<string, unknown>) => assert.deepEqual(after, before);

const rows: Row[] = [
  {
    name: 'add: a delay of "nan" is refused',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => raw(q, 'add', [1, '', '', '', 0, 'x', '1', 'nan', '', 0, '', '', '0', '', '', ''], ['', key(q, 'job:x')]),
    expect: /delayq: argument delayMs must be a whole number, got nan/,
  },
  {
    name: 'add: a priority of "inf" in the second job refuses the whole call, the first job included',
    seed: async () => {},
    run: (_s, q) =>
      raw(
        q,
        'add',
        [2, '', '', '', 0, 'x', '1', '0', '', 0, '', '', '0', '', '', '', 'y', '1', '0', '', 'inf', '', '', '0', '', '', ''],
        ['', key(q, 'job:x'), key(q, 'job:y')],
      ),
    expect: /argument priority/,
  },
  {
    name: 'add: an id whose key holds a STRING is "exists" and left alone',
    seed: (_s, q) => stringJob(q, 'x', 'scheduled'),
    run: async (s, q) => (await s.add(q, [job('x')]))[0]!.code,
    expect: (a, b, c) => {
      assert.equal(a, 'exists');
      unchanged(a, b, c);
    },
  },
  {
    name: 'add: meta events = "nan" turns the stream off instead of failing XADD',
    seed: async (_s, q) => void (await fx.client.hset(key(q, 'meta'), 'events', 'nan')),
    run: async (s, q) => (await s.add(q, [job('x')]))[0]!.code,
    expect: (a, _b, after, q) => {
      assert.equal(a, 'added');
      assert.equal(after[key(q, 'events')], undefined);
    },
  },
  {
    name: 'claim: a lease of "inf" is refused',
    seed: async (s, q) => void (await s.add(q, [job('a')])),
    run: (_s, q) => raw(q, 'claim', [1, 'inf', 3, 1000, 100, ''], ['']),
    expect: /argument lease ms/,
  },
  {
    name: 'claim: an active member whose key holds a STRING is recovered into the dead set',
    seed: async (_s, q) => void (await stringJob(q, 'x', 'active')),
    run: (s, q) => s.claim(q, 1, 1000, 3),
    expect: (_a, _b, after, q) => {
      assert.equal((after[key(q, 'dead')] as { v: string[] }).v[0], 'x');
      assert.equal(after[key(q, 'active')], undefined);
      assert.deepEqual(after[key(q, `job:x`)], { type: 'string', v: 'hello' });
    },
  },
  {
    name: 'claim: an active job with attempts "nan" is recovered into the dead set with the reason',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 1, 3);
      await fx.client.hset(key(q, 'job:x'), 'a', 'nan');
      await new Promise((r) => setTimeout(r, 5));
    },
    run: (s, q) => s.claim(q, 1, 1000, 3),
    expect: (_a, _b, after, q) => {
      const body = (after[key(q, 'job:x')] as { v: Record<string, string> }).v;
      assert.match(body.e!, /^corrupt job: bad attempt count/);
      assert.match(body.k!, /^~/);
      assert.equal((after[key(q, 'dead')] as { v: string[] }).v[0], 'x');
    },
  },
  {
    name: 'complete: a key holding a STRING answers lease lost and changes nothing',
    seed: (_s, q) => stringJob(q, 'x', 'active'),
    run: (s, q) => s.complete(q, [{ id: 'x', token: 't' }]),
    expect: (a, b, c) => {
      assert.deepEqual(a, ['lease_lost']);
      unchanged(a, b, c);
    },
  },
  {
    name: 'fail: a retry delay of "nan" is refused',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => raw(q, 'fail', ['x', (await fx.client.hget(key(q, 'job:x'), 'k'))!, 'e', 'nan', '0', 3]),
    expect: /argument retry delay ms/,
  },
  {
    name: 'fail: max attempts "abc" sends the job to the dead set with the reason',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
      await fx.client.hset(key(q, 'job:x'), 'm', 'abc');
    },
    run: async (s, q) =>
      s.fail(q, { id: 'x', token: (await fx.client.hget(key(q, 'job:x'), 'k'))!, error: 'boom', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 }),
    expect: (a, _b, after, q) => {
      assert.deepEqual(a, { outcome: 'dead', dueAtMs: undefined });
      assert.match((after[key(q, 'job:x')] as { v: Record<string, string> }).v.e!, /^corrupt job: .*last error: boom/);
    },
  },
  {
    name: 'snooze: a delay of "NaN" is refused (the job stays active)',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => raw(q, 'snooze', ['x', (await fx.client.hget(key(q, 'job:x'), 'k'))!, 'NaN', '']),
    expect: /argument delay ms/,
  },
  {
    name: 'extend: a lease of "inf" is refused',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => raw(q, 'extend', ['inf', 'x', (await fx.client.hget(key(q, 'job:x'), 'k'))!]),
    expect: /argument lease ms/,
  },
  {
    name: 'release: a key holding a STRING answers lease lost and changes nothing',
    seed: (_s, q) => stringJob(q, 'x', 'active'),
    run: (s, q) => s.release(q, [{ id: 'x', token: 't' }]),
    expect: (a, b, c) => {
      assert.deepEqual(a, ['lease_lost']);
      unchanged(a, b, c);
    },
  },
  {
    name: 'cancel: a scheduled member whose key holds a STRING is cancelled (member and key removed)',
    seed: (_s, q) => stringJob(q, 'x', 'scheduled'),
    run: (s, q) => s.cancel(q, 'x'),
    expect: (a, _b, after) => {
      assert.deepEqual(a, { id: 'x', cancelled: true, state: 'scheduled' });
      assert.deepEqual(after, {});
    },
  },
  {
    name: 'reschedule: a key holding a STRING is refused',
    seed: (_s, q) => stringJob(q, 'x', 'scheduled'),
    run: (s, q) => s.reschedule(q, 'x', 0, undefined),
    expect: /not a hash/,
  },
  {
    name: 'reschedule: a delay of "1e400" is refused',
    seed: async (s, q) => void (await s.add(q, [job('x', 60_000)])),
    run: (_s, q) => raw(q, 'reschedule', ['x', '1e400', '', '', 0], [key(q, 'job:x'), '']),
    expect: /argument delay ms/,
  },
  {
    name: 'get: a key holding a STRING is shown with the reason',
    seed: (_s, q) => stringJob(q, 'x', 'dead'),
    run: (s, q) => s.get(q, 'x'),
    expect: (a, b, c) => {
      assert.equal((a as { lastError: string }).lastError, 'corrupt job: its key holds a string, not a hash');
      unchanged(a, b, c);
    },
  },
  {
    name: 'stats: meta completed = "nan" reads as 0',
    seed: async (_s, q) => void (await fx.client.hset(key(q, 'meta'), 'completed', 'nan')),
    run: async (s, q) => (await s.stats(q, 1000)).completedTotal,
    expect: (a, b, c) => {
      assert.equal(a, 0);
      unchanged(a, b, c);
    },
  },
  {
    name: 'dead-list: bad numbers and a STRING key are listed, not thrown',
    seed: async (s, q) => {
      await s.add(q, [job('bad')]);
      await fx.client.hset(key(q, 'job:bad'), 'a', 'nan', 't', '0x1A', 'c', 'inf');
      await fx.client.zadd(key(q, 'dead'), 5, 'bad');
      await fx.client.zrem(key(q, 'scheduled'), 'bad');
      await stringJob(q, 's', 'dead');
    },
    run: async (s, q) => (await s.deadList(q, 0, 10)).jobs.map((j) => [j.id, j.attempt, j.dueAtMs, j.createdAtMs, j.lastError]),
    expect: (a, b, c) => {
      assert.deepEqual(a, [
        ['s', 0, undefined, undefined, 'corrupt job: its key holds a string, not a hash'],
        ['bad', 0, undefined, undefined, undefined],
      ]);
      unchanged(a, b, c);
    },
  },
  {
    name: 'dead-retry: a dead member whose key holds a STRING stays dead',
    seed: (_s, q) => stringJob(q, 'x', 'dead'),
    run: (s, q) => s.deadRetry(q, 'all'),
    expect: (a, b, c) => {
      assert.equal(a, 0);
      unchanged(a, b, c);
    },
  },
  {
    name: 'dead-purge: a limit of "x" is refused',
    seed: (_s, q) => stringJob(q, 'x', 'dead'),
    run: (_s, q) => raw(q, 'dead-purge', ['all', 'x', 0]),
    expect: /argument limit/,
  },
];

describe('scripts on corrupt keys and bad arguments: seed, run one script, compare every key', () => {
  for (const row of rows) {
    test(row.name, async () => {
      const store = fx.track(new RedisStore({ connection: fx.redis.url }));
      const q = uniqueName('table');
      await row.seed(store, q);
      const before = await dump(fx.client, q);
      const memos = (await fx.client.keys(`dq:{${q}}:req:*`)).sort();
      if (row.expect instanceof RegExp) {
        await assert.rejects(row.run(store, q), row.expect);
        assert.deepEqual(await dump(fx.client, q), before, 'a refused call wrote something');
        assert.deepEqual((await fx.client.keys(`dq:{${q}}:req:*`)).sort(), memos, 'a refused call left a request memo');
      } else {
        const answer = await row.run(store, q);
        row.expect(answer, before, await dump(fx.client, q), q);
      }
    });
  }
});
