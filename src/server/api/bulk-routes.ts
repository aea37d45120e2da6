/**
 * The JSON API's bulk actions on a queue: retry or purge dead jobs, purge kept completed ones
 * (by ids, all, or a filter), the counts a person confirms first, and drain. Each is capped at
 * the dashboard's bulk limit (the CLI does millions) and refused when more would be touched
 * than were confirmed (`expect`), so what a person saw bounds what is changed.
 */
import { idsMatching, passesFilter, type RetainedFilter } from '../../inspect/retained-filter.js';
import type { Queue } from '../../queue.js';
import type { ListCursor } from '../../store/store.js';
import type { ApiContext } from './context.js';
import { HttpError, route, type Route } from '../route.js';
import * as s from '../schemas.js';

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

export function bulkRoutes(ctx: ApiContext): Route[] {
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
