/**
 * Listing cursors as the API hands them out: opaque base64url text that carries the state it
 * belongs to and the store's position (the set and the last job's score and member there), so
 * a cursor from another state or a hand-edited one is refused instead of read as something else.
 * A newest-first (`desc`) cursor says so as a fifth part, so it is refused by an oldest-first
 * listing (and the other way round) rather than read backwards.
 */
import { ValidationError } from '../errors.js';
import { isListPlace } from '../store/list-place.js';
import { SHARDED_PHASE } from '../store/sharded/merged-list.js';
import type { ListCursor } from '../store/store.js';
import type { ListOrder, ListState } from '../types.js';

export function encodeCursor(state: ListState, c: ListCursor, order: ListOrder = 'asc'): string {
  const parts = [state, c.phase, c.score, c.member];
  if (order === 'desc') parts.push('desc');
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

export function decodeCursor(state: ListState, text: unknown, order: ListOrder = 'asc'): ListCursor | undefined {
  if (text === undefined || text === null || text === '') return undefined;
  const bad = (why: string) => new ValidationError('cursor', `${why}: pass back the cursor a page of this listing returned`);
  // A sharded queue's cursor holds a place per shard (sharded/merged-list.ts), so it may be long.
  if (typeof text !== 'string' || text.length > 65_536 || !/^[A-Za-z0-9_-]+$/.test(text)) throw bad('is not a cursor');
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad('is not a cursor');
  }
  if (!Array.isArray(parts) || (parts.length !== 4 && parts.length !== 5) || !parts.every((p) => typeof p === 'string')) throw bad('is not a cursor');
  const [s, phase, score, member, way = 'asc'] = parts as string[];
  if (parts.length === 5 && way !== 'desc') throw bad('is not a cursor');
  if (s !== state) throw bad(`belongs to the ${s} listing, not ${state}`);
  if (way !== order) throw bad(`belongs to the ${way === 'desc' ? 'newest-first (desc)' : 'oldest-first (asc)'} listing, not ${order}`);
  const place = { phase: phase!, score: score!, member: member! };
  // A sharded cursor's places are checked where they are read (sharded/merged-list.ts).
  if (phase !== SHARDED_PHASE && !isListPlace(state, place)) throw bad('is not a cursor');
  return place;
}
