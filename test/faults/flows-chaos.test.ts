/**
 * Flows under real worker processes on a real redis-server (docs/flows.md, issue 37's proof):
 * 1,000 flows of 10 children over two worker processes, one of them killed with -9 mid-run and
 * replaced. Every job is acked exactly once, every parent is handed out only after its last
 * child's ack (the event stream orders both on the server), nothing is lost, no hold is left and
 * verify() finds nothing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { WorkerFleet } from '../helpers/worker-fleet.js';
import { completions, readStream } from './stream.js';

const fx = useRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] });
const fleets: WorkerFleet[] = [];
fx.after(async () => {
  await Promise.all(fleets.map((f) => f.stopAll()));
});

const FLOWS = 1_000;
const CHILDREN = 10;

describe('flows under real worker processes', () => {
  test(`${FLOWS} flows of ${CHILDREN} children, two workers, one killed with -9: each parent acked once and only after its last child's ack; nothing lost`, async () => {
    const name = uniqueName('fchaos');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.events.enable({ maxLen: 10_000_000 });
    // Written as the flows' roots are: in batches of flows, each flow one call.
    for (let f = 0; f < FLOWS; f += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, FLOWS - f) }, (_, k) =>
          q.addFlow({ data: f + k, opts: { id: `p${f + k}` }, children: Array.from({ length: CHILDREN }, (_, c) => ({ data: c })) }),
        ),
      );
    }
    assert.equal((await q.stats()).heldJobs, FLOWS);
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 16, leaseMs: 1000, workMs: 1 });
    fleets.push(fleet);
    const victim = await fleet.start();
    await fleet.start();
    await until(() => fleet.completedIds().size >= 2_000, 'work under way before the kill', 30_000);
    await fleet.kill9(victim);
    await fleet.start();
    await until(
      async () => {
        const s = await q.stats();
        return s.scheduled === 0 && s.active === 0 && s.heldJobs === 0;
      },
      'every flow to finish',
      120_000,
      50,
    );

    const entries = await readStream(fx.client, name);
    const acked = completions(entries);
    assert.equal(acked.size, FLOWS * (CHILDREN + 1), 'every job completed');
    const twice = [...acked].filter(([, n]) => n !== 1);
    assert.deepEqual(twice, [], 'no job acked twice');
    // Stream order is the server's: a parent's first hand-out comes after its last child's ack.
    const lastChildAck = new Map<string, number>();
    const firstClaim = new Map<string, number>();
    entries.forEach((e, i) => {
      const slash = e.id.indexOf('/');
      if (e.event === 'completed' && slash > 0) lastChildAck.set(e.id.slice(0, slash), i);
      if (e.event === 'claimed' && slash < 0 && !firstClaim.has(e.id)) firstClaim.set(e.id, i);
    });
    const early = [...firstClaim].filter(([p, at]) => at < (lastChildAck.get(p) ?? Infinity));
    assert.deepEqual(early, [], 'no parent handed out before its last child was acked');
    assert.equal(firstClaim.size, FLOWS);
    assert.ok(fleet.killed.size === 1);
    const report = await q.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
    await q.close();
  });
});
