/**
 * Jobs written by the version before job names (their bodies have no `/<name length>`, wire.ts
 * JOB_BODY) beside jobs of this version: they read, claim and run on a Worker with handlers by
 * name (its `default`), keep their priority, attempts and backoff, retry and complete, and the
 * queue verifies. The old bodies are written byte for byte as that version's add.lua wrote them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue, Worker, type Job } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { deferred, serverTimeMs, within } from '../helpers/wait.js';

const fx = useRedis();

test('bodies of the version before names read, claim, retry and complete beside named jobs', async () => {
  const name = uniqueName('old-bodies');
  const k = (s: string) => `dq:{${name}}:${s}`;
  const queue = fx.track(new Queue<{ v: string }>(name, { connection: fx.redis.url }));
  // A named job of this version first: the queue's keys exist, its sequence taken.
  await queue.add({ v: 'new' }, { id: 'new', name: 'send-email' });
  const now = await serverTimeMs(fx.client);
  // As the previous add.lua wrote them: `<seq>:<created>:<priority>:<max>:<bl>:<xl>:<backoff><trace><data>`.
  await fx.client.hset(k('jobs'), 'old-1', `100:${now}:5:2:5:0:f:100{"v":"old-1"}`, 'old-2', `101:${now}:0::0:0:{"v":"old-2"}`);
  await fx.client.zadd(k('scheduled'), now, 'old-1', now, 'old-2');
  await fx.client.set(k('seq'), '101');

  const info = await queue.get('old-1');
  assert.deepEqual([info?.name, info?.data, info?.priority, info?.maxAttempts], [undefined, { v: 'old-1' }, 5, 2]);

  const ran: string[] = [];
  const all = deferred();
  let failedOnce = false;
  const note = (who: string) => (job: Job<{ v: string }>) => {
    // old-1 fails its first attempt: its own backoff (fixed 100 ms) and max attempts (2) hold.
    if (job.id === 'old-1' && !failedOnce) {
      failedOnce = true;
      throw new Error('first attempt');
    }
    ran.push(`${job.id}:${job.name ?? '-'}:${who}:${job.attempt}/${job.maxAttempts}`);
    if (ran.length === 3) all.resolve();
  };
  const worker = new Worker<{ v: string }>(name, { 'send-email': note('email'), default: note('default') }, { connection: fx.redis.url, attempts: 5 });
  await within(all.promise, 10_000, 'the three jobs to run');
  await worker.close();
  assert.deepEqual(ran.sort(), ['new:send-email:email:1/5', 'old-1:-:default:2/2', 'old-2:-:default:1/5']);
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
  assert.equal((await queue.stats()).scheduled, 0);
});
