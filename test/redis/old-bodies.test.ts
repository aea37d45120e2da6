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

test('dead jobs of the version before protocol 4 (a run state without `/<max attempts>`) read as before, beside one of this version', async () => {
  const name = uniqueName('old-runs');
  const k = (s: string) => `dq:{${name}}:${s}`;
  const queue = fx.track(new Queue<{ v: string }>(name, { connection: fx.redis.url }));
  await queue.add({ v: 'new' }, { id: 'new' });
  const now = await serverTimeMs(fx.client);
  // As the previous fail.lua wrote a job that ran out of the worker's attempts: `<attempts>:<due>:-<token>:<started>:<worker>:<error>`.
  await fx.client.hset(k('jobs'), 'old', `100:${now}:0::0:0:{"v":"old"}`);
  await fx.client.hset(k('runs'), 'old', `3:${now}:-${now}-7:${now}:w1:Error: boom`);
  await fx.client.zadd(k('dead'), now, 'old');
  await fx.client.set(k('seq'), '100');
  // This version's: the max that applied kept after the attempts.
  await fx.client.hset(k('jobs'), 'spent', `101:${now}:0::0:0:{"v":"spent"}`);
  await fx.client.hset(k('runs'), 'spent', `3/3:${now}:-${now}-8:${now}:w1:Error: boom`);
  await fx.client.zadd(k('dead'), now, 'spent');

  const dead = (await queue.dead.list()).jobs.map((j) => [j.id, j.attempt, j.maxAttempts, j.lastError]);
  assert.deepEqual(dead, [
    ['old', 3, undefined, 'Error: boom'],
    ['spent', 3, 3, 'Error: boom'],
  ]);
  const got = await queue.get('old');
  assert.deepEqual([got?.state, got?.attempt, got?.maxAttempts, got?.workerId, got?.startedAtMs], ['dead', 3, undefined, 'w1', now]);
  assert.deepEqual([(await queue.get('spent'))?.attempt, (await queue.get('spent'))?.maxAttempts], [3, 3]);
  // Put back, both start afresh: no attempts, no max of the last life.
  assert.equal(await queue.dead.retry({ all: true }), 2);
  for (const id of ['old', 'spent']) assert.deepEqual([(await queue.get(id))?.attempt, (await queue.get(id))?.maxAttempts], [0, undefined]);
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});
