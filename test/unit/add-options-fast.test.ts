/**
 * The hand-written check of an add's options (options.ts fastAddOptions, "fast accept, slow
 * reject") and the zod schema give the same answer for a table of options chosen at the edges:
 * the same parsed value (strictly: -0 stays -0, a Date becomes its epoch ms; the hand check
 * answers every key it knows, undefined when not given, so keys whose value is undefined are left
 * out of the comparison) or the same error (class, field, message). The schema alone is the path
 * with the hand check forced off. test/property/add-options.test.ts does the same on random ones.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addOptionsSchema, fastAddOptions, parseAddOptions, parseValue } from '../../src/options.js';
import { MAX_ATTEMPTS, MAX_DELAY_MS, MAX_ID_LENGTH, MAX_PRIORITY, MAX_RATE_TOKENS, MAX_RUN_AT_MS, MIN_RUN_AT_MS } from '../../src/limits.js';

type Outcome = { ok: true; value: unknown } | { ok: false; error: { name: string; field: unknown; message: string } };

/** A parsed value without its keys whose value is undefined (the add reads values, not keys). */
function given(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined));
}

function outcome(run: () => unknown): Outcome {
  try {
    return { ok: true, value: given(run()) };
  } catch (err) {
    const e = err as Error & { field?: unknown };
    return { ok: false, error: { name: e.name, field: e.field, message: e.message } };
  }
}

const at = Date.UTC(2030, 0, 1);
class LaterDate extends Date {}
class Opts {
  id = 'a';
}
const withGetter = {
  get id() {
    return 'from-a-getter';
  },
  runAt: at,
};
const hiddenId = Object.defineProperty({ runAt: at }, 'id', { value: 'hidden', enumerable: false });
const hiddenBad = Object.defineProperty({ runAt: at }, 'id', { value: 5, enumerable: false });
const hiddenUnknown = Object.defineProperty({ id: 'a' }, 'nope', { value: 1, enumerable: false });
const dateWithOwnTime = Object.assign(new Date(at), { getTime: () => 5 });

/** [what, options]: valid ones of many shapes first, then the edges and the refused. */
const table: [string, unknown][] = [
  ['nothing', undefined],
  ['null', null],
  ['empty', {}],
  ['id', { id: 'order:1' }],
  ['id and runAt (the common shape)', { id: 'order:1', runAt: at }],
  ['id and delay', { id: 'order:1', delay: 30_000 }],
  ['runAt as a Date', { runAt: new Date(at) }],
  ['runAt as a Date with a fraction', { runAt: new Date(at + 0.5) }],
  ['runAt with a fraction', { runAt: at + 0.5 }],
  ['runAt at its lowest', { runAt: MIN_RUN_AT_MS }],
  ['runAt at its highest', { runAt: MAX_RUN_AT_MS }],
  ['delay with a fraction', { delay: 0.5 }],
  ['delay 0', { delay: 0 }],
  ['delay -0', { delay: -0 }],
  ['delay at its highest', { delay: MAX_DELAY_MS }],
  ['priority -0', { priority: -0 }],
  ['priority at its bounds', { priority: MAX_PRIORITY }],
  ['priority at its low bound', { priority: -MAX_PRIORITY }],
  ['attempts at its bounds', { attempts: MAX_ATTEMPTS }],
  [
    'every key of the fast path',
    {
      id: 'é名🙂',
      runAt: at,
      priority: 3,
      attempts: 2,
      replace: true,
      group: 'tenant:1',
      name: 'send-email',
      timeoutMs: 1000,
      cost: MAX_RATE_TOKENS,
    },
  ],
  ['replace false', { replace: false }],
  ['undefined values', { id: 'a', delay: undefined, runAt: undefined }],
  ['undefined delay beside runAt', { delay: undefined, runAt: at }],
  ['id at its longest', { id: 'x'.repeat(MAX_ID_LENGTH) }],
  ['a getter, read once', withGetter],
  ['a frozen object', Object.freeze({ id: 'a', runAt: at })],
  ['a non-enumerable id', hiddenId],
  ['a non-enumerable unknown key', hiddenUnknown],
  ['a symbol key', { id: 'a', [Symbol('s')]: 1 }],
  ['a Date subclass', { runAt: new LaterDate(at) }],
  ['a Date with its own getTime', { runAt: dateWithOwnTime }],
  ['keys the fast path leaves to the schema', { id: 'a', attemptsMade: 1, attempts: 3, backoff: { type: 'fixed', delay: 10 } }],
  ['dedup', { id: 'a', dedup: { key: 'k', windowMs: 1000 } }],
  ['an undefined value of a key the fast path leaves', { id: 'a', dedup: undefined }],
  // refused
  ['an unknown key', { id: 'a', extra: 1 }],
  ['an unknown undefined key', { id: 'a', extra: undefined }],
  ['an own __proto__ key', JSON.parse('{"__proto__": 1, "id": "a"}')],
  ['delay and runAt', { delay: 1, runAt: at }],
  ['runAt NaN', { runAt: Number.NaN }],
  ['runAt Infinity', { runAt: Number.POSITIVE_INFINITY }],
  ['runAt -Infinity', { runAt: Number.NEGATIVE_INFINITY }],
  ['runAt 2^53', { runAt: 2 ** 53 }],
  ['runAt one past its highest', { runAt: MAX_RUN_AT_MS + 1 }],
  ['runAt one below its lowest', { runAt: MIN_RUN_AT_MS - 1 }],
  ['runAt in seconds', { runAt: Math.floor(at / 1000) }],
  ['runAt -0', { runAt: -0 }],
  ['runAt an invalid Date', { runAt: new Date(Number.NaN) }],
  ['runAt a Date before 2001', { runAt: new Date(0) }],
  ['runAt a string', { runAt: '2030-01-01' }],
  ['runAt a numeric string', { runAt: String(at) }],
  ['runAt null', { runAt: null }],
  ['runAt a boxed number', { runAt: Object(at) }],
  ['delay NaN', { delay: Number.NaN }],
  ['delay Infinity', { delay: Number.POSITIVE_INFINITY }],
  ['delay negative', { delay: -1 }],
  ['delay past 10 years', { delay: MAX_DELAY_MS + 1 }],
  ['delay a string', { delay: '5' }],
  ['delay 2^53', { delay: 2 ** 53 }],
  ['priority a fraction', { priority: 0.5 }],
  ['priority past its bound', { priority: MAX_PRIORITY + 1 }],
  ['priority a string', { priority: '1' }],
  ['attempts 0', { attempts: 0 }],
  ['attempts 2^53', { attempts: 2 ** 53 }],
  ['attempts past its bound', { attempts: MAX_ATTEMPTS + 1 }],
  ['replace 1', { replace: 1 }],
  ['replace a string', { replace: 'yes' }],
  ['timeoutMs 0', { timeoutMs: 0 }],
  ['timeoutMs a fraction', { timeoutMs: 1.5 }],
  ['timeoutMs past 10 years', { timeoutMs: MAX_DELAY_MS + 1 }],
  ['timeoutMs 2^53', { timeoutMs: 2 ** 53 }],
  ['cost 0', { cost: 0 }],
  ['cost past its bound', { cost: MAX_RATE_TOKENS + 1 }],
  ['cost NaN', { cost: Number.NaN }],
  ['id empty', { id: '' }],
  ['id too long', { id: 'x'.repeat(MAX_ID_LENGTH + 1) }],
  ['id with a control character', { id: 'a\u0000b' }],
  ['id with a C1 control character', { id: 'a\u009bb' }],
  ['id a lone surrogate', { id: '\uD800' }],
  ['id ending in a high surrogate half', { id: 'ab\uD83D' }],
  ['id with a low surrogate half first', { id: '\uDE42\uD83D' }],
  ['id with two high surrogate halves', { id: '\uD83D\uD83Dx' }],
  ['id with a lone low surrogate half', { id: 'a\uDFFFb' }],
  ['id with DEL', { id: 'a\u007fb' }],
  ['id with U+001F', { id: '\u001f' }],
  ['id with U+009F', { id: 'a\u009f' }],
  ['id with U+00A0 and U+007E', { id: '\u00a0~' }],
  ['id with U+FFFF and a surrogate pair at the end', { id: '\uffffa\uDBFF\uDFFF' }],
  ['id a number', { id: 1 }],
  ['id null', { id: null }],
  ['group empty', { group: '' }],
  ['name with a control character', { name: 'a\nb' }],
  ['a getter that throws', Object.defineProperty({}, 'id', { enumerable: true, get: () => 5 })],
  ['a non-enumerable invalid id', hiddenBad],
  ['debounce with replace', { debounce: { key: 'k', delayMs: 1 }, replace: true }],
  ['dependsOn with replace', { dependsOn: ['a'], replace: true }],
  ['attemptsMade not below attempts', { attempts: 2, attemptsMade: 2 }],
  ['a null-prototype object', Object.assign(Object.create(null), { id: 'a', runAt: at })],
  ['an inherited id', Object.create({ id: 'inherited' })],
  ['a class instance', new Opts()],
  ['an array', []],
  ['an array with an id', Object.assign([], { id: 'a' })],
  ['a Map', new Map([['id', 'a']])],
  ['a Date', new Date(at)],
  ['a string', 'x'],
  ['a number', 5],
  ['true', true],
  ['a function', () => 1],
  ['a Proxy of a plain object', new Proxy({ id: 'a', runAt: at }, {})],
];

test('the hand check and the schema answer every option alike (value or error)', () => {
  for (const [what, opts] of table) {
    const fast = outcome(() => parseAddOptions(opts, 'opts'));
    const schema = outcome(() => parseValue(addOptionsSchema, opts ?? {}, 'opts'));
    assert.deepStrictEqual(fast, schema, what);
  }
});

test('the hand check takes the common shapes itself (not a fall-through to the schema)', () => {
  for (const opts of [
    undefined,
    {},
    { id: 'order:1', runAt: at },
    { id: 'order:1', runAt: new Date(at) },
    { id: 'order:1', delay: 1000, priority: 5, attempts: 3, group: 'g', name: 'n', replace: true, timeoutMs: 10, cost: 2 },
  ]) {
    assert.notEqual(fastAddOptions(opts), undefined, JSON.stringify(opts));
  }
  assert.deepStrictEqual(given(fastAddOptions({ id: 'a', runAt: new Date(at) })), { id: 'a', runAt: at });
  // One shape whatever was given: every key it knows, in one order.
  for (const opts of [undefined, { runAt: at, id: 'a' }, { cost: 2 }]) {
    assert.deepStrictEqual(Object.keys(fastAddOptions(opts)!), [
      'id',
      'delay',
      'runAt',
      'priority',
      'attempts',
      'replace',
      'group',
      'name',
      'timeoutMs',
      'cost',
    ]);
  }
  // What it cannot vouch for, it leaves to the schema.
  for (const opts of [{ delay: 1, runAt: at }, { id: 'a', extra: 1 }, { runAt: new LaterDate(at) }, { dedup: { key: 'k', windowMs: 1 } }, []]) {
    assert.equal(fastAddOptions(opts), undefined, JSON.stringify(opts));
  }
});
