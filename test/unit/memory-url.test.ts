import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryStore, Queue, ValidationError, Worker } from '../../src/index.js';
import { deferred, within } from '../helpers/wait.js';

describe('memory:// connections', () => {
  test('a Queue and a Worker naming the same memory:// URL share jobs; other names do not; closing keeps the data', async () => {
    const q = new Queue<string>('orders', { connection: 'memory://shop' });
    const other = new Queue<string>('orders', { connection: 'memory://elsewhere' });
    await q.add('x', { id: 'x', delay: 60_000 });
    assert.equal((await other.stats()).scheduled, 0);
    await q.close();
    const again = new Queue<string>('orders', { connection: 'memory://shop' });
    assert.equal((await again.get('x'))?.data, 'x');
    const ran = deferred<string>();
    const w = new Worker<string>('orders', (job) => ran.resolve(job.id), { connection: 'memory://shop' });
    await again.promote('x');
    assert.equal(await within(ran.promise, 5_000, 'the promoted job to run'), 'x');
    await w.close();
    await again.close();
    await other.close();
    MemoryStore.dropShared('shop');
    const fresh = new Queue('orders', { connection: 'memory://shop' });
    assert.equal((await fresh.stats()).scheduled, 0);
  });

  test('REDIS_URL=memory:// selects the embedded store when no connection is given', async () => {
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = 'memory://env';
    try {
      const q = new Queue('q');
      await q.add(1, { id: 'one', delay: 1000 });
      assert.equal((await MemoryStore.shared('env').get('q', 'one'))?.id, 'one');
      process.env.REDIS_URL = 'localhost:6379';
      assert.throws(
        () => new Queue('q'),
        (e: unknown) => e instanceof ValidationError && e.message.startsWith('REDIS_URL'),
      );
    } finally {
      if (saved === undefined) delete process.env.REDIS_URL;
      else process.env.REDIS_URL = saved;
    }
  });

  test('a malformed memory URL is refused', () => {
    assert.throws(
      () => new Queue('q', { connection: 'memory://bad name' }),
      (e: unknown) => e instanceof ValidationError && e.message.startsWith('connection'),
    );
  });
});
