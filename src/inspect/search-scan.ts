/**
 * The scan behind `jobs.search`: reads a queue's jobs a step at a time and keeps the ids that
 * match, until `limit` matched or `budget` were read.
 *
 * A scan step (HSCAN, or the memory store's page) cannot be resumed half-way, yet a search that
 * reaches its limit mid-step must not drop the rest of it. So each step's entries are examined in
 * id order, and a search that stops mid-step returns the step's own cursor with the last id it
 * examined: the next call reads that step again and goes on after that id. Anchoring on an id
 * rather than a position keeps the resume right when jobs of the step were added or removed in
 * between (a position would shift and skip one).
 *
 * Cursor: `<store cursor>` or `<store cursor>~<last id, base64url>`; '0' or none starts.
 */
import { ValidationError } from '../errors.js';
import type { Store } from '../store/store.js';

/** Jobs read per scan step. */
const SCAN_STEP = 1000;
/** A store cursor: an HSCAN cursor, with `.<shard>` on a sharded queue. */
const STORE_CURSOR = /^\d{1,20}(\.\d{1,3})?$/;
/** base64url of an id of at most 256 characters (4 bytes each in UTF-8). */
const ANCHOR = /^[A-Za-z0-9_-]{1,1366}$/;

export interface SearchScan {
  ids: string[];
  scanned: number;
  total: number;
  /** Undefined when the whole queue was read. */
  cursor: string | undefined;
}

function parseCursor(cursor: string): { at: string; after: string | undefined } {
  const [at = '', anchor, extra] = cursor.split('~');
  if (!STORE_CURSOR.test(at) || extra !== undefined || (anchor !== undefined && !ANCHOR.test(anchor)))
    throw new ValidationError('cursor', 'must be the cursor a previous search returned');
  return { at, after: anchor === undefined ? undefined : Buffer.from(anchor, 'base64url').toString('utf8') };
}

export async function searchScan(
  store: Store,
  queue: string,
  match: (id: string, data: string | undefined) => boolean,
  limit: number,
  budget: number,
  cursor = '0',
): Promise<SearchScan> {
  if (typeof cursor !== 'string') throw new ValidationError('cursor', 'must be the cursor a previous search returned');
  let { at, after } = parseCursor(cursor);
  const ids: string[] = [];
  let scanned = 0;
  let total = 0;
  do {
    const step = await store.scan(queue, at, Math.min(SCAN_STEP, budget - scanned));
    total = step.total;
    const entries = step.entries.filter((e) => after === undefined || e.id > after).sort((a, b) => (a.id < b.id ? -1 : 1)); // ids of one hash are unique
    after = undefined;
    for (const [i, e] of entries.entries()) {
      scanned++;
      if (!match(e.id, e.data)) continue;
      ids.push(e.id);
      if (ids.length === limit && i < entries.length - 1) {
        // The rest of this step is for the next call.
        return { ids, scanned, total, cursor: `${at}~${Buffer.from(e.id, 'utf8').toString('base64url')}` };
      }
    }
    at = step.cursor;
  } while (at !== '0' && scanned < budget && ids.length < limit);
  return { ids, scanned, total, cursor: at === '0' ? undefined : at };
}
