/**
 * The JSON API's schedule routes: the recurring schedules of a queue (with the occurrence that
 * is overdue when no Scheduler enqueues it), and making, changing and removing one.
 */
import { nextOccurrence } from '../../schedules/occurrences.js';
import type { ScheduleInfo } from '../../schedules/schedules.js';
import type { ApiContext } from './context.js';
import { HttpError, route, type Route } from '../route.js';
import * as s from '../schemas.js';

/** A schedule's occurrence is overdue past max(1 min, half its interval) without being enqueued: no Scheduler runs it. */
const OVERDUE_GRACE_MS = 60_000;

/**
 * The occurrence a Scheduler should have enqueued by now and has not (the first after the last
 * one enqueued, or after the schedule was made), when it is late by more than the grace: more
 * than a minute and more than half the interval to the occurrence after it. Undefined while on time.
 */
export function overdueOccurrence(s: ScheduleInfo, nowMs: number): number | undefined {
  const due = nextOccurrence(s, s.lastRunAtMs ?? s.anchorMs);
  if (due === undefined) return undefined;
  const after = nextOccurrence(s, due);
  const grace = Math.max(OVERDUE_GRACE_MS, after === undefined ? 0 : (after - due) / 2);
  return nowMs - due > grace ? due : undefined;
}

export function scheduleRoutes(ctx: ApiContext): Route[] {
  return [
    route({
      method: 'get',
      code: 'schedules.list',
      path: '/queues/:queue/schedules',
      summary: 'Recurring schedules with their next and last occurrence, and the occurrence overdue when none is being enqueued',
      tag: 'schedules',
      action: 'read',
      response: s.scheduleInfo.array(),
      async handler({ queue }) {
        const [list, now] = await Promise.all([queue.schedules.list(), queue.store.serverTimeMs(queue.name)]);
        // A schedule's data is the payload of every job it adds: hidden alike, under the id
        // prefix of those jobs. An occurrence long past and not enqueued says no Scheduler runs it.
        return list.map((x) => ({
          ...x,
          data: ctx.redact ? ctx.redact(x.data, { queue: queue.name, id: `schedule:${x.name}` }) : x.data,
          overdueAtMs: overdueOccurrence(x, now),
        }));
      },
    }),
    route<undefined, typeof s.scheduleBody._zod.output>({
      method: 'post',
      code: 'schedule.upsert',
      path: '/queues/:queue/schedules/:name',
      summary: 'Creates or changes a schedule',
      tag: 'schedules',
      action: 'write',
      body: s.scheduleBody,
      response: s.changed,
      errors: [400],
      async handler({ queue, params, body }) {
        return { ok: true, changed: await queue.schedules.upsert(params.name!, body) };
      },
      audit: (_r, { params }) => ({ target: params.name }),
    }),
    route({
      method: 'delete',
      code: 'schedule.remove',
      path: '/queues/:queue/schedules/:name',
      summary: 'Removes a schedule (jobs it already enqueued stay)',
      tag: 'schedules',
      action: 'write',
      response: s.ok,
      errors: [404],
      async handler({ queue, params }) {
        if (!(await queue.schedules.remove(params.name!))) throw new HttpError(404, 'not_found', `no schedule ${params.name}`);
        return { ok: true };
      },
      audit: (_r, { params }) => ({ target: params.name, count: 1 }),
    }),
  ];
}
