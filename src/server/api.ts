/**
 * The JSON API: one route per library operation, each a thin call into Queue. Status codes:
 * 200 done, 400 bad input (the field named), 404 no such job or schedule, 409 the job is in a
 * state the action does not fit (or the set grew past what was confirmed), 422 over the bulk
 * cap, 503 Redis unreachable.
 */
import { idsMatching, passesFilter, type RetainedFilter } from '../inspect/retained-filter.js';
import type { Queue } from '../queue.js';
import type { ListCursor } from '../store/store.js';
import type { ScheduleInfo } from '../schedules/schedules.js';
import { nextOccurrence } from '../schedules/occurrences.js';
import type { JobInfo, JobPage, JobState, ListOrder } from '../types.js';
import type { Sampler } from './history.js';
import { HttpError, route, type Route } from './route.js';
import * as s from './schemas.js';

export interface ApiContext {
  sampler: Sampler;
  /** Most jobs one bulk action may touch. */
  maxBulk: number;
  /** Hides payload fields (the host app's hook); undefined shows payloads as they are. */
  redact: ((data: unknown, job: { queue: string; id: string }) => unknown) | undefined;
}

function show(q: Queue<unknown>, ctx: ApiContext, job: JobInfo<unknown>): JobInfo<unknown> {
  return ctx.redact ? { ...job, data: ctx.redact(job.data, { queue: q.name, id: job.id }) } : job;
}

/** 404 for no job, 409 for a job in a state the action does not fit. */
function refuseState(id: string, state: JobState | undefined, action: string): never {
  if (state === undefined) throw new HttpError(404, 'not_found', `no job ${id}`);
  throw new HttpError(409, 'state', `job ${id} is ${state}: only scheduled jobs can be ${action}`);
}

/** The `equals` of a path search arrives as JSON text; a bare word means that string. */
function parseEquals(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

type BulkTarget = { ids: string[] } | { all: true; expect?: number } | { errorContains?: string; dataContains?: string; expect?: number };

/**
 * Resolves a bulk target on a retained set to ids, refusing more than `maxBulk` (the dashboard
 * is for handfuls; the CLI does millions) and more than the person confirmed. `all` is the
 * empty filter; matching is the library's (idsMatching), on the data as stored.
 */
async function bulkIds(q: Queue<unknown>, state: 'dead' | 'completed', target: BulkTarget, ctx: ApiContext): Promise<string[]> {
  const maxBulk = ctx.maxBulk;
  if ('ids' in target) return target.ids;
  // How many jobs a payload filter matches (a 409 against `expect`, a 422 over the cap, or the
  // count done) tells whether a hidden field holds a guess: refused while payloads are redacted.
  if (ctx.redact && 'dataContains' in target && target.dataContains !== undefined) {
    throw new HttpError(403, 'redacted', 'payloads are redacted: a bulk action cannot filter by payload', 'dataContains');
  }
  const filter = 'all' in target ? {} : { errorContains: target.errorContains, dataContains: target.dataContains };
  const ids = await idsMatching(q.store, q.name, state, filter, maxBulk);
  if (ids.length > maxBulk) {
    throw new HttpError(422, 'bulk_cap', `more than ${maxBulk} ${state} jobs match: the dashboard acts on at most ${maxBulk} at once (use the CLI for more)`);
  }
  if (target.expect !== undefined && ids.length > target.expect) {
    throw new HttpError(409, 'changed', `${ids.length} jobs match now, more than the ${target.expect} confirmed: look again and confirm`);
  }
  return ids;
}

/** Jobs a drain's count reads per listing page. */
const DRAIN_PAGE = 1000;
/** Most due jobs a drain's count reads past (ones due at or after `dueBefore`, which it leaves). */
const DRAIN_PASS_MAX = 20_000;

/**
 * The ids a drain takes: every scheduled job (due ones included), or those due before
 * `dueBefore`, read from the listings and stopping once more than `max` are found. The ready
 * listing is in hand-out order, not due order, so due jobs the drain would leave are read past;
 * a count that would read past more than DRAIN_PASS_MAX is refused (the CLI drains millions).
 */
async function drainIds(q: Queue<unknown>, dueBefore: number | undefined, max: number): Promise<string[]> {
  const ids = new Set<string>();
  let passed = 0;
  for (const state of ['ready', 'scheduled'] as const) {
    let cursor: string | undefined;
    do {
      const page = await q.jobs.list({ state, limit: DRAIN_PAGE, cursor });
      for (const j of page.jobs) {
        if (dueBefore !== undefined && j.dueAtMs >= dueBefore) {
          // Scheduled jobs come in due order: none after this one is taken either.
          if (state === 'scheduled') return [...ids];
          if (++passed > DRAIN_PASS_MAX) {
            throw new HttpError(422, 'bulk_cap', `more than ${DRAIN_PASS_MAX} due jobs to look through to count this drain: use the CLI (delayq drain)`);
          }
          continue;
        }
        ids.add(j.id);
        if (ids.size > max) return [...ids];
      }
      cursor = page.cursor;
    } while (cursor);
  }
  return [...ids];
}

/** Jobs a filtered listing reads per call unless told (`budget`), as a search does. */
const FILTER_BUDGET = 10_000;

/**
 * A page of a retained set (dead, completed) whose last error contains `text`: listing pages read
 * in the set's order until `limit` matched or `budget` jobs were read. Each read stops at a page
 * end, so the cursor is the listing's own (exact, and checked like any); the reads are sized by
 * the matches still wanted and how rare they were so far, so a page holds about `limit` matches
 * (never more than 1,000). `scanned` says how many jobs were read, of `total`.
 */
async function filteredPage(
  q: Queue<unknown>,
  state: 'dead' | 'completed',
  text: string,
  opts: { order: ListOrder; limit: number; budget: number; cursor: string | undefined },
): Promise<JobPage<unknown> & { scanned: number }> {
  const jobs: JobInfo<unknown>[] = [];
  let cursor = opts.cursor;
  let scanned = 0;
  let total = 0;
  do {
    const want = opts.limit - jobs.length;
    // Rare matches so far: read further per call (at most 1,000 jobs, and the budget left).
    const rarity = (scanned + 1) / (jobs.length + 1);
    const size = Math.max(1, Math.min(1000, opts.budget - scanned, Math.ceil(want * rarity)));
    const page = await q.jobs.list({ state, order: opts.order, limit: size, cursor });
    total = page.total;
    scanned += page.jobs.length;
    for (const j of page.jobs) if (passesFilter({ errorContains: text }, j)) jobs.push(j);
    cursor = page.cursor;
  } while (cursor && jobs.length < opts.limit && scanned < opts.budget);
  return { state, jobs, total, cursor, scanned };
}

/** Most jobs a count (a read, which any reader may ask for) looks through: as much as one search call may read. */
const COUNT_READ_MAX = 1_000_000;

/**
 * The count behind a bulk action by filter: the same filter on the data as stored as idsMatching
 * (the bulk action's own count), stopping once more than `max` matched, and refused (422) past
 * COUNT_READ_MAX jobs read, so a reader cannot make one request walk a dead set of any size.
 */
async function countMatching(q: Queue<unknown>, set: 'dead' | 'completed', filter: RetainedFilter, max: number): Promise<{ count: number; more: boolean }> {
  let count = 0;
  let read = 0;
  let cursor: ListCursor | undefined;
  do {
    const page = await q.store.list(q.name, set, cursor, 1000);
    for (const j of page.jobs) {
      if (passesFilter(filter, j) && ++count > max) return { count: max, more: true };
    }
    read += page.jobs.length;
    cursor = page.next;
    if (cursor && read >= COUNT_READ_MAX) {
      throw new HttpError(422, 'bulk_cap', `more than ${COUNT_READ_MAX} ${set} jobs to look through to count this: use the CLI`);
    }
  } while (cursor);
  return { count, more: false };
}

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

const STATE_ERRORS = [400, 404, 409];

export function apiRoutes(ctx: ApiContext): Route[] {
  /** A bulk action on a retained set: ids, all, or a filter, capped and checked against what was confirmed. */
  const bulkRoute = (
    code: string,
    path: string,
    summary: string,
    tag: Route['tag'],
    set: 'dead' | 'completed',
    act: (q: Queue<unknown>, ids: string[]) => Promise<number>,
  ): Route =>
    route<undefined, BulkTarget>({
      method: 'post',
      code,
      path,
      summary: `${summary}: by ids, all, or by filter (at most ${ctx.maxBulk}; \`expect\` refuses when more match than confirmed)`,
      tag,
      action: 'write',
      body: s.bulkBody(ctx.maxBulk),
      response: s.countResult,
      errors: [400, 403, 409, 422],
      async handler({ queue, body }) {
        const ids = await bulkIds(queue, set, body, ctx);
        return { count: ids.length === 0 ? 0 : await act(queue, ids) };
      },
      audit: (r, { body }) => ({ target: describeTarget(body), count: (r as { count: number }).count }),
    });

  /**
   * How many jobs of a retained set a bulk action by filter would take, counted as the action
   * counts (so the person confirms that number with `expect`): at most `maxBulk`, and `more`
   * when more match.
   */
  const countRoute = (code: string, path: string, set: 'dead' | 'completed'): Route =>
    route<typeof s.countQuery._zod.output>({
      code,
      method: 'get',
      path,
      summary: `Counts the ${set} jobs a bulk action by the same filter would take (errorContains, and dataContains; at most ${ctx.maxBulk}, then \`more\`)`,
      tag: set === 'dead' ? 'dead set' : 'jobs',
      action: 'read',
      query: s.countQuery,
      response: s.matchCount,
      errors: [400, 403, 422],
      async handler({ queue, query }) {
        if (ctx.redact && query.dataContains !== undefined) {
          throw new HttpError(403, 'redacted', 'payloads are redacted: jobs cannot be counted by payload', 'dataContains');
        }
        return countMatching(queue, set, { errorContains: query.errorContains, dataContains: query.dataContains }, ctx.maxBulk);
      },
    });

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
        // The queues the sampler holds (the shown ones), each with the hour it has seen.
        return {
          queues: snap.queues.map(({ name, stats }) => {
            const h = ctx.sampler.history(name);
            return {
              name,
              since: h?.since,
              ...(h?.summary(stats.nowMs) ?? { completed: 0, died: 0 }),
              history: h?.perMinute(stats.nowMs) ?? [],
            };
          }),
        };
      },
    }),
    route({
      method: 'get',
      code: 'queue.get',
      path: '/queues/:queue',
      summary: 'A queue: counts, retention, and the last hour per minute',
      tag: 'queues',
      action: 'read',
      response: s.queueDetail,
      async handler({ queue }) {
        void ctx.sampler.start();
        const [stats, retention, shards] = await Promise.all([queue.stats(), queue.retention(), queue.shards()]);
        return {
          name: queue.name,
          stats,
          retention,
          shards: shards.shards,
          drainingShards: shards.draining.length,
          history: ctx.sampler.history(queue.name)?.perMinute(stats.nowMs) ?? [],
          historySince: ctx.sampler.history(queue.name)?.since,
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
    route<typeof s.jobsQuery._zod.output>({
      method: 'get',
      code: 'jobs.list',
      path: '/queues/:queue/jobs',
      summary:
        "A page of jobs in a state, in that state's order or (`order=desc`) newest first; dead and completed jobs may be filtered by their last error (`errorContains`, reading at most `budget` jobs per call)",
      tag: 'jobs',
      action: 'read',
      query: s.jobsQuery,
      response: s.jobPage,
      errors: [400],
      async handler({ queue, query }) {
        const order = (query.order ?? 'asc') as ListOrder;
        if (query.errorContains !== undefined) {
          // The last error is never redacted (only payloads are), so it may be searched with redaction on.
          if (query.state !== 'dead' && query.state !== 'completed') {
            throw new HttpError(400, 'validation', 'filters only dead and completed jobs (by their last error)', 'query.errorContains');
          }
          const page = await filteredPage(queue, query.state, query.errorContains, {
            order,
            limit: query.limit ?? 50,
            budget: query.budget ?? FILTER_BUDGET,
            cursor: query.cursor,
          });
          return { ...page, jobs: page.jobs.map((j) => show(queue, ctx, j)) };
        }
        if (query.budget !== undefined) throw new HttpError(400, 'validation', 'goes with errorContains', 'query.budget');
        const page = await queue.jobs.list({ state: query.state as 'scheduled', order, limit: query.limit, cursor: query.cursor });
        return { ...page, jobs: page.jobs.map((j) => show(queue, ctx, j)) };
      },
    }),
    route<typeof s.searchQuery._zod.output>({
      method: 'get',
      code: 'jobs.search',
      path: '/queues/:queue/search',
      summary: 'Jobs whose id or payload contains text, or whose payload has a value at a path',
      tag: 'jobs',
      action: 'read',
      query: s.searchQuery,
      response: s.searchResult,
      errors: [400, 403],
      async handler({ queue, query }) {
        // A search that looked at payloads would let a reader of a redacted dashboard probe a
        // hidden field one guess at a time (by what matched, but also by how far the scan got
        // and where its cursor points), so with redaction on the scan matches ids only.
        if (ctx.redact && (query.path !== undefined || query.equals !== undefined || query.text === undefined)) {
          throw new HttpError(403, 'redacted', 'payloads are redacted: search by id only', 'path');
        }
        const base = { limit: query.limit, budget: query.budget, cursor: query.cursor };
        const found =
          query.path !== undefined || query.equals !== undefined
            ? await queue.jobs.search({ ...base, path: query.path, equals: query.equals === undefined ? undefined : parseEquals(query.equals) })
            : await queue.jobs.search({ ...base, text: query.text, idsOnly: ctx.redact !== undefined });
        return { ...found, jobs: found.jobs.map((j) => show(queue, ctx, j)) };
      },
    }),
    route({
      method: 'get',
      code: 'job.get',
      path: '/queues/:queue/jobs/:id',
      summary: 'One job: state, times, attempts, errors, progress, logs',
      tag: 'jobs',
      action: 'read',
      response: s.jobInfo,
      errors: [400, 404],
      async handler({ queue, params }) {
        const job = await queue.get(params.id!);
        if (!job) throw new HttpError(404, 'not_found', `no job ${params.id}`);
        return show(queue, ctx, job);
      },
    }),
    route<undefined, typeof s.addBody._zod.output>({
      method: 'post',
      code: 'job.add',
      path: '/queues/:queue/jobs',
      summary: 'Adds a job (the options of queue.add); the first job of a queue creates it',
      tag: 'jobs',
      action: 'write',
      createsQueue: true,
      body: s.addBody,
      response: s.addResult,
      errors: [400],
      handler: ({ queue, body }) => queue.add(body.data, body.opts as Parameters<Queue['add']>[1]),
      audit: (r) => ({ target: (r as { id: string }).id, count: (r as { added: boolean }).added ? 1 : 0 }),
    }),
    route({
      method: 'post',
      code: 'job.cancel',
      path: '/queues/:queue/jobs/:id/cancel',
      summary: 'Cancels a scheduled job',
      tag: 'jobs',
      action: 'write',
      response: s.changeResult,
      errors: STATE_ERRORS,
      async handler({ queue, params }) {
        const r = await queue.cancel(params.id!);
        if (!r.cancelled) refuseState(r.id, r.state, 'cancelled');
        return r;
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route<undefined, typeof s.rescheduleBody._zod.output>({
      method: 'post',
      code: 'job.reschedule',
      path: '/queues/:queue/jobs/:id/reschedule',
      summary: 'Gives a scheduled job a new due time ({ delay } or { runAt })',
      tag: 'jobs',
      action: 'write',
      body: s.rescheduleBody,
      response: s.changeResult,
      errors: STATE_ERRORS,
      async handler({ queue, params, body }) {
        const r = await queue.reschedule(params.id!, body);
        if (!r.rescheduled) refuseState(r.id, r.state, 'rescheduled');
        return r;
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route({
      method: 'post',
      code: 'job.promote',
      path: '/queues/:queue/jobs/:id/promote',
      summary: 'Makes a scheduled job due now',
      tag: 'jobs',
      action: 'write',
      response: s.changeResult,
      errors: STATE_ERRORS,
      async handler({ queue, params }) {
        const r = await queue.promote(params.id!);
        if (!r.rescheduled) refuseState(r.id, r.state, 'promoted');
        return r;
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route({
      method: 'post',
      code: 'job.retry',
      path: '/queues/:queue/jobs/:id/retry',
      summary: 'Puts a dead job back, due now, with fresh attempts',
      tag: 'dead set',
      action: 'write',
      response: s.countResult,
      errors: STATE_ERRORS,
      async handler({ queue, params }) {
        const count = await queue.dead.retry(params.id!);
        if (count === 0) {
          const job = await queue.get(params.id!);
          if (!job) throw new HttpError(404, 'not_found', `no job ${params.id}`);
          throw new HttpError(409, 'state', `job ${params.id} is ${job.state}: only dead jobs can be retried`);
        }
        return { count };
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route({
      method: 'delete',
      code: 'job.remove',
      path: '/queues/:queue/jobs/:id',
      summary: 'Removes a job: cancels it when scheduled, purges it when dead or completed (active jobs stay)',
      tag: 'jobs',
      action: 'write',
      response: s.countResult,
      errors: STATE_ERRORS,
      async handler({ queue, params }) {
        const job = await queue.get(params.id!);
        if (!job) throw new HttpError(404, 'not_found', `no job ${params.id}`);
        let count = 0;
        if (job.state === 'scheduled') count = (await queue.cancel(job.id)).cancelled ? 1 : 0;
        else if (job.state === 'dead') count = await queue.dead.purge(job.id);
        else if (job.state === 'completed') count = await queue.completed.purge(job.id);
        if (count === 0)
          throw new HttpError(409, 'state', `job ${job.id} is ${job.state === 'active' ? 'running' : 'changing state'}: try again once it settles`);
        return { count };
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route<undefined, { ids: string[] }>({
      method: 'post',
      code: 'jobs.cancel',
      path: '/queues/:queue/cancel',
      summary: `Cancels many scheduled jobs by id (at most ${ctx.maxBulk})`,
      tag: 'jobs',
      action: 'write',
      body: s.idsBody(ctx.maxBulk),
      response: s.countResult,
      errors: [400],
      async handler({ queue, body }) {
        return { count: (await queue.cancelMany(body.ids)).cancelled };
      },
      audit: (r, { body }) => ({ target: `${body.ids.length} ids`, count: (r as { count: number }).count }),
    }),
    countRoute('dead.count', '/queues/:queue/dead/count', 'dead'),
    countRoute('completed.count', '/queues/:queue/completed/count', 'completed'),
    bulkRoute('dead.retry', '/queues/:queue/dead/retry', 'Retries dead jobs', 'dead set', 'dead', (q, ids) => q.dead.retry(ids)),
    bulkRoute('dead.purge', '/queues/:queue/dead/purge', 'Deletes dead jobs for good', 'dead set', 'dead', (q, ids) => q.dead.purge(ids)),
    bulkRoute('completed.purge', '/queues/:queue/completed/purge', 'Deletes kept completed jobs', 'jobs', 'completed', (q, ids) => q.completed.purge(ids)),
    route<undefined, { dueBefore?: number; expect?: number }>({
      method: 'post',
      code: 'queue.drain',
      path: '/queues/:queue/drain',
      summary: `Removes every scheduled job (or those due before \`dueBefore\`), at most ${ctx.maxBulk}; \`expect\` refuses when more would go than confirmed`,
      tag: 'queues',
      action: 'write',
      body: s.drainBody,
      response: s.countResult,
      errors: [400, 409, 422],
      async handler({ queue, body }) {
        // The jobs are counted, checked against the cap and the confirmation, and then exactly
        // those are cancelled: a job added in between is not taken, so the count confirmed
        // bounds what is removed whatever `dueBefore` says.
        const ids = await drainIds(queue, body.dueBefore, ctx.maxBulk);
        if (ids.length > ctx.maxBulk) {
          throw new HttpError(
            422,
            'bulk_cap',
            `more than ${ctx.maxBulk} jobs would be drained: the dashboard acts on at most ${ctx.maxBulk} at once (use the CLI for more)`,
          );
        }
        if (body.expect !== undefined && ids.length > body.expect) {
          throw new HttpError(409, 'changed', `${ids.length} jobs would be drained now, more than the ${body.expect} confirmed: look again and confirm`);
        }
        return { count: ids.length === 0 ? 0 : (await queue.cancelMany(ids)).cancelled };
      },
      audit: (r, { body }) => ({
        target: body.dueBefore === undefined ? 'all scheduled' : `due before ${new Date(body.dueBefore).toISOString()}`,
        count: (r as { count: number }).count,
      }),
    }),
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

function describeTarget(t: BulkTarget): string {
  if ('ids' in t) return t.ids.length === 1 ? t.ids[0]! : `${t.ids.length} ids`;
  if ('all' in t) return 'all';
  const parts: string[] = [];
  if (t.errorContains !== undefined) parts.push(`error contains ${JSON.stringify(t.errorContains)}`);
  if (t.dataContains !== undefined) parts.push(`data contains ${JSON.stringify(t.dataContains)}`);
  return parts.join(' and ') || 'nothing';
}
