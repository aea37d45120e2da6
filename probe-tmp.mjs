// Worker diet probe: allocation sites of a worker dispatching N jobs (sampling heap profiler,
// collected objects included), and CPU and minor GCs per job.
import { Session } from 'node:inspector/promises';
import { PerformanceObserver } from 'node:perf_hooks';
const dist = process.argv[2] ?? '/work/main/dist';
const { startRedis } = await import(`${dist}/test/helpers/redis-server.js`);
const { Queue, Worker } = await import(`${dist}/src/index.js`);
const N = Number(process.argv[3] ?? 50000);
const redis = await startRedis();
const q = new Queue('diet', { connection: redis.url });
for (let i = 0; i < N; i += 5000) await q.addBulk(Array.from({ length: 5000 }, (_, k) => ({ data: { n: i + k, s: 'x'.repeat(40) } })));
const s = new Session(); s.connect();
const profile = process.argv[4] === 'profile';
if (profile) await s.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
let minor = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) if ((e.detail?.kind ?? e.kind) === 1) minor++; }).observe({ entryTypes: ['gc'] });
let done = 0; let finish; const all = new Promise((r) => (finish = r));
const t0 = performance.now(); const c0 = process.cpuUsage();
const w = new Worker('diet', () => { if (++done === N) finish(); }, { connection: redis.url, concurrency: 200 });
await all;
const wall = performance.now() - t0; const cpu = process.cpuUsage(c0);
let total = 0;
if (profile) {
  const { profile: p } = await s.post('HeapProfiler.stopSampling');
  const self = new Map();
  const walk = (n) => { const f = n.callFrame; const k = `${f.functionName || '(anon)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`; self.set(k, (self.get(k) ?? 0) + n.selfSize); total += n.selfSize; for (const c of n.children) walk(c); };
  walk(p.head);
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(String(Math.round(v / N)).padStart(6), 'B/job', k);
}
await w.close(); await q.close(); await redis.stop();
console.log(JSON.stringify({ jobsPerS: Math.round(N / (wall / 1000)), cpuUsPerJob: ((cpu.user + cpu.system) / N).toFixed(2), minorGcs: minor, sampledBytesPerJob: Math.round(total / N) }));
