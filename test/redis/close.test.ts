import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { RedisStore } from '../../src/store/redis/redis-store.js';
import { useErrorLog } from '../helpers/errors.js';
import { until } from '../helpers/wait.js';
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

  test('a worker closed before its first heartbeat was answered leaves no live-worker entry and reports nothing', async () => {
    // The regression (seen on a Cluster, where the registry and the queue sit on two nodes): the
    // first beat waits for the queue's registration, and one answered after close() began was
    // sent after close() took the worker off the list (an entry of a closed worker, for 30 s),
    // or after its store closed ("the store is closed", emitted as the worker's error).
    const registrations: Promise<void>[] = [];
    /** A registry that answers late, as a slow node of a Cluster does. */
    class SlowRegistry extends RedisStore {
      override register(queue: string): Promise<void> {
        const late = new Promise((r) => setTimeout(r, 100)).then(() => super.register(queue));
        registrations.push(late.catch(() => {}));
        return late;
      }
    }
    const queue = new Queue(uniqueName('close'), { connection: fx.redis.url });
    for (const closeStoreToo of [false, true]) {
      const store = new SlowRegistry({ connection: fx.redis.url });
      const worker = errorLog.watch(new Worker(queue.name, () => {}, { store }));
      await worker.close();
      if (closeStoreToo) await store.close();
      await Promise.all(registrations);
      // What the late registration chained (a beat) went out on this connection before this read.
      if (!closeStoreToo) await store.queues();
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(await queue.workers(), [], `closeStoreToo=${closeStoreToo}: no entry of a closed worker`);
      if (!closeStoreToo) await store.close();
    }
    await queue.close();
  });

  test('a lease renewal answered after close() and the store closed reports nothing', async () => {
    // The same race as the heartbeat's: a renewal sent just before close() began comes back
    // after the store closed; the worker no longer holds those leases, so it is nothing to report.
    const renewals: Promise<unknown>[] = [];
    let slow = false;
    /** Renewals that answer late, as on a loaded Redis. */
    class SlowRenewals extends RedisStore {
      override extend(...args: Parameters<RedisStore['extend']>): ReturnType<RedisStore['extend']> {
        if (!slow) return super.extend(...args);
        const late = new Promise((r) => setTimeout(r, 150)).then(() => super.extend(...args));
        renewals.push(late.catch(() => {}));
        return late;
      }
    }
    const queue = new Queue<number>(uniqueName('close'), { connection: fx.redis.url });
    const store = new SlowRenewals({ connection: fx.redis.url });
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const worker = errorLog.watch(
      new Worker<number>(
        queue.name,
        (job) =>
          new Promise<void>((r) => {
            started();
            job.signal.addEventListener('abort', () => r());
          }),
        { store, leaseMs: 150, closeTimeoutMs: 2_000 },
      ),
    );
    await queue.add(1);
    await running;
    slow = true;
    await until(() => renewals.length > 0, 'a renewal under way');
    await worker.close();
    await store.close();
    await Promise.all(renewals);
    await new Promise((r) => setImmediate(r));
    await queue.close();
  });
});
