/**
 * `queue.jobs`: reading a queue's jobs without changing them, as a dashboard or a person does:
 * one page of a state at a time (a cursor that neither repeats nor skips a job that stays put),
 * and search by text or by a value at a JSON path, bounded by how many jobs one call reads.
 */
import { decodeCursor, encodeCursor } from '../inspect/cursor.js';
import { filteredPage } from '../inspect/filtered-page.js';
import { matcher, type SearchQuery } from '../inspect/match.js';
import { searchScan } from '../inspect/search-scan.js';
import { ValidationError } from '../errors.js';
import { idSchema, parseOptions } from '../options.js';
import { decodeJob } from '../payload.js';
import type { Store } from '../store/store.js';
import type { JobInfo, JobPage, ListOrder, ListState } from '../types.js';
import { listArgs, searchBounds } from './validation.js';

/** Jobs a search, or a listing by name, reads by default per call (the caller sees how many it read). */
const SEARCH_BUDGET = 10_000;

export interface ListOptions {
  state: ListState;
  /** Jobs per page, 1..1000. @default 50 */
  limit?: number;
  /** The `cursor` of the previous page (of the same order). */
  cursor?: string;
  /** `asc`: the state's order (oldest or soonest first); `desc`: the reverse (newest first). @default 'asc' */
  order?: ListOrder;
  /**
   * Only jobs of this name (`add({ name })`). The listing is read in its order until `limit` such
   * jobs were found or `budget` jobs were read: a page may be short, even empty, with a cursor
   * to go on, and says how many jobs it read (`scanned`).
   * @example { state: 'scheduled', name: 'send-email' }
   */
  name?: string;
  /** With `name`: the most jobs to read in this call. @default 10000 */
  budget?: number;
}

export interface SearchOptions extends SearchQuery {
  /** Most matches to return. @default 50 */
  limit?: number;
  /** Most jobs to read in this call. @default 10000 */
  budget?: number;
  /** The `cursor` of the previous call, to go on where it stopped. */
  cursor?: string;
}

export interface SearchResult<T> {
  jobs: JobInfo<T>[];
  /** Jobs read by this call ("searched 10,000 of 1,200,000"). */
  scanned: number;
  /** Jobs in the queue. */
  total: number;
  /** Pass it back to search on; undefined when the whole queue was read. */
  cursor: string | undefined;
}

/** Reading jobs: listings by state, and search over payloads. */
export interface JobsInspector<T> {
  /**
   * One page of the jobs in a state, in that state's order: scheduled by due time; ready
   * (due and waiting) in hand-out order; active by lease deadline; dead by time of death;
   * completed (kept) by finish time; `order: 'desc'` lists the reverse (newest first). Pass
   * `cursor` back for the next page: paging neither repeats nor skips a job that stays put.
   * Each page costs O(log n + limit) in Redis.
   */
  list: (opts: ListOptions) => Promise<JobPage<T>>;
  /**
   * Finds jobs by text in their id or data, or by a value at a JSON path, reading at most
   * `budget` jobs per call: the answer says how many it read of how many there are, and a
   * cursor to go on. Every state is searched (completed ones while kept).
   */
  search: (opts: SearchOptions) => Promise<SearchResult<T>>;
}

export function jobsInspector<T>(store: Store, queue: string): JobsInspector<T> {
  return {
    list: async (opts) => {
      const { state, limit, order } = listArgs(opts);
      const read = async (size: number, cursor: string | undefined): Promise<JobPage<T>> => {
        const page = await store.list(queue, state, decodeCursor(state, cursor, order), size, order);
        return { state, jobs: page.jobs.map((j) => decodeJob<T>(j)), total: page.total, cursor: page.next && encodeCursor(state, page.next, order) };
      };
      if (opts.name === undefined) {
        if (opts.budget !== undefined) throw new ValidationError('budget', 'goes with name (the most jobs a listing by name reads)');
        return read(limit, opts.cursor);
      }
      const name = parseOptions(idSchema, opts.name, 'name') as string;
      const { budget } = searchBounds(limit, opts.budget ?? SEARCH_BUDGET);
      return filteredPage(read, (j) => j.name === name, { limit, budget, cursor: opts.cursor });
    },
    search: async (opts) => {
      const match = matcher(opts);
      const { limit, budget } = searchBounds(opts.limit ?? 50, opts.budget ?? SEARCH_BUDGET);
      const { ids, scanned, total, cursor } = await searchScan(store, queue, match, limit, budget, opts.cursor);
      const found = await store.getMany(queue, ids, false);
      return {
        jobs: found.filter((j): j is JobInfo<string> => j !== null).map((j) => decodeJob<T>(j)),
        scanned,
        total,
        cursor,
      };
    },
  };
}
