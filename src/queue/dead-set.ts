/**
 * `queue.dead`: the dead set, the jobs out of attempts, failed for good, or corrupt. A person
 * reads it, puts jobs back (retry) or deletes them (purge), by id, all, age or a filter, and
 * bounds it (setCaps). Filters are matched by the library on the data as stored
 * (inspect/retained-filter.ts), a page at a time, so a call costs Redis little at any size.
 */
import { idsMatching } from '../inspect/retained-filter.js';
import { decodePayload } from '../payload.js';
import type { DeadJob, Store } from '../store/store.js';
import type { JobInfo } from '../types.js';
import { deadCaps, deadFilter, deadPage, idList, purgeTarget } from './validation.js';
import { ValidationError } from '../errors.js';

/** Which dead jobs a retry or purge takes, besides ids, all, or an age. */
export interface DeadFilter {
  /** Dead jobs whose last error contains this text. */
  errorContains?: string;
  /** Dead jobs whose data (as stored JSON) contains this text. */
  dataContains?: string;
}

/** A dead job with its payload decoded (raw text when it is not valid JSON). */
export interface DeadJobInfo<T> extends Omit<DeadJob, 'data'> {
  data: T | string | undefined;
}

/** The dead set: jobs out of attempts, failed for good, or corrupt. */
export interface DeadSet<T> {
  /** One dead job with its data, attempts and last error; null when it is not dead. */
  get: (id: string) => Promise<JobInfo<T> | null>;
  /** A page of dead jobs, oldest death first. */
  list: (opts?: { offset?: number; limit?: number } | null) => Promise<{ total: number; jobs: DeadJobInfo<T>[] }>;
  /**
   * Puts dead jobs back to scheduled, due now, with a fresh set of attempts: by id, all, or
   * by filter (`{ errorContains }`, `{ dataContains }`). Returns how many.
   */
  retry: (target: string | readonly string[] | { all: true } | DeadFilter) => Promise<number>;
  /**
   * Bounds the dead set for every process: at most `maxCount` jobs, none older than
   * `maxAgeMs`; the oldest deaths are purged first (each purge is an event on the stream).
   * Sets both caps; an omitted or `null` cap means none. Without caps the dead set grows until
   * a person purges it.
   */
  setCaps: (caps: { maxCount?: number | null; maxAgeMs?: number | null }) => Promise<void>;
  /** Deletes dead jobs for good: by id, all, older than an age, or by filter. Returns how many. */
  purge: (target: string | readonly string[] | { all: true } | { olderThanMs: number } | DeadFilter) => Promise<number>;
}

/** The dead set of `queue` in `store`; `get` is the queue's own (ids checked, data decoded). */
export function deadSet<T>(store: Store, queue: string, get: (id: string) => Promise<JobInfo<T> | null>): DeadSet<T> {
  /** Ids of dead jobs that pass a filter, read a page at a time (bounded per call to Redis). */
  const matching = (filter: DeadFilter): Promise<string[]> => idsMatching(store, queue, 'dead', deadFilter(filter));
  return {
    get: async (id) => {
      const info = await get(id);
      return info?.state === 'dead' ? info : null;
    },
    list: async (opts = {}) => {
      const { offset, limit } = deadPage(opts);
      const page = await store.deadList(queue, offset, limit);
      return { total: page.total, jobs: page.jobs.map((j) => ({ ...j, data: decodePayload<T>(j.data) })) };
    },
    retry: async (target) => {
      if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
        if ('all' in target) {
          if ((target as { all?: unknown }).all !== true) throw new ValidationError('target', 'must be an id, a list of ids, { all: true } or a filter');
          return store.deadRetry(queue, 'all');
        }
        const ids = await matching(target as DeadFilter);
        return ids.length === 0 ? 0 : store.deadRetry(queue, ids);
      }
      return store.deadRetry(queue, idList(target as string | string[], 'id'));
    },
    setCaps: async (caps) => {
      const { maxCount, maxAgeMs } = deadCaps(caps);
      await store.setRetention(queue, 'dead', maxCount, maxAgeMs);
    },
    purge: async (target) => {
      if (typeof target === 'object' && target !== null && !Array.isArray(target) && !('all' in target) && !('olderThanMs' in target)) {
        const ids = await matching(target as DeadFilter);
        return ids.length === 0 ? 0 : store.purge(queue, 'dead', { ids });
      }
      return store.purge(queue, 'dead', purgeTarget(target as string | string[] | { all: true } | { olderThanMs: number }));
    },
  };
}
