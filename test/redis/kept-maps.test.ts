/**
 * The worker's hot path keeps one instance alive of each short-lived class it makes per job or
 * per call (a hand-out, a packed command), so that V8 keeps their maps and the optimized code
 * built for them across a full GC with none alive (handed-job.ts KEPT_JOB, packed-command.ts
 * KEPT_COMMAND). The kept instance helps only while it has the map real ones have: a field added,
 * or a value of another kind given to one, makes the real ones a map of their own, silently.
 * These tests say so when that happens.
 */
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { KEPT_COMMAND, PackedCommand } from '../../src/store/redis/packed-command.js';
import { KEPT_JOB } from '../../src/worker/handed-job.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { deferred, within } from '../helpers/wait.js';

const fx = useRedis();

// V8's own test of two objects' maps; the flag only lets this file's function below use it.
setFlagsFromString('--allow-natives-syntax');
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

describe('the kept instances have the maps of the real ones', () => {
  test('a job handed out over Redis, and the claims and acks written for it', async () => {
    const name = uniqueName('kept');
    const queue = fx.track(new Queue<{ n: number }>(name, { connection: fx.redis.url }));
    const sent: PackedCommand[] = [];
    const send = Redis.prototype.sendCommand;
    Redis.prototype.sendCommand = function (this: Redis, command, stream) {
      if (command instanceof PackedCommand) sent.push(command);
      return send.call(this, command, stream);
    };
    try {
      await queue.addBulk([{ data: { n: 1 } }, { data: { n: 2 }, opts: { priority: 3 } }]);
      const jobs: object[] = [];
      const done = deferred();
      const worker = new Worker<{ n: number }>(
        name,
        (job) => {
          jobs.push(job);
          if (jobs.length === 2) done.resolve();
        },
        { connection: fx.redis.url },
      );
      await within(done.promise, 5_000, 'both jobs to run');
      await worker.close();
      assert.equal(jobs.length, 2);
      for (const job of jobs) assert.ok(sameMap(job, KEPT_JOB), 'a hand-out has the map of KEPT_JOB (handed-job.ts)');
      // At least a claim and an ack, each with the map it had when sent and has once answered.
      assert.ok(sent.length >= 2, `claims and acks went out as PackedCommands (${sent.length})`);
      for (const command of sent) assert.ok(sameMap(command, KEPT_COMMAND), `a ${command.name} command has the map of KEPT_COMMAND (packed-command.ts)`);
    } finally {
      Redis.prototype.sendCommand = send;
    }
  });
});
