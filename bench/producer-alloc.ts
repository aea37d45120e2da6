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
import { execFileSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';
import { Queue } from '../src/index.js';

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

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

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

/** A profile's call frame as `function file:line`, paths from node_modules or dist on. */
function siteOf(f: { functionName: string; url: string; lineNumber: number }): string {
  return `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}`;
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
  gc();
  console.log(`${MARK} start`);
  await addAll(q, N);
  gc();
  console.log(`${MARK} end`);
  await q.close();
  process.exit(0);
}

/** Script calls the server ran so far (FCALL, EVALSHA, EVAL), from INFO commandstats. */
async function scriptCalls(): Promise<number> {
  const info = await admin!.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

// cpu
const q = await openQueue();
const admin = redis?.client();
const calls0 = await scriptCalls();
const profiler = values.profile ? new Session() : undefined;
if (profiler) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
  await profiler.post('Profiler.start');
}
gc();
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await addAll(q, N);
const cpu = process.cpuUsage(cpu0);
const wallMs = performance.now() - t0;
const calls = (await scriptCalls()) - calls0;
await q.close();
const topFunctions: { site: string; share: number }[] = [];
if (profiler) {
  const { profile } = (await profiler.post('Profiler.stop')) as unknown as { profile: CpuProfile };
  profiler.disconnect();
  const self = new Map<string, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // From the second sample: the first is the profiler's own start (the inspector's dispatch).
  for (let i = 1; i < profile.samples.length; i++) {
    const site = siteOf(byId.get(profile.samples[i]!)!.callFrame);
    self.set(site, (self.get(site) ?? 0) + profile.timeDeltas[i]!);
  }
  const busy = [...self].filter(([site]) => !site.startsWith('(idle)')).reduce((a, [, us]) => a + us, 0);
  for (const [site, us] of [...self]
    .filter(([site]) => !site.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP))
    topFunctions.push({ site, share: Number(((us / busy) * 100).toFixed(1)) });
}

// sites
const sites: { site: string; bytesPerAdd: number }[] = [];
if (values.sites) {
  const sq = await openQueue();
  gc();
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: Number(values.interval),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  await addAll(sq, N);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapNode } };
  session.disconnect();
  await sq.close();
  const bySite = new Map<string, number>();
  const walk = (node: HeapNode): void => {
    if (node.selfSize > 0) bySite.set(siteOf(node.callFrame), (bySite.get(siteOf(node.callFrame)) ?? 0) + node.selfSize);
    for (const c of node.children) walk(c);
  };
  walk(profile.head);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, TOP)) sites.push({ site, bytesPerAdd: Math.round(bytes / N) });
}

// alloc
const trace = execFileSync(
  process.execPath,
  ['--expose-gc', '--trace-gc-nvp', fileURLToPath(import.meta.url), '--jobs', String(N), '--inflight', String(IN_FLIGHT), '--child', connection],
  {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  },
);
const window = trace.slice(trace.indexOf(`${MARK} start`), trace.indexOf(`${MARK} end`));
let exact = 0;
for (const m of window.matchAll(/ allocated=(\d+)/g)) exact += Number(m[1]);
await redis!.stop();

const result = {
  adds: N,
  inFlight: IN_FLIGHT,
  bytesPerAdd: Math.round(exact / N),
  cpuUsPerAdd: Number(((cpu.user + cpu.system) / N).toFixed(2)),
  addsPerSecond: Math.round(N / (wallMs / 1000)),
  addsPerScriptCall: Number((N / calls).toFixed(1)),
  top: topFunctions,
  sites,
};
if (values.json) console.log(JSON.stringify(result));
else {
  console.log(
    `${N} single adds, ${IN_FLIGHT} in flight: ${result.bytesPerAdd} B allocated per add (GC trace), ${result.cpuUsPerAdd} µs CPU per add, ${result.addsPerSecond} adds/s, ${result.addsPerScriptCall} adds per script call`,
  );
  if (profiler) {
    console.log(`cpu pass, top functions by self time (share of the busy samples):`);
    for (const t of topFunctions) console.log(`${t.share.toFixed(1).padStart(5)}%  ${t.site}`);
  }
  if (values.sites) {
    console.log(`top allocation sites, self bytes per add (sampling every ${values.interval} B):`);
    for (const t of sites) console.log(`${String(t.bytesPerAdd).padStart(6)} B  ${t.site}`);
  }
}
