/**
 * The CLI's job control on a real redis-server: `cancel --running` and `fail` end a job a Worker
 * holds (its signal aborts), `fail --dead` buries a waiting one, `wait` prints a result and says
 * how a job ended in its exit code, `add --timeout` sets a job's own timeout; bad input exits 64
 * and writes nothing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker, type Job } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { run } from './run-cli.js';

const fx = useRedis();

describe('delayq cancel --running, fail, wait, add --timeout', () => {
  test('a running job is cancelled or failed from the command line; wait prints the result or says how it ended', async () => {
    const name = uniqueName('cli-jc');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = fx.track(new Queue<number>(name, { connection: fx.redis.url }));
    const held = new Map<string, Job<number>>();
    const w = fx.track(
      new Worker<number>(
        name,
        (job) => {
          if (job.data === 0) return { ok: job.id };
          void job.log('holding');
          held.set(job.id, job);
          return new Promise(() => {});
        },
        { connection: fx.redis.url, concurrency: 5 },
      ),
    );
    await q.add(1, { id: 'wh:1' });
    await q.add(1, { id: 'wh:2', attempts: 3 });
    await until(() => held.has('wh:1') && held.has('wh:2'), 'both run');

    await until(async () => (await q.get('wh:1'))?.logs?.length === 1, 'the log line lands');
    const shown = (await run([...g, 'get', 'wh:1'])).stdout;
    for (const line of [/^started {4}\S+ \(first hand-out\)$/m, /^running {4}since /m, /^worker {5}\S+$/m, /^logs\n {2}holding$/m]) assert.match(shown, line);
    const listed = await run([...g, 'jobs', 'ls', '--state', 'active']);
    assert.match(listed.stdout, /wh:1 .*running \d/);
    const refused = await run([...g, 'cancel', 'wh:1']);
    assert.equal(refused.code, 2);
    assert.match(refused.stdout, /not cancelled: wh:1 is active \(add --running/);
    const waiting = run([...g, 'wait', 'wh:1', '--timeout', '10s', '--json']);
    await until(async () => (await fx.client.zscore(`dq:{${name}}:waiters`, 'wh:1')) !== null, 'the CLI wait is registered');
    const cancelled = await run([...g, 'cancel', 'wh:1', '--running', '--reason', 'upstream is down']);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.match(cancelled.stdout, /^cancelled wh:1 \(it was running/);
    const signal = held.get('wh:1')!.signal;
    await until(() => signal.aborted, 'the handler is told', 5000);
    assert.equal(signal.reason, 'cancelled');
    const waited = await waiting;
    assert.equal(waited.code, 1);
    assert.deepEqual(JSON.parse(waited.stdout), { id: 'wh:1', outcome: 'cancelled', reason: 'upstream is down' });

    const failed = await run([...g, 'fail', 'wh:2', '--reason', 'hung', '--retry-delay', '1h', '--json']);
    assert.equal(failed.code, 0, failed.stderr);
    assert.equal(JSON.parse(failed.stdout).outcome, 'retried');
    assert.equal(held.get('wh:2')!.signal.reason, 'failed');
    const job = await q.get('wh:2');
    assert.equal(job?.state, 'scheduled');
    assert.equal(job?.lastError, 'hung');
    assert.ok(job!.dueAtMs > Date.now() + 3_000_000);

    // A waiting job: refused without --dead (exit 2), buried with it.
    const notStarted = await run([...g, 'fail', 'wh:2']);
    assert.equal(notStarted.code, 2);
    assert.match(notStarted.stdout, /wh:2 is scheduled \(it has not started: add --dead/);
    assert.equal((await run([...g, 'fail', 'wh:2', '--dead', '--reason', 'poison'])).code, 0);
    assert.equal((await q.get('wh:2'))?.state, 'dead');
    const dead = await run([...g, 'wait', 'wh:2']);
    assert.equal(dead.code, 1);
    assert.match(dead.stdout, /^wh:2 died: poison/);

    // wait: a result, no such job, a timeout.
    const added = await run([...g, 'add', '0', '--id', 'quick', '--timeout', '30s', '--json']);
    assert.equal(added.code, 0, added.stderr);
    const done = await run([...g, 'wait', 'quick', '--timeout', '10s']);
    assert.ok(done.code === 0 || done.code === 2, done.stderr);
    assert.equal((await run([...g, 'wait', 'nope', '--timeout', '1s'])).code, 2);
    await q.add(1, { id: 'later', delay: 60_000 });
    const slow = await run([...g, 'wait', 'later', '--timeout', '200ms']);
    assert.equal(slow.code, 2);
    assert.match(slow.stdout, /later did not end within/);
    await w.close({ timeoutMs: 0 });
  });

  test('add --timeout keeps the job its own timeout; get shows it; bad values exit 64 and write nothing', async () => {
    const name = uniqueName('cli-jc');
    const g = ['--redis', fx.redis.url, '--queue', name];
    assert.equal((await run([...g, 'add', '1', '--id', 't', '--timeout', '2m', '--delay', '1h'])).code, 0);
    assert.match((await run([...g, 'get', 't'])).stdout, /timeout {4}2\.0 min per attempt/);
    assert.equal(JSON.parse((await run([...g, 'get', 't', '--json'])).stdout).timeoutMs, 120_000);
    for (const bad of [
      ['add', '1', '--id', 'b1', '--timeout', '0'],
      ['add', '1', '--id', 'b2', '--timeout', 'soon'],
      ['fail', 't', '--retry-delay', '-1'],
      ['wait', 't', '--timeout', 'x'],
    ]) {
      const r = await run([...g, ...bad]);
      assert.equal(r.code, 64, `${bad.join(' ')}: ${r.stdout}${r.stderr}`);
    }
    const q = fx.track(new Queue(name, { connection: fx.redis.url }));
    assert.equal(await q.get('b1'), null);
    assert.equal(await q.get('b2'), null);
    assert.equal((await q.get('t'))?.state, 'scheduled');
  });
});
