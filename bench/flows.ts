/**
 * npm run bench -- --flows: fan-out / fan-in beside BullMQ's FlowProducer on one redis-server of
 * their own (docs/flows.md). Per system and run: `parents` flows of `children` children each,
 * written one flow per call, 10 in flight; one worker in this process (concurrency 100, a no-op
 * handler). Two runs per system:
 *  - saturated: the flows written as fast as they go (10 in flight): jobs/s, every job of every
 *    flow over the time from the first add to the last job's end;
 *  - paced: one flow every `paceMs` (below either system's capacity), so a parent waits for the
 *    mechanism, not behind other flows' children: for each flow, the parent's handler start −
 *    the end of the handler of its last child (that child's ack, the release, the hand-out of
 *    the parent), p50 and p99 in ms. Issue 37's goal is ≤ 5 ms at p99. (Saturated, a released
 *    parent is due at its release and queues behind every job due before it, in both systems.)
 * Options: --quick (small sizes), --repeat <n>, --json.
 */
import { parseArgs } from 'node:util';
import { FlowProducer, Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, markdownTable, spread } from './report.js';

interface Profile {
  parents: number;
  children: number;
  /** Paced run: flows, and the time between two. */
  paced: number;
  paceMs: number;
}
const FULL: Profile = { parents: 1000, children: 10, paced: 300, paceMs: 10 };
const QUICK: Profile = { parents: 50, children: 5, paced: 30, paceMs: 10 };
const SYSTEMS = ['delayq', 'bullmq'] as const;
type SystemName = (typeof SYSTEMS)[number];

interface RunFigures {
  jobsPerSec: number;
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** What the handlers saw: each child's end by parent, each parent's start. */
class Timings {
  readonly lastChildEnd = new Map<string, number>();
  readonly parentStart = new Map<string, number>();
  childEnded(parent: string): void {
    this.lastChildEnd.set(parent, Math.max(this.lastChildEnd.get(parent) ?? 0, performance.now()));
  }
  figures(total: number, elapsedMs: number): RunFigures {
    const gaps = [...this.parentStart].map(([p, at]) => at - (this.lastChildEnd.get(p) ?? at)).sort((a, b) => a - b);
    return { jobsPerSec: (total / elapsedMs) * 1000, p50: percentile(gaps, 0.5), p99: percentile(gaps, 0.99) };
  }
}

let seq = 0;

/** Writes `n` flows: 10 in flight (saturated), or one every `paceMs` (paced). */
async function writeFlows(n: number, paceMs: number | undefined, fn: (i: number) => Promise<unknown>): Promise<void> {
  if (paceMs === undefined) return inFlight(n, 10, fn);
  const started = performance.now();
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const wait = started + i * paceMs - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    writes.push(fn(i));
  }
  await Promise.all(writes);
}

async function inFlight(n: number, limit: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

async function delayqRun(url: string, p: Profile, paceMs?: number): Promise<RunFigures> {
  const name = `bench-flows-${process.pid}-${seq++}`;
  const q = new Queue<{ parent?: string }>(name, { connection: url });
  const t = new Timings();
  const parents = paceMs === undefined ? p.parents : p.paced;
  const total = parents * (p.children + 1);
  let done = 0;
  let allDone!: () => void;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const w = new Worker<{ parent?: string }>(
    name,
    (job) => {
      if (job.data.parent === undefined) t.parentStart.set(job.id, performance.now());
      else t.childEnded(job.data.parent);
      if (++done === total) allDone();
    },
    { connection: url, concurrency: 100, batch: 50 },
  );
  const started = performance.now();
  await writeFlows(parents, paceMs, (i) =>
    q.addFlow({ data: {}, opts: { id: `p${i}` }, children: Array.from({ length: p.children }, () => ({ data: { parent: `p${i}` } })) }),
  );
  await finished;
  const figures = t.figures(total, performance.now() - started);
  await w.close();
  await q.obliterate({ force: true });
  await q.close();
  return figures;
}

async function bullRun(url: string, p: Profile, paceMs?: number): Promise<RunFigures> {
  const name = `bench-flows-${process.pid}-${seq++}`;
  const u = new URL(url);
  const connection = { host: u.hostname, port: Number(u.port) };
  const flows = new FlowProducer({ connection });
  const t = new Timings();
  const parents = paceMs === undefined ? p.parents : p.paced;
  const total = parents * (p.children + 1);
  let done = 0;
  let allDone!: () => void;
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const w = new BullWorker(
    name,
    async (job) => {
      if (job.data.parent === undefined) t.parentStart.set(String(job.id), performance.now());
      else t.childEnded(String(job.data.parent));
      if (++done === total) allDone();
    },
    { connection, concurrency: 100, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } },
  );
  const started = performance.now();
  await writeFlows(parents, paceMs, (i) =>
    flows.add({
      name: 'parent',
      queueName: name,
      data: {},
      opts: { jobId: `p${i}` },
      children: Array.from({ length: p.children }, () => ({ name: 'child', queueName: name, data: { parent: `p${i}` } })),
    }),
  );
  await finished;
  const figures = t.figures(total, performance.now() - started);
  await w.close();
  await flows.close();
  const q = new BullQueue(name, { connection });
  await q.obliterate({ force: true });
  await q.close();
  return figures;
}

export async function runFlowsBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--flows'),
    options: { quick: { type: 'boolean', default: false }, repeat: { type: 'string', default: '1' }, json: { type: 'boolean', default: false } },
  });
  const p = values.quick ? QUICK : FULL;
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number ≥ 1 (got ${values.repeat})`);
  const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no'] });
  const runs: Record<SystemName, RunFigures[]> = { delayq: [], bullmq: [] };
  const paced: Record<SystemName, RunFigures[]> = { delayq: [], bullmq: [] };
  try {
    for (let k = 0; k < repeat; k++) {
      // Interleaved, so drift on a shared machine spreads over both systems alike.
      for (const system of SYSTEMS) {
        process.stderr.write(`run ${k + 1}/${repeat}: ${system}, ${p.parents} flows × ${p.children} children, then ${p.paced} paced\n`);
        const run = system === 'delayq' ? delayqRun : bullRun;
        runs[system].push(await run(redis.url, p));
        paced[system].push(await run(redis.url, p, p.paceMs));
      }
    }
  } finally {
    await redis.stop();
  }
  if (values.json) {
    console.log(JSON.stringify({ profile: p, runs, paced }, null, 2));
    return;
  }
  const show = (xs: number[]) => {
    const v = spread(xs);
    if (!v) return '—';
    return v.n > 1 ? `${fmt(v.median)} (${fmt(v.min)}–${fmt(v.max)})` : fmt(v.median);
  };
  const col = (of: Record<SystemName, RunFigures[]>, s: SystemName, k: keyof RunFigures) => show(of[s].map((r) => r[k]));
  const row = (label: string, of: Record<SystemName, RunFigures[]>, k: keyof RunFigures) => [label, col(of, 'delayq', k), col(of, 'bullmq', k)];
  console.log(
    markdownTable([
      ['figure', 'delayq', 'BullMQ FlowProducer'],
      row(`saturated: jobs/s, ${p.parents} flows × ${p.children} children`, runs, 'jobsPerSec'),
      row('saturated: parent start after its last child, p50 (ms)', runs, 'p50'),
      row('saturated: parent start after its last child, p99 (ms)', runs, 'p99'),
      row(`paced (a flow every ${p.paceMs} ms): parent start after its last child, p50 (ms)`, paced, 'p50'),
      row(`paced (a flow every ${p.paceMs} ms): parent start after its last child, p99 (ms)`, paced, 'p99'),
    ]),
  );
}
