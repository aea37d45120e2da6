/**
 * readBodyBytes (a claim's bodies, read from the bytes Redis sent) against readBody (the same
 * bytes decoded as UTF-8): on every body, written or mangled, the same fields or the same error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type BodyFields, readBody, readBodyBytes } from '../../src/store/redis/packed.js';

function fresh(): BodyFields {
  return {
    createdAtMs: 0,
    priority: 0,
    maxAttempts: undefined,
    timeoutMs: undefined,
    backoff: undefined,
    traceContext: undefined,
    name: undefined,
    data: undefined,
  };
}

function outcome(read: () => number, into: BodyFields): unknown {
  try {
    return { seq: read(), ...into };
  } catch (err) {
    return { error: (err as Error).message, kind: (err as Error).name };
  }
}

/** A small deterministic generator, so a failure names a body that can be found again. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const pieces = {
  number: ['0', '1', '7', '00', '01', '42', '1732891234567', '999999999999999', '1234567890123456', '12345678901234567', '', 'x', '1x'],
  priority: ['0', '-0', '5', '-5', '-', '10', '1234567890123456', ''],
  max: ['', '0', '00', '1', '3', '03', '25', '1234567890123456', 'a'],
  timeout: [undefined, '', '0', '1', '5000', '1234567890123456'],
  length: ['0', '00', '1', '3', '12', ''],
  name: [undefined, '', '0', '4', '6', '9'],
  data: ['{"a":1}', '', '"é€😀"', '{"orderId":"order:1","userId":123,"action":"cancel","due":1732891234567}', 'null', ':0:0:', 'abcdefghijk'],
};

function body(r: () => number): Buffer {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const timeout = pick(pieces.timeout);
  const name = pick(pieces.name);
  // Half of them of the common form (no backoff, trace or name), whose fields may still be bad.
  if (r() < 0.5) {
    const t = timeout === undefined ? '' : `/${timeout}`;
    return mangle(r, Buffer.from(`${pick(pieces.number)}:${pick(pieces.number)}:${pick(pieces.priority)}:${pick(pieces.max)}${t}:0:0:${pick(pieces.data)}`));
  }
  const header = `${pick(pieces.number)}:${pick(pieces.number)}:${pick(pieces.priority)}:${pick(pieces.max)}${timeout === undefined ? '' : `/${timeout}`}:${pick(pieces.length)}:${pick(pieces.length)}${name === undefined ? '' : `/${name}`}:`;
  return mangle(r, Buffer.concat([Buffer.from(header), Buffer.from(pick(['', 'ab', 'abc', 'bkf', 'ünï', 'tr-ace-123'])), Buffer.from(pick(pieces.data))]));
}

function mangle(r: () => number, bytes: Buffer): Buffer {
  // Mangled: a byte changed, cut short, or bytes that are not UTF-8.
  const m = r();
  if (m < 0.1) bytes = bytes.subarray(0, Math.floor(r() * bytes.length));
  else if (m < 0.2 && bytes.length > 0) bytes[Math.floor(r() * bytes.length)] = Math.floor(r() * 256);
  else if (m < 0.25) bytes = Buffer.concat([bytes, Buffer.from([0xc3]), Buffer.from([0xff, 0x28])]);
  return bytes;
}

test('a body read from its bytes (alone, or in place in a larger reply) reads as the same body read as text, or fails with the same error', () => {
  const r = rng(35);
  let simple = 0;
  for (let i = 0; i < 50_000; i++) {
    const b = body(r);
    const fromBytes = fresh();
    const fromText = fresh();
    const got = outcome(() => readBodyBytes(b, fromBytes), fromBytes);
    const want = outcome(() => readBody(b.toString(), fromText), fromText);
    assert.deepEqual(got, want, `body ${JSON.stringify(b.toString('latin1'))}`);
    // The same body read where a claim's packed reply holds it, between other bytes (digits and
    // colons after it, which a scan past its end would take for its own).
    const framed = Buffer.concat([Buffer.from('9:'), b, Buffer.from('7:0:0:x')]);
    const inPlace = fresh();
    assert.deepEqual(
      outcome(() => readBodyBytes(framed, inPlace, 2, 2 + b.length), inPlace),
      want,
      `body ${JSON.stringify(b.toString('latin1'))} in place`,
    );
    if (!('error' in (want as object)) && fromText.backoff === undefined && fromText.name === undefined) simple++;
  }
  // The generator reaches both paths often: the bodies read from bytes, and the others.
  assert.ok(simple > 3_000, `${simple} bodies of the common form`);
});

test('the common body: every field as readBody reads it, data decoded as UTF-8', () => {
  const b = Buffer.from('12:1732891234567:-3:5/2000:0:0:{"x":"é😀"}');
  const into = fresh();
  assert.equal(readBodyBytes(b, into), 12);
  assert.deepEqual(into, {
    createdAtMs: 1732891234567,
    priority: -3,
    maxAttempts: 5,
    timeoutMs: 2000,
    backoff: undefined,
    traceContext: undefined,
    name: undefined,
    data: '{"x":"é😀"}',
  });
});
