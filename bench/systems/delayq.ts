import { Queue, Worker } from '../../src/index.js';
import { payload, type System } from './system.js';

/** The scheme of a cluster "url" the benchmark passes to its worker children: `redis-cluster://host:port,host:port,…` (the seeds). */
export const CLUSTER_SCHEME = 'redis-cluster://';

export function clusterUrl(seeds: readonly { host: string; port: number }[]): string {
  return `${CLUSTER_SCHEME}${seeds.map((s) => `${s.host}:${s.port}`).join(',')}`;
}

/** A Redis URL as it is, or a cluster url (clusterUrl) as `{ cluster: seeds }`. */
export function connectionOf(url: string): string | { cluster: { host: string; port: number }[] } {
  if (!url.startsWith(CLUSTER_SCHEME)) return url;
  const cluster = url
    .slice(CLUSTER_SCHEME.length)
    .split(',')
    .map((hp) => ({ host: hp.slice(0, hp.lastIndexOf(':')), port: Number(hp.slice(hp.lastIndexOf(':') + 1)) }));
  return { cluster };
}

export const delayq: System = {
  name: 'delayq',
  producer(url, queue) {
    const q = new Queue(queue, { connection: connectionOf(url) });
    return {
      async enqueue(jobs) {
        // Large chunks keep many addBulk calls in flight without holding every promise at once.
        for (let i = 0; i < jobs.length; i += 10_000) {
          await q.addBulk(jobs.slice(i, i + 10_000).map((j) => ({ data: payload(j), opts: { id: j.id, runAt: j.due } })));
        }
      },
      async addOne(j) {
        await q.add(payload(j), { id: j.id, runAt: j.due });
      },
      close: () => q.close(),
    };
  },
  async consumer(url, queue, onJob) {
    const w = new Worker<{ due: number }>(queue, (job) => onJob(job.data.due), { connection: connectionOf(url), concurrency: 200, batch: 100 });
    w.on('error', () => {});
    return { close: () => w.close() };
  },
};
