/**
 * The add's options checked without zod for the common shapes (options.ts fastAddOptions, through parseAddOptions) agree
 * with the schema on every input: the same accepted, the same value given back, the same error
 * (field and message) for the refused. Random objects over the add's keys and the values that
 * sit at and around each bound, plus odd ones (NaN, Infinity, strings for numbers, control
 * characters, lone surrogates, inherited and unknown keys, non-plain objects).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { addOptionsSchema, parseAddOptions, parseValue } from '../../src/options.js';
import { MAX_ATTEMPTS, MAX_DELAY_MS, MAX_ID_LENGTH, MAX_PRIORITY, MAX_RATE_TOKENS, MAX_RUN_AT_MS, MIN_RUN_AT_MS } from '../../src/limits.js';

function outcome(run: () => unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(JSON.stringify(run() ?? null)) };
  } catch (err) {
    return { ok: false, error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

const ids = fc.oneof(
  fc.string({ minLength: 0, maxLength: 6 }),
  fc.constantFrom('', 'a', 'x'.repeat(MAX_ID_LENGTH), 'x'.repeat(MAX_ID_LENGTH + 1), 'a\u0000b', 'a\u009bb', '\uD800', 'é名🙂', 'order:1'),
  fc.constantFrom(1, null, true, {}) as fc.Arbitrary<unknown>,
);
const numbers = (min: number, max: number) =>
  fc.oneof(
    fc.constantFrom(min, max, min - 1, max + 1, 0, -0, 0.5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, -1),
    fc.integer({ min: min - 5, max: Math.min(max + 5, Number.MAX_SAFE_INTEGER) }),
    fc.double({ noNaN: false }),
    fc.constantFrom('5', null, true) as fc.Arbitrary<unknown>,
  );
const values: Record<string, fc.Arbitrary<unknown>> = {
  id: ids,
  group: ids,
  name: ids,
  delay: numbers(0, MAX_DELAY_MS),
  priority: numbers(-MAX_PRIORITY, MAX_PRIORITY),
  attempts: numbers(1, MAX_ATTEMPTS),
  runAt: fc.oneof(
    numbers(MIN_RUN_AT_MS, MAX_RUN_AT_MS),
    fc.constantFrom(Date.now(), 5, undefined),
    fc.oneof(numbers(MIN_RUN_AT_MS, MAX_RUN_AT_MS), fc.constant(Number.NaN)).map((t) => new Date(t as number)),
  ),
  replace: fc.constantFrom(true, false, 'yes', undefined),
  timeoutMs: numbers(1, MAX_DELAY_MS),
  cost: numbers(1, MAX_RATE_TOKENS),
  nope: fc.constantFrom(1),
};
const options = fc.oneof(
  fc.record(values, { requiredKeys: [] }),
  fc.record({ id: ids, delay: numbers(0, MAX_DELAY_MS) }, { requiredKeys: [] }),
  fc.record({ id: ids, runAt: values.runAt! }, { requiredKeys: [] }),
  // Two or three keys at a time, so a bound of one is met with the others valid more often.
  fc.record({ id: fc.constant('a'), delay: values.delay!, runAt: values.runAt!, cost: values.cost! }, { requiredKeys: ['id'] }),
  fc.record({ timeoutMs: values.timeoutMs!, replace: values.replace!, priority: values.priority! }, { requiredKeys: [] }),
  fc.constantFrom(undefined, null, {}, [], 'x', 5, Object.create({ id: 'inherited' }), new (class Opts {})(), Object.assign(Object.create(null), { id: 'a' })),
);

test('parseAddOptions answers as the schema does, for any options', () => {
  fc.assert(
    fc.property(options, (opts) => {
      const fast = outcome(() => parseAddOptions(opts, 'opts'));
      const schema = outcome(() => parseValue(addOptionsSchema, opts ?? {}, 'opts'));
      assert.deepEqual(fast, schema, JSON.stringify(opts));
    }),
    { numRuns: 3000 },
  );
});

test('the common shape is answered without the schema, and keeps only the values read', () => {
  let reads = 0;
  const opts = {
    get id() {
      reads++;
      return reads === 1 ? 'first' : 'second';
    },
    delay: 1000,
  };
  const parsed = parseAddOptions(opts);
  assert.deepEqual([parsed.id, parsed.delay], ['first', 1000]);
  assert.equal(reads, 1, 'each value read once');
});
