/**
 * Which jobs of a retained set (dead, completed) a filter takes: the last error containing a
 * text, the data (as stored JSON text, never decoded) containing a text. Read a listing page at
 * a time, so Redis is never asked for the whole set at once. Shared by the library's filtered
 * dead retry/purge and the dashboard's capped bulk actions.
 */
import type { ListCursor, Store } from '../store/store.js';

export interface RetainedFilter {
  errorContains?: string;
  dataContains?: string;
}

/** Whether a job (as stored: data as JSON text) passes `filter`; the one rule for every filtered read and action. */
export function passesFilter(filter: RetainedFilter, job: { lastError?: string | undefined; data?: unknown }): boolean {
  if (filter.errorContains !== undefined && !(job.lastError ?? '').includes(filter.errorContains)) return false;
  return filter.dataContains === undefined || (typeof job.data === 'string' ? job.data : '').includes(filter.dataContains);
}

/** Jobs read per listing page. */
const PAGE = 1000;

/**
 * Ids in `set` that pass `filter` (an empty filter passes all), in the set's order. With `max`,
 * stops once more than `max` matched (the caller sees max + 1 ids and knows it is over).
 */
export async function idsMatching(store: Store, queue: string, set: 'dead' | 'completed', filter: RetainedFilter, max = Infinity): Promise<string[]> {
  const ids: string[] = [];
  let cursor: ListCursor | undefined;
  do {
    const page = await store.list(queue, set, cursor, PAGE);
    for (const j of page.jobs) {
      if (!passesFilter(filter, j)) continue;
      ids.push(j.id);
      if (ids.length > max) return ids;
    }
    cursor = page.next;
  } while (cursor);
  return ids;
}
