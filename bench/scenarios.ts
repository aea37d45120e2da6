/**
 * The benchmark's scenarios. Each runs one system on a flushed Redis and returns its figures.
 * Sizes come from a profile: the full one the issue sets, or a tiny one for the smoke test.
 */
import type { Redis } from 'ioredis';
import { WorkerChild } from './child.js';
import type { BenchJob, System } from './systems/system.js';

export interface Profile {
  loadJobs: number;
  loadWindowMs: number;
  lowJobs: number;
  lowWindowMs: number;
  dispatchJobs: number;
  enqueueJobs: number;
  costJobs: number;
  memoryJobs: number;
  idleMs: number;
  scalePending: number;
  scaleJobs: number;
  scaleWindowMs: number;
  /** Head start before the first job of a lateness window is due, on top of the enqueue time. */
  leadMs: number;
}

export const FULL: Profile = {
  loadJobs: 50_000,
  loadWindowMs: 5000,
  lowJobs: 2000,
  lowWindowMs: 5000,
  dispatchJobs: 50_000,
  enqueueJobs: 50_000,
  costJobs: 10_000,
  memoryJobs: 200_000,
  idleMs: 10_000,
  scalePending: 1_000_000,
  scaleJobs: 50_000,
  scaleWindowMs: 5000,
  leadMs: 1000,
};

export const QUICK: Profile = {
  loadJobs: 500,
  loadWindowMs: 300,
  lowJobs: 100,
  lowWindowMs: 300,
  dispatchJobs: 1000,
  enqueueJobs: 1000,
  costJobs: 500,
  memoryJobs: 2000,
  idleMs: 300,
  scalePending: 5000,
  scaleJobs: 500,
  scaleWindowMs: 300,
  leadMs: 200,
};

export interface Lateness {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  n: number;
  /** How far the enqueue ran past the window's opening (0 when it finished in time). */
  enqueueOverrunMs: number;
  /** Mean server time per script call (EVALSHA/EVAL) while the window ran, when asked for. */
  scriptUsecPerCall?: number;
  samples?: number[];
}

let seq = 0;
const queueName = (system: System, what: string) => `bench-${system.name}-${what}-${++seq}`;

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function jobs(n: number, firstDue: number, windowMs: number, tag: string): BenchJob[] {
  return Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}`, due: firstDue + Math.floor((i * windowMs) / n) }));
}

/** Scenarios 1, 2 and 6: jobs due uniformly over a window that opens after they are enqueued. */
export async function lateness(
  system: System,
  url: string,
  n: number,
  windowMs: number,
  opts: { leadMs: number; pending?: number; keepSamples?: boolean; admin?: Redis },
): Promise<Lateness> {
  const queue = queueName(system, 'lat');
  if (opts.pending) {
    // The far-future backlog the scale scenario keeps pending while jobs fall due.
    const p = system.producer(url, queue);
    await p.enqueue(jobs(opts.pending, Date.now() + 3_600_000, 3_600_000, 'far'));
    await p.close();
  }
  const child = new WorkerChild(system.name, url, queue);
  await child.ready;
  const producer = system.producer(url, queue);
  // Leave time to enqueue everything before the first job is due, even at the slowest
  // system's rate (BullMQ enqueues ~10k jobs/s here): lateness must measure the worker, not
  // the producer. What overruns anyway is reported.
  const opensAt = Date.now() + opts.leadMs + Math.ceil(n / 8);
  await producer.enqueue(jobs(n, opensAt, windowMs, 'lat'));
  const overrun = Math.max(0, Date.now() - opensAt);
  await producer.close();
  // From here on the scripts that run are the workers' (claims, acks), not the producer's adds.
  await opts.admin?.config('RESETSTAT');
  await child.reached(n, windowMs + 120_000);
  let scriptUsecPerCall: number | undefined;
  if (opts.admin) {
    const stats = await opts.admin.info('commandstats');
    const m = [...stats.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+),usec=(\d+)/g)];
    const calls = m.reduce((a, x) => a + Number(x[2]), 0);
    scriptUsecPerCall = calls ? Math.round((m.reduce((a, x) => a + Number(x[3]), 0) / calls) * 10) / 10 : Number.NaN;
  }
  const samples = (await child.samples()).sort((a, b) => a - b);
  await child.stop();
  const out: Lateness = {
    p50: percentile(samples, 0.5),
    p95: percentile(samples, 0.95),
    p99: percentile(samples, 0.99),
    max: samples.at(-1) ?? Number.NaN,
    n: samples.length,
    enqueueOverrunMs: overrun,
  };
  if (opts.keepSamples) out.samples = samples;
  if (scriptUsecPerCall !== undefined) out.scriptUsecPerCall = scriptUsecPerCall;
  return out;
}

/** Scenario 3: a backlog all due now, one worker process, a no-op handler: jobs/s until all have run. */
export async function dispatch(system: System, url: string, n: number): Promise<number> {
  const queue = queueName(system, 'dispatch');
  const producer = system.producer(url, queue);
  await producer.enqueue(jobs(n, Date.now(), 0, 'd'));
  await producer.close();
  const child = new WorkerChild(system.name, url, queue);
  await child.ready;
  const { startedAt, reachedAt } = await child.reached(n, 300_000);
  await child.stop();
  return (n / Math.max(1, reachedAt - startedAt)) * 1000;
}

/** Scenario 4: jobs/s for a bulk enqueue of delayed jobs. */
export async function enqueue(system: System, url: string, n: number): Promise<number> {
  const producer = system.producer(url, queueName(system, 'enqueue'));
  const t = performance.now();
  await producer.enqueue(jobs(n, Date.now() + 3_600_000, 60_000, 'e'));
  const ms = performance.now() - t;
  await producer.close();
  return (n / ms) * 1000;
}

async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const text = await admin.info('commandstats');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** Commands per job, counting those run inside scripts, without the benchmark's own INFO/CONFIG. */
function perJob(calls: Map<string, number>, n: number): { total: number; byCommand: Record<string, number> } {
  const byCommand: Record<string, number> = {};
  let total = 0;
  for (const [cmd, c] of calls) {
    if (cmd === 'info' || cmd.startsWith('config')) continue;
    byCommand[cmd] = Math.round((c / n) * 100) / 100;
    total += c;
  }
  return { total: Math.round((total / n) * 100) / 100, byCommand };
}

export interface Cost {
  enqueueCommandsPerJob: number;
  processCommandsPerJob: number;
  enqueueByCommand: Record<string, number>;
  processByCommand: Record<string, number>;
  bytesPerPendingJob: number;
  idleCommandsPerSec: number;
}

/** Scenario 5: commands per job (enqueue and processing), memory per pending job, idle chatter. */
export async function cost(system: System, url: string, admin: Redis, p: Profile): Promise<Cost> {
  const queue = queueName(system, 'cost');
  await admin.config('RESETSTAT');
  const producer = system.producer(url, queue);
  await producer.enqueue(jobs(p.costJobs, Date.now(), 0, 'c'));
  await producer.close();
  const enq = perJob(await commandCalls(admin), p.costJobs);
  await admin.config('RESETSTAT');
  const child = new WorkerChild(system.name, url, queue);
  await child.ready;
  await child.reached(p.costJobs, 300_000);
  // Let acks land before counting.
  await new Promise((r) => setTimeout(r, 200));
  const proc = perJob(await commandCalls(admin), p.costJobs);
  await child.stop();

  await admin.flushall();
  await admin.call('MEMORY', 'PURGE');
  // used_memory does not count the Lua VM's heap (Lua has its own allocator: a script that
  // built 26 MB of tables moved used_memory by 50 KB), so it is the data's memory as it is;
  // subtracting used_memory_vm_eval took script garbage off the data and could go below zero.
  const dataMemory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
  const before = await dataMemory();
  const memQueue = queueName(system, 'memory');
  const mp = system.producer(url, memQueue);
  await mp.enqueue(jobs(p.memoryJobs, Date.now() + 3_600_000, 60_000, 'm'));
  await mp.close();
  const afterMem = await dataMemory();

  await admin.flushall();
  const idle = new WorkerChild(system.name, url, queueName(system, 'idle'));
  await idle.ready;
  // Let the worker settle (its first claim, its subscription) before counting.
  await new Promise((r) => setTimeout(r, Math.min(500, p.idleMs)));
  const c0 = Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))![1]);
  await new Promise((r) => setTimeout(r, p.idleMs));
  const c1 = Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))![1]);
  await idle.stop();
  return {
    enqueueCommandsPerJob: enq.total,
    processCommandsPerJob: proc.total,
    enqueueByCommand: enq.byCommand,
    processByCommand: proc.byCommand,
    bytesPerPendingJob: Math.round((afterMem - before) / p.memoryJobs),
    // One of the commands counted is the first INFO itself.
    idleCommandsPerSec: Math.round(((c1 - c0 - 1) / (p.idleMs / 1000)) * 100) / 100,
  };
}
