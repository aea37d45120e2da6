import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, ValidationError } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

function newQueue<T = unknown>(): Queue<T> {
  const q = new Queue<T>(uniqueName('d'), { connection: fx.redis.url });
  fx.track(q as Queue);
  return q;
}

describe('dedup window', () => {
  test('a second add with the same key inside the window is skipped and names the first', async () => {
    const q = newQueue<string>();
    const first = await q.add('hi', { id: 'r1', delay: 60_000, dedup: { key: 'reminder:7', windowMs: 60_000 } });
    const second = await q.add('hi again', { id: 'r2', delay: 1_000, dedup: { key: 'reminder:7', windowMs: 60_000 } });
    assert.equal(first.added, true);
    assert.equal(second.added, false);
    assert.equal(second.replaced, false);
    assert.equal(second.duplicateOf, 'r1');
    assert.equal(second.state, 'scheduled');
    assert.equal(second.dueAtMs, first.dueAtMs);
    assert.equal(await q.get('r2'), null);
    assert.equal((await q.stats()).scheduled, 1);
  });

  test('the window outlives the job: a duplicate after it finished is still skipped, and says so', async () => {
    const q = newQueue<string>();
    const first = await q.add('x', { id: 'a', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } });
    await q.cancel('a');
    const again = await q.add('x', { id: 'b', dedup: { key: 'k', windowMs: 60_000 } });
    assert.equal(again.added, false);
    assert.equal(again.duplicateOf, 'a');
    assert.equal(again.state, 'finished');
    assert.equal(again.dueAtMs, first.dueAtMs);
  });

  test('after the window the key is free again', async () => {
    const q = newQueue<string>();
    await q.add('x', { id: 'a', delay: 60_000, dedup: { key: 'k', windowMs: 50 } });
    await until(async () => (await fx.client.exists(`${queueKeys('dq', q.name).root}dedup:k`)) === 0, 'the window to expire');
    const later = await q.add('x', { id: 'b', delay: 60_000, dedup: { key: 'k', windowMs: 50 } });
    assert.equal(later.added, true);
    assert.equal(later.duplicateOf, undefined);
  });

  test('re-adding the same id with its own key is an ordinary existing-id add', async () => {
    const q = newQueue<string>();
    await q.add('x', { id: 'a', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } });
    const again = await q.add('x', { id: 'a', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } });
    assert.equal(again.added, false);
    assert.equal(again.duplicateOf, undefined);
    assert.equal(again.state, 'scheduled');
  });

  test('inside one addBulk, the first job with a key wins', async () => {
    const q = newQueue<number>();
    const rs = await q.addBulk([
      { data: 1, opts: { id: 'one', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } } },
      { data: 2, opts: { id: 'two', delay: 60_000, dedup: { key: 'k', windowMs: 60_000 } } },
      { data: 3, opts: { id: 'three', delay: 60_000 } },
    ]);
    assert.deepEqual(
      rs.map((r) => [r.id, r.added, r.duplicateOf]),
      [
        ['one', true, undefined],
        ['two', false, 'one'],
        ['three', true, undefined],
      ],
    );
  });

  test('bad dedup options are refused by field, and nothing is written', async () => {
    const q = newQueue<string>();
    const cases: [unknown, RegExp][] = [
      [{ key: '', windowMs: 1000 }, /^dedup\.key/],
      [{ key: 'k', windowMs: 0 }, /^dedup\.windowMs/],
      [{ key: 'k', windowMs: 1.5 }, /^dedup\.windowMs/],
      [{ key: 'k' }, /^dedup\.windowMs/],
      [{ key: 'k', windowMs: 10, extra: 1 }, /^dedup/],
      ['k', /^dedup/],
    ];
    for (const [dedup, message] of cases) {
      await assert.rejects(
        q.add('x', { dedup } as never),
        (err: unknown) => err instanceof ValidationError && message.test(err.message),
        `dedup ${JSON.stringify(dedup)}`,
      );
    }
    assert.deepEqual(await fx.client.keys(`${queueKeys('dq', q.name).root}*`), []);
  });
});
