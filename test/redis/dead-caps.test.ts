import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, UnrecoverableError, ValidationError, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until } from '../helpers/wait.js';

const fx = useRedis();

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
  worker.on('error', () => {});
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
    assert.equal(await fx.client.hexists(`dq:{${queue.name}}:jobs`, 'j0'), 0, 'purged bodies are gone');
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
    assert.equal(await fx.client.exists(`dq:{${queue.name}}:meta`), 0);
  });
});
