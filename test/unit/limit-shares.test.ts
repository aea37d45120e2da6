/**
 * The split of a sharded queue's limits (src/store/sharded/limit-shares.ts), over every layout
 * shape up to 6 current shards and two draining sets, with the unsharded keys draining or not:
 * the shares add up to the limit exactly, each is at least one, every shard has the same rate
 * max, and a limit below the number of store queues is refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ValidationError } from '../../src/errors.js';
import { formatLayout, type Layout, parseLayout } from '../../src/store/sharded/layout.js';
import { checkShares, limitShares, shareCount } from '../../src/store/sharded/limit-shares.js';

function* layouts(): Generator<Layout> {
  for (let n = 1; n <= 6; n++)
    for (const homeDraining of [false, true])
      for (const drainingSets of [[], [2], [3, 1]]) {
        let from = 0;
        const retired = drainingSets.map((count) => {
          const set = { from, count };
          from += count;
          return set;
        });
        if (homeDraining) retired.push({ from: -1, count: 1 });
        yield { epoch: 'abcdefabcdef', current: { from, count: n }, retired };
      }
}

test('shares add up to the limit, each at least one, every shard with the same rate max', () => {
  let checked = 0;
  for (const base of layouts()) {
    const m = shareCount('q', base);
    for (let limit = m; limit <= 3 * m + 2; limit++) {
      const layout: Layout = { ...base, limits: { concurrency: limit, rate: { max: limit, perMs: 1000 } } };
      checkShares('q', layout, layout.limits!, 'limits');
      const shares = [...limitShares('q', layout)];
      assert.equal(shares.length, m);
      const what = `${formatLayout(layout)}`;
      assert.equal(
        shares.reduce((n, [, s]) => n + s.concurrency!, 0),
        limit,
        what,
      );
      assert.equal(
        shares.reduce((n, [, s]) => n + s.rateLimit!.max, 0),
        limit,
        what,
      );
      assert.ok(
        shares.every(([, s]) => s.concurrency! >= 1 && s.rateLimit!.max >= 1 && s.rateLimit!.perMs === 1000),
        what,
      );
      const shardRates = new Set(shares.filter(([name]) => name !== 'q').map(([, s]) => s.rateLimit!.max));
      assert.equal(shardRates.size, 1, `${what}: one rate max on every shard`);
      checked++;
    }
    assert.throws(
      () => checkShares('q', { ...base, limits: { concurrency: m - 1 } }, { concurrency: m - 1 }, 'limits'),
      (e: Error) => e instanceof ValidationError && e.message.includes(`must be at least ${m}`),
    );
  }
  assert.ok(checked > 500, `${checked} cases`);
});

test('the unsharded keys, once drained, keep one slot; while draining, an equal share', () => {
  const drained = limitShares('q', { epoch: undefined, current: { from: 0, count: 3 }, retired: [], limits: { concurrency: 10 } });
  assert.deepEqual(
    [...drained].map(([n, s]) => [n, s.concurrency]),
    [
      ['q#0', 3],
      ['q#1', 3],
      ['q#2', 3],
      ['q', 1],
    ],
  );
  const draining = limitShares('q', { epoch: undefined, current: { from: 0, count: 3 }, retired: [{ from: -1, count: 1 }], limits: { concurrency: 10 } });
  assert.deepEqual(
    [...draining].map(([, s]) => s.concurrency),
    [3, 3, 2, 2],
  );
});

test('a layout keeps its limits through format and parse; bad stored limits are refused', () => {
  const layout: Layout = { epoch: 'abcdefabcdef', current: { from: 0, count: 2 }, retired: [], limits: { concurrency: 4, rate: { max: 5, perMs: 100 } } };
  assert.deepEqual(parseLayout(formatLayout(layout)), layout);
  assert.equal(parseLayout('{"v":1,"epoch":"abcdefabcdef","current":{"from":0,"count":2},"retired":[]}').limits, undefined, 'an older layout');
  for (const bad of ['{"concurrency":0}', '{"concurrency":1.5}', '{"rate":{"max":2}}', '{"rate":{"max":"2","perMs":5}}', '[]', 'null'])
    assert.throws(() => parseLayout(`{"v":1,"current":null,"retired":[],"limits":${bad}}`), /bad limits/, bad);
});
