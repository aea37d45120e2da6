/**
 * What the producer allocates and spends per single add: one Queue adds N jobs one at a time,
 * 200 adds in flight (as a busy web server adds the job of each request, and as the enqueue
 * benchmark's "single adds, 200 in flight" runs it), each with a small payload and a run time an
 * hour ahead, on a redis-server of its own. Only this process's work is measured (validation,
 * packing, the add batcher, ioredis); Redis runs in its own process.
 *
 * Passes over fresh queues after a warm-up pass (so JIT compilation is not counted):
 * - cpu: process.cpuUsage (user + system) from the first add to the last answer, per add.
 * - total: every byte the JS heap took in, exactly, from V8's GC trace: a child process run with
 *   --trace-gc-nvp makes N more adds between two forced GCs, and the `allocated` of each GC in
 *   between (bytes allocated since the GC before) are summed.
 * - sites (--sites): V8's sampling heap profiler (one sample per `--interval` bytes on average,
 *   keeping the samples of objects the GCs collected): the top allocation sites, self bytes per
 *   add, an estimate of where the exact total goes.
 *
 * Options: --jobs <n> (20,000), --inflight <n> (200), --top <n> (25), --interval <bytes> (4096),
 * --json, --sites, --profile (the cpu pass under the CPU profiler: its top functions by self
 * time; the CPU figure then includes the profiler's cost).
 * Run: npm run build && node --expose-gc dist/bench/producer-alloc.js
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';
import { Queue } from '../src/index.js';
import { cpuProfile, gc, gcTracedBytes, heapSampling, markedPass, scriptCalls } from './heap-measure.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    inflight: { type: 'string', default: '200' },
    top: { type: 'string', default: '25' },
    json: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    sites: { type: 'boolean', default: false },
    interval: { type: 'string', default: '4096' },
    /** Internal: the GC-traced child, making one pass of adds on this server between markers. */
    child: { type: 'string' },
  },
});
const N = Number(values.jobs);
const IN_FLIGHT = Number(values.inflight);
const TOP = Number(values.top);

const MARK = '@@producer-alloc';
const redis = values.child ? undefined : await startRedis();
const connection = values.child ?? redis!.url;
let pass = values.child ? 1000 : 0;

/** A connected queue of its own (its scripts loaded, its name registered: one add made). */
async function openQueue(): Promise<Queue> {
  const q = new Queue(`producer-${++pass}`, { connection });
  await q.add({ warm: true }, { id: 'warm-up', delay: 3_600_000 });
  return q;
}

/** Makes `n` single adds to `q`, IN_FLIGHT at a time, as the enqueue benchmark does. */
async function addAll(q: Queue, n: number): Promise<void> {
  const due = Date.now() + 3_600_000;
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) {
        const i = next++;
        await q.add({ orderId: `order:${i}`, userId: 123, action: 'cancel' }, { id: `order:${i}`, runAt: due + (i % 60_000) });
      }
    }),
  );
}

{
  const q = await openQueue();
  await addAll(q, Math.min(N, 20_000));
  await q.close();
}

if (values.child) {
  const q = await openQueue();
  await markedPass(MARK, () => addAll(q, N));
  await q.close();
  process.exit(0);
}

// cpu
const q = await openQueue();
const admin = redis!.client();
const calls0 = await scriptCalls(admin);
const stopProfile = values.profile ? await cpuProfile(TOP, 100) : undefined;
gc();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await addAll(q, N);
const cpu = process.cpuUsage(cpu0);
const wallMs = performance.now() - t0;
const calls = (await scriptCalls(admin)) - calls0;
await q.close();
const profile = stopProfile ? await stopProfile() : undefined;

// sites
const sites: { site: string; bytesPerAdd: number }[] = [];
if (values.sites) {
  const sq = await openQueue();
  gc();
  const stopSampling = await heapSampling(Number(values.interval), TOP);
  await addAll(sq, N);
  const sampled = await stopSampling();
  await sq.close();
  for (const [site, bytes] of sampled.top) sites.push({ site, bytesPerAdd: Math.round(bytes / N) });
}

// alloc
const exact = gcTracedBytes(fileURLToPath(import.meta.url), ['--jobs', String(N), '--inflight', String(IN_FLIGHT), '--child', connection], MARK);
await redis!.stop();

const result = {
  adds: N,
  inFlight: IN_FLIGHT,
  bytesPerAdd: Math.round(exact / N),
  cpuUsPerAdd: Number(((cpu.user + cpu.system) / N).toFixed(2)),
  addsPerSecond: Math.round(N / (wallMs / 1000)),
  addsPerScriptCall: Number((N / calls).toFixed(1)),
  top: profile?.sites ?? [],
  owners: profile?.owners ?? [],
  sites,
};
if (values.json) console.log(JSON.stringify(result));
else {
  console.log(
    `${N} single adds, ${IN_FLIGHT} in flight: ${result.bytesPerAdd} B allocated per add (GC trace), ${result.cpuUsPerAdd} µs CPU per add, ${result.addsPerSecond} adds/s, ${result.addsPerScriptCall} adds per script call`,
  );
  if (profile) {
    console.log(`cpu pass, top functions by self time (share of the busy samples):`);
    for (const t of profile.sites) console.log(`${t.share.toFixed(1).padStart(5)}%  ${t.site}`);
    console.log(`cpu pass by owner (each sample to the nearest frame up its stack that is delayq's, ioredis's or V8's):`);
    for (const t of profile.owners) console.log(`${t.share.toFixed(1).padStart(5)}%  ${t.owner}`);
  }
  if (values.sites) {
    console.log(`top allocation sites, self bytes per add (sampling every ${values.interval} B):`);
    for (const t of sites) console.log(`${String(t.bytesPerAdd).padStart(6)} B  ${t.site}`);
  }
}
