import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();

/** Values that are sometimes right and often wrong, for any option. */
const anyValue = fc.oneof(
  fc.integer({ min: -1e6, max: 1e13 }),
  fc.double({ noNaN: false }),
  fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, 0, 1, 2 ** 53, 1e300),
  fc.string({ maxLength: 300 }),
  fc.constantFrom('', ' ', '\u0000', 'x'.repeat(257), '1000', '30s'),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.date({ noInvalidDate: false }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

const backoff = fc.oneof(
  anyValue,
  fc.record({ type: fc.constantFrom('fixed', 'exponential', 'linear', ''), delay: anyValue }, { requiredKeys: [] }),
  fc.record({ type: fc.constant('exponential'), delay: fc.integer({ min: 0, max: 1e6 }), maxDelay: anyValue, jitter: anyValue }, { requiredKeys: ['type'] }),
);

const addOptions = fc.oneof(
  anyValue,
  fc.record(
    {
      id: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), anyValue),
      delay: anyValue,
      runAt: anyValue,
      priority: anyValue,
      attempts: anyValue,
      backoff,
      replace: anyValue,
      dedup: fc.oneof(anyValue, fc.record({ key: fc.oneof(fc.string({ maxLength: 10 }), anyValue), windowMs: anyValue }, { requiredKeys: [] })),
      [`unknown${Math.floor(Math.random() * 1e6)}`]: anyValue,
    },
    { requiredKeys: [] },
  ),
);

const data = fc.oneof(
  fc.jsonValue(),
  anyValue,
  fc.string({ minLength: 600_000, maxLength: 600_001 }).map((s) => s),
  fc.constant(() => 1),
  fc.constant(Symbol('s')),
  fc.bigInt(),
);

async function keysOf(queue: string): Promise<string[]> {
  return fx.client.keys(`${queueKeys('dq', queue).root}*`);
}

describe('public inputs, generated (fast-check)', () => {
  test('add(data, opts): succeeds or throws a ValidationError naming a field, and a rejected call writes nothing', async () => {
    const queue = new Queue<unknown>(uniqueName('prop'), { connection: fx.redis.url });
    try {
      await fc.assert(
        fc.asyncProperty(data, addOptions, async (d, opts) => {
          const before = await keysOf(queue.name);
          try {
            await queue.add(d, opts as never);
          } catch (err) {
            assert.ok(err instanceof ValidationError, `not a ValidationError: ${String(err)}`);
            assert.ok(err.field.length > 0 && err.message.startsWith(err.field.split('.')[0]!), `message names the field: ${err.message}`);
            assert.deepEqual((await keysOf(queue.name)).sort(), before.sort(), 'a rejected add wrote nothing');
          }
        }),
        { numRuns: Number(process.env.DQ_PROPERTY_RUNS ?? 300) },
      );
      assert.equal((await queue.verify()).ok, true);
    } finally {
      await queue.close();
    }
  });

  test('addBulk: one bad job rejects the whole call before anything is written', async () => {
    const queue = new Queue<unknown>(uniqueName('prop'), { connection: fx.redis.url });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ data: fc.jsonValue(), opts: addOptions }, { requiredKeys: ['data'] }), { minLength: 1, maxLength: 5 }),
          async (jobs) => {
            const before = await keysOf(queue.name);
            try {
              await queue.addBulk(jobs as never);
            } catch (err) {
              assert.ok(err instanceof ValidationError, String(err));
              assert.match(err.message, /^jobs\[\d+\]/);
              assert.deepEqual((await keysOf(queue.name)).sort(), before.sort());
            }
          },
        ),
        { numRuns: 150 },
      );
    } finally {
      await queue.close();
    }
  });

  test('queue names, reschedule and Worker options: only ValidationErrors', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 120 }), anyValue), async (name) => {
        try {
          const q = new Queue(name as string, { connection: fx.redis.url });
          await q.close();
        } catch (err) {
          assert.ok(err instanceof ValidationError, String(err));
        }
      }),
      { numRuns: 200 },
    );
    const queue = new Queue<unknown>(uniqueName('prop'), { connection: fx.redis.url });
    await queue.add(1, { id: 'r', delay: 60_000 });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(fc.string({ maxLength: 10 }), anyValue),
          fc.oneof(anyValue, fc.record({ delay: anyValue, runAt: anyValue }, { requiredKeys: [] })),
          async (id, when) => {
            const before = (await queue.get('r'))!.dueAtMs;
            try {
              await queue.reschedule(id as string, when as never);
            } catch (err) {
              assert.ok(err instanceof ValidationError, String(err));
              assert.equal((await queue.get('r'))!.dueAtMs, before);
            }
          },
        ),
        { numRuns: 200 },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.record(
            {
              concurrency: anyValue,
              batch: anyValue,
              leaseMs: anyValue,
              attempts: anyValue,
              backoff,
              timeoutMs: anyValue,
              closeTimeoutMs: anyValue,
              idleCheckMs: anyValue,
              bogus: anyValue,
            },
            { requiredKeys: [] },
          ),
          async (opts) => {
            try {
              const w = new Worker(queue.name, () => undefined, { connection: fx.redis.url, autostart: false, ...(opts as object) } as never);
              await w.close();
            } catch (err) {
              assert.ok(err instanceof ValidationError || err instanceof TypeError, String(err));
            }
          },
        ),
        { numRuns: 200 },
      );
    } finally {
      await queue.close();
    }
  });
});

describe('inputs found by generated tests', () => {
  test('ids with a lone surrogate half are refused (Redis would fold them into one id)', async () => {
    const queue = new Queue<unknown>(uniqueName('prop'), { connection: fx.redis.url });
    try {
      await assert.rejects(queue.add(1, { id: 'a\uD800' }), (e: unknown) => e instanceof ValidationError && e.message.startsWith('id must be valid Unicode'));
      await assert.rejects(queue.add(1, { id: 'a\uDC01b' }), ValidationError);
      assert.equal((await queue.add(1, { id: 'emoji-😀' })).added, true, 'a proper surrogate pair is fine');
      assert.equal((await queue.get('emoji-😀'))?.id, 'emoji-😀');
    } finally {
      await queue.close();
    }
  });

  test('null options mean defaults, never a TypeError', async () => {
    // Defaults come from REDIS_URL: point it at the embedded store so nothing leaves the test.
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = 'memory://null-options';
    try {
      const queue = new Queue<unknown>(uniqueName('prop'), null as never);
      await queue.close();
      const w = new Worker(uniqueName('prop'), () => undefined, null as never);
      await w.close();
    } finally {
      if (saved === undefined) delete process.env.REDIS_URL;
      else process.env.REDIS_URL = saved;
    }
    const q2 = new Queue<unknown>(uniqueName('prop'), { connection: fx.redis.url });
    try {
      assert.equal(typeof (await q2.stats(null)).scheduled, 'number');
      assert.equal((await q2.dead.list(null)).total, 0);
    } finally {
      await q2.close();
    }
  });
});
