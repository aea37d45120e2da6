/**
 * What a listing cursor may hold as its place in a store: the set a page stopped in (one of the
 * sets the listing walks) and the score and member of the last job there. Cursors come back from
 * callers (the API hands them out as opaque text), so an edited one is refused here, by name,
 * before a store reads it: Redis would answer a score it cannot parse with a raw error, and a
 * phase the listing does not walk with a silent empty page.
 */
import type { ListState } from '../types.js';
import type { ListCursor } from './store.js';

/** The sets each listing walks, in order (store/redis/scripts/list.lua). */
const PHASES: Record<ListState, readonly string[]> = {
  scheduled: ['scheduled'],
  ready: ['ready', 'waiting', 'scheduled'],
  active: ['active'],
  dead: ['dead'],
  completed: ['completed'],
};

/** A score as Redis writes one back (ZRANGE WITHSCORES): decimal, maybe with a fraction or an exponent. */
const SCORE = /^-?\d{1,20}(\.\d{1,20})?(e[+-]?\d{1,3})?$/;

/**
 * Longer than any member: a ready member is 32 characters of due time and add order, then an id
 * of at most 256 characters; a waiting member a group id of at most 256 characters, a NUL, 7
 * characters of priority, then a ready member.
 */
const MEMBER_MAX = 2048;

export function isListPlace(state: ListState, c: ListCursor): boolean {
  return (
    PHASES[state].includes(c.phase) &&
    SCORE.test(c.score) &&
    Number.isFinite(Number(c.score)) &&
    typeof c.member === 'string' &&
    c.member.length > 0 &&
    c.member.length <= MEMBER_MAX
  );
}
