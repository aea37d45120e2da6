import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Queue, Worker } from '../src/index.js';
import { uniqueName } from './helpers/names.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

test('a job added with a delay runs once, after its due time', async () => {
  const name = uniqueName();
  const queue = new Queue<{ n: number }>(name, { connection: redis.url });
  const r = await queue.add({ n: 1 }, { delay: 50 });
  assert.equal(r.added, true);
  const seen: number[] = [];
  const done = new Promise<void>((resolve) => {
    const worker = new Worker<{ n: number }>(name, async (job) => {
      seen.push(job.data.n);
      resolve();
    }, { connection: redis.url });
    worker.on('completed', () => void worker.close());
  });
  await done;
  assert.deepEqual(seen, [1]);
  await queue.close();
});
