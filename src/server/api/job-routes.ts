/**
 * The JSON API's routes on jobs one at a time or by id: listings (dead and completed ones also
 * filtered by their last error), search, one job, add, cancel, reschedule, promote, retry,
 * remove, and cancelling a list of ids. Payloads go out through the redaction hook.
 */
import { filteredPage } from '../../inspect/filtered-page.js';
import { explainWait } from '../../inspect/why-waiting.js';
import { passesFilter } from '../../inspect/retained-filter.js';
import type { Queue } from '../../queue.js';
import type { ListOrder, ListState } from '../../types.js';
import { type ApiContext, refuseState, show, STATE_ERRORS } from './context.js';
import { HttpError, route, type Route } from '../route.js';
import * as s from '../schemas.js';

/** The `equals` of a path search arrives as JSON text; a bare word means that string. */
function parseEquals(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Jobs a filtered listing reads per call unless told (`budget`), as a search does. */
const FILTER_BUDGET = 10_000;

export function jobRoutes(ctx: ApiContext): Route[] {
  return [
    route<typeof s.jobsQuery._zod.output>({
      method: 'get',
      code: 'jobs.list',
      path: '/queues/:queue/jobs',
      summary:
        "A page of jobs in a state, in that state's order or (`order=desc`) newest first; filtered by job name (`name`), and dead and completed jobs by their last error (`errorContains`), reading at most `budget` jobs per call",
      tag: 'jobs',
      action: 'read',
      query: s.jobsQuery,
      response: s.jobPage,
      errors: [400],
      async handler({ queue, query }) {
        const order = (query.order ?? 'asc') as ListOrder;
        const state = query.state as ListState;
        const { errorContains: text, name } = query;
        if (text !== undefined) {
          // The last error is never redacted (only payloads are), so it may be searched with redaction on.
          if (state !== 'dead' && state !== 'completed') {
            throw new HttpError(400, 'validation', 'filters only dead and completed jobs (by their last error)', 'query.errorContains');
          }
          const page = await filteredPage(
            (limit, cursor) => queue.jobs.list({ state, order, limit, cursor }),
            (j) => passesFilter({ errorContains: text }, j) && (name === undefined || j.name === name),
            { limit: query.limit ?? 50, budget: query.budget ?? FILTER_BUDGET, cursor: query.cursor },
          );
          return { ...page, jobs: page.jobs.map((j) => show(queue, ctx, j)) };
        }
        if (query.budget !== undefined && name === undefined) throw new HttpError(400, 'validation', 'goes with name or errorContains', 'query.budget');
        // A job's name is not payload: it may be filtered by with redaction on.
        const page = await queue.jobs.list({
          state,
          order,
          limit: query.limit,
          cursor: query.cursor,
          name,
          budget: name === undefined ? undefined : (query.budget ?? FILTER_BUDGET),
        });
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
        // A job's name is not payload: it may be searched by with redaction on.
        if (ctx.redact && (query.path !== undefined || query.equals !== undefined || (query.text === undefined && query.name === undefined))) {
          throw new HttpError(403, 'redacted', 'payloads are redacted: search by id only', 'path');
        }
        const base = { limit: query.limit, budget: query.budget, cursor: query.cursor, name: query.name };
        const found =
          query.path !== undefined || query.equals !== undefined
            ? await queue.jobs.search({ ...base, path: query.path, equals: query.equals === undefined ? undefined : parseEquals(query.equals) })
            : await queue.jobs.search({ ...base, text: query.text, idsOnly: query.text === undefined ? undefined : ctx.redact !== undefined });
        return { ...found, jobs: found.jobs.map((j) => show(queue, ctx, j)) };
      },
    }),
    route({
      method: 'get',
      code: 'job.get',
      path: '/queues/:queue/jobs/:id',
      summary:
        'One job: state, times, attempts, errors, progress, logs, why a scheduled or held job is not running (`why`), and its hold (`hold`: what it waits or waited for, how each dependency ended; null for a job never held)',
      tag: 'jobs',
      action: 'read',
      response: s.jobDetail,
      errors: [400, 404],
      async handler({ queue, params }) {
        const job = await queue.get(params.id!);
        if (!job) throw new HttpError(404, 'not_found', `no job ${params.id}`);
        const hold = await queue.holdOf(job.id);
        return { ...show(queue, ctx, job), why: await explainWait(queue, job, hold), hold };
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
    route<undefined, typeof s.cancelBody._zod.output>({
      method: 'post',
      code: 'job.cancel',
      path: '/queues/:queue/jobs/:id/cancel',
      summary:
        'Cancels a scheduled job (a held one too, with its dependencies not started that no other job waits for; with { running: true } a running one too: its lease ends at once, its handler is told)',
      tag: 'jobs',
      action: 'write',
      body: s.cancelBody,
      response: s.changeResult,
      errors: STATE_ERRORS,
      async handler({ queue, params, body }) {
        const r = await queue.cancel(params.id!, body ?? {});
        if (r.cancelled) return r;
        if (r.state === 'active') throw new HttpError(409, 'state', `job ${r.id} is running: cancel it with { "running": true }`);
        refuseState(r.id, r.state, 'cancelled');
        return r;
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route<undefined, typeof s.failBody._zod.output>({
      method: 'post',
      code: 'job.fail',
      path: '/queues/:queue/jobs/:id/fail',
      summary:
        'Fails a job now (a running attempt ends as failed with the reason, retries apply, its handler is told; { dead: true } buries the job now, running or not)',
      tag: 'jobs',
      action: 'write',
      body: s.failBody,
      response: s.failResult,
      errors: STATE_ERRORS,
      async handler({ queue, params, body }) {
        const r = await queue.fail(params.id!, body ?? {});
        if (r.outcome === 'not_found') throw new HttpError(404, 'not_found', `no job ${r.id}`);
        if (r.outcome === 'refused')
          throw new HttpError(
            409,
            'state',
            r.state === 'scheduled' ? `job ${r.id} has not started: fail it with { "dead": true }` : `job ${r.id} is ${r.state}: it has ended`,
          );
        return r;
      },
      audit: (_r, { params }) => ({ target: params.id, count: 1 }),
    }),
    route<undefined, typeof s.signalBody._zod.output>({
      method: 'post',
      code: 'job.signal',
      path: '/queues/:queue/jobs/:id/signal',
      summary: 'Sends a signal to a job (docs/flows.md): one waiting for it runs now (released); one that has not ended keeps it for its wait (kept)',
      tag: 'jobs',
      action: 'write',
      body: s.signalBody,
      response: s.signalResult,
      errors: STATE_ERRORS,
      async handler({ queue, params, body }) {
        const r = await queue.signal(params.id!, body.name, body.data);
        if (r.outcome === 'not_found') throw new HttpError(404, 'not_found', `no job ${params.id}`);
        if (r.outcome === 'refused')
          throw new HttpError(
            409,
            'state',
            r.state === 'dead' || r.state === 'completed' ? `job ${params.id} is ${r.state}: it has ended` : `job ${params.id} keeps too many signals`,
          );
        return { outcome: r.outcome, state: r.state };
      },
      audit: (_r, { params, body }) => ({ target: `${params.id} ${body.name}`, count: 1 }),
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
      summary: 'Removes a job: cancels it when scheduled or held, purges it when dead or completed (active jobs stay)',
      tag: 'jobs',
      action: 'write',
      response: s.countResult,
      errors: STATE_ERRORS,
      async handler({ queue, params }) {
        const job = await queue.get(params.id!);
        if (!job) throw new HttpError(404, 'not_found', `no job ${params.id}`);
        let count = 0;
        // A held job is cancelled as a scheduled one is (its dependencies not started go with it).
        if (job.state === 'scheduled' || job.state === 'held') count = (await queue.cancel(job.id)).cancelled ? 1 : 0;
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
  ];
}
