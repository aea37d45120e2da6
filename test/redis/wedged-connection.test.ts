import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Queue, RedisStore, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { startProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { deferred } from '../helpers/wait.js';

let redis: RedisServer;
let proxy: TcpProxy;
before(async () => {
  redis = await startRedis();
  proxy = await startProxy(redis.port);
});
after(async () => {
  await proxy.close();
  await redis.stop();
});

test('a worker whose connections go silent (half-open) reconnects and runs the jobs due meanwhile', { timeout: 30_000 }, async () => {
  const name = uniqueName('wedge');
  const store = new RedisStore({ connection: proxy.url, claimWatchdogMs: 1000 });
  const queue = new Queue<string>(name, { connection: redis.url });
  const ran = new Map<string, number>();
  const both = deferred();
  const worker = new Worker<string>(
    name,
    (job) => {
      ran.set(job.id, Date.now());
      if (ran.size === 2) both.resolve();
    },
    { store, idleCheckMs: 200 },
  );
  worker.on('error', () => {});
  await queue.add('before', { id: 'before' });
  // Wait for the first job, so both of the worker's connections are up and idle.
  while (!ran.has('before')) await new Promise((r) => setTimeout(r, 10));
  proxy.freezeExisting();
  const frozenAt = Date.now();
  // Due while the worker's sockets are dead: no signal reaches it, and its claims hang.
  await queue.add('during', { id: 'during', delay: 100 });
  await both.promise;
  const waited = ran.get('during')! - frozenAt;
  // The claim watchdog (1 s here) notices the silence; without it the job would wait for TCP
  // keepalive, which takes minutes.
  assert.ok(waited < 5000, `the job due during the freeze ran ${waited} ms after it`);
  await worker.close();
  await store.close();
  await queue.close();
});
