import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Queue, type RedisStore, type ShardedStore, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { startSentinel, type SentinelSetup } from '../helpers/redis-sentinel.js';
import { until } from '../helpers/wait.js';

let setup: SentinelSetup;
before(async () => {
  setup = await startSentinel();
});
after(async () => {
  await setup.stop();
});

describe('Sentinel failover', () => {
  test('kill -9 the master mid-run: the replica takes over and every replicated job still runs, with no help; group counts stay true', async () => {
    const name = uniqueName('s');
    const connection = setup.connection;
    const queue = new Queue<number>(name, { connection });
    const n = 300;
    // Half the jobs in 5 groups of at most 3 at once: after the failover every group's counts
    // must still equal its jobs (verify), whatever the promoted replica had last replicated.
    await queue.setLimits({ groupConcurrency: 3 });
    // Due over the next ~4 s, so the failover happens while jobs fall due.
    const results = await queue.addBulk(
      Array.from({ length: n }, (_, i) => ({
        data: i,
        opts: { id: `j${i}`, delay: 200 + Math.floor((i / n) * 4000), group: i % 2 ? `g${i % 5}` : undefined },
      })),
    );
    assert.equal(results.filter((r) => r.added).length, n);
    // What a producer does when an add must survive a failover (docs/operations.md).
    assert.equal(await ((queue.store as ShardedStore).inner as RedisStore).client.wait(1, 5000), 1);

    const ran = new Set<number>();
    const errors: Error[] = [];
    const worker = new Worker<number>(name, (job) => void ran.add(job.data), { connection, concurrency: 20, leaseMs: 1000 });
    worker.on('error', (e) => errors.push(e));
    try {
      await until(() => ran.size >= 30, 'the first jobs to run on the old master');
      const oldMaster = setup.master.port;
      await setup.master.kill9();
      const killedAt = Date.now();
      await until(async () => (await setup.currentMasterPort()) !== oldMaster, 'the sentinel to promote the replica', 30_000);
      const promotedAt = Date.now();
      await until(() => ran.size === n, 'every job to run after the failover', 30_000);
      const doneAt = Date.now();
      const report = await queue.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
      assert.equal((await queue.stats()).scheduled, 0);
      assert.deepEqual((await queue.groups.list()).groups, [], 'no slot left taken');
      assert.ok(errors.length > 0, 'the outage was seen (errors reported, not thrown)');
      console.log(`# failover: promoted ${promotedAt - killedAt} ms after kill -9, all ${n} jobs done ${doneAt - promotedAt} ms after promotion`);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
