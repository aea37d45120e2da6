import { Queue, Worker } from 'bullmq';
import { payload, type System } from './system.js';

function connection(url: string) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };
}

export const bullmq: System = {
  name: 'bullmq',
  producer(url, queue) {
    const q = new Queue(queue, { connection: connection(url) });
    return {
      async enqueue(jobs) {
        for (let i = 0; i < jobs.length; i += 1000) {
          const now = Date.now();
          await q.addBulk(
            jobs.slice(i, i + 1000).map((j) => ({
              name: 'cancel',
              data: payload(j),
              opts: { jobId: j.id, delay: Math.max(0, j.due - now), removeOnComplete: true, removeOnFail: true },
            })),
          );
        }
      },
      async addOne(j) {
        await q.add('cancel', payload(j), { jobId: j.id, delay: Math.max(0, j.due - Date.now()), removeOnComplete: true, removeOnFail: true });
      },
      close: () => q.close(),
    };
  },
  async consumer(url, queue, onJob) {
    const w = new Worker(queue, async (job) => onJob((job.data as { due: number }).due), { connection: connection(url), concurrency: 200 });
    w.on('error', () => {});
    await w.waitUntilReady();
    return { close: () => w.close() };
  },
};
