/**
 * The JSON API's queue routes: every queue with its counts and last hour (from the sampler), one
 * queue's counts, limits, retention, timeline, shards and live workers, and pause / resume.
 */
import type { ApiContext } from './context.js';
import { HttpError, route, type Route } from '../route.js';
import * as s from '../schemas.js';

/** Reading queues: the list, the history, one queue and its timeline, shards and workers. */
export function queueRoutes(ctx: ApiContext): Route[] {
  return [
    route({
      method: 'get',
      code: 'queues.list',
      path: '/queues',
      summary: 'Every queue with its counts',
      tag: 'queues',
      action: 'read',
      response: s.queueSummary.array(),
      async handler() {
        await ctx.sampler.start();
        const snap = ctx.sampler.snapshot;
        if (snap.error && snap.takenAt === 0) throw new HttpError(503, 'unavailable', snap.error);
        return snap.queues;
      },
    }),
    route({
      code: 'queues.history',
      method: 'get',
      path: '/history',
      summary: "Every shown queue's last hour at once: per minute, summed, and since when the samples go back",
      tag: 'queues',
      action: 'read',
      response: s.histories,
      async handler() {
        await ctx.sampler.start();
        const snap = ctx.sampler.snapshot;
        if (snap.error && snap.takenAt === 0) throw new HttpError(503, 'unavailable', snap.error);
        // The queues the sampler holds (the shown ones), each with its last hour: kept in the
        // store, with the samples' waits.
        return {
          queues: await Promise.all(
            snap.queues.map(async ({ name }) => {
              const { since, points } = await ctx.sampler.lastHour(name);
              return {
                name,
                since,
                completed: points.reduce((n, p) => n + (p.completed ?? 0), 0),
                died: points.reduce((n, p) => n + (p.died ?? 0), 0),
                history: points,
              };
            }),
          ),
        };
      },
    }),
    route({
      method: 'get',
      code: 'queue.get',
      path: '/queues/:queue',
      summary: 'A queue: counts, limits, its rate limiter now, retention, and the last hour per minute',
      tag: 'queues',
      action: 'read',
      response: s.queueDetail,
      async handler({ queue }) {
        void ctx.sampler.start();
        const [stats, retention, shards, limits, rate] = await Promise.all([
          queue.stats(),
          queue.retention(),
          queue.shards(),
          queue.limits(),
          queue.rateStatus(),
        ]);
        const hour = await ctx.sampler.lastHour(queue.name);
        return {
          name: queue.name,
          stats,
          limits,
          rate,
          retention,
          shards: shards.shards,
          drainingShards: shards.draining.length,
          history: hour.points,
          historySince: hour.since,
        };
      },
    }),
    route<typeof s.timelineQuery._zod.output>({
      method: 'get',
      code: 'queue.timeline',
      path: '/queues/:queue/timeline',
      summary: 'Scheduled jobs falling due ahead, counted per bucket (default: the next hour by minute)',
      tag: 'queues',
      action: 'read',
      query: s.timelineQuery,
      response: s.timeline,
      handler: ({ queue, query }) => queue.timeline({ bucketMs: query.bucketMs, buckets: query.buckets }),
    }),
    route({
      method: 'get',
      code: 'queue.shards',
      path: '/queues/:queue/shards',
      summary: "Every shard of the queue (current, draining, the queue's own keys) with its node, counts and lag",
      tag: 'queues',
      action: 'read',
      response: s.shardFigures.array(),
      handler: ({ queue }) => queue.shardStats(),
    }),
    route({
      method: 'get',
      code: 'queue.workers',
      path: '/queues/:queue/workers',
      summary: 'Live workers (heartbeat within 30 s)',
      tag: 'queues',
      action: 'read',
      response: s.workerInfo.array(),
      handler: ({ queue }) => queue.workers(),
    }),
  ];
}

/** Stopping and starting every worker of a queue. */
export function queueControlRoutes(): Route[] {
  return [
    route({
      method: 'post',
      code: 'queue.pause',
      path: '/queues/:queue/pause',
      summary: 'Stops every worker of the queue from claiming',
      tag: 'queues',
      action: 'write',
      response: s.changed,
      async handler({ queue }) {
        return { ok: true, changed: await queue.pause() };
      },
      audit: () => ({}),
    }),
    route({
      method: 'post',
      code: 'queue.resume',
      path: '/queues/:queue/resume',
      summary: 'Lets the workers claim again',
      tag: 'queues',
      action: 'write',
      response: s.changed,
      async handler({ queue }) {
        return { ok: true, changed: await queue.resume() };
      },
      audit: () => ({}),
    }),
  ];
}
