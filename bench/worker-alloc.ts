/**
 * What the worker allocates and spends per dispatched job: one Worker (concurrency 200, batch
 * 100, as the dispatch benchmark runs it) with a no-op handler works a backlog of N jobs all due
 * now, on a redis-server of its own, in this process. The backlog is added before the worker
 * starts, so only the worker's own work (its claims, hand-outs, acks and the ioredis traffic
 * they make) falls inside what is measured.
 *
 * Two passes over fresh backlogs after a warm-up pass (so JIT compilation is not counted):
 * - cpu: process.cpuUsage (user + system) from the worker's start to its last job done, per job;
 *   nothing else runs in the process meanwhile (the producer's calls have all been answered).
 * - total: every byte the JS heap took in, exactly, from V8's GC trace: a child process run with
 *   --trace-gc-nvp works one more backlog between two forced GCs, and the `allocated` of each GC
 *   in between (bytes allocated since the GC before) are summed.
 * - sites: V8's sampling heap profiler (node:inspector HeapProfiler.startSampling, one sample per
 *   `--interval` bytes on average) keeping the samples of objects that the minor and major GCs
 *   collected as well as those still alive: an estimate of every byte allocated on the JS heap,
 *   not only of what survived. Bytes per job = sampled bytes / N; the top allocation sites (the
 *   function that allocated, self bytes) say where they go; its total is an estimate of the
 *   exact figure above. Neither counts buffers' backing stores outside the JS heap (socket reads).
 *
 * Options: --jobs <n> (50,000), --interval <bytes> (4096), --top <n> (25), --json, --async (an
 * async no-op handler), --profile
 * (the cpu pass under the CPU profiler, sampling every 100 µs: its top functions by self time,
 * and its samples by owner — delayq's files, ioredis, the GC, Node — which says what a leaner
 * client could save; the CPU figure then includes the profiler's cost).
 * Run: npm run build && node --expose-gc dist/bench/worker-alloc.js
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';
import { Queue, Worker } from '../src/index.js';
import { cpuProfile, gc, gcTracedBytes, heapSampling, markedPass, scriptCalls } from './heap-measure.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '50000' },
    interval: { type: 'string', default: '4096' },
    top: { type: 'string', default: '25' },
    json: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    /** The handler an async function (its promise already resolved when it returns). */
    async: { type: 'boolean', default: false },
    /** Internal: the GC-traced child, working one backlog on this server between markers. */
    child: { type: 'string' },
  },
});
const N = Number(values.jobs);
const INTERVAL = Number(values.interval);
const TOP = Number(values.top);

const MARK = '@@worker-alloc';
const redis = values.child ? undefined : await startRedis();
const connection = values.child ?? redis!.url;
let pass = values.child ? 1000 : 0;

/** Adds `n` jobs due now to a queue of their own. */
async function backlog(n: number): Promise<string> {
  const name = `alloc-${++pass}`;
  const q = new Queue(name, { connection });
  const now = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    const chunk = [];
    for (let j = i; j < Math.min(n, i + 10_000); j++)
      chunk.push({ data: { orderId: `order:${j}`, userId: 123, action: 'cancel', due: now }, opts: { id: `order:${j}`, runAt: now } });
    await q.addBulk(chunk);
  }
  await q.close();
  return name;
}

/** Runs one worker over the queue until `n` handlers ran and it closed (its acks written); calls `during` around that. */
async function work(name: string, n: number): Promise<void> {
  let seen = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const handler = () => {
    if (++seen === n) done();
  };
  const w = new Worker<{ due: number }>(
    name,
    values.async
      ? async () => {
          handler();
        }
      : handler,
    { connection, concurrency: 200, batch: 100 },
  );
  w.on('error', () => {});
  await all;
  await w.close();
}

await work(await backlog(Math.min(N, 20_000)), Math.min(N, 20_000));

if (values.child) {
  const q = await backlog(N);
  await markedPass(MARK, () => work(q, N));
  process.exit(0);
}

// cpu
const cpuQueue = await backlog(N);
const admin = redis!.client();
const calls0 = await scriptCalls(admin);
// A finer interval than V8's default (1 ms): a pass of 50,000 jobs is a few hundred ms.
const stopProfile = values.profile ? await cpuProfile(TOP, 100) : undefined;
gc();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await work(cpuQueue, N);
const cpu = process.cpuUsage(cpu0);
const wallMs = performance.now() - t0;
if (stopProfile) {
  const profile = await stopProfile();
  console.log(`cpu pass, top functions by self time (share of the busy samples):`);
  for (const t of profile.sites) console.log(`${t.share.toFixed(1).padStart(5)}%  ${t.site}`);
  console.log(`cpu pass by owner (each sample to the nearest frame up its stack that is delayq's, ioredis's or V8's):`);
  for (const t of profile.owners) console.log(`${t.share.toFixed(1).padStart(5)}%  ${t.owner}`);
  console.log(`of which ioredis, by the function it ran (a socket write is any client's):`);
  for (const t of profile.clientLeaves) console.log(`${t.share.toFixed(1).padStart(5)}%  ${t.site}`);
}
const calls = (await scriptCalls(admin)) - calls0;

// alloc
const allocQueue = await backlog(N);
gc();
const stopSampling = await heapSampling(INTERVAL, TOP);
await work(allocQueue, N);
const sampled = await stopSampling();
const exact = gcTracedBytes(fileURLToPath(import.meta.url), ['--jobs', String(N), '--child', connection, ...(values.async ? ['--async'] : [])], MARK);
await redis!.stop();

const result = {
  jobs: N,
  bytesPerJob: Math.round(exact / N),
  sampledBytesPerJob: Math.round(sampled.total / N),
  cpuUsPerJob: Number(((cpu.user + cpu.system) / N).toFixed(2)),
  jobsPerSecond: Math.round(N / (wallMs / 1000)),
  jobsPerScriptCall: Number((N / calls).toFixed(1)),
  top: sampled.top.map(([site, bytes]) => ({ site, bytesPerJob: Math.round(bytes / N) })),
};
if (values.json) console.log(JSON.stringify(result));
else {
  console.log(
    `${N} jobs: ${result.bytesPerJob} B allocated per job (GC trace; sampled: ${result.sampledBytesPerJob} B), ${result.cpuUsPerJob} µs CPU per job, ${result.jobsPerSecond} jobs/s, ${result.jobsPerScriptCall} jobs per script call`,
  );
  console.log(`top allocation sites, self bytes per job (sampling every ${INTERVAL} B):`);
  for (const t of result.top) console.log(`${String(t.bytesPerJob).padStart(6)} B  ${t.site}`);
}
