/**
 * A queue's shard layout: which queues (in the store's sense, each with its own hash tag) hold
 * its jobs, and where a new job goes. Stored as JSON in the `layout` field of the unsharded
 * queue's meta, so every producer and worker reads the same one (docs/data-model.md).
 *
 *   {"v":1,"epoch":"9f2c01ab77d3","current":{"from":0,"count":3},"retired":[{"from":-1,"count":1}]}
 *
 * `current` is the shard set new jobs go to: shard i is the queue `<name>#<from + i>`, with hash
 * tag `{<name>#<from + i>}`; null means the unsharded keys `{<name>}`. `retired` lists shard sets
 * a reshard left behind that may still hold jobs (or an open dedup window): workers drain them,
 * lookups search them, and no add goes there (their meta holds `moved`). The unsharded keys
 * appear there as {from: -1, count: 1} after a queue was first sharded.
 *
 * `epoch` names this life of the queue: stored (by a compare and set of its own) when the queue
 * is first sharded, kept by every reshard, gone with the queue when it is obliterated. Each
 * shard's meta holds the epoch it was made for, and an add to a shard carries the epoch of the
 * layout that routed it: a shard that is not a live shard of that epoch (retired, obliterated,
 * or made again for a later life of the queue under the same number) refuses it, and the
 * producer reads the layout again. So a stale layout can never put a job where no layout looks.
 * Within one epoch shard numbers are never used twice; an obliterated queue made again numbers
 * its shards from 0 under a new epoch.
 *
 * The unsharded keys stay in use on a sharded queue for what is not split: recurring schedules
 * (and the jobs they add, so the schedule guard stays atomic with the add), the worker registry,
 * the layout itself.
 *
 * `limits` is the queue's concurrency and rate limit as given (absent in a layout an earlier
 * version wrote): each store queue enforces only its share of them (limit-shares.ts), so the
 * limit as a whole lives here, beside the members it is split over, and changes with them by the
 * same compare and set.
 *
 *   {"v":1,"epoch":"9f2c01ab77d3","current":{"from":0,"count":3},"retired":[],"limits":{"concurrency":10,"rate":{"max":9,"perMs":1000}}}
 */
import { randomBytes } from 'node:crypto';
import { ValidationError } from '../../errors.js';
import { MAX_SHARDS } from '../../limits.js';
import type { RateLimit } from '../store.js';

export interface ShardSet {
  /** Number of the first shard; -1 (with count 1) for the unsharded keys. */
  from: number;
  count: number;
}

/** The queue's own limits, as given: what its store queues' shares add up to. */
export interface LayoutLimits {
  concurrency?: number;
  rate?: RateLimit;
}

export interface Layout {
  /** This life of the queue (see above); undefined until it is first sharded. */
  epoch: string | undefined;
  current: ShardSet | null;
  retired: ShardSet[];
  /** The queue's limits as given; undefined in a layout written before limits were split exactly. */
  limits?: LayoutLimits | undefined;
}

/** Most shard sets left draining at once: each adds a lookup to adds and misses while it does. */
export const MAX_RETIRED = 4;

export const UNSHARDED: Layout = { epoch: undefined, current: null, retired: [] };
/** An epoch: what newEpoch() makes (12 hex digits); a stored one must read so. */
const EPOCH = /^[0-9a-f]{12}$/;
const PLAIN: ShardSet = { from: -1, count: 1 };

/** The store queue names of a shard set, in shard order. */
export function shardNames(queue: string, set: ShardSet): string[] {
  if (set.from < 0) return [queue];
  return Array.from({ length: set.count }, (_, i) => `${queue}#${set.from + i}`);
}

/**
 * The shard of a routing key within a set: FNV-1a (32 bit) of its UTF-8 bytes, modulo the
 * count. Written out here (not a library) because a producer in any language must compute the
 * same number: docs/data-model.md gives the same five lines.
 */
export function shardIndex(key: string, count: number): number {
  if (count === 1) return 0;
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(key, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

/** The store queue that holds (or will hold) the job routed by `key` in a shard set. */
export function shardFor(queue: string, set: ShardSet | null, key: string): string {
  if (set === null || set.from < 0) return queue;
  return `${queue}#${set.from + shardIndex(key, set.count)}`;
}

export function parseLayout(text: string | undefined): Layout {
  if (text === undefined || text === '') return UNSHARDED;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`stored shard layout is not JSON: ${text.slice(0, 80)}`);
  }
  const set = (s: unknown): ShardSet => {
    const o = s as ShardSet;
    if (typeof o !== 'object' || o === null || !Number.isInteger(o.from) || !Number.isInteger(o.count) || o.count < 1 || o.from < -1)
      throw new Error(`stored shard layout has a bad shard set: ${text.slice(0, 80)}`);
    return { from: o.from, count: o.count };
  };
  const o = v as { v?: unknown; epoch?: unknown; current?: unknown; retired?: unknown; limits?: unknown };
  if (typeof o !== 'object' || o === null || o.v !== 1 || !Array.isArray(o.retired))
    throw new Error(`stored shard layout is not version 1: ${text.slice(0, 80)}`);
  if (o.epoch !== undefined && (typeof o.epoch !== 'string' || !EPOCH.test(o.epoch)))
    throw new Error(`stored shard layout has a bad epoch: ${text.slice(0, 80)}`);
  const layout: Layout = { epoch: o.epoch, current: o.current === null ? null : set(o.current), retired: o.retired.map(set) };
  if (o.limits !== undefined) layout.limits = layoutLimits(o.limits, text);
  return layout;
}

const whole = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1;

function layoutLimits(l: unknown, text: string): LayoutLimits {
  const o = l as { concurrency?: unknown; rate?: { max?: unknown; perMs?: unknown } };
  const bad = () => new Error(`stored shard layout has bad limits: ${text.slice(0, 120)}`);
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw bad();
  const out: LayoutLimits = {};
  if (o.concurrency !== undefined) {
    if (!whole(o.concurrency)) throw bad();
    out.concurrency = o.concurrency;
  }
  if (o.rate !== undefined) {
    if (typeof o.rate !== 'object' || o.rate === null || !whole(o.rate.max) || !whole(o.rate.perMs)) throw bad();
    out.rate = { max: o.rate.max, perMs: o.rate.perMs };
  }
  return out;
}

export function formatLayout(layout: Layout): string {
  const { epoch, current, retired, limits } = layout;
  if (!limits) return JSON.stringify({ v: 1, epoch, current, retired });
  const l: LayoutLimits = {};
  if (limits.concurrency !== undefined) l.concurrency = limits.concurrency;
  if (limits.rate !== undefined) l.rate = { max: limits.rate.max, perMs: limits.rate.perMs };
  return JSON.stringify({ v: 1, epoch, current, retired, limits: l });
}

/** A new epoch: 48 random bits, as 12 hex digits. */
export function newEpoch(): string {
  return randomBytes(6).toString('hex');
}

export function isUnsharded(layout: Layout): boolean {
  return layout.current === null && layout.retired.length === 0;
}

/** How many shards new jobs are spread over. */
export function shardCount(layout: Layout): number {
  return layout.current === null ? 1 : layout.current.count;
}

/**
 * The next free shard number: above every shard of the layout. Numbers are handed out in order,
 * and a retired set leaves the layout only after a later set was made, so every number below it
 * has been used in this epoch and none above it.
 */
function nextFrom(layout: Layout): number {
  let n = 0;
  for (const s of [layout.current, ...layout.retired]) if (s && s.from >= 0) n = Math.max(n, s.from + s.count);
  return n;
}

/** Every shard this epoch of the queue ever used (numbers 0 to the next free one): what obliterate removes. */
export function everyShardName(queue: string, layout: Layout): string[] {
  const end = nextFrom(layout);
  return end === 0 ? [] : shardNames(queue, { from: 0, count: end });
}

export function checkShardCount(shards: unknown, field = 'shards'): number {
  if (typeof shards !== 'number' || !Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS)
    throw new ValidationError(field, `must be a whole number from 1 to ${MAX_SHARDS} (got ${String(shards)})`);
  return shards;
}

/**
 * The layout after resharding to `count` shards: new shard numbers; the current set joins the
 * retired ones (the unsharded keys, when the queue was unsharded). Going back to one shard makes
 * a one-shard set, not the unsharded keys, so no name is used twice in an epoch. The epoch stays.
 */
export function reshardedLayout(layout: Layout, count: number): Layout {
  const retired = [...layout.retired];
  if (layout.current) retired.push(layout.current);
  else if (!retired.some((s) => s.from < 0)) retired.push(PLAIN);
  if (retired.length > MAX_RETIRED)
    throw new ValidationError('shards', `${retired.length - 1} earlier shard sets are still draining: wait until they are empty (see queue.shards())`);
  return { epoch: layout.epoch, current: { from: nextFrom(layout), count }, retired, limits: layout.limits };
}

/** Every store queue of the layout, the unsharded keys first, then current, then retired. */
export function memberNames(queue: string, layout: Layout): string[] {
  const out = [queue];
  for (const s of [layout.current, ...layout.retired]) if (s && s.from >= 0) out.push(...shardNames(queue, s));
  return out;
}

/**
 * The queue a store queue belongs to: a shard `<queue>#<n>` belongs to `<queue>` (queue names
 * never hold a `#`). What the registry of queue names holds.
 */
export function queueOf(member: string): string {
  const hash = member.indexOf('#');
  return hash < 0 ? member : member.slice(0, hash);
}

/** A store queue's shard number: -1 for the unsharded keys (queue names never hold a `#`). */
export function shardNumberOf(member: string): number {
  const hash = member.indexOf('#');
  return hash < 0 ? -1 : Number(member.slice(hash + 1));
}
