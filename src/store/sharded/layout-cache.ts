/**
 * The layout cache: each queue's layout as this process last read it, shared by every call of
 * the sharding view. A cached layout is trusted for LAYOUT_TTL_MS and then refreshed in the
 * background, because a stale one is still safe to use: a shard that is not live for it refuses
 * adds, and a lookup that misses reads it again. Reading a layout also finishes what a reshard
 * may have left undone (its old shards marked retired, emptied ones dropped), and moves wake
 * subscriptions over to the new shards.
 */
import type { Store } from '../store.js';
import { formatLayout, isUnsharded, type Layout, memberNames, parseLayout, shardNames, type ShardSet } from './layout.js';
import { limitsFrom, settleShares } from './limit-shares.js';
import { RESHARD_ATTEMPTS, reshardQueue } from './resharding.js';

/** How long a process trusts the layout it read; a stale one is also caught by a refused add or a miss. */
const LAYOUT_TTL_MS = 10_000;

export interface Resolved {
  raw: string | undefined;
  layout: Layout;
  /** The layout's epoch; '' for a queue never sharded. */
  epoch: string;
  unsharded: boolean;
  /** Every store queue of the queue: the unsharded keys, then current shards, then retired ones. */
  members: string[];
  /** Where each retired shard set's jobs may be (for the idempotent add and lookups). */
  retired: ShardSet[];
  at: number;
}

function resolvedLayout(queue: string, raw: string | undefined): Resolved {
  const layout = parseLayout(raw);
  return {
    raw,
    layout,
    epoch: layout.epoch ?? '',
    unsharded: isUnsharded(layout),
    members: memberNames(queue, layout),
    retired: layout.retired,
    at: performance.now(),
  };
}

export class LayoutCache {
  readonly #inner: Store;
  readonly #layouts = new Map<string, Resolved>();
  readonly #loading = new Map<string, Promise<Resolved>>();
  readonly #declared = new Map<string, number>();
  /** Per queue: subscriptions to move over to a new layout's shards. */
  readonly #followers = new Map<string, Set<() => void>>();

  constructor(inner: Store) {
    this.#inner = inner;
  }

  /** The shard count a Queue or Worker was given: used when the queue has no layout yet. */
  declare(queue: string, shards: number | undefined): void {
    if (shards !== undefined && !this.#declared.has(queue)) this.#declared.set(queue, shards);
  }

  /** The cached layout (refreshed in the background when old), or one read now. */
  async resolve(queue: string, fresh = false): Promise<Resolved> {
    return (!fresh && this.resolveCached(queue)) || this.load(queue);
  }

  /**
   * What resolve() answers without reading, at once (no promise): the cached layout, refreshed in
   * the background when old; undefined when none is cached. For the worker's claims and acks.
   */
  resolveCached(queue: string): Resolved | undefined {
    const cached = this.#layouts.get(queue);
    // A stale layout is still safe to use (a shard that is not live for it refuses adds, a
    // miss re-reads), so it is refreshed in the background instead of holding up the call.
    if (cached && performance.now() - cached.at > LAYOUT_TTL_MS) this.load(queue).catch(() => {});
    return cached;
  }

  /** Reads the stored layout now (one read per queue at a time, shared by its callers). */
  load(queue: string): Promise<Resolved> {
    let p = this.#loading.get(queue);
    if (!p) {
      p = this.#read(queue).finally(() => this.#loading.delete(queue));
      this.#loading.set(queue, p);
    }
    return p;
  }

  /** The layout last read, without reading. */
  cached(queue: string): Resolved | undefined {
    return this.#layouts.get(queue);
  }

  /** Drops the cached layout (the queue was obliterated). */
  forget(queue: string): void {
    this.#layouts.delete(queue);
  }

  /** Calls `follow` each time a layout read names other store queues than the one before; returns a function that stops it. */
  follow(queue: string, follow: () => void): () => void {
    const followers = this.#followers.get(queue) ?? new Set();
    this.#followers.set(queue, followers.add(follow));
    return () => void followers.delete(follow);
  }

  async #read(queue: string): Promise<Resolved> {
    let raw = await this.#inner.layout(queue);
    const wanted = this.#declared.get(queue);
    if (wanted !== undefined && wanted > 1 && isUnsharded(parseLayout(raw))) raw = (await reshardQueue(this.#inner, queue, wanted, true)).raw;
    let r = await this.#finishDraining(queue, resolvedLayout(queue, raw));
    const before = this.#layouts.get(queue);
    if (!r.unsharded && (!r.layout.limits || !before || before.members.join('\n') !== r.members.join('\n'))) r = await this.#putSharesRight(queue, r);
    return this.#keep(queue, r);
  }

  /**
   * The first time this process reads a sharded layout, and each time its store queues changed
   * since the last read, every store queue's share of the queue's limits is written again
   * (limit-shares.ts; the same values, so nothing changes unless a process stopped halfway
   * through a reshard or a drain's end). A layout an earlier version wrote keeps the limits on
   * the unsharded keys, whole: they move into the layout first (a compare and set), then the
   * shares are written. A process that may not write (a read-only user) leaves them as they are.
   */
  async #putSharesRight(queue: string, r: Resolved): Promise<Resolved> {
    try {
      if (!r.layout.limits) {
        const text = formatLayout({ ...r.layout, limits: limitsFrom(await this.#inner.limits(queue)) });
        if (!(await this.#inner.setLayout(queue, r.raw, text, r.layout.epoch))) return resolvedLayout(queue, await this.#inner.layout(queue));
        await settleShares(this.#inner, queue, text);
        return resolvedLayout(queue, text);
      }
      await settleShares(this.#inner, queue, r.raw);
    } catch {
      // Not allowed to write, or the server went away: the next read tries again.
    }
    return r;
  }

  /** Caches a layout read, and moves subscriptions over to its shards when they changed. */
  #keep(queue: string, r: Resolved): Resolved {
    const before = this.#layouts.get(queue);
    this.#layouts.set(queue, r);
    if (before && before.members.join('\n') !== r.members.join('\n')) for (const follow of this.#followers.get(queue) ?? []) follow();
    return r;
  }

  /** How many jobs a store queue holds, and whether a dedup window taken there is still open. */
  async contents(member: string): Promise<{ jobs: number; windowOpen: boolean }> {
    const [s, settings] = await Promise.all([this.#inner.stats(member, 0), this.#inner.settings(member)]);
    return { jobs: s.scheduled + s.active + s.dead + s.completed, windowOpen: settings.dedupUntilMs > s.nowMs };
  }

  /**
   * Marks every retired shard retired (again: a reshard marks them after it stores the layout,
   * and may have stopped before), so a process never adds by a layout whose old shards still take
   * adds. Then drops retired sets that hold no job and no open dedup window any more (an add
   * checks a retired set for its dedup key, so the window holds across the reshard until it
   * ends): once found empty, nothing can enter them.
   */
  async #finishDraining(queue: string, r: Resolved): Promise<Resolved> {
    if (r.retired.length === 0) return r;
    const empty: ShardSet[] = [];
    for (const set of r.retired) {
      const names = shardNames(queue, set);
      await Promise.all(names.map((n) => this.#inner.retire(n, r.epoch)));
      // The unsharded keys also hold schedule jobs: only their jobs from before count, which
      // cannot be told apart, so they drain like any shard (and keep holding its jobs).
      const held = await Promise.all(names.map((n) => this.contents(n)));
      if (held.every((h) => h.jobs === 0 && !h.windowOpen)) empty.push(set);
    }
    if (empty.length === 0) return r;
    const next = formatLayout({ ...r.layout, retired: r.layout.retired.filter((s) => !empty.includes(s)) });
    // The store queues left take the dropped ones' shares of the limits after the drop (#read:
    // its store queues changed), so the shares grow only once the layout no longer names them.
    if (await this.#inner.setLayout(queue, r.raw, next, r.layout.epoch)) return resolvedLayout(queue, next);
    return resolvedLayout(queue, await this.#inner.layout(queue));
  }

  /**
   * Runs `op` once on every member of the stored layout (read now: a reshard this process has
   * not seen must not be left out) and of any layout stored while it ran, so a write that
   * changes the whole queue (a setting, a drain, a purge) reaches every shard. A reshard reads
   * the settings again after it stores its layout (reshardQueue), so of a setting written and a
   * reshard at the same moment, one always brings it to the new shards. Answers in no order.
   */
  async everywhere<R>(queue: string, op: (member: string, r: Resolved) => Promise<R>): Promise<R[]> {
    let r = await this.load(queue);
    const done = new Map<string, R>();
    for (let round = 0; round < RESHARD_ATTEMPTS; round++) {
      const todo = r.members.filter((m) => !done.has(m));
      if (todo.length === 0) break;
      const at = r;
      const answers = await Promise.all(todo.map((m) => op(m, at)));
      todo.forEach((m, k) => done.set(m, answers[k]!));
      r = await this.load(queue);
    }
    return [...done.values()];
  }
}
