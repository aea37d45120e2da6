import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();
const errorLog = useErrorLog();

describe('close', () => {
  test('a claim still under way when close() is called hands its jobs back instead of leaving them active', async () => {
    // The regression: jobs of a claim answered after close() began were started (or dropped)
    // after the worker had released what it held, and stayed active until their lease ran out.
    for (let round = 0; round < 5; round++) {
      const queue = new Queue<number>(uniqueName('close'), { connection: fx.redis.url });
      await queue.addBulk(Array.from({ length: 50 }, (_, i) => ({ data: i })));
      const ran: number[] = [];
      const worker = new Worker<number>(queue.name, (job) => void ran.push(job.data), { connection: fx.redis.url, concurrency: 10, leaseMs: 60_000 });
      errorLog.watch(worker);
      // Close while the first claim is in flight.
      await worker.close();
      const s = await queue.stats();
      assert.equal(s.active, 0, `round ${round}: ${s.active} jobs left active`);
      assert.equal(s.scheduled + ran.length, 50, `round ${round}: every job either ran or waits`);
      assert.equal((await queue.verify()).ok, true);
      await queue.close();
    }
  });
});
