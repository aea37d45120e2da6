/**
 * What seeing and keeping jobs costs (delayq only; the peers' figures are in docs/benchmarks.md):
 * - the memory of a completed job kept by retention (60-byte payload, a small result), against
 *   the same queue with retention off;
 * - the time of one listing page (50 jobs) of each state, and of a 10,000-job search, on a queue
 *   of N pending jobs (1,000,000 by default), measured from Node (round trip included), median
 *   of 20 pages, on cursors taken from across the set.
 * Run alone on the machine: `npm run -s build && node dist/bench/inspect.js [--jobs N]`.
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values } = parseArgs({ options: { jobs: { type: 'string' }, kept: { type: 'string' } } });
const N = Number(values.jobs ?? 1_000_000);
const KEPT = Number(values.kept ?? 100_000);

const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no', '--lazyfree-lazy-user-flush', 'no', '--lazyfree-lazy-user-del', 'no'] });
const admin = redis.client();
const used = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const payload = (i: number) => ({ orderId: `order-${String(i).padStart(9, '0')}`, customer: 'c-00042', total: 1999 });

try {
  // 1. Memory per kept completed job.
  const kept = new Queue('kept', { connection: redis.url });
  await kept.setRetention({ completed: { count: KEPT * 2 } });
  const before = await used();
  for (let i = 0; i < KEPT; i += 1000)
    await kept.addBulk(Array.from({ length: Math.min(1000, KEPT - i) }, (_, k) => ({ data: payload(i + k), opts: { id: `job-${i + k}` } })));
  const pending = await used();
  let done = 0;
  const w = new Worker('kept', async () => ({ ok: true, ms: 12 }), { connection: redis.url, concurrency: 200, batch: 100 });
  await new Promise<void>((resolve) => w.on('completed', () => ++done === KEPT && resolve()));
  await w.close();
  const after = await used();
  console.log(`kept completed job: ${((after - before) / KEPT).toFixed(0)} B each (pending was ${((pending - before) / KEPT).toFixed(0)} B), ${KEPT} jobs`);
  await kept.close();
  await admin.flushall();

  // 2. Listing pages and a search on a queue of N jobs.
  const q = new Queue<ReturnType<typeof payload>>('big', { connection: redis.url });
  const t0 = performance.now();
  const now = Date.now();
  for (let i = 0; i < N; i += 1000) {
    await q.addBulk(
      Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({
        data: payload(i + k),
        opts: { id: `job-${i + k}`, runAt: now + 3_600_000 + ((i + k) % 50_000) },
      })),
    );
  }
  console.log(`${N} jobs added in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const time = async (fn: () => Promise<unknown>) => {
    const s = performance.now();
    await fn();
    return performance.now() - s;
  };
  const first: number[] = [];
  const deep: number[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 20; i++) first.push(await time(() => q.jobs.list({ state: 'scheduled', limit: 50 })));
  // Cursors from deep in the set: page on from a page taken after skipping with large pages.
  for (let i = 0; i < 20; i++) {
    const page = await q.jobs.list({ state: 'scheduled', limit: 1000, cursor });
    cursor = page.cursor;
    deep.push(await time(() => q.jobs.list({ state: 'scheduled', limit: 50, cursor })));
  }
  const search: number[] = [];
  for (let i = 0; i < 5; i++) search.push(await time(() => q.jobs.search({ text: 'order-000999999', budget: 10_000 })));
  const stats = await time(() => q.stats());
  console.log(`listing page of 50 on ${N} scheduled jobs: first page ${median(first).toFixed(2)} ms, deep pages ${median(deep).toFixed(2)} ms (median of 20)`);
  console.log(`search with a budget of 10,000 jobs: ${median(search).toFixed(1)} ms (median of 5); stats ${stats.toFixed(2)} ms`);
  const ob = await time(() => q.obliterate());
  console.log(`obliterate of ${N} jobs: ${ob.toFixed(1)} ms (UNLINK: memory freed off the main thread)`);
  await q.close();
} finally {
  await admin.quit();
  await redis.stop();
}
