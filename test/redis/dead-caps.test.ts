import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, UnrecoverableError, ValidationError, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

function setup() {
  const queue = new Queue<number>(uniqueName('dc'), { connection: fx.redis.url });
  fx.track(queue);
  const worker = new Worker<number>(
    queue.name,
    () => {
      throw new UnrecoverableError('poison');
    },
    { connection: fx.redis.url, concurrency: 1, batch: 1 },
  );
  errorLog.watch(worker);
  fx.track(worker);
  return { queue };
}

/** Adds jobs the worker kills at once, and waits until none is left scheduled or active. */
async function killJobs(queue: Queue<number>, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++) await queue.add(i, { id: `j${i}` });
  await until(async () => {
    const s = await queue.stats();
    return s.scheduled + s.active === 0;
  }, 'the jobs to die');
}

describe('dead set caps', () => {
  test('a count cap keeps the newest deaths, purges the oldest with their bodies, at once and on each death', async () => {
    const { queue } = setup();
    await killJobs(queue, 0, 6);
    assert.equal((await queue.stats()).dead, 6);
    await queue.dead.setCaps({ maxCount: 3 });
    let page = await queue.dead.list();
    assert.equal(page.total, 3);
    assert.deepEqual(
      page.jobs.map((j) => j.id),
      ['j3', 'j4', 'j5'],
    );
    assert.equal(await fx.client.hexists(queueKeys('dq', queue.name).jobs, 'j0'), 0, 'purged bodies are gone');
    await killJobs(queue, 6, 2);
    page = await queue.dead.list();
    assert.deepEqual(
      page.jobs.map((j) => j.id),
      ['j5', 'j6', 'j7'],
    );
    assert.equal((await queue.verify()).ok, true);
  });

  test('an age cap drops deaths older than it when the next job dies; null removes the caps', async () => {
    const { queue } = setup();
    await killJobs(queue, 0, 3);
    const diedBy = await serverTimeMs(fx.client);
    await queue.dead.setCaps({ maxAgeMs: 200 });
    assert.equal((await queue.stats()).dead, 3, 'nothing is old enough yet');
    await until(async () => (await serverTimeMs(fx.client)) > diedBy + 250, 'the first deaths to age past the cap');
    await killJobs(queue, 3, 1);
    assert.deepEqual(
      (await queue.dead.list()).jobs.map((j) => j.id),
      ['j3'],
    );
    await queue.dead.setCaps({ maxAgeMs: null, maxCount: null });
    await killJobs(queue, 4, 2);
    assert.equal((await queue.stats()).dead, 3, 'three dead, none purged');
  });

  test('bad caps are refused by field', async () => {
    const { queue } = setup();
    await assert.rejects(queue.dead.setCaps({ maxCount: 0 }), (e: unknown) => e instanceof ValidationError && e.message.startsWith('maxCount'));
    await assert.rejects(queue.dead.setCaps({ maxAgeMs: -1 }), (e: unknown) => e instanceof ValidationError && e.message.startsWith('maxAgeMs'));
    await assert.rejects(queue.dead.setCaps({ max: 3 } as never), (e: unknown) => e instanceof ValidationError && e.message.startsWith('max'));
    assert.equal(await fx.client.exists(queueKeys('dq', queue.name).meta), 0);
  });
});

describe('dead-set retry by ids', () => {
  test('is sent in batches: no script run carries more than 1,000 ids, however many are named', async () => {
    const { queue } = setup();
    await killJobs(queue, 0, 3);
    const ids = [...Array.from({ length: 2497 }, (_, i) => `gone-${i}`), 'j0', 'j1', 'j2'];
    // Every command goes to the slow log with its arguments (the first 31, then a count of the rest).
    await fx.client.config('SET', 'slowlog-log-slower-than', '0');
    await fx.client.config('SET', 'slowlog-max-len', '10000');
    await fx.client.slowlog('RESET');
    try {
      assert.equal(await queue.dead.retry(ids), 3);
    } finally {
      await fx.client.config('SET', 'slowlog-log-slower-than', '10000');
    }
    const log = (await fx.client.slowlog('GET', 10000)) as [number, number, number, string[]][];
    const argCounts = log
      .map((entry) => entry[3])
      .filter((args) => /^(evalsha|fcall)$/i.test(args[0]!))
      .map((args) => {
        const more = /^\.\.\. \((\d+) more arguments\)$/.exec(args.at(-1)!);
        return more ? args.length - 1 + Number(more[1]) : args.length;
      });
    assert.ok(argCounts.length >= 3, `${argCounts.length} script runs`);
    assert.ok(Math.max(...argCounts) < 1100, `a script run carried ${Math.max(...argCounts)} arguments`);
  });
});
