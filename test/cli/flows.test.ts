/**
 * The CLI's flows on a real redis-server (docs/flows.md): `add --depends-on` holds a job,
 * `--wait-at-most` and `--on-child-failure` reach the store, bad input exits 64 and writes
 * nothing; `signal` releases a job a Worker left waiting, keeps one for a job not waiting, and
 * says when there is no such job (exit 2).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { run } from './run-cli.js';

const fx = useRedis();

describe('delayq add --depends-on, delayq signal', () => {
  test('add --depends-on holds the job; bad policies are refused; signal releases, keeps, or says there is no job', async () => {
    const name = uniqueName('cli-flow');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = fx.track(new Queue<unknown>(name, { connection: fx.redis.url }));
    await q.add(1, { id: 'charge', delay: 60_000 });
    const added = await run([
      ...g,
      'add',
      '{"o":1}',
      '--id',
      'ship',
      '--depends-on',
      'charge',
      '--wait-at-most',
      '1h',
      '--on-child-failure',
      'ignore',
      '--json',
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.equal(JSON.parse(added.stdout).state, 'held');
    const hold = await q.holdOf('ship');
    assert.deepEqual([hold?.state, hold?.waitingFor, hold?.onChildFailure, typeof hold?.deadlineAtMs], ['held', ['charge'], 'ignore', 'number']);
    const bad = await run([...g, 'add', '{}', '--id', 'x', '--depends-on', 'charge', '--on-child-failure', 'maybe']);
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /--on-child-failure must be 'fail' or 'ignore'/);
    const unknown = await run([...g, 'add', '{}', '--id', 'y', '--depends-on', 'nope']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /dependsOn.*names no job/);
    assert.equal(await q.get('x'), null);
    assert.equal(await q.get('y'), null);

    const seen: unknown[] = [];
    const w = fx.track(
      new Worker<unknown>(
        name,
        (job) => {
          if (job.id !== 'pay') return;
          if (!job.signalled) job.waitForSignal('payment');
          seen.push(job.signalled);
        },
        { connection: fx.redis.url },
      ),
    );
    void w;
    await q.add(1, { id: 'pay' });
    await until(async () => (await q.get('pay'))?.state === 'held', 'the job waits for its signal');
    const kept = await run([...g, 'signal', 'charge', 'payment']);
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(kept.stdout, /^kept: charge is scheduled/);
    const released = await run([...g, 'signal', 'pay', 'payment', '{"paid":true}']);
    assert.equal(released.code, 0, released.stderr);
    assert.match(released.stdout, /^released pay/);
    await until(() => seen.length === 1, 'the job runs again');
    assert.deepEqual(seen, [{ name: 'payment', timedOut: false, data: { paid: true } }]);
    const none = await run([...g, 'signal', 'nobody', 'payment']);
    assert.equal(none.code, 2);
    assert.match(none.stdout, /no job nobody/);
  });
});
