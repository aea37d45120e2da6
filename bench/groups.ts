/**
 * npm run bench -- --groups: groups and concurrency limits on a redis-server of their own, the
 * ungrouped queue beside them in the same harness (one worker in this process, concurrency 100,
 * batch 50, a no-op handler unless said), so the rows compare. Per run:
 *
 *  (a) dispatch: 1,000 groups × 50 jobs all due, group concurrency 1 and 5, and the same 50,000
 *      jobs with no group: jobs / (last start − first start);
 *  (b) slot to start: group concurrency 1, 200 groups × 10 jobs whose handler takes 5 ms, a
 *      worker with room for every group at once (concurrency 400): for each job after the first
 *      of its group, its start − the end of the group's job before it (the slot frees when that
 *      job's ack lands: the ack's round trip, the publish, the claim's round trip) p50/p99/max;
 *  (c) a small group behind a large one: 100,000 jobs of one group, then 10 of another, all due,
 *      no limits: when the small group's last job starts (ms after the first start) beside when
 *      the large group's last does.
 *
 * BullMQ's groups are a paid feature (BullMQ Pro) and not on npm; no peer stands beside these
 * rows (docs/benchmarks.md says why pg-boss does not either).
 * Options: --quick (small sizes), --repeat <n>, --json.
 */
import { parseArgs } from 'node:util';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, markdownTable, spread } from './report.js';

/** median (min–max), or the value alone of one run. */
function show(xs: number[]): string {
  const v = spread(xs);
  if (!v) return '—';
  return v.n > 1 ? `${fmt(v.median)} (${fmt(v.min)}–${fmt(v.max)})` : fmt(v.median);
}

interface Profile {
  groups: number;
  perGroup: number;
  slotGroups: number;
  slotPerGroup: number;
  big: number;
}
const FULL: Profile = { groups: 1000, perGroup: 50, slotGroups: 200, slotPerGroup: 10, big: 100_000 };
const QUICK: Profile = { groups: 50, perGroup: 10, slotGroups: 20, slotPerGroup: 5, big: 2000 };

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

let seq = 0;
async function run(
  url: string,
  setup: (q: Queue<number>) => Promise<void>,
  handler: (job: { id: string; group: string | undefined }) => Promise<void> | void,
  expect: number,
  concurrency = 100,
) {
  const q = new Queue<number>(`bench-groups-${process.pid}-${seq++}`, { connection: url });
  await setup(q);
  let done = 0;
  let allDone!: () => void;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const w = new Worker<number>(
    q.name,
    async (job) => {
      await handler(job);
      if (++done === expect) allDone();
    },
    { connection: url, concurrency, batch: 50 },
  );
  await finished;
  await w.close();
  await q.obliterate({ force: true });
  await q.close();
}

async function addAll(q: Queue<number>, jobs: { group?: string }[]) {
  for (let i = 0; i < jobs.length; i += 5000) {
    await q.addBulk(jobs.slice(i, i + 5000).map((j, k) => ({ data: i + k, opts: { group: j.group } })));
  }
}

/** (a) jobs/s of one backlog: groups × perGroup with a group limit, or the same count with no group. */
async function dispatch(url: string, p: Profile, groupConcurrency: number | undefined): Promise<number> {
  const n = p.groups * p.perGroup;
  let first = 0;
  let last = 0;
  await run(
    url,
    async (q) => {
      if (groupConcurrency !== undefined) await q.setLimits({ groupConcurrency });
      await addAll(
        q,
        Array.from({ length: n }, (_, i) => (groupConcurrency === undefined ? {} : { group: `g${i % p.groups}` })),
      );
    },
    () => {
      const now = performance.now();
      if (first === 0) first = now;
      last = now;
    },
    n,
  );
  return n / ((last - first) / 1000);
}

/** (b) from a group's job ending to its next job starting, at group concurrency 1. */
async function slotToStart(url: string, p: Profile): Promise<number[]> {
  const lastEnd = new Map<string, number>();
  const gaps: number[] = [];
  await run(
    url,
    async (q) => {
      await q.setLimits({ groupConcurrency: 1 });
      await addAll(
        q,
        Array.from({ length: p.slotGroups * p.slotPerGroup }, (_, i) => ({ group: `g${i % p.slotGroups}` })),
      );
    },
    async (job) => {
      const start = performance.now();
      const before = lastEnd.get(job.group!);
      if (before !== undefined) gaps.push(start - before);
      await new Promise((r) => setTimeout(r, 5));
      lastEnd.set(job.group!, performance.now());
    },
    p.slotGroups * p.slotPerGroup,
    // Room for every group at once: the gap is the group's slot, not the worker's.
    2 * p.slotGroups,
  );
  return gaps.sort((a, b) => a - b);
}

/** (c) a 10-job group behind a large one: when each group's last job started, from the first start. */
async function smallBehindLarge(url: string, p: Profile): Promise<{ small: number; big: number }> {
  let first = 0;
  const lastStart = { small: 0, big: 0 };
  await run(
    url,
    async (q) => {
      await addAll(q, [...Array.from({ length: p.big }, () => ({ group: 'big' })), ...Array.from({ length: 10 }, () => ({ group: 'small' }))]);
    },
    (job) => {
      const now = performance.now();
      if (first === 0) first = now;
      lastStart[job.group as 'small' | 'big'] = now - first;
    },
    p.big + 10,
  );
  return lastStart;
}

export async function runGroupsBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--groups'),
    options: { quick: { type: 'boolean', default: false }, repeat: { type: 'string', default: '1' }, json: { type: 'boolean', default: false } },
  });
  const p = values.quick ? QUICK : FULL;
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number ≥ 1 (got ${values.repeat})`);
  const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no'] });
  const rows = {
    ungrouped: [] as number[],
    gc1: [] as number[],
    gc5: [] as number[],
    p50: [] as number[],
    p99: [] as number[],
    max: [] as number[],
    small: [] as number[],
    big: [] as number[],
  };
  try {
    for (let k = 0; k < repeat; k++) {
      process.stderr.write(`run ${k + 1}/${repeat}\n`);
      // Interleaved, so drift on a shared machine spreads over every row alike.
      rows.ungrouped.push(await dispatch(redis.url, p, undefined));
      rows.gc1.push(await dispatch(redis.url, p, 1));
      rows.gc5.push(await dispatch(redis.url, p, 5));
      const gaps = await slotToStart(redis.url, p);
      rows.p50.push(percentile(gaps, 0.5));
      rows.p99.push(percentile(gaps, 0.99));
      rows.max.push(gaps.at(-1)!);
      const wait = await smallBehindLarge(redis.url, p);
      rows.small.push(wait.small);
      rows.big.push(wait.big);
    }
  } finally {
    await redis.stop();
  }
  if (values.json) {
    console.log(JSON.stringify({ profile: p, rows }, null, 2));
    return;
  }
  const s = show;
  console.log(
    markdownTable([
      ['figure', `median (min–max) of ${repeat}`],
      [`dispatch, ${p.groups * p.perGroup} jobs of no group (jobs/s)`, s(rows.ungrouped)],
      [`dispatch, ${p.groups} groups × ${p.perGroup}, group concurrency 1 (jobs/s)`, s(rows.gc1)],
      [`dispatch, ${p.groups} groups × ${p.perGroup}, group concurrency 5 (jobs/s)`, s(rows.gc5)],
      [`slot freed → next job of the group starts, p50 (ms)`, s(rows.p50)],
      [`slot freed → next job of the group starts, p99 (ms)`, s(rows.p99)],
      [`slot freed → next job of the group starts, max (ms)`, s(rows.max)],
      [`10-job group behind a ${p.big}-job group: its last start (ms after the first)`, s(rows.small)],
      [`the ${p.big}-job group's last start (ms after the first)`, s(rows.big)],
    ]),
  );
}
