import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, RedisStore, Worker } from '../../src/index.js';
import type { WakeSubscription } from '../../src/store/store.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { startProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { deferred, until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

let proxy: TcpProxy;
fx.before(async () => {
  proxy = await startProxy(fx.redis.port);
});
fx.after(() => proxy.close());

test('a worker whose connections go silent (half-open) reconnects and runs the jobs due meanwhile', { timeout: 30_000 }, async () => {
  const name = uniqueName('wedge');
  const store = new RedisStore({ connection: proxy.url, claimWatchdogMs: 1000 });
  const queue = new Queue<string>(name, { connection: fx.redis.url });
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
  // What the worker did, so a run that never gets the job says where it stopped.
  const seen: string[] = [];
  const t0 = Date.now();
  const note = (what: string) => seen.push(`${Date.now() - t0} ms ${what}`);
  worker.on('error', (e) => note(`error ${e.message}`));
  worker.on('claimed', (job) => note(`claimed ${job.id}`));
  for (const ev of ['close', 'reconnecting', 'ready']) store.client.on(ev, () => note(`command connection ${ev}`));
  const stateOf = async () => {
    const c = store.client as unknown as { status: string; commandQueue: { length: number }; offlineQueue: { length: number } };
    const jobs = await Promise.all(['before', 'during'].map(async (id) => `${id}: ${JSON.stringify(await queue.get(id))}`));
    return `${jobs.join('; ')}; connection ${c.status}, ${c.commandQueue.length} sent unanswered, ${c.offlineQueue.length} waiting; worker:\n${seen.join('\n')}`;
  };
  await queue.add('before', { id: 'before' });
  note('added before');
  // The freeze may come before or after the subscriber's SUBSCRIBE was answered: both must heal.
  await until(() => ran.has('before'), 'the first job', 5000).catch(async (err: Error) => {
    throw new Error(`${err.message}; ${await stateOf()}`);
  });
  proxy.freezeExisting();
  const frozenAt = Date.now();
  note('frozen');
  // Due while the worker's sockets are dead: no signal reaches it, and its claims hang.
  await queue.add('during', { id: 'during', delay: 100 });
  try {
    await within(both.promise, 8000, 'the job due during the freeze');
  } catch (err) {
    throw new Error(`${(err as Error).message}; ${await stateOf()}`);
  }
  const waited = ran.get('during')! - frozenAt;
  // The claim watchdog (1 s here) notices the silence; without it the job would wait for TCP
  // keepalive, which takes minutes.
  assert.ok(waited < 5000, `the job due during the freeze ran ${waited} ms after it`);
  await worker.close();
  await store.close();
  await queue.close();
});

test('a subscriber connection half-open from the start (handshake or SUBSCRIBE never answered) is dropped and subscribes again', async () => {
  const name = uniqueName('wedge');
  const store = new RedisStore({ connection: proxy.url, subscriberWatchdogMs: 500 });
  const queue = new Queue<string>(name, { connection: fx.redis.url });
  let sub: WakeSubscription | undefined;
  try {
    await store.client.ping();
    proxy.deadOnArrival(1);
    const woken = deferred<number>();
    sub = await within(
      store.subscribe([name], { onWake: (dueAtMs) => woken.resolve(dueAtMs), onResubscribed: () => {}, onError: () => {} }),
      5000,
      'the subscription over a connection that never answers',
    );
    // Live, not only answered: a signal published now reaches it.
    await queue.add('x', { id: 'x', delay: 60_000 });
    const dueAtMs = await within(woken.promise, 5000, 'the wake signal of an add');
    assert.equal(dueAtMs, (await queue.get('x'))!.dueAtMs);
  } finally {
    await sub?.close();
    await store.close();
    await queue.close();
  }
});

test('worker.close() does not wait for a subscription that has not come up', async () => {
  const name = uniqueName('wedge');
  // A watchdog far off, so the subscription stays down for the whole test.
  const store = new RedisStore({ connection: proxy.url, subscriberWatchdogMs: 60_000 });
  const queue = new Queue<string>(name, { connection: fx.redis.url });
  try {
    await store.client.ping();
    proxy.deadOnArrival(1);
    const ran = deferred();
    const worker = new Worker(name, () => ran.resolve(), { store, idleCheckMs: 100 });
    errorLog.watch(worker);
    // It runs jobs (its idle check finds them) while its subscription hangs.
    await queue.add('x');
    await within(ran.promise, 5000, 'a job run without signals');
    const from = performance.now();
    await within(worker.close({ timeoutMs: 10_000 }), 5000, 'worker.close()');
    const ms = performance.now() - from;
    assert.ok(ms < 1000, `close took ${Math.round(ms)} ms`);
  } finally {
    await store.close();
    await queue.close();
  }
});
