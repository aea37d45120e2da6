/**
 * Groups and concurrency limits against real worker processes on a real redis-server: the limits
 * hold at every instant across processes (measured from the handlers' own start and end times),
 * and a worker killed with -9 while it holds slots leaks none: once its leases run out every
 * group's running count equals its jobs in `active` (verify) and nothing is lost.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { type Report, WorkerFleet } from '../helpers/worker-fleet.js';
import { completions, readStream } from './stream.js';

const fx = useRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
const fleets: WorkerFleet[] = [];
fx.after(async () => {
  await Promise.all(fleets.map((f) => f.stopAll()));
});

interface Run {
  id: string;
  group: string;
  from: number;
  to: number;
}

/** The handlers' runs: start to end, or to the kill of their process when they never ended. */
function runs(reports: Report[], killedAt: Map<number, number>): Run[] {
  const out: Run[] = [];
  for (const s of reports.filter((r) => r.t === 'start')) {
    const end = reports.find((r) => r.t === 'end' && r.token === s.token);
    const to = end?.at ?? killedAt.get(s.pid);
    assert.ok(to !== undefined, `run ${s.token} of ${s.id} never ended, and its process was not killed`);
    out.push({ id: s.id!, group: s.group!, from: s.at!, to });
  }
  return out;
}

/** The most runs at once (of those `keep` accepts), over every instant. */
function peak(all: Run[], keep: (r: Run) => boolean = () => true): number {
  const edges = all.filter(keep).flatMap((r) => [
    { at: r.from, d: 1 },
    { at: r.to, d: -1 },
  ]);
  // An end at the same millisecond as a start is counted first: the slot was free by then.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let n = 0;
  let max = 0;
  for (const e of edges) {
    n += e.d;
    max = Math.max(max, n);
  }
  return max;
}

describe('groups under real worker processes', () => {
  test('two workers: per-group 1 and queue-wide 6 never exceeded; kill -9 of one mid-batch leaks no slot and loses nothing', async () => {
    const name = uniqueName('gchaos');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.events.enable({ maxLen: 1_000_000 });
    await q.setLimits({ concurrency: 6, groupConcurrency: 1 });
    const groups = 8;
    // Enough work (~1.3 s at 6 at once) that the victim is still taking jobs when the kill comes:
    // with 10 a group the rest could finish between the first completions and the victim's next
    // run, on a busy machine (a flaky wait, seen in CI).
    const perGroup = 25;
    await q.addBulk(Array.from({ length: groups * perGroup }, (_, i) => ({ data: i, opts: { id: `j${i}`, group: `tenant-${i % groups}` } })));
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 8, leaseMs: 1000, workMs: 40 });
    fleets.push(fleet);
    const victim = await fleet.start();
    await fleet.start();
    await until(() => fleet.completedIds().size >= 10, 'some jobs done before the kill', 15_000);
    // Kill the victim while it holds slots: in a run that started under 15 ms ago (by the
    // victim's own report), so the kill lands before its 40 ms end. A run merely not reported
    // ended could have ended already, its report still on its way (seen on a busy machine: then
    // no run was cut short).
    await until(
      () => {
        const ended = new Set(fleet.reports.filter((r) => r.t === 'end' && r.pid === victim.pid).map((r) => r.token));
        const now = Date.now();
        return fleet.reports.some((r) => r.t === 'start' && r.pid === victim.pid && !ended.has(r.token) && now - r.at! < 15);
      },
      'the victim to be running a job',
      15_000,
    );
    const killedAt = new Map([[victim.pid!, Date.now()]]);
    await fleet.kill9(victim);
    await until(
      async () => {
        const s = await q.stats();
        return s.scheduled === 0 && s.active === 0;
      },
      "every job to finish, the victim's after its lease ran out",
      30_000,
    );

    const all = runs(fleet.reports, killedAt);
    assert.ok(peak(all) <= 6, `at most 6 jobs at once across both workers, saw ${peak(all)}`);
    for (let g = 0; g < groups; g++) {
      const max = peak(all, (r) => r.group === `tenant-${g}`);
      assert.equal(max, 1, `tenant-${g}: one job at a time (saw ${max})`);
    }
    // Acks as the store recorded them (a report of the victim's last acks may die with it).
    const acked = completions(await readStream(fx.client, name));
    assert.equal(acked.size, groups * perGroup, 'every job completed');
    assert.ok(
      [...acked.values()].every((c) => c === 1),
      'no job was acked twice',
    );
    assert.ok(
      all.some((r) => killedAt.get(victim.pid!)! === r.to),
      'a run was cut short by the kill',
    );
    const report = await q.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
    assert.deepEqual((await q.groups.list()).groups, [], 'no slot left taken, no line left');
    await q.close();
  });

  test('kill -9 Redis (AOF, fsync always) while groups hold slots: after the restart the counts equal the sets and every job finishes', async () => {
    const name = uniqueName('gaof');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.setLimits({ groupConcurrency: 2 });
    await q.addBulk(Array.from({ length: 60 }, (_, i) => ({ data: i, opts: { id: `j${i}`, group: `g${i % 3}` } })));
    await q.close();
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 6, leaseMs: 1000, workMs: 30 });
    fleets.push(fleet);
    await fleet.start();
    await until(() => fleet.completedIds().size >= 10, 'some jobs done before the crash', 15_000);
    await fx.stop({ kill9: true });
    await fx.start();
    const check = new Queue<number>(name, { connection: fx.redis.url });
    await until(
      async () => {
        const s = await check.stats();
        return s.scheduled === 0 && s.active === 0;
      },
      'every job to finish after the restart',
      30_000,
    );
    const all = runs(fleet.reports, new Map());
    for (let g = 0; g < 3; g++) assert.ok(peak(all, (r) => r.group === `g${g}`) <= 2, `g${g}: at most 2 at once`);
    const report = await check.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
    assert.deepEqual((await check.groups.list()).groups, []);
    await check.close();
  });
});
