/**
 * `delayq jobs find --error`, `delayq dead retry --error` and `dead purge --error`: every match
 * counted, nothing done without `--expect`, never more than confirmed, on a real redis-server.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { assertFailure, run } from './run-cli.js';

const fx = useRedis();

describe('bulk actions by error text', () => {
  test('find counts every match; retry and purge need --expect, refuse more than confirmed, and act on the matches only', async () => {
    const name = uniqueName('errs');
    const q = new Queue<string>(name, { connection: fx.redis.url });
    const w = new Worker<string>(
      name,
      async (job) => {
        throw new UnrecoverableError(job.data === 'timeout' ? 'connect ETIMEDOUT 10.0.0.7:443' : 'card declined: bad card');
      },
      { connection: fx.redis.url, concurrency: 8 },
    );
    w.on('error', () => {});
    try {
      await q.addBulk([
        ...Array.from({ length: 5 }, (_, i) => ({ data: 'timeout', opts: { id: `t${i}` } })),
        ...Array.from({ length: 3 }, (_, i) => ({ data: 'card', opts: { id: `c${i}` } })),
      ]);
      await until(async () => (await q.stats()).dead === 8, 'eight dead jobs', 10_000);
    } finally {
      await w.close();
    }
    const g = ['--redis', fx.redis.url, '--queue', name];

    const found = await run([...g, 'jobs', 'find', '--error', 'ETIMEDOUT', '--limit', '2']);
    assert.equal(found.code, 0, found.stderr);
    const lines = found.stdout.trim().split('\n');
    assert.equal(lines[0], '5 dead jobs whose last error contains "ETIMEDOUT" (the first 2 below)');
    assert.equal(lines.length, 4);
    assert.match(lines[1]!, /^t\d .*connect ETIMEDOUT/);
    assert.match(lines[3]!, /retry them: delayq --redis \S+ --queue \S+ dead retry --error ETIMEDOUT --expect 5$/);
    assert.equal(JSON.parse((await run([...g, 'jobs', 'find', '--error', 'bad card', '--json'])).stdout).count, 3);

    // No --expect: the count and the command, nothing done.
    const unconfirmed = assertFailure(await run([...g, 'dead', 'retry', '--error', 'ETIMEDOUT']), 64, 'no --expect');
    assert.equal(unconfirmed.message, '5 dead jobs match: confirm the count with --expect 5');
    assert.match(unconfirmed.hint ?? '', /^run: delayq .* dead retry --error ETIMEDOUT --expect 5$/);
    // Fewer confirmed than match: refused, nothing done.
    const over = assertFailure(await run([...g, 'dead', 'retry', '--error', 'ETIMEDOUT', '--expect', '4']), 1, 'over');
    assert.equal(over.message, '5 jobs match now, more than the 4 confirmed: nothing was changed');
    assert.equal((await q.stats()).dead, 8);
    assertFailure(await run([...g, 'dead', 'retry', '--expect', '5', 't0']), 64, '--expect without --error');
    assertFailure(await run([...g, 'dead', 'purge', '--error', 'x', '--all']), 64, 'two modes');
    assertFailure(await run([...g, 'dead', 'purge', '--error', 'x', '--expect', 'lots']), 64, 'a bad --expect');

    const purged = await run([...g, 'dead', 'purge', '--error', 'bad card', '--expect', '3']);
    assert.equal(purged.code, 0, purged.stderr);
    assert.equal(purged.stdout.trim(), 'purged 3 whose last error contains "bad card"');
    const retried = await run([...g, 'dead', 'retry', '--error', 'ETIMEDOUT', '--expect', '9', '--json']);
    assert.equal(retried.code, 0, retried.stderr);
    assert.deepEqual(JSON.parse(retried.stdout), { retried: 5 });
    const s = await q.stats();
    assert.equal(s.dead, 0);
    assert.equal(s.scheduled, 5);
    // Nothing matches any more: exit 2, "not changed".
    assert.equal((await run([...g, 'dead', 'purge', '--error', 'bad card', '--expect', '0'])).code, 2);
    await q.close();
  });
});
