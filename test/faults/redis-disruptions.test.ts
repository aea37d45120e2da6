import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

/** Runs n jobs due over windowMs through two workers while `disrupt` runs, and checks none is stuck or lost. */
async function survive(disrupt: () => Promise<unknown>, what: string): Promise<void> {
  const name = uniqueName('dis');
  const queue = new Queue<number>(name, { connection: fx.redis.url });
  const n = 300;
  await queue.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { id: `d${i}`, delay: Math.floor((i / n) * 1500) } })));
  const seen = new Set<string>();
  const workers = [0, 1].map(() => {
    const w = new Worker<number>(name, (job) => void seen.add(job.id), { connection: fx.redis.url, concurrency: 10, leaseMs: 1000 });
    w.on('error', () => {});
    return w;
  });
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
  } finally {
    await Promise.all(workers.map((w) => w.close()));
    await queue.close();
  }
}

describe('Redis disruptions during work', () => {
  test('SCRIPT FLUSH: scripts are reloaded on NOSCRIPT', async () => {
    await survive(() => fx.client.script('FLUSH'), 'SCRIPT FLUSH');
  });

  test('CLIENT KILL TYPE normal: every connection drops, ioredis reconnects, re-sent commands are safe', async () => {
    await survive(() => fx.client.call('CLIENT', 'KILL', 'TYPE', 'normal'), 'CLIENT KILL');
  });

  test('CLIENT KILL TYPE pubsub: the wake subscription is renewed', async () => {
    await survive(() => fx.client.call('CLIENT', 'KILL', 'TYPE', 'pubsub'), 'CLIENT KILL TYPE pubsub');
  });

  test('CLIENT PAUSE 700 ALL: commands wait, then everything carries on', async () => {
    await survive(() => fx.client.call('CLIENT', 'PAUSE', '700', 'ALL'), 'CLIENT PAUSE');
  });
});
