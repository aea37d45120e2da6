import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConnectionError, Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

/** Runs n jobs due over windowMs through two workers while `disrupt` runs, and checks none is stuck or lost. */
async function survive(disrupt: () => Promise<unknown>, what: string, after?: (queue: Queue<number>) => Promise<void>): Promise<void> {
  const name = uniqueName('dis');
  const queue = new Queue<number>(name, { connection: fx.redis.url });
  const n = 300;
  await queue.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { id: `d${i}`, delay: Math.floor((i / n) * 1500) } })));
  const seen = new Set<string>();
  // No idle check within the test: a worker with nothing due hears of new work only by its wake subscription.
  const workers = [0, 1].map(() =>
    errorLog.watch(
      new Worker<number>(name, (job) => void seen.add(job.id), { connection: fx.redis.url, concurrency: 10, leaseMs: 1000, idleCheckMs: 600_000 }),
    ),
  );
  try {
    await until(() => seen.size >= 50, 'work to be under way');
    await disrupt();
    await until(
      async () => {
        const s = await queue.stats();
        return seen.size === n && s.scheduled === 0 && s.active === 0;
      },
      `every job to finish after ${what}`,
      20_000,
    );
    assert.equal((await queue.stats()).dead, 0);
    const report = await queue.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
    await after?.(queue);
  } finally {
    await within(Promise.all(workers.map((w) => w.close())), 5_000, 'the workers to close');
    await queue.close();
  }
}

/** The ids of the pub/sub connections the server has now. */
async function pubsubClients(): Promise<string[]> {
  const list = (await fx.client.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
  return [...list.matchAll(/(?:^|\n)id=(\d+) /g)].map((m) => m[1]!);
}

describe('Redis disruptions during work', () => {
  test('FUNCTION FLUSH: the library is loaded again on "Function not found"', async () => {
    await survive(() => fx.client.call('FUNCTION', 'FLUSH'), 'FUNCTION FLUSH');
  });

  test('SCRIPT FLUSH and FUNCTION FLUSH together', async () => {
    await survive(async () => {
      await fx.client.script('FLUSH');
      await fx.client.call('FUNCTION', 'FLUSH');
    }, 'both flushes');
  });

  test('CLIENT KILL TYPE normal: every connection drops, ioredis reconnects, re-sent commands are safe', async () => {
    await survive(() => fx.client.call('CLIENT', 'KILL', 'TYPE', 'normal'), 'CLIENT KILL');
    // The drop may be reported (a call was in flight), as a ConnectionError naming the server.
    errorLog.take((e) => e instanceof ConnectionError && e.address === `127.0.0.1:${fx.redis.port}`);
  });

  test('CLIENT KILL TYPE pubsub: the wake subscription is renewed', async () => {
    // Workers under load also wake at the due times and lease deadlines their claims tell them
    // of, so the load cannot tell whether signals still arrive. A worker with nothing to do and
    // no idle check for ten minutes hears of a new job only through its wake subscription.
    const idleName = uniqueName('idle');
    const idleRan = new Set<string>();
    const idle = errorLog.watch(new Worker(idleName, (job) => void idleRan.add(job.id), { connection: fx.redis.url, idleCheckMs: 600_000 }));
    const idleQueue = new Queue(idleName, { connection: fx.redis.url });
    const subscribers = async (queue: string) => {
      const [, count] = (await fx.client.call('PUBSUB', 'NUMSUB', queueKeys('dq', queue).wake)) as [string, number];
      return Number(count);
    };
    try {
      await until(async () => (await subscribers(idleName)) === 1, 'the idle worker to subscribe', 5_000);
      let killed: string[] = [];
      await survive(
        async () => {
          killed = await pubsubClients();
          assert.equal(killed.length, 3, 'one wake subscription per worker before the kill');
          await fx.client.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
        },
        'CLIENT KILL TYPE pubsub',
        async (queue) => {
          await until(
            async () => {
              const now = await pubsubClients();
              return (
                (await subscribers(queue.name)) === 2 && (await subscribers(idleName)) === 1 && now.length === 3 && now.every((id) => !killed.includes(id))
              );
            },
            'every worker to subscribe to its wake channel again, on a new connection',
            5_000,
          );
          await idleQueue.add(0, { id: 'after-kill' });
          await until(() => idleRan.has('after-kill'), 'the idle worker to run a job added after the kill (woken through the renewed subscription)', 3_000);
        },
      );
    } finally {
      await within(idle.close(), 5_000, 'the idle worker to close');
      await idleQueue.close();
    }
  });

  test('CLIENT PAUSE 700 ALL: commands wait, then everything carries on', async () => {
    await survive(() => fx.client.call('CLIENT', 'PAUSE', '700', 'ALL'), 'CLIENT PAUSE');
  });
});
