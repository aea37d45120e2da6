/**
 * A PackedCommand writes the bytes ioredis writes for the same command: the worker's claims and
 * acks go out through it, so any difference would be a different call on the wire.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Command } from 'ioredis';
import { PackedCommand } from '../../src/store/redis/packed-command.js';

function asIoredisWrites(name: string, head: (string | number)[], rows: (string | number)[], keyPrefix?: string): string {
  const w = new Command(name, [...head, ...rows], keyPrefix === undefined ? {} : ({ keyPrefix } as never)).toWritable({});
  return typeof w === 'string' ? w : w.toString('utf8');
}

test('the bytes of a command are those ioredis writes: ASCII, UTF-8, empty and numeric arguments, many rows', () => {
  const rows: (string | number)[] = [];
  for (let i = 0; i < 250; i++) rows.push(`order:${i}`, `tok-${i}-é€😀`, i % 3 === 0 ? '' : `{"r":${i}}`);
  rows.push(0, 1234567890123, -5, 'x'.repeat(70_000));
  for (const name of ['fcall', 'evalsha', 'eval']) {
    const head = [name === 'eval' ? 'return 1 -- ünï' : 'dq_fn', 2, 'dq:{q}:a', 'dq:{q}:b'];
    const packed = new PackedCommand(name, head, rows, {}).toWritable({});
    assert.equal(packed.toString('utf8'), asIoredisWrites(name, head, rows));
  }
});

test('a command with no rows, and the keys prefixed as ioredis prefixes them (keyPrefix)', () => {
  const head = ['dq_fn', 1, 'k'];
  assert.equal(new PackedCommand('fcall', head, [], {}).toWritable({}).toString('utf8'), asIoredisWrites('fcall', head, []));
  const prefixed = new PackedCommand('fcall', head, ['a', 'b'], { keyPrefix: 'app:' }).toWritable({}).toString('utf8');
  assert.equal(prefixed, asIoredisWrites('fcall', head, ['a', 'b'], 'app:'));
  assert.match(prefixed, /\$5\r\napp:k\r\n/);
});

test('written again (an offline queue, a resend after a reconnection), a command writes the same bytes', () => {
  const c = new PackedCommand('fcall', ['dq_fn', 0], ['a', 'é'], {});
  assert.deepEqual(c.toWritable({}), c.toWritable({}));
});

test('a lone surrogate goes out as the bytes the socket would write for ioredis (U+FFFD, three bytes)', () => {
  const head = ['dq_fn', 0];
  const rows = ['lone \ud800 surrogate', '\udfff', 'pair 😀 whole'];
  const packed = new PackedCommand('fcall', head, rows, {}).toWritable({});
  // ioredis writes its command as a string; the socket encodes it as UTF-8.
  assert.deepEqual(packed, Buffer.from(asIoredisWrites('fcall', head, rows), 'utf8'));
});

/**
 * Numbers: a whole number up to 2^31 - 1 and an epoch ms of 13 digits are written digit by digit
 * (packed-command.ts wholeDigits), any other as String() writes it, as ioredis does: the same
 * bytes at and around the edges of both fast paths and for every kind of number they leave alone.
 */
const NUMBER_EDGES = [
  0,
  -0,
  1,
  9,
  10,
  99,
  100,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32,
  1e12,
  1e12 + 1,
  1e12 - 1,
  1e13 - 1,
  1e13,
  1e13 + 1,
  1e12 + 0.5,
  1e13 - 0.5,
  1_796_031_608_214,
  1_000_000_900_001,
  9_999_990_000_009,
  1_000_000_000_000,
  -1,
  -1_796_031_608_214,
  -(2 ** 31),
  2 ** 53,
  2 ** 53 + 2,
  1e21,
  1e-7,
  0.1,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
];

test('number arguments go out as ioredis writes them, at the edges of the digit-by-digit paths and off them', () => {
  const head = ['dq_fn', 0];
  for (const n of NUMBER_EDGES) {
    const rows = ['a', n, 'b'];
    assert.equal(new PackedCommand('fcall', head, rows, {}).toWritable({}).toString('utf8'), asIoredisWrites('fcall', head, rows), String(n));
  }
});

test('number arguments go out as ioredis writes them, for any number', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.integer({ min: 1e12 - 10, max: 1e13 + 10 }), fc.integer({ min: 0, max: 2 ** 31 + 10 }), fc.double(), fc.integer()), {
        maxLength: 8,
      }),
      (rows) => {
        const head = ['dq_fn', 0];
        assert.equal(new PackedCommand('fcall', head, rows, {}).toWritable({}).toString('utf8'), asIoredisWrites('fcall', head, rows));
      },
    ),
    { numRuns: 5_000 },
  );
});

test('commands of more arguments than the kept sizes (a bulk add), then fewer, each go out as ioredis writes them', () => {
  const head = ['dq_fn', 0];
  const big: (string | number)[] = [];
  for (let i = 0; i < 5000; i++) big.push(`job-${i}`, i % 2 === 0 ? 1_796_031_608_214 + i : `é${i}`);
  for (const rows of [big, ['a', 'bé', 7], big.slice(0, 10), []]) {
    assert.equal(new PackedCommand('fcall', head, rows, {}).toWritable({}).toString('utf8'), asIoredisWrites('fcall', head, rows));
  }
});
