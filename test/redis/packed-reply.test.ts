import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore, Worker } from '../../src/index.js';
import { StoreError } from '../../src/errors.js';
import { requestKey } from '../../src/store/redis/keys.js';
import { CLAIM_BODIES, claimResult, REPLY_AT } from '../../src/store/redis/replies.js';
import { library, loadScriptSource } from '../../src/store/redis/scripts.js';
import { CODES, encodeCall, WIRE } from '../../src/store/redis/wire.js';
import { callHead } from '../helpers/protocol-call.js';
import { unpackReply } from '../../src/store/redis/msgpack-reply.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { within } from '../helpers/wait.js';

const fx = useRedis();

/** add's item fields when `item_fields` is 'base' (the first fields, up to timeout_ms). */
const ADD_BASE_FIELDS = WIRE.add.each.slice(0, WIRE.add.each.indexOf('timeout_ms') + 1);

/** ioredis's Buffer variant of a command (its types leave them out): strings come back as bytes. */
function buffered(name: 'eval' | 'fcall', script: string, keys: readonly string[], args: readonly unknown[]): Promise<unknown> {
  const run = (fx.client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[`${name}Buffer`]!;
  return run.call(fx.client, script, keys.length, ...keys, ...args.map(String));
}

/**
 * A Lua table of every kind of value a reply array holds, at each boundary of MessagePack's
 * formats, returned as Redis's array (ARGV[1] = '0') or as cmsgpack.pack's string ('1').
 */
const VALUES = `
local t = {}
local function s(n, c) return string.rep(c or 'x', n) end
for _, n in ipairs({ 0, 1, 31, 32, 255, 256, 65535, 65536, 70000 }) do t[#t + 1] = s(n) end
t[#t + 1] = 'é 日本 \\0 \\255\\254 bytes'
for _, n in ipairs({ 0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, 1764400000123, 4503599627370497,
  -1, -31, -32, -33, -127, -128, -129, -32768, -32769, -2147483648, -2147483649, -1764400000123, 1.5, -1.5, 2.75e9 + 0.5 }) do
  t[#t + 1] = n
end
if ARGV[1] == '1' then return cmsgpack.pack(t) end
return t`;

describe('packed replies (wire.ts PACKED_REPLY): the same array, read back from one MessagePack string', () => {
  test('every kind of value a reply holds, at each boundary of the formats, reads back as Redis gives it in the array form', async () => {
    const plain = (await buffered('eval', VALUES, [], ['0'])) as unknown[];
    const packed = (await buffered('eval', VALUES, [], ['1'])) as Buffer;
    assert.ok(packed instanceof Buffer);
    const read = unpackReply(packed);
    assert.equal(read.length, plain.length);
    for (let i = 0; i < plain.length; i++) {
      const want = plain[i];
      if (want instanceof Buffer) assert.ok(read[i] instanceof Buffer && want.equals(read[i] as Buffer), `element ${i}: ${want.length} bytes`);
      else assert.equal(read[i], want, `element ${i}`);
    }
  });

  test('anything that is not an array of strings and numbers, or is cut short, is a StoreError, never half read', async () => {
    const pack = async (lua: string) => (await buffered('eval', `return cmsgpack.pack(${lua})`, [], [])) as Buffer;
    const whole = await pack("{ 'a', 1, 'bcd' }");
    assert.deepEqual(unpackReply(whole).length, 3);
    assert.deepEqual(unpackReply(await pack('{}')), [], 'an empty table packs as an empty array');
    for (let cut = 0; cut < whole.length; cut++) assert.throws(() => unpackReply(whole.subarray(0, cut)), StoreError, `cut at ${cut}`);
    assert.throws(() => unpackReply(Buffer.concat([whole, Buffer.from([0])])), /after its array/);
    // A table with holes packs as a map; a nested table and a boolean are no reply values.
    const holes = await pack("{ 'a', nil, 'c' }");
    const nested = await pack("{ 'a', { 'b' } }");
    const boolean = await pack("{ 'a', true }");
    assert.throws(() => unpackReply(holes), /not an array/);
    assert.throws(() => unpackReply(nested), /type byte 0x91/);
    assert.throws(() => unpackReply(boolean), /type byte 0xc3/);
  });

  test('a claim answers the same array packed (the library, as the store sends it) and plain (the protocol script, as the Python client sends it)', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const queue = fx.track(new Queue<unknown>(uniqueName('packed'), { store }));
    const big = 'y'.repeat(70_000);
    await queue.add({ big }, { id: 'big' });
    await queue.add({ text: 'é 日本' }, { id: 'ünïcode-id' });
    await queue.add(3, { id: 'grouped', group: 'tenant-1' });
    const keys = store.keys(queue.name);
    const args = { count: 10, lease_ms: 60_000, default_max: 3, promote_limit: 1000, reap_limit: 100, request_id: 'r1', worker: 'w' };
    const call = (packed: string) => encodeCall('claim', keys, { memo: requestKey(keys, 'r1') }, { ...args, packed });
    // The first run hands the batch out packed; a re-send with the same request id answers the
    // same batch (CLAIM.resent), here as an array through the protocol form of the script.
    const first = call('1');
    const packed = (await buffered('fcall', `${library().name}_claim`, first.keys, first.args)) as Buffer;
    assert.ok(packed instanceof Buffer, 'packed: one string');
    const again = call('0');
    const plain = (await buffered('eval', loadScriptSource('claim'), again.keys, again.args)) as unknown[];
    assert.ok(Array.isArray(plain), 'plain: an array');
    const read = unpackReply(packed);
    const { fields, first: from } = { fields: REPLY_AT.claim.fields as Record<string, number>, first: REPLY_AT.claim.first };
    for (const f of ['deadline_ms', 'token_prefix', 'groups', 'holds']) assert.deepEqual(read[fields[f]!], plain[fields[f]!], f);
    assert.deepEqual(read.slice(from), plain.slice(from), 'the jobs, element for element');
    assert.equal((read.length - from) / REPLY_AT.claim.size, 3);
    // As the store reads it: the bodies as bytes, every other string as text.
    const stored = unpackReply(packed, CLAIM_BODIES);
    for (let i = 0; i < stored.length; i++) {
      const want =
        read[i] instanceof Buffer
          ? i >= from && (i - from) % REPLY_AT.claim.size === REPLY_AT.claim.each.body
            ? read[i]
            : (read[i] as Buffer).toString('utf8')
          : read[i];
      assert.deepEqual(stored[i], want, `element ${i}`);
    }
    const claimed = claimResult(stored);
    // As the store reads it now: the bodies left in the packed reply, each its start there, and
    // read in place into the same jobs.
    const ends: number[] = [];
    const inPlace = unpackReply(packed, CLAIM_BODIES, ends);
    const bodyAt = (i: number) => i >= from && (i - from) % REPLY_AT.claim.size === REPLY_AT.claim.each.body;
    for (let i = 0, k = 0; i < inPlace.length; i++) {
      if (!bodyAt(i)) assert.deepEqual(inPlace[i], stored[i], `element ${i}`);
      else assert.deepEqual(packed.subarray(inPlace[i] as number, ends[k++]), stored[i], `body at ${i}`);
    }
    assert.deepEqual(claimResult(inPlace, packed, ends), claimed, 'the same jobs, read in place');
    const got = new Map(claimed.jobs.map((j) => [j.id, j]));
    assert.deepEqual(got.get('big')!.data, JSON.stringify({ big }));
    assert.deepEqual(got.get('ünïcode-id')!.data, JSON.stringify({ text: 'é 日本' }));
    assert.equal(got.get('grouped')!.group, 'tenant-1');
    assert.deepEqual(
      await store.complete(
        queue.name,
        claimed.jobs.map((j) => ({ id: j.id, token: j.token })),
      ),
      ['ok', 'ok', 'ok'],
    );
  });

  test('an add answers the same array packed and plain: made, and per job its code, state, due time and holder', async () => {
    const runAt = Date.now() + 3_600_000;
    const items = [
      { id: 'a', data: '1', run_at: runAt, priority: 0, replace: '0' },
      { id: 'ünïcode', data: '"é"', run_at: runAt + 1, priority: 0, replace: '0' },
      { id: 'a', data: '2', run_at: runAt, priority: 0, replace: '0' },
      { id: 'd1', data: '3', run_at: runAt, priority: 0, replace: '0', dedup_key: 'k', dedup_ms: 60_000 },
      { id: 'd2', data: '4', run_at: runAt, priority: 0, replace: '0', dedup_key: 'k', dedup_ms: 60_000 },
    ];
    const add = (q: string, packed: string) => {
      const { keys, argv } = callHead('add', q, { request_id: '', memo_ms: 60_000, item_fields: 'base', packed });
      for (const item of items) for (const f of ADD_BASE_FIELDS) argv.push(String((item as Record<string, unknown>)[f] ?? ''));
      return buffered('eval', loadScriptSource('add'), keys, argv);
    };
    const plain = (await add(uniqueName('add-plain'), '0')) as unknown[];
    const packed = unpackReply((await add(uniqueName('add-packed'), '1')) as Buffer);
    const text = plain.map((v) => (v instanceof Buffer ? v.toString('utf8') : v));
    assert.deepEqual(
      packed.map((v) => (v instanceof Buffer ? v.toString('utf8') : v)),
      text,
    );
    assert.equal(text[0], 1, 'the first add made the queue');
    assert.deepEqual(
      (text.slice(1) as unknown[]).filter((_, i) => i % 4 === 0),
      [CODES.add.added, CODES.add.added, CODES.add.exists, CODES.add.added, CODES.add.deduplicated],
    );
  });

  test('a worker runs jobs through the packed claim: every value of a hand-out arrives', async () => {
    const queue = fx.track(new Queue<{ s: string }>(uniqueName('packed-worker'), { connection: fx.redis.url }));
    const ids = ['a', 'é', 'x'.repeat(200)];
    for (const [i, id] of ids.entries()) await queue.add({ s: 'z'.repeat(i * 40_000) }, { id, attempts: 4 });
    const seen = new Map<string, { len: number; attempt: number; due: number }>();
    const done = new Promise<void>((resolve) => {
      const w = fx.track(
        new Worker<{ s: string }>(
          queue.name,
          (job) => {
            seen.set(job.id, { len: job.data.s.length, attempt: job.attempt, due: job.dueAtMs });
            if (seen.size === ids.length) resolve();
          },
          { connection: fx.redis.url },
        ),
      );
      void w;
    });
    await within(done, 10_000, 'the three jobs run');
    assert.deepEqual([...seen.keys()].sort(), [...ids].sort());
    for (const [i, id] of ids.entries()) {
      assert.equal(seen.get(id)!.len, i * 40_000);
      assert.equal(seen.get(id)!.attempt, 1);
      assert.ok(Number.isSafeInteger(seen.get(id)!.due));
    }
  });
});
