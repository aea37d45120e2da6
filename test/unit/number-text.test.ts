/**
 * numberText (number-text.ts: an add's numbers as the text sent, an epoch ms written digit by
 * digit) against String(): the same text for every number, at and around the bounds of its fast
 * path (13 digits) and for every kind of number it leaves to String().
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { numberText } from '../../src/store/redis/number-text.js';

test('numberText writes what String() writes, at the edges of the 13-digit range and off it', () => {
  const edges = [
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
    0,
    -0,
    -1,
    -1_796_031_608_214,
    5,
    2 ** 31,
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
  for (const n of edges) assert.equal(numberText(n), String(n), String(n));
});

test('numberText writes what String() writes, for any number', () => {
  fc.assert(
    fc.property(fc.oneof(fc.integer({ min: 1e12 - 10, max: 1e13 + 10 }), fc.double(), fc.integer()), (n) => {
      assert.equal(numberText(n), String(n));
    }),
    { numRuns: 20_000 },
  );
});
