/**
 * The benchmark's scenarios. Each runs one system on a flushed Redis and returns its figures.
 * Sizes come from a profile: the full one the issue sets, or a tiny one for the smoke test.
 */
import { Redis } from 'ioredis';
import { WorkerChild } from './child.js';
import { scriptCalls } from './heap-measure.js';
import { type BenchJob, memoryPayload, type System } from './systems/system.js';

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
  /** Requests per redis-benchmark measure of the server's limit. */
  limitRequests: number;
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
  limitRequests: 500_000,
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
  limitRequests: 20_000,
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
  /**
   * The same server time per job that fell due, when asked for: a system whose claim hands out
   * several jobs a call (delayq) and one that moves one job a call (BullMQ) compare here, not per
   * call.
   */
  scriptUsecPerJob?: number;
  /**
   * Redis CPU per job from the window's opening to the last ack, less the server's own idle
   * rate (its cron), µs, when asked for (`cpu`): what a worker keeping up at this rate costs
   * Redis, claims that find a job or two, acks and wake-ups included.
   */
  redisCpuUsPerJob?: number;
  /** Script calls (EVALSHA, EVAL, FCALL) per job over the same span, when asked for (`cpu`). */
  scriptCallsPerJob?: number;
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
  opts: { leadMs: number; pending?: number; keepSamples?: boolean; admin?: Redis; cpu?: Redis },
): Promise<Lateness> {
  const queue = queueName(system, 'lat');
  // The server's idle CPU rate (its cron), measured before anything of this run exists.
  let idleUsPerMs = 0;
  if (opts.cpu) {
    const c0 = await redisCpuMicros(opts.cpu);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 1000));
    idleUsPerMs = ((await redisCpuMicros(opts.cpu)) - c0) / (performance.now() - t0);
  }
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
  const from = opts.cpu ? { cpuUs: await redisCpuMicros(opts.cpu), at: performance.now(), calls: await scriptCalls(opts.cpu) } : undefined;
  await child.reached(n, windowMs + 120_000);
  let redisCpuUsPerJob: number | undefined;
  let scriptCallsPerJob: number | undefined;
  if (opts.cpu && from) {
    // The last acks land just after the last start.
    await new Promise((r) => setTimeout(r, 200));
    const used = (await redisCpuMicros(opts.cpu)) - from.cpuUs - idleUsPerMs * (performance.now() - from.at);
    redisCpuUsPerJob = perJobUs(Math.max(0, used), n);
    scriptCallsPerJob = Math.round((((await scriptCalls(opts.cpu)) - from.calls) / n) * 100) / 100;
  }
  let scriptUsecPerCall: number | undefined;
  let scriptUsecPerJob: number | undefined;
  if (opts.admin) {
    const stats = await opts.admin.info('commandstats');
    const m = [...stats.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+),usec=(\d+)/g)];
    const calls = m.reduce((a, x) => a + Number(x[2]), 0);
    const usec = m.reduce((a, x) => a + Number(x[3]), 0);
    scriptUsecPerCall = calls ? Math.round((usec / calls) * 10) / 10 : Number.NaN;
    scriptUsecPerJob = Math.round((usec / n) * 10) / 10;
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
  if (scriptUsecPerJob !== undefined) out.scriptUsecPerJob = scriptUsecPerJob;
  if (redisCpuUsPerJob !== undefined) out.redisCpuUsPerJob = redisCpuUsPerJob;
  if (scriptCallsPerJob !== undefined) out.scriptCallsPerJob = scriptCallsPerJob;
  return out;
}

/** Redis's CPU time so far (used_cpu_user + used_cpu_sys: every thread of the server), in µs. */
async function redisCpuMicros(admin: Redis): Promise<number> {
  const m = infoNumbers(await admin.info('cpu'));
  return (m.used_cpu_user! + m.used_cpu_sys!) * 1e6;
}

const perJobUs = (us: number, n: number) => Math.round((us / n) * 100) / 100;

export interface Dispatch {
  perSec: number;
  /** Redis CPU per job while the worker ran the backlog (claims and acks), µs. */
  redisCpuUsPerJob: number;
  /** The worker process's CPU per job (user + system, from its start), µs. */
  workerCpuUsPerJob: number;
  /**
   * The same figures for a second backlog of as many jobs, due together a moment after it was
   * added, worked by the same worker process: a worker that has run a while (its code compiled
   * by V8's optimizing tiers, its connections and buffers made), as a deployed one is. The cold
   * figures above count the process's start through its first backlog.
   */
  warm?: { perSec: number; redisCpuUsPerJob: number; workerCpuUsPerJob: number };
}

/** Scenario 3: a backlog all due now, one worker process, a no-op handler: jobs/s until all have run. */
export async function dispatch(system: System, url: string, admin: Redis, n: number): Promise<Dispatch> {
  const queue = queueName(system, 'dispatch');
  const producer = system.producer(url, queue);
  await producer.enqueue(jobs(n, Date.now(), 0, 'd'));
  await producer.close();
  const cpu0 = await redisCpuMicros(admin);
  const child = new WorkerChild(system.name, url, queue);
  await child.ready;
  const { startedAt, reachedAt } = await child.reached(n, 300_000);
  // The figure is the handler starts; the CPU counts the last acks too.
  await new Promise((r) => setTimeout(r, 200));
  const workerUs = await child.cpuMicros();
  const cpu1 = await redisCpuMicros(admin);
  try {
    return {
      perSec: (n / Math.max(1, reachedAt - startedAt)) * 1000,
      redisCpuUsPerJob: perJobUs(cpu1 - cpu0, n),
      workerCpuUsPerJob: perJobUs(workerUs, n),
      warm: await dispatchWarm(system, url, admin, queue, child, n),
    };
  } finally {
    await child.stop();
  }
}

/**
 * Dispatch.warm: a second backlog of n for the worker that worked the first, due at a moment T
 * far enough ahead that the enqueue (not measured) has ended, as dispatchWorkers does; the figures
 * count from 100 ms before T to the last handler start (+ 200 ms for the last acks). Undefined when
 * the enqueue ran past T (a slow machine): the row is then left empty rather than mixed with adds.
 */
async function dispatchWarm(system: System, url: string, admin: Redis, queue: string, child: WorkerChild, n: number): Promise<Dispatch['warm']> {
  const producer = system.producer(url, queue);
  const T = Date.now() + 1000 + Math.ceil(n / 8);
  await producer.enqueue(jobs(n, T, 0, 'w'));
  await producer.close();
  // The snapshots just before T: the wait for it (idle timers, heartbeats) is not the work.
  await new Promise((r) => setTimeout(r, Math.max(0, T - Date.now() - 100)));
  if (Date.now() >= T) return undefined;
  const w0 = await child.cpuMicros();
  const cpu0 = await redisCpuMicros(admin);
  await child.reached(2 * n, 300_000);
  await new Promise((r) => setTimeout(r, 200));
  const w1 = await child.cpuMicros();
  const cpu1 = await redisCpuMicros(admin);
  // The lateness of the second backlog's jobs (all due at T): its largest is the drain time.
  const drainMs = Math.max(1, ...(await child.samples()).slice(n));
  return { perSec: (n / drainMs) * 1000, redisCpuUsPerJob: perJobUs(cpu1 - cpu0, n), workerCpuUsPerJob: perJobUs(w1 - w0, n) };
}

/**
 * Dispatch with `workers` worker processes: the backlog is added due at a moment T far enough
 * ahead, the workers start and sleep until T, and the figure is n over the time from T to the
 * last handler start (the workers' lateness, as bench/cluster.ts measures it). Each worker has the
 * dispatch scenario's settings; their CPU is summed. On a 2-core machine two workers and Redis
 * share two cores: the figure says whether a second process adds anything there, not what it
 * adds on a machine with a core for each. An enqueue that runs past T (a slow producer on a busy
 * machine) would be measured with it: the run is made again with twice the lead, on a new queue.
 */
export async function dispatchWorkers(system: System, url: string, admin: Redis, n: number, workers: number, leadMs: number): Promise<Dispatch> {
  let lead = Math.max(1, leadMs + Math.ceil(n / 8));
  for (let attempt = 1; ; attempt++, lead *= 2) {
    const run = await dispatchWorkersOnce(system, url, admin, n, workers, lead);
    if (run) return run;
    if (attempt === 3) throw new Error(`dispatch with ${workers} workers: the enqueue ran past its start ${attempt} times (lead up to ${lead} ms)`);
  }
}

/** One run of dispatchWorkers with the backlog due `leadMs` ahead; undefined when the enqueue ran past that. */
async function dispatchWorkersOnce(system: System, url: string, admin: Redis, n: number, workers: number, leadMs: number): Promise<Dispatch | undefined> {
  const queue = queueName(system, `dispatch${workers}`);
  const children = Array.from({ length: workers }, () => new WorkerChild(system.name, url, queue));
  try {
    await Promise.all(children.map((c) => c.ready));
    const producer = system.producer(url, queue);
    const T = Date.now() + leadMs;
    await producer.enqueue(jobs(n, T, 0, 'd'));
    await producer.close();
    if (Date.now() >= T) return undefined;
    const w0 = await Promise.all(children.map((c) => c.cpuMicros()));
    const cpu0 = await redisCpuMicros(admin);
    for (const deadline = T + 300_000; ; ) {
      const counts = await Promise.all(children.map((c) => c.count()));
      if (counts.reduce((a, b) => a + b, 0) >= n) break;
      if (Date.now() > deadline) throw new Error(`dispatch with ${workers} workers: ${counts.join('+')} of ${n} started`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // The figure is the handler starts; the CPU counts the last acks too.
    await new Promise((r) => setTimeout(r, 200));
    const w1 = await Promise.all(children.map((c) => c.cpuMicros()));
    const cpu1 = await redisCpuMicros(admin);
    const samples = (await Promise.all(children.map((c) => c.samples()))).flat();
    const drainMs = Math.max(1, ...samples);
    return {
      perSec: (n / drainMs) * 1000,
      redisCpuUsPerJob: perJobUs(cpu1 - cpu0, n),
      workerCpuUsPerJob: perJobUs(
        w1.reduce((a, x, i) => a + x - w0[i]!, 0),
        n,
      ),
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}

export interface EnqueueFigures {
  perSec: number;
  /** Redis CPU per job during the enqueue, µs. */
  redisCpuUsPerJob: number;
  /** The producer's CPU per job (the benchmark's own process, which does nothing else meanwhile), µs. */
  producerCpuUsPerJob: number;
}

export interface Enqueue extends EnqueueFigures {
  /** The same figures for single adds, SINGLE_IN_FLIGHT at a time, of a fifth as many jobs. */
  single: EnqueueFigures;
}

/** Single adds under way at once: a busy web server adding the job of each request it serves. */
export const SINGLE_IN_FLIGHT = 200;

/**
 * Scenario 4: jobs/s for a bulk enqueue of delayed jobs, and for single adds of a fifth as many,
 * SINGLE_IN_FLIGHT under way at once (each producer first makes as many adds untimed, the same
 * way: the measure is 0.1 s long, and cold it measured V8 compiling the add path more than the add;
 * docs/benchmarks.md).
 */
export async function enqueue(system: System, url: string, admin: Redis, n: number): Promise<Enqueue> {
  const producer = system.producer(url, queueName(system, 'enqueue'));
  const bulk = await timed(admin, n, () => producer.enqueue(jobs(n, Date.now() + 3_600_000, 60_000, 'e')));
  await producer.close();
  const singles = system.producer(url, queueName(system, 'single'));
  const m = Math.max(1, Math.floor(n / 5));
  // As many adds first, untimed and alike (ids of their own): connected, scripts loaded, and the
  // add path compiled, as a producer minutes into its life has it.
  await addInFlight(singles, jobs(m, Date.now() + 3_600_000, 60_000, 'warm'));
  const each = jobs(m, Date.now() + 3_600_000, 60_000, 's');
  const single = await timed(admin, m, () => addInFlight(singles, each));
  await singles.close();
  return { ...bulk, single };
}

/** Adds `each` one by one, SINGLE_IN_FLIGHT under way at once. */
async function addInFlight(producer: ReturnType<System['producer']>, each: BenchJob[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: SINGLE_IN_FLIGHT }, async () => {
      while (next < each.length) await producer.addOne(each[next++]!);
    }),
  );
}

/** Runs `work` (n jobs enqueued) and measures it: jobs/s, Redis's CPU and this process's per job. */
async function timed(admin: Redis, n: number, work: () => Promise<unknown>): Promise<EnqueueFigures> {
  const cpu0 = await redisCpuMicros(admin);
  const own0 = process.cpuUsage();
  const t = performance.now();
  await work();
  const ms = performance.now() - t;
  const own = process.cpuUsage(own0);
  const cpu1 = await redisCpuMicros(admin);
  return { perSec: (n / ms) * 1000, redisCpuUsPerJob: perJobUs(cpu1 - cpu0, n), producerCpuUsPerJob: perJobUs(own.user + own.system, n) };
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
  /** Jobs the memory figures were measured on. */
  memoryJobs: number;
  /** Bytes of each of those jobs' JSON payload. */
  memoryPayloadBytes: number;
  /** The data's memory (used_memory less buffers and script cache) per pending job, expiring keys left out. */
  bytesPerPendingJob: number;
  /** Keys that stay per pending job (DBSIZE Δ / jobs, expiring keys left out). */
  keysPerPendingJob: number;
  /** Of bytesPerPendingJob, the keyspace's own cost: dict entries, buckets and key objects (MEMORY STATS). */
  keyspaceBytesPerPendingJob: number;
  /** Keys with a TTL the adds left behind (request memos, dedup windows), per job, while they last. */
  transientBytesPerJob: number;
  transientKeys: number;
  idleCommandsPerSec: number;
}

/** Parses `name:value` lines of INFO into numbers. */
function infoNumbers(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^(\w+):([-\d.]+)\r?$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

/**
 * The data's memory: used_memory (the allocator's live bytes: it never counts fragmentation nor
 * the Lua VM's heap, which has its own allocator) less what is not data, all of which
 * used_memory does include: client query and output buffers, the replication backlog, the AOF
 * buffer and the script cache.
 */
async function dataMemory(admin: Redis): Promise<{ bytes: number; keys: number; keyspace: number }> {
  const m = infoNumbers(await admin.info('memory'));
  const notData = ['mem_clients_normal', 'mem_clients_slaves', 'mem_replication_backlog', 'mem_aof_buffer', 'used_memory_scripts'];
  const bytes = m.used_memory! - notData.reduce((a, k) => a + (m[k] ?? 0), 0);
  // MEMORY STATS db.0: overhead.hashtable.main (dict entries, buckets, key objects) + .expires.
  const stats = (await admin.call('MEMORY', 'STATS')) as unknown[];
  let keyspace = 0;
  const db = stats[stats.indexOf('db.0') + 1];
  if (stats.includes('db.0') && Array.isArray(db)) for (let i = 0; i < db.length; i += 2) keyspace += Number(db[i + 1]);
  return { bytes, keys: await admin.dbsize(), keyspace };
}

/**
 * Deletes every key with a TTL (they go away by themselves: not a pending job's cost); returns
 * how many. On a connection of its own, closed before returning: a connection that ran SCAN and a
 * pipeline of PTTLs keeps ~50 KB of reply buffers that mem_clients_normal does not show.
 */
async function deleteExpiringKeys(url: string, admin: Redis): Promise<number> {
  if (!/expires=[1-9]/.test(await admin.info('keyspace'))) return 0;
  const r = new Redis(url);
  let cursor = '0';
  let n = 0;
  do {
    const [next, keys] = await r.scan(cursor, 'COUNT', 1000);
    cursor = next;
    const ttls = await Promise.all(keys.map((k) => r.pttl(k)));
    const expiring = keys.filter((_, i) => ttls[i]! >= 0);
    if (expiring.length) n += await r.del(...expiring);
  } while (cursor !== '0');
  await r.quit();
  return n;
}

const connectedClients = async (admin: Redis) => infoNumbers(await admin.info('clients')).connected_clients!;

/** Waits (up to 2 s) until only `n` clients are left: a closed client's struct and buffers may outlive close() by a moment. */
async function clientsBackTo(admin: Redis, n: number): Promise<void> {
  for (const end = Date.now() + 2000; (await connectedClients(admin)) > n && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
}

/**
 * Memory per pending job: n jobs due in an hour, ids job-N, a 60-byte payload, on a flushed
 * server (FLUSHALL is synchronous unless lazyfree-lazy-user-flush is on; run.ts turns it off).
 * Keys with a TTL the adds left (request memos: 60 s) are measured apart and then deleted, so
 * the figure is what each job costs for as long as it waits.
 */
async function pendingMemory(system: System, url: string, admin: Redis, n: number) {
  // Redis 7 allocates a ~25 KB latency histogram for each command the first time it runs after
  // a CONFIG RESETSTAT, in used_memory: at 2,000 jobs a dozen of them is ~150 B per job.
  const tracking = (await admin.config('GET', 'latency-tracking')) as string[];
  if (tracking.length === 2) await admin.config('SET', 'latency-tracking', 'no');
  try {
    return await measurePendingMemory(system, url, admin, n);
  } finally {
    if (tracking.length === 2) await admin.config('SET', 'latency-tracking', tracking[1]!);
  }
}

async function measurePendingMemory(system: System, url: string, admin: Redis, n: number) {
  await admin.flushall();
  await admin.call('MEMORY', 'PURGE');
  const clients = await connectedClients(admin);
  // The first INFO and MEMORY STATS may grow the admin connection's buffers: settle them first.
  await dataMemory(admin);
  const before = await dataMemory(admin);
  const producer = system.producer(url, queueName(system, 'memory'));
  const due = Date.now() + 3_600_000;
  await producer.enqueue(Array.from({ length: n }, (_, i) => ({ id: `job-${i}`, due: due + Math.floor((i * 60_000) / n), data: memoryPayload(i) })));
  await producer.close();
  await clientsBackTo(admin, clients);
  const withTransient = await dataMemory(admin);
  const transientKeys = await deleteExpiringKeys(url, admin);
  await clientsBackTo(admin, clients);
  const after = await dataMemory(admin);
  const perJob = (x: number) => Math.round((x / n) * 10) / 10;
  return {
    memoryJobs: n,
    memoryPayloadBytes: Buffer.byteLength(JSON.stringify(memoryPayload(n - 1))),
    bytesPerPendingJob: perJob(after.bytes - before.bytes),
    keysPerPendingJob: Math.round(((after.keys - before.keys) / n) * 1000) / 1000,
    keyspaceBytesPerPendingJob: perJob(after.keyspace - before.keyspace),
    transientBytesPerJob: perJob(withTransient.bytes - after.bytes),
    transientKeys,
  };
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

  const memory = await pendingMemory(system, url, admin, p.memoryJobs);

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
    ...memory,
    // One of the commands counted is the first INFO itself.
    idleCommandsPerSec: Math.round(((c1 - c0 - 1) / (p.idleMs / 1000)) * 100) / 100,
  };
}
