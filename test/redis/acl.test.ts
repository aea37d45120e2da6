import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { aclRules, Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

fx.before(async () => {
  await fx.client.call('ACL', 'SETUSER', 'jobs', 'on', '>s3cret', ...aclRules('dq'));
});

describe('least-privilege ACL user', () => {
  test('a user with only aclRules() can add, work, fail, snooze, pause, follow events, read the dead set and verify', async () => {
    const url = `redis://jobs:s3cret@127.0.0.1:${fx.redis.port}`;
    const name = uniqueName('acl');
    const queue = new Queue<string>(name, { connection: url });
    let snoozed = false;
    const worker = new Worker<string>(
      name,
      (job) => {
        if (job.data === 'fail') throw new Error('no');
        // A snooze does not spend an attempt, so remember it here.
        if (job.data === 'snooze' && !snoozed) {
          snoozed = true;
          job.snooze(10);
        }
      },
      { connection: url, attempts: 1 },
    );
    const errors: Error[] = [];
    worker.on('error', (e) => errors.push(e));
    const done: string[] = [];
    worker.on('completed', (j) => done.push(j.id));
    worker.on('dead', (j) => done.push(j.id));
    try {
      await queue.events.enable({ maxLen: 100 });
      const ac = new AbortController();
      const seen: string[] = [];
      const following = (async () => {
        for await (const e of queue.events.follow({ after: '0', signal: ac.signal })) seen.push(e.event);
      })();
      await queue.add('ok', { id: 'ok', dedup: { key: 'k', windowMs: 1000 } });
      await queue.add('fail', { id: 'fail' });
      await queue.add('snooze', { id: 'snooze', delay: 5 });
      await until(() => done.length === 3, 'the three jobs to end');
      await queue.pause();
      await queue.resume();
      await queue.reschedule('nope', { delay: 1 });
      assert.equal((await queue.dead.list()).total, 1);
      assert.equal((await queue.stats()).dead, 1);
      assert.equal((await queue.verify()).ok, true);
      await until(() => seen.includes('resumed'), 'the feed to reach the resume');
      ac.abort();
      await following;
      assert.deepEqual(errors, []);
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  test('a user the rules of an earlier version allowed (no FCALL, no FUNCTION LOAD) still works, through the EVAL scripts', async () => {
    const older = aclRules('dq').filter((r) => r !== '+fcall' && r !== '+function|load');
    assert.equal(older.length, aclRules('dq').length - 2);
    await fx.client.call('ACL', 'SETUSER', 'older', 'on', '>s3cret', ...older);
    await fx.client.call('FUNCTION', 'FLUSH');
    const url = `redis://older:s3cret@127.0.0.1:${fx.redis.port}`;
    const name = uniqueName('acl-older');
    const queue = new Queue<string>(name, { connection: url });
    const done: string[] = [];
    const worker = new Worker<string>(name, (job) => void done.push(job.id), { connection: url });
    try {
      await fx.client.config('RESETSTAT');
      await queue.add('a', { id: 'a' });
      await until(() => done.length === 1, 'the job to run');
      await until(async () => (await queue.stats()).completedTotal === 1, 'its ack');
      const stats = await fx.client.info('commandstats');
      assert.match(stats, /cmdstat_evalsha:calls=/);
      assert.doesNotMatch(stats, /cmdstat_function\|load:calls=[1-9]/);
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  test('the same user cannot touch keys outside the prefix', async () => {
    const url = `redis://jobs:s3cret@127.0.0.1:${fx.redis.port}`;
    const queue = new Queue(uniqueName('acl'), { connection: url, prefix: 'other' });
    try {
      await assert.rejects(queue.add(1), /NOPERM/);
    } finally {
      await queue.close();
    }
  });
});
