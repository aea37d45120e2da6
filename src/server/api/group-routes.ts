/**
 * The JSON API's flow-control routes: the queue's limits (concurrency and rate), and its groups
 * (`add(data, { group })`) — a page of them, one, a group's own limits, and pausing and resuming one.
 *
 * Groups cursors are sealed: the library takes any string as a groups cursor and answers a made-up
 * one with a Redis error or a silent empty page, so the API hands out the library's cursor signed
 * for the queue (security.ts, seal) and gives the library back only a cursor it sealed.
 */
import type { Queue } from '../../queue.js';
import type { GroupInfo } from '../../queue/groups-api.js';
import type { RateLimit } from '../../store/store.js';
import type { ApiContext } from './context.js';
import { HttpError, route, type Route } from '../route.js';
import * as s from '../schemas.js';

/** Groups one page shows unless told (`limit`). */
const GROUPS_PAGE = 50;
/** Most calls to the library one page makes: a Redis page may come back short, or empty, before the walk ends. */
const GROUPS_CALLS = 20;

/** What an audit line says about a limit: the number, `max/perMs` for a rate limit, or "none" for one removed. */
const limitText = (v: number | RateLimit | null | undefined) => (v === null ? 'none' : typeof v === 'object' ? `${v.max}/${v.perMs}` : String(v));

/** The limits a write gave, as the audit line says them: `concurrency=3 rateLimit=10/60000`. */
const limitsText = (body: Record<string, number | RateLimit | null | undefined>) =>
  Object.entries(body)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${limitText(v)}`)
    .join(' ');

export function groupRoutes(ctx: ApiContext): Route[] {
  const purpose = (q: Queue<unknown>) => `groups-cursor:${q.name}`;
  /** The library's cursor inside a sealed one; 400 naming the cursor for anything this dashboard did not hand out for this queue. */
  const opened = (q: Queue<unknown>, cursor: string | undefined): string | undefined => {
    if (cursor === undefined) return undefined;
    const inner = ctx.sealer.unseal(purpose(q), cursor);
    if (inner === undefined) {
      throw new HttpError(400, 'validation', 'is not a cursor of this queue: pass back the cursor the previous page returned', 'query.cursor');
    }
    return inner;
  };

  return [
    route<typeof s.groupsQuery._zod.output>({
      method: 'get',
      code: 'groups.list',
      path: '/queues/:queue/groups',
      summary:
        'A page of the groups that have jobs running or waiting, a limit of their own or a pause, with their counts (`cursor` from the last page goes on)',
      tag: 'groups',
      action: 'read',
      query: s.groupsQuery,
      response: s.groupsPage,
      errors: [400],
      async handler({ queue, query }) {
        const limit = query.limit ?? GROUPS_PAGE;
        // A Redis page holds about `limit` groups, sometimes fewer or none before the walk is
        // over: read on until the page is full or the walk ends (a bounded number of calls).
        const groups: GroupInfo[] = [];
        let cursor = opened(queue, query.cursor);
        let calls = 0;
        do {
          const page = await queue.groups.list({ cursor, limit: Math.max(1, limit - groups.length) });
          groups.push(...page.groups);
          cursor = page.cursor;
        } while (cursor !== undefined && groups.length < limit && ++calls < GROUPS_CALLS);
        return { groups: groups, cursor: cursor === undefined ? undefined : ctx.sealer.seal(purpose(queue), cursor) };
      },
    }),
    route({
      method: 'get',
      code: 'group.get',
      path: '/queues/:queue/groups/:id',
      summary: 'One group: running, waiting, its own limits, its tokens used, paused (a group with none of these reads as zeros, not 404)',
      tag: 'groups',
      action: 'read',
      response: s.groupInfo,
      errors: [400],
      handler: ({ queue, params }) => queue.groups.get(params.id!),
    }),
    route<undefined, typeof s.queueLimitsBody._zod.output>({
      method: 'post',
      code: 'queue.limit',
      path: '/queues/:queue/limits',
      summary:
        "Sets the queue's limits: `concurrency` (most of its jobs running at once), `groupConcurrency` (most of any one group), `rateLimit` and `groupRateLimit` (`{ max, perMs }`: most tokens the queue, or any one group, takes in any window); null removes one, one left out stays",
      tag: 'queues',
      action: 'write',
      body: s.queueLimitsBody,
      response: s.limitsChanged,
      errors: [400],
      async handler({ queue, body }) {
        const changed = await queue.setLimits(body);
        return { ok: true, changed, limits: await queue.limits() };
      },
      audit: (_r, { body }) => ({ target: limitsText(body) }),
    }),
    route<undefined, typeof s.groupLimitBody._zod.output>({
      method: 'post',
      code: 'group.limit',
      path: '/queues/:queue/groups/:id/limits',
      summary:
        "Gives a group a concurrency limit or a rate limit (`{ max, perMs }`) of its own (null removes one: the queue's groupConcurrency / groupRateLimit applies again; one left out stays)",
      tag: 'groups',
      action: 'write',
      body: s.groupLimitBody,
      response: s.groupChanged,
      errors: [400],
      async handler({ queue, params, body }) {
        const changed = await queue.groups.setLimits(params.id!, { concurrency: body.concurrency, rateLimit: body.rateLimit });
        return { ok: true, changed, group: await queue.groups.get(params.id!) };
      },
      audit: (_r, { params, body }) => ({ target: `${params.id} ${limitsText(body)}` }),
    }),
    route({
      method: 'post',
      code: 'group.pause',
      path: '/queues/:queue/groups/:id/pause',
      summary: "Stops handing out a group's jobs on every worker (running ones finish)",
      tag: 'groups',
      action: 'write',
      response: s.groupChanged,
      errors: [400],
      async handler({ queue, params }) {
        const changed = await queue.groups.pause(params.id!);
        return { ok: true, changed, group: await queue.groups.get(params.id!) };
      },
      audit: (_r, { params }) => ({ target: params.id }),
    }),
    route({
      method: 'post',
      code: 'group.resume',
      path: '/queues/:queue/groups/:id/resume',
      summary: "Hands a group's jobs out again (its due jobs start at once)",
      tag: 'groups',
      action: 'write',
      response: s.groupChanged,
      errors: [400],
      async handler({ queue, params }) {
        const changed = await queue.groups.resume(params.id!);
        return { ok: true, changed, group: await queue.groups.get(params.id!) };
      },
      audit: (_r, { params }) => ({ target: params.id }),
    }),
  ];
}
