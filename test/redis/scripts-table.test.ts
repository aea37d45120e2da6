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
import { type NewJob, SEQ_LIFE } from '../../src/store/store.js';
import { WIRE } from '../../src/store/redis/wire.js';
import { uniqueName } from '../helpers/names.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';
import { scheduledMemberId } from '../../src/store/zset-order.js';

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

/** Runs a script with hand-made arguments (after BASE_ARGS), as a foreign producer or a bug would. */
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
/** A body that is not a packed body (a hand-written producer's JSON), in the given set. */
const badBody = async (q: string, id: string, set: string) => {
  await fx.client.hset(key(q, 'jobs'), id, '{"hello":1}');
  await fx.client.zadd(key(q, set), 0, id);
};
const tokenOf = async (q: string, id: string) => (await fx.client.hget(key(q, 'runs'), id))!.split(':')[2]!;
const setBodyField = async (q: string, id: string, i: number, value: string) => {
  const parts = (await fx.client.hget(key(q, 'jobs'), id))!.split(':');
  parts[i] = value;
  await fx.client.hset(key(q, 'jobs'), id, parts.join(':'));
};
const entry = (after: Record<string, unknown>, k: string, field: string) => (after[k] as { v: Record<string, string> }).v[field];
const unchanged = (_a: unknown, before: Record<string, unknown>, after: Record<string, unknown>) => assert.deepEqual(after, before);
/** One add item (wire.ts WIRE.add.each) with every field (group, cost, debounce, attempts made, hold), as item_fields = 'holds' says, and the given priority and delay. */
const addItem = (id: string, delay: string, priority: string) => {
  const item: string[] = WIRE.add.each.map(() => '');
  [item[at('id')], item[at('data')], item[at('delay_ms')], item[at('priority')], item[at('replace')]] = [id, '1', delay, priority, '0'];
  return item;
};
/** Where an add item's field is (wire.ts WIRE.add.each). */
const at = (field: (typeof WIRE.add.each)[number]) => WIRE.add.each.indexOf(field);

/** Two layout epochs (sharded queues, docs/data-model.md). */
const E1 = 'e1e1e1e1e1e1';
const E2 = 'e2e2e2e2e2e2';

const rows: Row[] = [
  {
    name: 'add: a delay of "nan" is refused',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => raw(q, 'add', ['', '', '', '', '', 'holds', '', ...addItem('x', 'nan', '0')], ['', key(q, 'schedule-last')]),
    expect: /delayq: argument delay_ms of item 1 must be a whole number, got nan/,
  },
  {
    name: 'add: attempts_made not below max_attempts in the second job refuses the whole call, the first job included',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => {
      const first = addItem('x', '0', '0');
      first[at('attempts_made')] = '2';
      const second = addItem('y', '0', '0');
      [second[at('max_attempts')], second[at('attempts_made')]] = ['3', '3'];
      return raw(q, 'add', ['', '', '', '', '', 'holds', '', ...first, ...second], ['', key(q, 'schedule-last')]);
    },
    expect: /delayq: arguments attempts_made and max_attempts of item 2: attempts_made must be below max_attempts, got 3 and 3/,
  },
  {
    name: 'add: attempts_made writes a run state with that many attempts (none for 0); replacing a job with a run state writes its own',
    seed: async (s, q) => {
      await s.add(q, [job('r', 60_000)]);
      await fx.client.hset(key(q, 'runs'), 'r', '5:1:-1-1:1:w:old error');
    },
    run: (s, q) =>
      s.add(q, [
        newJob('x', { data: '1', delayMs: 60_000, attemptsMade: 2 }),
        newJob('z', { data: '1', delayMs: 60_000, attemptsMade: 0 }),
        newJob('r', { data: '1', delayMs: 60_000, replace: true, attemptsMade: 1 }),
      ]),
    expect: (_a, _b, after, q) => {
      const due = (after[key(q, 'scheduled')] as { v: string[] }).v;
      // Members of either form (SCHEDULED_MEMBER): [member, score, …].
      const dueOf = (id: string) => due[due.findIndex((m, i) => i % 2 === 0 && scheduledMemberId(m) === id) + 1];
      assert.equal(entry(after, key(q, 'runs'), 'x'), `2:${dueOf('x')}::::`);
      assert.equal(entry(after, key(q, 'runs'), 'z'), undefined);
      assert.equal(entry(after, key(q, 'runs'), 'r'), `1:${dueOf('r')}::::`);
    },
  },
  {
    name: 'add: a priority of "inf" in the second job refuses the whole call, the first job included',
    seed: async () => {},
    run: (_s, q) => raw(q, 'add', ['', '', '', '', '', 'holds', '', ...addItem('x', '0', '0'), ...addItem('y', '0', 'inf')], ['', key(q, 'schedule-last')]),
    expect: /argument priority of item 2/,
  },
  {
    name: 'add: a dedup window of 0 in the second job is refused before the first job replaces a scheduled one (the replaced job is kept)',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => {
      const second = addItem('b', '0', '0');
      [second[8], second[9]] = ['k', '0'];
      const first = addItem('a', '0', '0');
      first[7] = '1';
      return raw(q, 'add', ['', '', 'r1', 60_000, '', 'holds', '', ...first, ...second], [`dq:{${q}}:req:r1`, key(q, 'schedule-last')]);
    },
    expect: /delayq: argument dedup_ms of item 2 must be at least 1, got 0/,
  },
  {
    name: 'add, cancel, reschedule: a request memo time of 0 is refused before any write (it failed after every write)',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: async (_s, q) => {
      const memo = [`dq:{${q}}:req:r1`];
      const refused: string[] = [];
      const calls: [ScriptName, (string | number)[]][] = [
        ['add', ['', '', 'r1', 0, '', 'holds', '', ...addItem('x', '0', '0')]],
        ['cancel', ['r1', 0, '0', '', 'a']],
        ['reschedule', ['a', 5, '', 'r1', 0]],
      ];
      for (const [name, args] of calls) {
        await raw(q, name, args, name === 'add' ? [...memo, key(q, 'schedule-last')] : memo).catch((e: Error) => refused.push(e.message));
      }
      assert.equal(refused.length, 3, refused.join('; '));
      for (const m of refused) assert.match(m, /delayq: argument memo_ms must be at least 1, got 0/);
      throw new Error('refused');
    },
    expect: /refused/,
  },
  {
    name: 'add: a negative delay, max attempts of 0 and a priority out of range are refused as the Node library refuses them',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: async (_s, q) => {
      const refused: string[] = [];
      const bad: [number, string][] = [
        [2, '-1'], // delay_ms
        [5, '0'], // max_attempts
        [5, '-3'],
        [4, '1000001'], // priority
        [4, '-1000001'],
      ];
      for (const [field, value] of bad) {
        const item = addItem('x', '0', '0');
        item[field] = value;
        await raw(q, 'add', ['', '', '', '', '', 'holds', '', ...item], ['', key(q, 'schedule-last')]).catch((e: Error) => refused.push(e.message));
      }
      const run_at = addItem('x', '', '0');
      run_at[3] = '1767225600'; // seconds, not ms
      await raw(q, 'add', ['', '', '', '', '', 'holds', '', ...run_at], ['', key(q, 'schedule-last')]).catch((e: Error) => refused.push(e.message));
      assert.deepEqual(
        refused.map((m) => m.replace(/^.*delayq: /, '').replace(/ script: .*$/s, '')),
        [
          'argument delay_ms of item 1 must not be negative, got -1',
          'argument max_attempts of item 1 must be at least 1, got 0',
          'argument max_attempts of item 1 must be at least 1, got -3',
          'argument priority of item 1 must be at most 1000000, got 1000001',
          'argument priority of item 1 must be at least -1000000, got -1000001',
          'argument run_at of item 1 must be epoch milliseconds, not seconds: before 2001 (978307200000), got 1767225600',
        ],
      );
      throw new Error('refused');
    },
    expect: /refused/,
  },
  {
    name: 'add: an id whose body is unreadable is "exists" and left alone',
    seed: (_s, q) => badBody(q, 'x', 'scheduled'),
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
    name: 'add: a shard marked for another layout epoch refuses the add (moved) and writes nothing',
    seed: async (_s, q) => void (await fx.client.hset(key(q, 'meta'), 'epoch', E1)),
    run: (s, q) => s.add(q, [job('x')], undefined, E2),
    expect: /not a live shard/,
  },
  {
    name: 'add: with an epoch, a shard that holds none (obliterated, or never made) refuses the add',
    seed: async () => {},
    run: (s, q) => s.add(q, [job('x')], undefined, E1),
    expect: /not a live shard/,
  },
  {
    name: 'add: a retired shard refuses an add routed by its own epoch',
    seed: async (_s, q) => void (await fx.client.hset(key(q, 'meta'), 'epoch', E1, 'moved', '1')),
    run: (s, q) => s.add(q, [job('x')], undefined, E1),
    expect: /not a live shard/,
  },
  {
    name: 'add: the add that makes the queue answers the made flag, a re-send of it too (from its memo), a later add not',
    seed: async () => {},
    run: async (_s, q) => {
      const memo = `dq:{${q}}:req:r1`;
      const first = (await raw(q, 'add', ['', '', 'r1', 60_000, '', 'holds', '', ...addItem('x', '0', '0')], [memo, key(q, 'schedule-last')])) as unknown[];
      const again = (await raw(q, 'add', ['', '', 'r1', 60_000, '', 'holds', '', ...addItem('x', '0', '0')], [memo, key(q, 'schedule-last')])) as unknown[];
      const later = (await raw(
        q,
        'add',
        ['', '', 'r2', 60_000, '', 'holds', '', ...addItem('y', '0', '0')],
        [`dq:{${q}}:req:r2`, key(q, 'schedule-last')],
      )) as unknown[];
      return { flags: [first[0], again[0], later[0]], codes: [first[1], again[1], later[1]], memo: await fx.client.get(memo) };
    },
    expect: (a) => {
      const { flags, codes, memo } = a as { flags: unknown[]; codes: unknown[]; memo: string };
      assert.deepEqual(flags, [1, 1, 0]);
      assert.deepEqual(codes, [1, 1, 1]);
      assert.match(memo, /^\d+:1:1$/);
    },
  },
  {
    name: 'add: a dedup window taken keeps its end in meta dedupUntil; a shorter one later leaves it',
    seed: async () => {},
    run: async (s, q) => {
      await s.add(q, [{ ...job('a'), dedup: { key: 'k1', windowMs: 600_000 } }]);
      await s.add(q, [{ ...job('b'), dedup: { key: 'k2', windowMs: 1_000 } }]);
      return serverTimeMs(fx.client);
    },
    expect: (now, _b, after, q) => {
      const until = Number(entry(after, key(q, 'meta'), 'dedupUntil'));
      assert.ok(until > (now as number) + 590_000 && until <= (now as number) + 600_000, `dedupUntil ${until}, now ${String(now)}`);
    },
  },
  {
    name: 'a client of another protocol version fails loudly and writes nothing: a claim one argument short',
    seed: async (s, q) => void (await s.add(q, [job('a')])),
    run: (_s, q) => raw(q, 'claim', [1, 1000, 3, 1000, 100, '', ''], ['']),
    expect: /delayq protocol: claim takes 10 ARGV, got 9/,
  },
  {
    name: 'a client of another protocol version fails loudly and writes nothing: add items one field short of what `item_fields` says',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => raw(q, 'add', ['', '', '', '', '', 'holds', '', ...addItem('x', '0', '0').slice(0, -1)], ['', key(q, 'schedule-last')]),
    expect: new RegExp(`delayq protocol: items of ${WIRE.add.each.length} arguments each`),
  },
  {
    name: 'add: a cost of 0 or "nan" is refused, nothing written',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => {
      const item = addItem('x', '0', '0');
      item[at('cost')] = '0';
      return raw(q, 'add', ['', '', '', '', '', 'holds', '', ...item], ['', key(q, 'schedule-last')]);
    },
    expect: /argument cost of item 1 must be at least 1/,
  },
  {
    name: 'add: a debounce delay of "inf" is refused, nothing written',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => {
      const item = addItem('x', '0', '0');
      [item[at('debounce_key')], item[at('debounce_ms')]] = ['k', 'inf'];
      return raw(q, 'add', ['', '', '', '', '', 'holds', '', ...item], ['', key(q, 'schedule-last')]);
    },
    expect: /argument debounce_ms of item 1 must be a whole number/,
  },
  {
    name: 'limits: a rate max without its window is refused, nothing written',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => raw(q, 'limits', ['', '', '', '', 5, '', '', '', '']),
    expect: /rate_max and rate_per must be set, removed or left together/,
  },
  {
    name: 'release: a hold of -1 is refused, nothing written',
    seed: async (s, q) => {
      await s.add(q, [job('a')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => {
      const token = (await fx.client.hget(key(q, 'runs'), 'a'))!.split(':')[2]!;
      return raw(q, 'release', [-1, 'a', token]);
    },
    expect: /argument hold_ms must not be negative/,
  },
  {
    name: 'claim: a rate-log member that does not read gives back nothing and hands out by the state (never more than max)',
    seed: async (s, q) => {
      await s.setLimits(q, { rateLimit: { max: 2, perMs: 60_000 } });
      await s.add(q, [job('a'), job('b'), job('c')]);
      await fx.client.zadd(key(q, 'rate-log'), 0, '\u00000000000000000001:x:garbage');
      await fx.client.hset(key(q, 'rate'), '', '1:');
    },
    run: (s, q) => s.claim(q, 5, 60_000, 3),
    expect: (r) =>
      assert.deepEqual(
        (r as { jobs: { id: string }[] }).jobs.map((j) => j.id),
        ['a'],
      ),
  },
  {
    name: 'claim: a rate state that does not read counts as nothing taken; the claim writes a good one',
    seed: async (s, q) => {
      await s.setLimits(q, { rateLimit: { max: 2, perMs: 60_000 } });
      await s.add(q, [job('a'), job('b'), job('c')]);
      await fx.client.hset(key(q, 'rate'), '', 'nan:oops');
    },
    run: (s, q) => s.claim(q, 5, 60_000, 3),
    expect: (r, _b, after, q) => {
      assert.deepEqual(
        (r as { jobs: { id: string }[] }).jobs.map((j) => j.id),
        ['a', 'b'],
      );
      assert.equal(entry(after, key(q, 'rate'), ''), '2:');
    },
  },
  {
    name: 'claim: a lease of "inf" is refused',
    seed: async (s, q) => void (await s.add(q, [job('a')])),
    run: (_s, q) => raw(q, 'claim', [1, 'inf', 3, 1000, 100, '', '', '1'], ['']),
    expect: /argument lease_ms/,
  },
  {
    name: 'claim: an active member whose body is unreadable is recovered into the dead set',
    seed: async (_s, q) => void (await badBody(q, 'x', 'active')),
    run: (s, q) => s.claim(q, 1, 1000, 3),
    expect: (_a, _b, after, q) => {
      assert.equal((after[key(q, 'dead')] as { v: string[] }).v[0], 'x');
      assert.equal(after[key(q, 'active')], undefined);
      assert.equal(entry(after, key(q, 'jobs'), 'x'), '{"hello":1}');
      assert.match(entry(after, key(q, 'runs'), 'x')!, /corrupt job: unreadable body header$/);
    },
  },
  {
    name: 'claim: an active job with attempts "nan" is recovered into the dead set with the reason',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 1, 3);
      await fx.client.hset(key(q, 'runs'), 'x', `nan:1:${await tokenOf(q, 'x')}:::`);
      await new Promise((r) => setTimeout(r, 5));
    },
    run: (s, q) => s.claim(q, 1, 1000, 3),
    expect: (_a, _b, after, q) => {
      const run = entry(after, key(q, 'runs'), 'x')!;
      assert.match(run, /^0:1:~\d+-\d+:\d*:[^:]*:corrupt job: bad attempt count$/);
      assert.equal((after[key(q, 'dead')] as { v: string[] }).v[0], 'x');
    },
  },
  {
    name: 'claim: an active job with attempts "1/0" (a max below 1) is recovered into the dead set with the reason',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 1, 3);
      await fx.client.hset(key(q, 'runs'), 'x', `1/0:1:${await tokenOf(q, 'x')}:::`);
      await new Promise((r) => setTimeout(r, 5));
    },
    run: (s, q) => s.claim(q, 1, 1000, 3),
    expect: (_a, _b, after, q) => {
      assert.match(entry(after, key(q, 'runs'), 'x')!, /^0:1:~\d+-\d+:\d*:[^:]*:corrupt job: bad attempt count$/);
      assert.equal((after[key(q, 'dead')] as { v: string[] }).v[0], 'x');
    },
  },
  {
    name: "claim: a lease that ran out on the last of the worker's attempts keeps the max that applied in the run state",
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 1, 1);
      await new Promise((r) => setTimeout(r, 5));
    },
    run: (s, q) => s.claim(q, 1, 1000, 1),
    expect: (_a, _b, after, q) => {
      assert.match(entry(after, key(q, 'runs'), 'x')!, /^1\/1:\d+:~\d+-\d+:\d+::lease expired during attempt 1 of 1$/);
      assert.equal((after[key(q, 'dead')] as { v: string[] }).v[0], 'x');
    },
  },
  {
    name: "fail: out of attempts, the run state keeps the max that applied (the worker's default, or the job's own); one buried by request keeps none",
    seed: async (s, q) => {
      await s.add(q, [job('x'), newJob('y', { data: '1', maxAttempts: 1 }), job('z')]);
      await s.claim(q, 3, 60_000, 1);
    },
    run: async (s, q) => {
      const req = { error: 'boom', retryDelayMs: 0, defaultMaxAttempts: 1 };
      return [
        await s.fail(q, { id: 'x', token: await tokenOf(q, 'x'), dead: false, ...req }),
        await s.fail(q, { id: 'y', token: await tokenOf(q, 'y'), dead: false, ...req, defaultMaxAttempts: 5 }),
        await s.fail(q, { id: 'z', token: await tokenOf(q, 'z'), dead: true, ...req, defaultMaxAttempts: 5 }),
      ];
    },
    expect: (a, _b, after, q) => {
      assert.deepEqual(
        (a as { outcome: string }[]).map((r) => r.outcome),
        ['dead', 'dead', 'dead'],
      );
      assert.match(entry(after, key(q, 'runs'), 'x')!, /^1\/1:\d+:-\d+-\d+:\d+::boom$/);
      assert.match(entry(after, key(q, 'runs'), 'y')!, /^1\/1:/);
      assert.match(entry(after, key(q, 'runs'), 'z')!, /^1:\d+:-\d+-\d+:\d+::boom$/);
    },
  },
  {
    name: 'complete: an unreadable run state answers lease lost and changes nothing',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
      await fx.client.hset(key(q, 'runs'), 'x', 'garbage');
    },
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
    run: async (_s, q) => raw(q, 'fail', ['x', await tokenOf(q, 'x'), 'e', 'nan', '0', 3, 10]),
    expect: /argument retry_ms/,
  },
  {
    name: 'fail: a history length of "" is refused (the job stays active, nothing appended)',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => raw(q, 'fail', ['x', await tokenOf(q, 'x'), 'e', 0, '0', 3, '']),
    expect: /argument history/,
  },
  {
    name: 'fail: an error history that is not JSON is started afresh, not a failed call',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
      await fx.client.hset(key(q, 'errors'), 'x', '[{"attempt":1,');
    },
    run: async (s, q) => s.fail(q, { id: 'x', token: await tokenOf(q, 'x'), error: 'boom', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 }),
    expect: (a, _b, after, q) => {
      assert.equal((a as { outcome: string }).outcome, 'retried');
      assert.match(entry(after, key(q, 'errors'), 'x')!, /^\[\{"attempt":1,"atMs":\d{13},"error":"boom"\}\]$/);
    },
  },
  {
    name: 'fail: history entries of the wrong shape are dropped, the good ones kept; a JSON object starts afresh',
    seed: async (s, q) => {
      await s.add(q, [job('x'), job('y')]);
      await s.claim(q, 2, 60_000, 3);
      const bad = '[{"attempt":"1","atMs":5,"error":"a"},7,null,{"attempt":1,"atMs":5,"error":"kept"},{"attempt":1.5,"atMs":5,"error":"b"},{"attempt":1}]';
      await fx.client.hset(key(q, 'errors'), 'x', bad, 'y', '{"attempt":1,"atMs":5,"error":"not a list"}');
    },
    run: async (s, q) => {
      const req = { error: 'boom', retryDelayMs: 0, dead: true, defaultMaxAttempts: 3 };
      await s.fail(q, { id: 'x', token: await tokenOf(q, 'x'), ...req });
      await s.fail(q, { id: 'y', token: await tokenOf(q, 'y'), ...req });
      return Promise.all([s.get(q, 'x'), s.get(q, 'y')]);
    },
    expect: (a) => {
      const [x, y] = a as { errors: { attempt: number; error: string }[] }[];
      assert.deepEqual(
        x!.errors.map((e) => [e.attempt, e.error]),
        [
          [1, 'kept'],
          [1, 'boom'],
        ],
      );
      assert.deepEqual(
        y!.errors.map((e) => [e.attempt, e.error]),
        [[1, 'boom']],
      );
    },
  },
  {
    name: 'fail: max attempts "abc" sends the job to the dead set with the reason',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
      await setBodyField(q, 'x', 3, 'abc');
    },
    run: async (s, q) => s.fail(q, { id: 'x', token: await tokenOf(q, 'x'), error: 'boom', retryDelayMs: 0, dead: false, defaultMaxAttempts: 3 }),
    expect: (a, _b, after, q) => {
      assert.deepEqual(a, { outcome: 'dead', dueAtMs: undefined });
      assert.match(entry(after, key(q, 'runs'), 'x')!, /:corrupt job: bad max attempts; last error: boom$/);
    },
  },
  {
    name: 'snooze: a delay of "NaN" is refused (the job stays active)',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => raw(q, 'snooze', ['x', await tokenOf(q, 'x'), 'NaN', '']),
    expect: /argument delay_ms/,
  },
  {
    name: 'extend: a lease of "inf" is refused',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
    },
    run: async (_s, q) => raw(q, 'extend', ['inf', '', '', 0, 'x', await tokenOf(q, 'x')], [key(q, 'workers'), key(q, 'worker-info')]),
    expect: /argument lease_ms/,
  },
  {
    name: 'release: an unreadable run state answers lease lost and changes nothing',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
      await fx.client.hset(key(q, 'runs'), 'x', 'garbage');
    },
    run: (s, q) => s.release(q, [{ id: 'x', token: 't' }]),
    expect: (a, b, c) => {
      assert.deepEqual(a, ['lease_lost']);
      unchanged(a, b, c);
    },
  },
  {
    name: 'cancel: a scheduled member whose body is unreadable is cancelled (member and body removed)',
    seed: (_s, q) => badBody(q, 'x', 'scheduled'),
    run: async (s, q) => (await s.cancel(q, ['x']))[0],
    expect: (a, _b, after) => {
      assert.deepEqual(a, { id: 'x', cancelled: true, state: 'scheduled' });
      assert.deepEqual(after, {});
    },
  },
  {
    name: 'reschedule: a scheduled job with an unreadable body is moved (its body is judged when it is claimed)',
    seed: (_s, q) => badBody(q, 'x', 'scheduled'),
    run: async (s, q) => (await s.reschedule(q, 'x', undefined, 2_000_000_000_000)).rescheduled,
    expect: (a, _b, after, q) => {
      assert.equal(a, true);
      assert.deepEqual((after[key(q, 'scheduled')] as { v: string[] }).v, ['x', '2000000000000']);
    },
  },
  {
    name: 'reschedule: a delay of "1e400" is refused',
    seed: async (s, q) => void (await s.add(q, [job('x', 60_000)])),
    run: (_s, q) => raw(q, 'reschedule', ['x', '1e400', '', '', ''], ['']),
    expect: /argument delay_ms/,
  },
  {
    name: 'get: an unreadable body is shown with the reason',
    seed: (_s, q) => badBody(q, 'x', 'dead'),
    run: (s, q) => s.get(q, 'x'),
    expect: (a, b, c) => {
      assert.equal((a as { lastError: string }).lastError, 'corrupt job: unreadable body');
      unchanged(a, b, c);
    },
  },
  {
    name: 'get: an error history that is not JSON shows as absent; one with bad entries shows the good ones',
    seed: async (s, q) => {
      await s.add(q, [job('x', 60_000), job('y', 60_000)]);
      await fx.client.hset(key(q, 'errors'), 'x', 'nope', 'y', '[{"attempt":2,"atMs":7,"error":"e"},{"attempt":"2"},3]');
    },
    run: (s, q) => Promise.all([s.get(q, 'x'), s.get(q, 'y')]),
    expect: (a, b, c) => {
      const [x, y] = a as { errors: unknown }[];
      assert.equal(x!.errors, undefined);
      assert.deepEqual(y!.errors, [{ attempt: 2, atMs: 7, error: 'e' }]);
      unchanged(a, b, c);
    },
  },
  {
    name: 'obliterate: the error history goes with every other key',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      const c = await s.claim(q, 1, 60_000, 3);
      await s.fail(q, { id: 'x', token: c.jobs[0]!.token, error: 'boom', retryDelayMs: 60_000, dead: false, defaultMaxAttempts: 3 });
      assert.ok(await fx.client.hexists(key(q, 'errors'), 'x'));
    },
    run: (s, q) => s.obliterate(q, false),
    expect: (a, _b, after, q) => {
      assert.equal((a as { removed: boolean }).removed, true);
      // Only the sequence counter stays, as the floor of the queue's next life.
      assert.deepEqual(after, { [key(q, 'seq')]: { type: 'string', v: String(SEQ_LIFE) } });
    },
  },
  {
    name: 'obliterate: the next life of the queue goes on from the sequence floor, so no token is handed out twice',
    seed: async (s, q) => {
      await s.add(q, [job('x')]);
      await s.claim(q, 1, 60_000, 3);
      await s.obliterate(q, true);
      assert.ok((await fx.client.pttl(key(q, 'seq'))) > 29 * 86_400_000, 'the floor expires in 30 days');
    },
    run: async (s, q) => {
      const [made] = await s.add(q, [job('x')]);
      const c = await s.claim(q, 1, 60_000, 3);
      return { code: made?.code, token: c.jobs[0]?.token.replace(/^\d+-/, ''), ttl: await fx.client.pttl(key(q, 'seq')) };
    },
    expect: (a, _b, after, q) => {
      // The first life took 1 (add) and 2 (claim); the next goes on from the floor.
      assert.deepEqual(a, { code: 'added', token: String(SEQ_LIFE + 2), ttl: -1 }, 'a live counter does not expire');
      assert.deepEqual(after[key(q, 'seq')], { type: 'string', v: String(SEQ_LIFE + 2) });
    },
  },
  {
    name: 'obliterate: the keys of another layout epoch are left alone (a late re-send never removes a queue made again)',
    seed: async (s, q) => {
      await s.add(q, [job('a', 60_000)]);
      await fx.client.hset(key(q, 'meta'), 'epoch', E2);
    },
    run: (s, q) => s.obliterate(q, true, E1),
    expect: /not a live shard/,
  },
  {
    name: 'obliterate: keys of the epoch given, or of none (a leftover), all go',
    seed: async (s, q) => {
      await s.add(q, [job('a', 60_000)]);
      await fx.client.hset(key(q, 'meta'), 'epoch', E1);
    },
    run: async (s, q) => {
      const mine = await s.obliterate(q, true, E1);
      await fx.client.hset(key(q, 'meta'), 'moved', '1');
      const leftover = await s.obliterate(q, true, E2);
      return [mine.removed, leftover.removed];
    },
    expect: (a, _b, after) => {
      assert.deepEqual(a, [true, true]);
      assert.deepEqual(Object.values(after), [{ type: 'string', v: String(SEQ_LIFE) }], 'only the sequence floor stays');
    },
  },
  {
    name: 'set-meta: retiring for another epoch changes nothing; marking a live shard of a new epoch takes `moved` away',
    seed: async (_s, q) => void (await fx.client.hset(key(q, 'meta'), 'epoch', E1, 'moved', '1')),
    run: async (s, q) => {
      await s.retire(q, E2);
      const retiredElsewhere = await dump(fx.client, q);
      await s.markShard(q, E2);
      await s.retire(q, E2);
      const retired = await fx.client.hgetall(key(q, 'meta'));
      await s.markShard(q, E2);
      return { retiredElsewhere, retired };
    },
    expect: (a, before, after, q) => {
      const { retiredElsewhere, retired } = a as { retiredElsewhere: Record<string, unknown>; retired: Record<string, string> };
      assert.deepEqual(retiredElsewhere, before);
      assert.deepEqual(retired, { epoch: E2, moved: '1' });
      assert.deepEqual((after[key(q, 'meta')] as { v: unknown }).v, { epoch: E2, moved: '1' }, 'marked again for its own epoch: stays retired');
    },
  },
  {
    name: 'set-meta: a moved or shard value that is not an epoch is refused',
    seed: async (_s, q) => void (await fx.client.hset(key(q, 'meta'), 'epoch', E1)),
    run: (_s, q) => raw(q, 'set-meta', ['moved', '1; x']),
    expect: /moved takes a layout epoch/,
  },
  {
    name: 'layout: the epoch is kept beside the layout it came with',
    seed: async () => {},
    run: (s, q) => s.setLayout(q, undefined, `{"v":1,"epoch":"${E1}","current":{"from":0,"count":2},"retired":[]}`, E1),
    expect: (a, _b, after, q) => {
      assert.equal(a, true);
      assert.equal(entry(after, key(q, 'meta'), 'epoch'), E1);
    },
  },
  {
    name: 'verify: an error history without its job is an orphan',
    seed: async (s, q) => {
      await s.add(q, [job('x', 60_000)]);
      await fx.client.hset(key(q, 'errors'), 'gone', '[]');
    },
    run: (s, q) => s.verify(q),
    expect: (a) => {
      assert.deepEqual((a as { problems: string[] }).problems, ['job gone has an error history but no body']);
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
    name: 'dead-list: bad numbers and an unreadable body are listed, not thrown',
    seed: async (s, q) => {
      await s.add(q, [job('bad')]);
      await fx.client.hset(key(q, 'runs'), 'bad', 'nan:0x1A::::');
      await setBodyField(q, 'bad', 1, 'inf');
      await fx.client.zadd(key(q, 'dead'), 5, 'bad');
      await fx.client.zrem(key(q, 'scheduled'), 'bad');
      await badBody(q, 's', 'dead');
    },
    run: async (s, q) => (await s.deadList(q, 0, 10)).jobs.map((j) => [j.id, j.attempt, j.dueAtMs, j.createdAtMs, j.lastError]),
    expect: (a, b, c) => {
      assert.deepEqual(a, [
        ['s', 0, undefined, undefined, 'corrupt job: unreadable body'],
        ['bad', 0, undefined, undefined, 'corrupt job: unreadable body'],
      ]);
      unchanged(a, b, c);
    },
  },
  {
    name: 'add: a name of 257 characters in the second job refuses the whole call, the first job included',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => {
      const second = addItem('y', '0', '0');
      second[at('name')] = 'n'.repeat(257);
      return raw(q, 'add', ['', '', '', '', '', 'holds', '', ...addItem('x', '0', '0'), ...second], ['', key(q, 'schedule-last')]);
    },
    expect: /delayq: argument name of item 2 must be at most 256 characters/,
  },
  {
    name: 'add: a name with a control character is refused, in a call without the flow-control fields too',
    seed: async (s, q) => void (await s.add(q, [job('a', 60_000)])),
    run: (_s, q) => {
      const item = addItem('x', '0', '0').slice(0, at('timeout_ms') + 1);
      item[at('name')] = 'send\nemail';
      return raw(q, 'add', ['', '', '', '', '', 'base', '', ...item], ['', key(q, 'schedule-last')]);
    },
    expect: /delayq: argument name of item 1 must not contain control characters/,
  },
  {
    name: "add: a job without a name gets the previous version's body; a named one its name's length in bytes",
    seed: async () => {},
    run: (s, q) => s.add(q, [job('plain'), { ...job('named'), name: 'é名🙂' }]),
    expect: (_a, _b, after, q) => {
      assert.match(entry(after, key(q, 'jobs'), 'plain')!, /^\d+:\d+:0::0:0:1$/);
      // é 2 bytes, 名 3, 🙂 4: 9 bytes.
      assert.match(entry(after, key(q, 'jobs'), 'named')!, /^\d+:\d+:0::0:0\/9:é名🙂1$/);
    },
  },
  {
    name: "add: a job's own timeout goes after its max attempts ('/<ms>'), only when it has one; claim hands it out",
    seed: async () => {},
    run: async (s, q) => {
      await s.add(q, [{ ...job('timed'), timeoutMs: 250 }, { ...job('both'), maxAttempts: 4, timeoutMs: 9 }, job('plain')]);
      return (await s.claim(q, 3, 60_000, 3)).jobs.map((j) => [j.id, j.timeoutMs, j.maxAttempts]);
    },
    expect: (claimed, _b, after, q) => {
      assert.match(entry(after, key(q, 'jobs'), 'timed')!, /^\d+:\d+:0:\/250:0:0:1$/);
      assert.match(entry(after, key(q, 'jobs'), 'both')!, /^\d+:\d+:0:4\/9:0:0:1$/);
      assert.match(entry(after, key(q, 'jobs'), 'plain')!, /^\d+:\d+:0::0:0:1$/);
      assert.deepEqual(claimed, [
        ['timed', 250, undefined],
        ['both', 9, 4],
        ['plain', undefined, undefined],
      ]);
    },
  },
  {
    name: 'claim: a body written by the version before names is handed out without a name; a named one with its name',
    seed: async (_s, q) => {
      await fx.client.hset(key(q, 'jobs'), 'old', '1:1700000000000:5:3:0:0:{"v":"old"}', 'new', '2:1700000000000:0::0:0/4:名x{"v":"new"}');
      await fx.client.zadd(key(q, 'scheduled'), 1, 'old', 2, 'new');
      await fx.client.set(key(q, 'seq'), '2');
    },
    run: async (s, q) => {
      const r = await s.claim(q, 10, 30_000, 3);
      assert.deepEqual(r.unreadable, []);
      return r.jobs.map((j) => [j.id, j.name, j.data, j.priority, j.maxAttempts]);
    },
    expect: (a) =>
      assert.deepEqual(a, [
        ['old', undefined, '{"v":"old"}', 5, 3],
        ['new', '名x', '{"v":"new"}', 0, undefined],
      ]),
  },
  {
    name: "claim: a named body whose name length is 0 or runs past the body's end is unreadable, with the reason",
    seed: async (_s, q) => {
      await fx.client.hset(key(q, 'jobs'), 'zero', '1:1:0::0:0/0:{}', 'long', '2:1:0::0:0/9:ab');
      await fx.client.zadd(key(q, 'scheduled'), 1, 'zero', 2, 'long');
    },
    run: async (s, q) => {
      const r = await s.claim(q, 10, 30_000, 3);
      return r.unreadable.map((u) => [u.id, u.reason]).sort();
    },
    expect: (a) =>
      assert.deepEqual(a, [
        ['long', 'corrupt job: bad field lengths'],
        ['zero', 'corrupt job: bad name length'],
      ]),
  },
  {
    name: 'dead-retry: a dead member whose body is gone is removed, not retried',
    seed: async (_s, q) => {
      await fx.client.zadd(key(q, 'dead'), 0, 'x');
      await fx.client.hset(key(q, 'runs'), 'x', '1:1::::');
    },
    run: (s, q) => s.deadRetry(q, 'all'),
    expect: (a, _b, after) => {
      assert.equal(a, 0);
      assert.deepEqual(after, {});
    },
  },
  {
    name: 'purge: a limit of "x" is refused',
    seed: (_s, q) => badBody(q, 'x', 'dead'),
    run: (_s, q) => raw(q, 'purge', ['dead', 'all', 'x', 0]),
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
