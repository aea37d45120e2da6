/**
 * Listing pages for the memory store, in the Redis store's order and cursor semantics: each
 * phase is a list of (score, member) in ZSET order (score, then member by bytes), and a page
 * starts at the first entry after the cursor, whether or not the cursor's job is still there.
 * Newest first (`desc`) walks the phases and their entries backwards: a page then starts at
 * the first entry before the cursor.
 */
import type { ListOrder } from '../../types.js';
import { byteOrder } from '../zset-order.js';

export interface PhaseEntry {
  phase: string;
  score: number;
  member: string;
}

/** Up to `limit` entries after `cursor` in the walk's direction, across phases in order, and the cursor of the next page. */
export function pageAfter<E extends PhaseEntry>(
  phases: { name: string; entries: E[] }[],
  cursor: { phase: string; score: string; member: string } | undefined,
  limit: number,
  order: ListOrder = 'asc',
): { page: E[]; next: E | undefined } {
  const desc = order === 'desc';
  const walk = desc ? [...phases].reverse().map((p) => ({ name: p.name, entries: [...p.entries].reverse() })) : phases;
  const page: E[] = [];
  let started = cursor === undefined;
  for (const { name, entries } of walk) {
    let from = 0;
    if (!started) {
      if (name !== cursor!.phase) continue;
      started = true;
      const score = Number(cursor!.score);
      // The first entry past the cursor in the walk's direction.
      const past = (e: E) => {
        const c = e.score === score ? byteOrder(e.member, cursor!.member) : e.score - score;
        return desc ? c < 0 : c > 0;
      };
      from = entries.findIndex(past);
      if (from < 0) from = entries.length;
    }
    for (let i = from; i < entries.length && page.length < limit; i++) page.push(entries[i]!);
    if (page.length >= limit) return { page, next: page[page.length - 1] };
  }
  return { page, next: undefined };
}
