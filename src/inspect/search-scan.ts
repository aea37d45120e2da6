/**
 * The scan behind `jobs.search`: reads a queue's jobs a step at a time and keeps the ids that
 * match, until `limit` matched or `budget` were read.
 *
 * A scan step (HSCAN, or the memory store's page) cannot be resumed half-way, yet a search that
 * reaches its limit mid-step must not drop the rest of it. So each step's entries are examined in
 * id order, and a search that stops mid-step returns the step's cursor, its count, where the step
 * led, and the last id it examined: the next call reads that step again with the same count,
 * examines the ids after the anchor, and goes on from where the step led the first time.
 * - Anchoring on an id rather than a position keeps the resume right when jobs of the step were
 *   added or removed in between (a position would shift and skip one).
 * - The same count reads the same entries again (HSCAN's COUNT decides how far a step walks),
 *   and the store reads on to where the step first led (Store.scan's `until`): a hash that
 *   finished a rehash in between walks in finer steps, and the same count alone stops short.
 * - Going on from where the step first led, not where the re-read leads: if jobs of the step
 *   were removed in between, the re-read walks further, and what it adds below the anchor would
 *   be skipped. (A store's read that had to cross that point returns what lay past it apart, as
 *   `beyond`, examined whatever its ids, and the walk goes on after it.) Read this way, a job
 *   there from start to end is found at least once (as SCAN promises); one may be found twice
 *   only when the queue changed between calls.
 *
 * Cursor: `<store cursor>`, or mid-step `<store cursor>~<count>~<next store cursor>~<last id,
 * base64url>`; '0' or none starts.
 */
import { ValidationError } from '../errors.js';
import { MAX_ID_LENGTH } from '../limits.js';
import type { Store } from '../store/store.js';

/** Jobs read per scan step. */
const SCAN_STEP = 1000;
/** A store cursor: an HSCAN cursor, with `.<shard>` on a sharded queue. */
const STORE_CURSOR = /^\d{1,20}(\.\d{1,3})?$/;
const STEP_COUNT = /^[1-9]\d{0,3}$/;
/** base64url of an id of at most MAX_ID_LENGTH characters (4 bytes each in UTF-8). */
const ANCHOR_MAX = Math.ceil((MAX_ID_LENGTH * 4 * 4) / 3);
const ANCHOR = new RegExp(`^[A-Za-z0-9_-]{1,${ANCHOR_MAX}}$`);
/** The longest cursor a search hands out: two store cursors (20 digits and `.<shard>`), a count, an anchor, three `~`. */
export const SEARCH_CURSOR_MAX = 2 * (20 + 4) + 4 + ANCHOR_MAX + 3;
/** The characters of a search cursor, for a quick check at the edge (an HTTP query); parseCursor checks the rest. */
export const SEARCH_CURSOR_CHARS = /^[0-9.]+(~[0-9]+~[0-9.]+~[A-Za-z0-9_-]+)?$/;

export interface SearchScan {
  ids: string[];
  scanned: number;
  total: number;
  /** Undefined when the whole queue was read. */
  cursor: string | undefined;
}

/** HSCAN refuses a cursor past 2^64 - 1 with a raw error. */
function isStoreCursor(text: string): boolean {
  return STORE_CURSOR.test(text) && BigInt(text.split('.')[0]!) < 2n ** 64n;
}

interface Resume {
  /** The store cursor of the step to read. */
  at: string;
  /** Set when a previous call stopped inside that step: its count, where it led, and the last id examined. */
  mid: { count: number; next: string; after: string } | undefined;
}

function parseCursor(cursor: string): Resume {
  const bad = () => new ValidationError('cursor', 'must be the cursor a previous search returned');
  const parts = cursor.split('~');
  const [at = ''] = parts;
  if (!isStoreCursor(at)) throw bad();
  if (parts.length === 1) return { at, mid: undefined };
  const [, count = '', next = '', anchor = ''] = parts;
  if (parts.length !== 4 || !STEP_COUNT.test(count) || Number(count) > SCAN_STEP || !isStoreCursor(next) || !ANCHOR.test(anchor)) throw bad();
  return { at, mid: { count: Number(count), next, after: Buffer.from(anchor, 'base64url').toString('utf8') } };
}

export async function searchScan(
  store: Store,
  queue: string,
  match: (id: string, data: string | undefined, name: string | undefined) => boolean,
  limit: number,
  budget: number,
  cursor = '0',
): Promise<SearchScan> {
  if (typeof cursor !== 'string') throw new ValidationError('cursor', 'must be the cursor a previous search returned');
  let { at, mid } = parseCursor(cursor);
  const ids: string[] = [];
  let scanned = 0;
  let total = 0;
  do {
    const count = mid?.count ?? Math.min(SCAN_STEP, budget - scanned);
    const step = await store.scan(queue, at, count, mid?.next);
    total = step.total;
    const after = mid?.after;
    const next = step.cursor;
    // Jobs a re-read found past the step's first end were not examined before, whatever their
    // id; in one id order with the rest, the anchor of a stop among them still means "examined up to".
    const entries = step.entries
      .filter((e) => after === undefined || e.id > after)
      .concat(step.beyond ?? [])
      .sort((a, b) => (a.id < b.id ? -1 : 1)); // ids of one hash are unique
    mid = undefined;
    for (const [i, e] of entries.entries()) {
      scanned++;
      if (!match(e.id, e.data, e.name)) continue;
      ids.push(e.id);
      if (ids.length === limit && i < entries.length - 1) {
        // The rest of this step is for the next call.
        return { ids, scanned, total, cursor: `${at}~${count}~${next}~${Buffer.from(e.id, 'utf8').toString('base64url')}` };
      }
    }
    at = next;
  } while (at !== '0' && scanned < budget && ids.length < limit);
  return { ids, scanned, total, cursor: at === '0' ? undefined : at };
}
