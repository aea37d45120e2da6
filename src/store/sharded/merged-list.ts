/**
 * One listing page over a sharded queue's shards, with a cursor that holds each shard's place.
 * Scheduled, active, dead and completed jobs are merged in their state's order across shards
 * (due time, lease deadline, time of death or finish, then id), as if the queue were one set.
 * Ready jobs are listed shard by shard: each shard's hand-out order mixes two sets, so it is
 * not one key a merge could follow (docs/api.md says so). Newest first (`desc`) merges the
 * shards' reversed listings by the reversed order, and lists ready jobs from the last shard back.
 */
import { ValidationError } from '../../errors.js';
import type { JobInfo, ListOrder, ListState } from '../../types.js';
import { isListPlace } from '../list-place.js';
import { byteOrder } from '../zset-order.js';
import type { ListCursor, Store, StoredPage } from '../store.js';

/** The phase of a cursor that holds a place per shard (see inspect/cursor.ts). */
export const SHARDED_PHASE = 'shards';

/** Per shard: its cursor, or null once it has nothing more. */
type Places = Record<string, ListCursor | null>;

function badCursor(): ValidationError {
  return new ValidationError('cursor', 'is not a cursor of this queue: pass back the cursor a page of this listing returned');
}

function readPlaces(state: ListState, cursor: ListCursor | undefined): Places {
  if (cursor === undefined) return {};
  if (cursor.phase !== SHARDED_PHASE) throw badCursor();
  let v: unknown;
  try {
    v = JSON.parse(cursor.member);
  } catch {
    throw badCursor();
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badCursor();
  const out: Places = {};
  for (const [shard, c] of Object.entries(v as Record<string, unknown>)) {
    if (c === null) out[shard] = null;
    else if (Array.isArray(c) && c.length === 3 && c.every((p) => typeof p === 'string') && isListPlace(state, { phase: c[0], score: c[1], member: c[2] }))
      out[shard] = { phase: c[0], score: c[1], member: c[2] };
    else throw badCursor();
  }
  return out;
}

/** The cursor of the next page; undefined once every shard is done (a shard not named starts from its beginning). */
function writePlaces(shards: readonly string[], places: Places): ListCursor | undefined {
  if (shards.every((s) => places[s] === null)) return undefined;
  const flat = Object.fromEntries(Object.entries(places).map(([s, c]) => [s, c && [c.phase, c.score, c.member]]));
  return { phase: SHARDED_PHASE, score: '0', member: JSON.stringify(flat) };
}

/** The score a job has in its state's set: what the merge orders by. */
function scoreOf(state: ListState, j: JobInfo<string>): number {
  if (state === 'active') return j.leaseExpiresAtMs ?? 0;
  if (state === 'dead' || state === 'completed') return j.finishedAtMs ?? 0;
  return j.dueAtMs;
}

export async function mergedPage(
  store: Store,
  shards: readonly string[],
  state: ListState,
  cursor: ListCursor | undefined,
  limit: number,
  order: ListOrder = 'asc',
): Promise<StoredPage> {
  const places = readPlaces(state, cursor);
  if (state === 'ready') return shardByShard(store, order === 'desc' ? [...shards].reverse() : shards, places, limit, order);
  const pages = await Promise.all(
    shards.map((s) => (places[s] === null ? undefined : store.list(s, state, places[s] ?? undefined, limit, order).then((p) => ({ shard: s, page: p })))),
  );
  // Which of two jobs comes first in the walk: the state's order, or its reverse.
  const sign = order === 'desc' ? -1 : 1;
  const before = (j: JobInfo<string>, b: JobInfo<string>) => {
    const d = scoreOf(state, j) - scoreOf(state, b);
    return sign * (d !== 0 ? d : byteOrder(j.id, b.id)) < 0;
  };
  const heads = pages.filter((p) => p !== undefined).map((p) => ({ ...p, at: 0 }));
  const jobs: JobInfo<string>[] = [];
  const next: Places = { ...places };
  while (jobs.length < limit) {
    let best: (typeof heads)[number] | undefined;
    for (const h of heads) {
      const j = h.page.jobs[h.at];
      if (!j) continue;
      const b = best?.page.jobs[best.at];
      if (!b || before(j, b)) best = h;
    }
    if (!best) break;
    const j = best.page.jobs[best.at++]!;
    jobs.push(j);
    next[best.shard] = { phase: state, score: String(scoreOf(state, j)), member: j.id };
  }
  // A shard whose page was taken whole goes on from that page's own cursor (or is done).
  for (const h of heads) if (h.at >= h.page.jobs.length) next[h.shard] = h.page.next ?? null;
  return {
    nowMs: Math.max(...heads.map((h) => h.page.nowMs), 0),
    total: heads.reduce((n, h) => n + h.page.total, 0) + (await totalsOfDone(store, shards, places, state)),
    jobs,
    next: writePlaces(shards, next),
  };
}

/** Totals of shards the cursor says are done (their jobs still count in the total). */
async function totalsOfDone(store: Store, shards: readonly string[], places: Places, state: ListState): Promise<number> {
  const done = shards.filter((s) => places[s] === null);
  const pages = await Promise.all(done.map((s) => store.list(s, state, undefined, 1)));
  return pages.reduce((n, p) => n + p.total, 0);
}

async function shardByShard(store: Store, shards: readonly string[], places: Places, limit: number, order: ListOrder): Promise<StoredPage> {
  const totals = await Promise.all(shards.map((s) => store.list(s, 'ready', undefined, 1)));
  const jobs: JobInfo<string>[] = [];
  const next: Places = { ...places };
  let nowMs = 0;
  for (const s of shards) {
    if (next[s] === null) continue;
    if (jobs.length >= limit) break;
    const page = await store.list(s, 'ready', next[s], limit - jobs.length, order);
    nowMs = Math.max(nowMs, page.nowMs);
    jobs.push(...page.jobs);
    next[s] = page.next ?? null;
  }
  return { nowMs, total: totals.reduce((n, p) => n + p.total, 0), jobs, next: writePlaces(shards, next) };
}
