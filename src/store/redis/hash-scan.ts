/**
 * Reading the jobs hash with HSCAN (search): its entries, and the order of its cursors. Redis
 * walks a hash's buckets in reverse-binary order: a cursor's
 * bits read backwards only grow from one step to the next, whether the table grew, shrank or is
 * rehashing in between (that is how SCAN returns every entry there from start to end). So one
 * cursor is at or past another when its bits, reversed over 64, are not smaller; '0' is the end.
 */

import type { ScanStep } from '../store.js';
import { tryParseBody } from './packed.js';
import { HASHTABLE_FIELD } from './wire.js';

const BITS = 64n;

function reversed(cursor: string): bigint {
  let v = BigInt(cursor);
  let r = 0n;
  for (let i = 0n; i < BITS; i++) {
    r = (r << 1n) | (v & 1n);
    v >>= 1n;
  }
  return r;
}

/** Whether a walk at `cursor` has reached `until` (both HSCAN cursors; '0' ends a walk). */
export function scanReached(cursor: string, until: string): boolean {
  if (cursor === '0') return true;
  if (until === '0') return false;
  return reversed(cursor) >= reversed(until);
}

/** The jobs of an HSCAN reply (field, value, ...): id, data and name of each body. */
export function scanEntries(flat: string[]): ScanStep['entries'] {
  const entries: ScanStep['entries'] = [];
  for (let i = 0; i < flat.length; i += 2) {
    // The field that keeps the hash a hashtable is no job (wire.ts HASHTABLE_FIELD).
    if (flat[i] === HASHTABLE_FIELD) continue;
    const body = tryParseBody(flat[i + 1]);
    entries.push({ id: flat[i]!, data: body?.data, name: body?.name });
  }
  return entries;
}
