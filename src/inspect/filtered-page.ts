/**
 * A listing page of only the jobs a filter keeps (a name, a last error): listing pages read in
 * the state's order until `limit` were kept or `budget` jobs were read.
 *
 * Each read ends at a page end, so the cursor handed back is the listing's own (exact, checked like
 * any, valid on every store and on sharded queues alike); the reads are sized by the jobs still
 * wanted and how rare they were so far, so a page holds about `limit` jobs (never more than 1,000
 * read per call). A page may be short, even empty, with a cursor to go on: `scanned` says how
 * many jobs were read, of `total` in the state.
 */
import type { JobInfo, JobPage } from '../types.js';

export type ListRead<T> = (limit: number, cursor: string | undefined) => Promise<JobPage<T>>;

export async function filteredPage<T>(
  read: ListRead<T>,
  keep: (job: JobInfo<T>) => boolean,
  opts: { limit: number; budget: number; cursor: string | undefined },
): Promise<JobPage<T> & { scanned: number }> {
  const jobs: JobInfo<T>[] = [];
  let cursor = opts.cursor;
  let scanned = 0;
  let page: JobPage<T>;
  do {
    const want = opts.limit - jobs.length;
    // Rare matches so far: read further per call (at most 1,000 jobs, and the budget left).
    const rarity = (scanned + 1) / (jobs.length + 1);
    const size = Math.max(1, Math.min(1000, opts.budget - scanned, Math.ceil(want * rarity)));
    page = await read(size, cursor);
    scanned += page.jobs.length;
    for (const j of page.jobs) if (keep(j)) jobs.push(j);
    cursor = page.cursor;
  } while (cursor && jobs.length < opts.limit && scanned < opts.budget);
  return { state: page.state, jobs, total: page.total, cursor, scanned };
}
