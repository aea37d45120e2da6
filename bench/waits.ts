/**
 * npm run bench -- --waits: waiting for a job's result, delayq's `queue.addAndWait` beside
 * BullMQ's `queue.add` + `job.waitUntilFinished(queueEvents)`, on one redis-server of their own.
 * Both systems' worker runs in this process (one Worker, concurrency 100, a handler that returns
 * `{ n }` at once); the producer keeps `inFlight` calls going until `calls` have answered. Per
 * system: calls a second, and the round trip of one call (add → result in hand) p50/p99/max.
 * Interleaved per repeat, so drift on a shared machine spreads over both alike. BullMQ's waits
 * ride its events stream (QueueEvents, XREAD BLOCK) and read the finished job back, so BullMQ
 * keeps its completed jobs here; delayq's ride the queue's wake channel and carry the result, so
 * it keeps none.
 *
 * Options: --quick (small sizes), --repeat <n>, --json.
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Queue as BullQueue, QueueEvents, Worker as BullWorker } from 'bullmq';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, markdownTable, spread } from './report.js';

interface Profile {
  calls: number;
  inFlight: number;
}
const FULL: Profile = { calls: 5_000, inFlight: 200 };
const QUICK: Profile = { calls: 400, inFlight: 50 };
const CONCURRENCY = 100;
const SYSTEMS = ['delayq', 'bullmq'] as const;
type SystemName = (typeof SYSTEMS)[number];

interface WaitRun {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

let seq = 0;
const queueName = () => `bench-waits-${process.pid}-${seq++}`;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Runs `calls` calls, `inFlight` at a time; each returns its round trip in ms. */
async function drive(p: Profile, one: (n: number) => Promise<void>): Promise<WaitRun> {
  const times: number[] = [];
  let next = 0;
  const start = performance.now();
  const lane = async () => {
    while (next < p.calls) {
      const n = next++;
      const t = performance.now();
      await one(n);
      times.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: p.inFlight }, lane));
  const took = performance.now() - start;
  times.sort((a, b) => a - b);
  return { perSecond: (p.calls / took) * 1000, p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99), maxMs: times.at(-1)! };
}

async function delayqRun(url: string, p: Profile): Promise<WaitRun> {
  const name = queueName();
  const q = new Queue<number>(name, { connection: url });
  const w = new Worker<number>(name, (job) => ({ n: job.data }), { connection: url, concurrency: CONCURRENCY });
  try {
    await q.waitUntilReady();
    return await drive(p, async (n) => {
      const r = (await q.addAndWait(n, undefined, { timeoutMs: 60_000 })) as { n: number };
      if (r.n !== n) throw new Error(`delayq: call ${n} got ${JSON.stringify(r)}`);
    });
  } finally {
    await w.close();
    await q.obliterate({ force: true });
    await q.close();
  }
}

async function bullmqRun(url: string, p: Profile): Promise<WaitRun> {
  const u = new URL(url);
  const connection = { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };
  const name = queueName();
  const q = new BullQueue(name, { connection });
  const events = new QueueEvents(name, { connection });
  const w = new BullWorker(name, async (job) => ({ n: job.data as number }), { connection, concurrency: CONCURRENCY });
  // Each pending wait listens on the queue and its events (BullMQ's design); not a leak here.
  q.setMaxListeners(p.inFlight + 10);
  events.setMaxListeners(p.inFlight + 10);
  try {
    await events.waitUntilReady();
    return await drive(p, async (n) => {
      // BullMQ's wait reads the finished job back: completed jobs must be kept (delayq's need not).
      const job = await q.add('w', n);
      const r = (await job.waitUntilFinished(events, 60_000)) as { n: number };
      if (r.n !== n) throw new Error(`bullmq: call ${n} got ${JSON.stringify(r)}`);
    });
  } finally {
    await w.close();
    await events.close();
    await q.obliterate({ force: true });
    await q.close();
  }
}

function show(values: number[]): string {
  const v = spread(values);
  if (!v) return '—';
  return v.n > 1 ? `${fmt(v.median)} (${fmt(v.min)}–${fmt(v.max)})` : fmt(v.median);
}

export async function runWaitsBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--waits'),
    options: { quick: { type: 'boolean', default: false }, repeat: { type: 'string', default: '1' }, json: { type: 'boolean', default: false } },
  });
  const p = values.quick ? QUICK : FULL;
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number ≥ 1 (got ${values.repeat})`);
  const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no'] });
  const results: Record<SystemName, WaitRun[]> = { delayq: [], bullmq: [] };
  try {
    for (let k = 0; k < repeat; k++) {
      for (const system of SYSTEMS) {
        process.stderr.write(`run ${k + 1}/${repeat}: ${system}, ${p.calls} calls, ${p.inFlight} in flight\n`);
        results[system].push(system === 'delayq' ? await delayqRun(redis.url, p) : await bullmqRun(redis.url, p));
      }
    }
  } finally {
    await redis.stop();
  }
  if (values.json) {
    console.log(JSON.stringify({ profile: p, repeat, results }, null, 2));
    return;
  }
  const header = ['figure', ...SYSTEMS.map((s) => (repeat > 1 ? `${s}, median (min–max) of ${repeat}` : s))];
  const row = (label: string, f: (r: WaitRun) => number) => [label, ...SYSTEMS.map((s) => show(results[s].map(f)))];
  console.log(`\n### Add and wait for the result: ${p.calls} calls, ${p.inFlight} in flight, one worker of concurrency ${CONCURRENCY}\n`);
  console.log(
    markdownTable([
      header,
      row('calls a second', (r) => r.perSecond),
      row('round trip p50 (ms)', (r) => r.p50Ms),
      row('round trip p99 (ms)', (r) => r.p99Ms),
      row('round trip max (ms)', (r) => r.maxMs),
    ]),
  );
}
