/**
 * A dead job's "took" (finishedAtMs − startedAtMs, on its dashboard page) is its last run, not
 * the time since its first start (issue 38: "took 37 s" spanned a manual retry): a retry from the
 * dead set starts the job afresh, so its next hand-out is its start. On the memory store, Redis
 * and a sharded queue.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { MemoryStore, Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

describe("a dead job's start and took, across a retry from the dead set", () => {
  const open: { close(): Promise<void> }[] = [];
  after(async () => {
    for (const o of open.reverse()) await o.close().catch(() => {});
  });

  for (const [kind, options] of [
    ['memory store', () => ({ store: new MemoryStore() })],
    ['redis', () => ({ connection: fx.redis.url })],
    ['sharded queue (3 shards) on redis', () => ({ connection: fx.redis.url, shards: 3 })],
  ] as const) {
    test(`${kind}: the start is the first hand-out since the retry`, async () => {
      const o = options();
      const name = uniqueName('took');
      const q = new Queue<string>(name, o);
      open.push(q);
      await q.add('x', { id: 'x' });
      const w = new Worker<string>(
        name,
        async () => {
          throw new UnrecoverableError('no');
        },
        o,
      );
      open.push(w);
      await until(async () => (await q.get('x'))?.state === 'dead', 'x dead', 5000);
      const first = (await q.get('x'))!;
      assert.ok(first.startedAtMs !== undefined && first.finishedAtMs !== undefined);
      await w.close();

      // A person retries it well after it died; it dies again at once.
      const retryAt = (await q.stats()).nowMs;
      await until(async () => (await q.stats()).nowMs >= first.finishedAtMs! + 50, 'the server clock 50 ms past the death', 2000, 10);
      assert.equal(await q.dead.retry('x'), 1);
      const retried = (await q.get('x'))!;
      assert.equal(retried.state, 'scheduled');
      assert.equal(retried.startedAtMs, undefined, 'not started since the retry');
      const w2 = new Worker<string>(
        name,
        async () => {
          throw new UnrecoverableError('no again');
        },
        o,
      );
      open.push(w2);
      await until(
        async () => (await q.get('x'))?.lastError?.startsWith('UnrecoverableError: no again') || (await q.get('x'))?.lastError?.includes('no again'),
        'x dead again',
        5000,
      );
      const second = (await q.get('x'))!;
      assert.equal(second.state, 'dead');
      assert.ok(
        second.startedAtMs! >= retryAt,
        `started ${second.startedAtMs} at or after the retry (${retryAt}), not at the first run (${first.startedAtMs})`,
      );
      assert.ok(second.finishedAtMs! - second.startedAtMs! < second.finishedAtMs! - first.startedAtMs!, 'took is the last run only');
      await w2.close();
    });
  }
});
