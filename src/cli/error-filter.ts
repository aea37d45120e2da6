/**
 * The CLI's bulk actions by error text: which dead (or completed) jobs' last error contains a
 * text, counted over the whole set (by the library, a page of 1,000 from Redis at a time, as the
 * dashboard's count), and the confirmation a person gives with `--expect`: nothing is retried or
 * purged unless they said how many, and never more than they said.
 */
import { passesFilter } from '../inspect/retained-filter.js';
import type { Queue } from '../queue.js';
import type { ListCursor } from '../store/store.js';
import type { JobInfo } from '../types.js';
import { CliError, EXIT, UsageError } from './errors.js';

const PAGE = 1000;

export interface ErrorMatches {
  /** Every id whose last error contains the text, in the set's order. */
  ids: string[];
  /** The first `keep` of them in full (as stored: data is raw text). */
  first: JobInfo<string>[];
}

/** The jobs of `set` whose last error contains `text`, every one counted. */
export async function jobsWithError(q: Queue<unknown>, set: 'dead' | 'completed', text: string, keep = 0): Promise<ErrorMatches> {
  if (text === '') throw new UsageError('--error must not be empty');
  const out: ErrorMatches = { ids: [], first: [] };
  let cursor: ListCursor | undefined;
  do {
    const page = await q.store.list(q.name, set, cursor, PAGE);
    for (const j of page.jobs) {
      if (!passesFilter({ errorContains: text }, j)) continue;
      out.ids.push(j.id);
      if (out.first.length < keep) out.first.push(j);
    }
    cursor = page.next;
  } while (cursor);
  return out;
}

/** A whole number of jobs confirmed with --expect, or undefined when not given. */
export function expectOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,9}$/.test(value)) throw new UsageError(`--expect must be the number of jobs you confirm, a whole number (got ${JSON.stringify(value)})`);
  return Number(value);
}

/**
 * Refuses an action by error text unless the person confirmed the count: without --expect it
 * says how many match and the command to run; with --expect it refuses when more match now.
 */
export function confirmCount(matched: number, expect: number | undefined, again: (n: number) => string): void {
  if (expect === undefined) {
    throw new UsageError(
      `${matched} dead ${matched === 1 ? 'job matches' : 'jobs match'}: confirm the count with --expect ${matched}`,
      `run: ${again(matched)}`,
    );
  }
  if (matched > expect) {
    throw new CliError(`${matched} jobs match now, more than the ${expect} confirmed: nothing was changed`, EXIT.error, `look again, then: ${again(matched)}`);
  }
}
