/**
 * A queue limit is the queue's, whatever its layout. Each store queue of a sharded queue claims
 * on its own (one hash tag, one atomic script), so the queue's concurrency and rate limit are
 * split into shares that add up to the limit exactly: the store queues that may hand out jobs
 * are the current shards, the shards still draining after a reshard, and the unsharded keys
 * (schedule jobs live there, and the jobs from before the queue was sharded). Each takes a share
 * of at least one, so a limit below the number of store queues is refused.
 *
 * How it is split: while the unsharded keys drain (the queue was sharded with jobs in them, or
 * they have not yet been found empty) they count as one member like any shard; once drained they
 * keep one slot and one token a window for schedule jobs, and the rest goes to the shards. The
 * limit is divided evenly and the remainder given out (split() says to whom), so the shares add
 * up to it. A draining shard keeps an equal share until it is empty, so a
 * backlog on the old shards drains at 1/M of the limit each, not more: the price of exactness
 * without a limiter across hash tags (which a Redis Cluster cannot run atomically).
 *
 * The limit as given is kept in the layout (layout.ts `limits`), so the shares are a function of
 * the layout alone: any process applying them for one layout writes the same values. Shares
 * shrink before they grow (a reshard lowers the old store queues' shares before the layout names
 * the new shards; a drain's end raises the others' after the layout drops the empty ones), so
 * the sum stays at or under the limit, except for the moment a process with an older layout
 * writes its shares after a newer one's: each apply reads the layout again afterwards and applies
 * the newer one's.
 */
import { ValidationError } from '../../errors.js';
import type { LimitsChange, QueueLimits, RateLimit, Store } from '../store.js';
import { isUnsharded, type Layout, type LayoutLimits, memberNames, parseLayout, shardNames } from './layout.js';

export interface Share {
  concurrency: number | null;
  rateLimit: RateLimit | null;
}

/** The limit as given from a store queue's own limits (the unsharded keys of a queue not yet sharded, or an older layout). */
export function limitsFrom(l: QueueLimits): LayoutLimits {
  const out: LayoutLimits = {};
  if (l.concurrency !== undefined) out.concurrency = l.concurrency;
  if (l.rateLimit !== undefined) out.rate = l.rateLimit;
  return out;
}

/** The store queues a limit is split over, in the order the remainder goes: current shards, draining shards, the unsharded keys. */
function members(queue: string, layout: Layout): { name: string; draining: boolean }[] {
  const out = layout.current ? shardNames(queue, layout.current).map((name) => ({ name, draining: false })) : [];
  for (const set of layout.retired) if (set.from >= 0) for (const name of shardNames(queue, set)) out.push({ name, draining: true });
  out.push({ name: queue, draining: layout.retired.some((s) => s.from < 0) });
  return out;
}

/** How many store queues share the limit (each needs at least one). */
export function shareCount(queue: string, layout: Layout): number {
  return memberNames(queue, layout).length;
}

/**
 * `total` split over the members: the unsharded keys 1 once drained, the rest evenly. The
 * remainder goes one each to the first members (current shards first) for a concurrency limit;
 * for a rate limit, all of it to the unsharded keys, so every shard keeps the same max and a
 * job's cost fits or not whatever shard its id routes it to.
 */
function split(total: number, all: { name: string; draining: boolean }[], remainderHome: boolean): Map<string, number> {
  const out = new Map<string, number>();
  const home = all[all.length - 1]!;
  const even = home.draining || all.length === 1 ? all : all.slice(0, -1);
  const rest = total - (even === all ? 0 : 1);
  const base = Math.floor(rest / even.length);
  const extra = rest % even.length;
  even.forEach((m, i) => out.set(m.name, base + (!remainderHome && i < extra ? 1 : 0)));
  if (even !== all) out.set(home.name, 1);
  if (remainderHome) out.set(home.name, out.get(home.name)! + extra);
  return out;
}

/** Every store queue's share of the layout's limits (null: no limit). Only for a sharded layout. */
export function limitShares(queue: string, layout: Layout): Map<string, Share> {
  const all = members(queue, layout);
  const limits = layout.limits ?? {};
  const conc = limits.concurrency === undefined ? undefined : split(limits.concurrency, all, false);
  const rate = limits.rate === undefined ? undefined : split(limits.rate.max, all, true);
  return new Map(
    all.map((m) => [
      m.name,
      {
        concurrency: conc ? conc.get(m.name)! : null,
        rateLimit: rate ? { max: rate.get(m.name)!, perMs: limits.rate!.perMs } : null,
      },
    ]),
  );
}

/** What a store queue count means, for an error: "3 shards and the unsharded keys", with what drains. */
function described(layout: Layout): string {
  const current = layout.current ? layout.current.count : 0;
  const draining = layout.retired.filter((s) => s.from >= 0).reduce((n, s) => n + s.count, 0);
  return `${current} shard${current === 1 ? '' : 's'}${draining > 0 ? `, ${draining} draining` : ''} and the unsharded keys`;
}

/**
 * Refuses limits a sharded layout cannot split (a share of 0 would hold its jobs forever), naming
 * the field of a setLimits call, or for a reshard the count it cannot take. Before anything is
 * written.
 */
export function checkShares(queue: string, layout: Layout, limits: LayoutLimits, field: 'limits' | 'shards'): void {
  if (isUnsharded(layout)) return;
  const m = shareCount(queue, layout);
  const asked = [
    ['concurrency', 'concurrency limit', limits.concurrency],
    ['rateLimit.max', 'rate limit', limits.rate?.max],
  ] as const;
  for (const [name, what, v] of asked) {
    if (v === undefined || v >= m) continue;
    if (field === 'shards') {
      throw new ValidationError(
        'shards',
        `the queue's ${what} of ${v} cannot be split over ${m} store queues (${described(layout)}; each takes at least one): reshard to fewer shards, or raise the limit first`,
      );
    }
    throw new ValidationError(
      `limits.${name}`,
      `must be at least ${m} on this queue: it is split over its ${m} store queues (${described(layout)}), each taking at least one (got ${v})`,
    );
  }
}

/** The layout's limits after a change (undefined leaves one, null removes it). */
export function changedLimits(limits: LayoutLimits, change: LimitsChange): LayoutLimits {
  const out: LayoutLimits = { ...limits };
  if (change.concurrency === null) delete out.concurrency;
  else if (change.concurrency !== undefined) out.concurrency = change.concurrency;
  if (change.rateLimit === null) delete out.rate;
  else if (change.rateLimit !== undefined) out.rate = change.rateLimit;
  return out;
}

/** The limits a queue's layout answers for (limits()): as given, or the unsharded keys' for an unsharded or older layout. */
export function givenLimits(layout: Layout, home: QueueLimits): QueueLimits {
  if (isUnsharded(layout) || !layout.limits) return home;
  return { ...home, concurrency: layout.limits.concurrency, rateLimit: layout.limits.rate };
}

const cap = (v: number | null | undefined) => v ?? Number.POSITIVE_INFINITY;

/**
 * Writes each store queue's share of `layout`: first every share that shrinks from `before`'s
 * (each one when `before` is unknown), then those that grow, so the shares never add up to more
 * than the larger of the two limits. Returns whether a store queue's setting changed.
 */
export async function applyShares(inner: Store, queue: string, layout: Layout, before?: Layout): Promise<boolean> {
  if (isUnsharded(layout)) return false;
  const next = limitShares(queue, layout);
  const old = before && !isUnsharded(before) ? limitShares(queue, before) : undefined;
  const shrinking: [string, LimitsChange][] = [];
  const growing: [string, LimitsChange][] = [];
  for (const [m, s] of next) {
    const was = old?.get(m);
    const [down, up]: LimitsChange[] = [{}, {}];
    (was === undefined || cap(s.concurrency) < cap(was.concurrency) ? down : up).concurrency = s.concurrency;
    (was === undefined || cap(s.rateLimit?.max) < cap(was.rateLimit?.max) ? down : up).rateLimit = s.rateLimit;
    if (Object.keys(down).length > 0) shrinking.push([m, down]);
    if (Object.keys(up).length > 0) growing.push([m, up]);
  }
  let changed = false;
  for (const step of [shrinking, growing]) {
    const answers = await Promise.all(step.map(([m, change]) => inner.setLimits(m, change)));
    changed ||= answers.some(Boolean);
  }
  return changed;
}

/** Rounds of settleShares: each follows a layout another process stored meanwhile. */
const SETTLE_ROUNDS = 5;

/**
 * Applies the shares of the layout stored as `raw` (shrinking from `beforeRaw`'s), then, unless
 * `settle` is false (a reshard writing the shares of a layout it has not stored yet), reads the
 * layout again and applies a newer one's that another process stored meanwhile, so a process
 * that applied an older layout's shares late never leaves them standing.
 */
export async function settleShares(inner: Store, queue: string, raw: string | undefined, beforeRaw?: string, settle = true): Promise<void> {
  let before = beforeRaw === undefined ? undefined : parseLayout(beforeRaw);
  for (let round = 0; round < SETTLE_ROUNDS; round++) {
    const layout = parseLayout(raw);
    await applyShares(inner, queue, layout, before);
    if (!settle) return;
    const now = await inner.layout(queue);
    if (now === raw) return;
    [before, raw] = [layout, now];
  }
}
