/**
 * Groups and concurrency limits on a sharded queue. A job of a group is routed by its group
 * (add-router.ts), so a group's running count, line, limit and pause live on one shard of each
 * shard set: its home there. The queue's `concurrency` is split over the shards as retention caps
 * are (each shard allows ceil(c / N), so the queue runs at most c rounded up to a multiple of N);
 * `groupConcurrency` holds per group, so every shard keeps it as given. The queue's `rateLimit`
 * is split too, rounded down (each shard takes floor(max / N) tokens a window; a max below N is
 * refused), so the shards together never take more than max; `groupRateLimit` and a group's own rate limit hold
 * per group on its home shard, exactly. The unsharded keys keep the limits as given (what
 * limits() answers).
 */
import type { GroupChange, GroupsPage, LimitsChange, QueueLimits, RateLimit, RateStatus, RateUse, Store, StoredGroup } from '../store.js';
import { ValidationError } from '../../errors.js';
import { shardCount, shardFor } from './layout.js';
import type { LayoutCache, Resolved } from './layout-cache.js';
import { checkRateSplit, perShard, rateShare, RESHARD_ATTEMPTS } from './resharding.js';

/** A shard's share of a concurrency limit (null and undefined pass through). */
export function shardLimit(v: number | null | undefined, shards: number): number | null | undefined {
  return typeof v === 'number' ? perShard(v, shards) : v;
}

/** The store queues a group may have jobs on: the unsharded keys, its shard of the current set and of each retired one. */
function homes(queue: string, r: Resolved, group: string): string[] {
  const out = new Set([queue]);
  if (r.layout.current) out.add(shardFor(queue, r.layout.current, group));
  for (const set of r.retired) out.add(shardFor(queue, set, group));
  return [...out];
}

/** A rate limit's share on one shard (null and undefined pass through). */
function shardRate(v: RateLimit | null | undefined, shards: number): RateLimit | null | undefined {
  return v ? rateShare(v, shards) : v;
}

/** Limiters' use summed over shards: tokens added, the latest hold, the earliest refill. */
function sumUse(all: RateUse[]): RateUse {
  const held = all.map((u) => u.heldUntilMs).filter((v): v is number => v !== undefined);
  const refills = all.map((u) => u.nextRefillMs).filter((v): v is number => v !== undefined);
  return {
    used: all.reduce((n, u) => n + u.used, 0),
    heldUntilMs: held.length > 0 ? Math.max(...held) : undefined,
    nextRefillMs: refills.length > 0 ? Math.min(...refills) : undefined,
  };
}

export class ShardedGroups {
  readonly #inner: Store;
  readonly #layouts: LayoutCache;

  constructor(inner: Store, layouts: LayoutCache) {
    this.#inner = inner;
    this.#layouts = layouts;
  }

  async setLimits(queue: string, change: LimitsChange): Promise<boolean> {
    // The layout as stored now: a cached one may predate a reshard to more shards than max.
    const r = await this.#layouts.resolve(queue, true);
    if (r.layout.current) checkRateSplit(change.rateLimit, shardCount(r.layout), 'limits.rateLimit.max');
    const changed = await this.#layouts.everywhere(queue, (m, r) =>
      this.#inner.setLimits(
        m,
        m === queue
          ? change
          : { ...change, concurrency: shardLimit(change.concurrency, shardCount(r.layout)), rateLimit: shardRate(change.rateLimit, shardCount(r.layout)) },
      ),
    );
    return changed.some(Boolean);
  }

  /** The queue's limiter summed over every store queue (shards, and the unsharded keys). */
  async rateStatus(queue: string): Promise<RateStatus> {
    const r = await this.#layouts.resolve(queue);
    const all = await Promise.all(r.members.map((m) => this.#inner.rateStatus(m)));
    return {
      nowMs: Math.max(...all.map((s) => s.nowMs)),
      queue: sumUse(all.map((s) => s.queue)),
      groupsHeld: all.reduce((n, s) => n + s.groupsHeld, 0),
    };
  }

  limits(queue: string): Promise<QueueLimits> {
    return this.#inner.limits(queue);
  }

  /**
   * On every home of the group, by the layout as stored now, and again on the homes of a layout a
   * reshard stored meanwhile (which copies group settings to the new shards only once).
   */
  async setGroup(queue: string, group: string, change: GroupChange): Promise<boolean> {
    const done = new Map<string, boolean>();
    for (let round = 0; round < RESHARD_ATTEMPTS; round++) {
      const r = await this.#layouts.resolve(queue, true);
      const todo = homes(queue, r, group).filter((m) => !done.has(m));
      if (todo.length === 0) break;
      const answers = await Promise.all(todo.map((m) => this.#inner.setGroup(m, group, change)));
      todo.forEach((m, i) => done.set(m, answers[i]!));
    }
    return [...done.values()].some(Boolean);
  }

  /** A group's counts summed over its homes; its limit and pause as its current home keeps them. */
  async groups(queue: string, ids: string[]): Promise<StoredGroup[]> {
    const r = await this.#layouts.resolve(queue);
    return Promise.all(
      ids.map(async (id) => {
        const all = await Promise.all(homes(queue, r, id).map(async (m) => (await this.#inner.groups(m, [id]))[0]!));
        const current = all[r.layout.current ? 1 : 0] ?? all[0]!;
        return {
          id,
          running: all.reduce((n, g) => n + g.running, 0),
          waiting: all.reduce((n, g) => n + g.waiting, 0),
          concurrency: current.concurrency,
          rateLimit: current.rateLimit,
          rate: sumUse(all.map((g) => g.rate)),
          paused: current.paused,
        };
      }),
    );
  }

  /**
   * A walk over the members one after another: the cursor is `<member index>:<its cursor>`. A
   * group with jobs on two shard sets (during a reshard) is listed once for each.
   */
  async groupPage(queue: string, cursor: string | undefined, count: number): Promise<GroupsPage> {
    const r = await this.#layouts.resolve(queue);
    let at = 0;
    let inner: string | undefined;
    if (cursor !== undefined) {
      const m = /^(\d{1,4}):(.*)$/s.exec(cursor);
      if (!m || Number(m[1]) >= r.members.length) throw new ValidationError('opts.cursor', 'is not a cursor this listing gave');
      at = Number(m[1]);
      inner = m[2] === '' ? undefined : m[2];
    }
    const groups: StoredGroup[] = [];
    while (at < r.members.length && groups.length < count) {
      const page = await this.#inner.groupPage(r.members[at]!, inner, count - groups.length);
      groups.push(...page.groups);
      if (page.next !== undefined) return { groups, next: `${at}:${page.next}` };
      at++;
      inner = undefined;
    }
    return { groups, next: at < r.members.length ? `${at}:` : undefined };
  }
}
