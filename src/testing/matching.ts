/** How the testing kit's filters match a job: by id, group, and data given whole, in part, or as a test. */
import { isDeepStrictEqual } from 'node:util';
import { ValidationError } from '../errors.js';

/** Which jobs an assertion helper lists; every field given must match. */
export interface JobFilter {
  /** The job's id, exactly. */
  id?: string;
  /** The job's group, exactly. */
  group?: string;
  /**
   * The job's data: an object matches when each of its fields matches the data's (nested objects
   * likewise, so `{ orderId: 7 }` matches `{ orderId: 7, total: 30 }`); anything else, an array
   * included, must be deeply equal; a function is called with the data and must return true.
   */
  data?: unknown;
}

const FILTER_KEYS = new Set(['id', 'group', 'data']);

/** The filter as given, or a ValidationError naming what is wrong with it. */
export function parseFilter(filter: unknown, where: string): JobFilter {
  if (filter === undefined || filter === null) return {};
  if (typeof filter !== 'object' || Array.isArray(filter))
    throw new ValidationError(`${where} filter`, `must be an object like { id, group, data } (got ${typeof filter})`);
  for (const key of Object.keys(filter)) {
    if (!FILTER_KEYS.has(key)) throw new ValidationError(`${where} filter`, `has an unknown field ${JSON.stringify(key)} (known: id, group, data)`);
  }
  const f = filter as JobFilter;
  if (f.id !== undefined && typeof f.id !== 'string') throw new ValidationError(`${where} filter.id`, `must be a string (got ${typeof f.id})`);
  if (f.group !== undefined && typeof f.group !== 'string') throw new ValidationError(`${where} filter.group`, `must be a string (got ${typeof f.group})`);
  return f;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Whether `actual` matches `pattern` as JobFilter.data describes. */
export function dataMatches(actual: unknown, pattern: unknown): boolean {
  if (typeof pattern === 'function') return (pattern as (d: unknown) => unknown)(actual) === true;
  if (isPlainObject(pattern)) {
    if (!isPlainObject(actual)) return false;
    return Object.keys(pattern).every((k) => k in actual && dataMatches(actual[k], pattern[k]));
  }
  return isDeepStrictEqual(actual, pattern);
}

export function jobMatches(job: { id: string; group: string | undefined; data: unknown }, f: JobFilter): boolean {
  if (f.id !== undefined && job.id !== f.id) return false;
  if (f.group !== undefined && job.group !== f.group) return false;
  if ('data' in f && f.data !== undefined && !dataMatches(job.data, f.data)) return false;
  return true;
}
