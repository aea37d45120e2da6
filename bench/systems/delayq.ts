import { Queue, Worker } from '../../src/index.js';
import { payload, type System } from './system.js';

export const delayq: System = {
  name: 'delayq',
  producer(url, queue) {
    const q = new Queue(queue, { connection: url });
    return {
      async enqueue(jobs) {
        // Large chunks keep many addBulk calls in flight without holding every promise at once.
        for (let i = 0; i < jobs.length; i += 10_000) {
          await q.addBulk(jobs.slice(i, i + 10_000).map((j) => ({ data: payload(j), opts: { id: j.id, runAt: j.due } })));
        }
      },
      close: () => q.close(),
    };
  },
  async consumer(url, queue, onJob) {
    const w = new Worker<{ due: number }>(queue, (job) => onJob(job.data.due), { connection: url, concurrency: 200, batch: 100 });
    w.on('error', () => {});
    return { close: () => w.close() };
  },
};
