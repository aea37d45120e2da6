/**
 * Rate limits and debounce against two real worker processes on a real redis-server. Every
 * hand-out is timed by its claim's own server clock (a lease token is `<claim's server ms>-<n>`),
 * so "never more than max in any window" is checked on the clock the limit is kept by, not on the
 * hosts'.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { type Report, WorkerFleet } from '../helpers/worker-fleet.js';

const fx = useRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
const fleets: WorkerFleet[] = [];
fx.after(async () => {
  await Promise.all(fleets.map((f) => f.stopAll()));
});

interface Claim {
  id: string;
  group: string | undefined;
  /** The claim's server time (ms). */
  at: number;
  attempt: number;
}

/** The hand-outs the workers started, first run of each token, in claim order. */
function claims(reports: Report[]): Claim[] {
  return reports
    .filter((r) => r.t === 'start')
    .map((r) => ({ id: r.id!, group: r.group, at: Number(r.token!.split('-')[0]), attempt: r.attempt! }))
    .sort((a, b) => a.at - b.at);
}

/** The most tokens taken in any window [t, t + perMs) that starts at a claim. */
function busiestWindow(all: Claim[], perMs: number, cost: (id: string) => number = () => 1): number {
  let max = 0;
  for (let i = 0; i < all.length; i++) {
    let n = 0;
    for (let j = i; j < all.length && all[j]!.at < all[i]!.at + perMs; j++) n += cost(all[j]!.id);
    max = Math.max(max, n);
  }
  return max;
}

const p = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

async function drained(q: Queue<unknown>, what: string, timeoutMs = 30_000): Promise<void> {
  await until(
    async () => {
      const s = await q.stats();
      return s.scheduled === 0 && s.active === 0;
    },
    what,
    timeoutMs,
  );
}

describe('rate limits under two worker processes', () => {
  test('{ max: 50, perMs: 1000 } with costs: no window of the server clock holds more than 50 tokens, and the starts follow the refills', async () => {
    const name = uniqueName('rl2');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.setLimits({ rateLimit: { max: 50, perMs: 1000 } });
    // Every fifth job counts as 2 calls.
    const cost = (id: string) => (Number(id.slice(1)) % 5 === 0 ? 2 : 1);
    await q.addBulk(Array.from({ length: 150 }, (_, i) => ({ data: i, opts: { id: `j${i}`, cost: cost(`j${i}`) } })));
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 20 });
    fleets.push(fleet);
    await Promise.all([fleet.start(), fleet.start()]);
    await drained(q, 'every job to run');
    const all = claims(fleet.reports);
    assert.equal(new Set(all.map((c) => c.id)).size, 150, 'every job ran');
    assert.equal(all.length, 150, 'each once');
    assert.ok(new Set(fleet.reports.filter((r) => r.t === 'start').map((r) => r.pid)).size === 2, 'both workers took jobs');
    const busiest = busiestWindow(all, 1000, cost);
    assert.ok(busiest <= 50, `at most 50 tokens in any 1 s window, saw ${busiest}`);
    // 180 tokens at 50 a second: the last batch can start no earlier than 3 s after the first.
    const span = all[all.length - 1]!.at - all[0]!.at;
    assert.ok(span >= 3000, `the last start ${span} ms after the first`);
    // Each batch after the first starts when the window's oldest tokens come back: the claims
    // group into windows; each window's first claim is within a few ms of the window before + 1 s.
    const firsts = [all[0]!.at];
    for (const c of all) if (c.at >= firsts[firsts.length - 1]! + 1000) firsts.push(c.at);
    const late = firsts.slice(1).map((t, i) => t - (firsts[i]! + 1000));
    assert.ok(Math.max(...late) < 250, `each window starts within 250 ms of its refill (late: ${late.join(', ')} ms)`);
    await fleet.stopAll();
    assert.equal((await q.verify()).ok, true);
    await q.close();
  });

  test('100 groups at { max: 2, perMs: 500 } each: no group above its limit in any window, every group served at each refill', async () => {
    const name = uniqueName('rlg');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.setLimits({ groupRateLimit: { max: 2, perMs: 500 } });
    await q.addBulk(Array.from({ length: 500 }, (_, i) => ({ data: i, opts: { id: `j${i}`, group: `g${i % 100}` } })));
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 50 });
    fleets.push(fleet);
    await Promise.all([fleet.start(), fleet.start()]);
    await drained(q, 'every job to run');
    const all = claims(fleet.reports);
    assert.equal(all.length, 500);
    const byGroup = new Map<string, Claim[]>();
    for (const c of all) byGroup.set(c.group!, [...(byGroup.get(c.group!) ?? []), c]);
    assert.equal(byGroup.size, 100);
    const gaps: number[] = [];
    for (const [g, cs] of byGroup) {
      assert.ok(busiestWindow(cs, 500) <= 2, `${g}: at most 2 in any 500 ms window (${cs.map((c) => c.at - all[0]!.at).join(', ')})`);
      // 5 jobs: 2 at once, 2 at the refill, 1 at the next.
      gaps.push(cs[2]!.at - (cs[0]!.at + 500), cs[4]!.at - (cs[2]!.at + 500));
    }
    assert.ok(p(gaps, 0.5) < 100, `a group's next jobs start soon after its refill: p50 ${p(gaps, 0.5)} ms`);
    await fleet.stopAll();
    assert.equal((await q.verify()).ok, true);
    assert.equal((await q.rateStatus()).queue.used, 0);
    await q.close();
  });

  test('RateLimitSignal from one worker process holds back the group on the other; other groups go on; the attempt is not spent', async () => {
    const name = uniqueName('rls');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.setLimits({ groupConcurrency: 1 });
    await q.addBulk([
      ...Array.from({ length: 5 }, (_, i) => ({ data: i, opts: { id: `g${i}`, group: 'g' } })),
      ...Array.from({ length: 40 }, (_, i) => ({ data: i, opts: { id: `h${i}`, group: `h${i % 4}` } })),
    ]);
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 4, workMs: 20 });
    fleets.push(fleet);
    // The first worker's run of g0 answers "slow down" for 800 ms; the second has no such rule.
    await fleet.start({ DQ_RATE_SIGNAL: JSON.stringify({ id: 'g0', ms: 800 }) });
    await fleet.start();
    await drained(q, 'every job to run');
    const signalled = fleet.reports.find((r) => r.t === 'rateLimited');
    assert.ok(signalled, 'g0 signalled');
    const all = claims(fleet.reports);
    const first = all.find((c) => c.id === 'g0')!;
    const gRuns = all.filter((c) => c.group === 'g' && c.at > first.at);
    assert.equal(gRuns.length, 5, 'g0 again, then g1..g4');
    const resumed = gRuns[0]!;
    assert.equal(resumed.id, 'g0', 'g0 keeps its place at the head of its line');
    assert.equal(resumed.attempt, 1, 'the attempt was not spent');
    assert.ok(resumed.at - first.at >= 800, `no job of g for 800 ms after the signal (${resumed.at - first.at} ms)`);
    assert.ok(resumed.at - first.at < 800 + 300, `g resumes soon after the hold ends (${resumed.at - first.at} ms)`);
    const others = all.filter((c) => c.group !== 'g' && c.at > first.at && c.at < first.at + 800);
    assert.ok(others.length > 0, 'other groups ran during the hold');
    await fleet.stopAll();
    assert.equal((await q.verify()).ok, true);
    await q.close();
  });

  test('kill -9 of Redis (AOF, fsync always) while rate-limited groups run: after the restart the tokens equal their log, no window exceeds its limit, every job runs', async () => {
    const name = uniqueName('rlaof');
    const q = new Queue<number>(name, { connection: fx.redis.url });
    await q.setLimits({ rateLimit: { max: 40, perMs: 500 }, groupRateLimit: { max: 4, perMs: 500 } });
    await q.addBulk(Array.from({ length: 120 }, (_, i) => ({ data: i, opts: { id: `j${i}`, group: `g${i % 6}` } })));
    await q.close();
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 10, leaseMs: 1000, workMs: 10 });
    fleets.push(fleet);
    await Promise.all([fleet.start(), fleet.start()]);
    await until(() => fleet.completedIds().size >= 30, 'some jobs done before the crash', 15_000);
    await fx.stop({ kill9: true });
    await fx.start();
    const check = new Queue<number>(name, { connection: fx.redis.url });
    const report = await check.verify();
    assert.equal(report.ok, true, `right after the restart: ${report.problems.join('; ')}`);
    await drained(check as Queue<unknown>, 'every job to run after the restart');
    const all = claims(fleet.reports);
    assert.equal(new Set(all.map((c) => c.id)).size, 120, 'every job ran');
    const busiest = busiestWindow(all, 500);
    assert.ok(busiest <= 40, `the queue: at most 40 in any 500 ms window, saw ${busiest}`);
    for (let g = 0; g < 6; g++) {
      const mine = all.filter((c) => c.group === `g${g}`);
      assert.ok(busiestWindow(mine, 500) <= 4, `g${g}: at most 4 in any 500 ms window`);
    }
    await fleet.stopAll();
    assert.equal((await check.verify()).ok, true);
    await check.close();
  });

  test('debounce while two workers run: each burst runs once, with its last data; maxWaitMs bounds a burst that keeps going', async () => {
    const name = uniqueName('rld');
    const q = new Queue<{ key: string; n: number }>(name, { connection: fx.redis.url });
    await q.setRetention({ completed: { count: 1000 } });
    const fleet = new WorkerFleet({ url: fx.redis.url, queue: name, concurrency: 10 });
    fleets.push(fleet);
    await Promise.all([fleet.start(), fleet.start()]);
    // 20 keys, each a burst of 4 adds 30 ms apart (delay 200 ms): one run each, with n = 3.
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const ids = new Map<string, Set<string>>();
    for (let n = 0; n < 4; n++) {
      const added = await Promise.all(Array.from({ length: 20 }, (_, k) => q.add({ key: `k${k}`, n }, { debounce: { key: `k${k}`, delayMs: 200 } })));
      added.forEach((r, k) => ids.set(`k${k}`, new Set([...(ids.get(`k${k}`) ?? []), r.id])));
      await sleep(30);
    }
    // One key with an add every 50 ms for 1 s (its 200 ms delay never passes), bounded at 300 ms.
    const t0 = Date.now();
    const steady: string[] = [];
    while (Date.now() - t0 < 1000) {
      steady.push((await q.add({ key: 'steady', n: Date.now() - t0 }, { debounce: { key: 'steady', delayMs: 200, maxWaitMs: 300 } })).id);
      await sleep(50);
    }
    await drained(q, 'every burst to run');
    const runs = claims(fleet.reports);
    for (const [key, set] of ids) {
      assert.equal(set.size, 1, `${key}: one burst, one job`);
      const [id] = [...set];
      assert.equal(runs.filter((c) => c.id === id).length, 1, `${key} ran once`);
      assert.equal((await q.get(id!))!.data.n, 3, `${key} ran with its last add's data`);
    }
    const bursts = new Set(steady);
    assert.ok(bursts.size >= 3 && bursts.size <= 6, `the steady key ran in bursts of at most 300 ms: ${bursts.size} bursts in 1 s`);
    for (const id of bursts) assert.equal(runs.filter((c) => c.id === id).length, 1, `burst ${id} ran once`);
    assert.equal(runs.length, 20 + bursts.size, 'one run per burst, no more');
    await fleet.stopAll();
    await q.close();
  });
});
