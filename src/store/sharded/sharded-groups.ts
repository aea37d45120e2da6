/**
 * Groups and limits on a sharded queue. A job of a group is routed by its group (add-router.ts),
 * so a group's running count, line, limit and pause live on one shard of each shard set: its home
 * there. The queue's `concurrency` and `rateLimit` are the queue's: kept as given in the layout
 * and split into shares over every store queue that hands out jobs (limit-shares.ts), so they
 * add up to the limit. `groupConcurrency`, `groupRateLimit` and a group's own limits hold per
 * group, so every store queue keeps them as given.
 */
import type { GroupChange, GroupsPage, LimitsChange, QueueLimits, RateStatus, RateUse, Store, StoredGroup } from '../store.js';
import { ValidationError } from '../../errors.js';
import { shardFor, shardNumberOf } from './layout.js';
import type { LayoutCache, Resolved } from './layout-cache.js';
import { formatLayout } from './layout.js';
import { changedLimits, checkShares, givenLimits, limitsFrom, settleShares } from './limit-shares.js';
import { RESHARD_ATTEMPTS } from './resharding.js';

/** The store queues a group may have jobs on: the unsharded keys, its shard of the current set and of each retired one. */
function homes(queue: string, r: Resolved, group: string): string[] {
  const out = new Set([queue]);
  if (r.layout.current) out.add(shardFor(queue, r.layout.current, group));
  for (const set of r.retired) out.add(shardFor(queue, set, group));
  return [...out];
}

/** Whether a store queue keeps a state for the group, as its listing walks them: jobs running or waiting, a limit of its own or a pause. */
const hasState = (g: StoredGroup) => g.running > 0 || g.waiting > 0 || g.concurrency !== undefined || g.rateLimit !== undefined || g.paused;

/** A group's states on its homes (in homes() order) as one: counts summed, its limit and pause as its current home keeps them. */
function merged(id: string, r: Resolved, all: StoredGroup[]): StoredGroup {
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
    const { concurrency, rateLimit, ...perGroup } = change;
    let changed = false;
    if (concurrency !== undefined || rateLimit !== undefined) changed = await this.#setQueueLimits(queue, { concurrency, rateLimit });
    if (perGroup.groupConcurrency !== undefined || perGroup.groupRateLimit !== undefined) {
      // Per group: every store queue keeps them as given.
      if ((await this.#layouts.everywhere(queue, (m) => this.#inner.setLimits(m, perGroup))).some(Boolean)) changed = true;
    }
    return changed;
  }

  /**
   * The queue's concurrency and rate limit. On a sharded queue: checked against the layout as
   * stored now (a cached one may predate a reshard to more store queues than the limit), kept in
   * the layout by a compare and set (so a reshard at the same moment either reads the new limit or
   * is read again by this call), then each store queue's share written. On a queue not sharded:
   * the unsharded keys keep it; if a reshard stored a layout meanwhile (it read the limit before
   * this wrote it), the change goes into that layout too.
   */
  async #setQueueLimits(queue: string, change: LimitsChange): Promise<boolean> {
    for (let attempt = 0; attempt < RESHARD_ATTEMPTS; attempt++) {
      const r = await this.#layouts.load(queue);
      if (r.unsharded) {
        const changed = await this.#inner.setLimits(queue, change);
        if ((await this.#inner.layout(queue)) === r.raw) return changed;
        continue;
      }
      const given = r.layout.limits ?? limitsFrom(await this.#inner.limits(queue));
      const next = changedLimits(given, change);
      checkShares(queue, r.layout, next, 'limits');
      const text = formatLayout({ ...r.layout, limits: next });
      if (text !== r.raw && !(await this.#inner.setLayout(queue, r.raw, text, r.layout.epoch))) continue;
      await settleShares(this.#inner, queue, text, r.raw);
      return JSON.stringify(next) !== JSON.stringify(given);
    }
    throw new ValidationError('limits', 'the layout kept changing while setting the limits (a reshard at the same time?): try again');
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

  /** The limits as given: the queue's own from the layout as stored now, the per-group ones from the unsharded keys. */
  async limits(queue: string): Promise<QueueLimits> {
    const [r, home] = await Promise.all([this.#layouts.load(queue), this.#inner.limits(queue)]);
    return givenLimits(r.layout, home);
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
        const where = homes(queue, r, id);
        return merged(id, r, await Promise.all(where.map(async (m) => (await this.#inner.groups(m, [id]))[0]!)));
      }),
    );
  }

  /**
   * A walk over the store queues in the order of their shard numbers (the unsharded keys first,
   * as -1), which a reshard only extends (new shards take higher numbers; drained sets drop out),
   * so the cursor `<shard number>:<its cursor>` still means the same place after one. A group
   * keeps a state on several store queues at once (its own limit or pause on the unsharded keys
   * and on its home shard; its jobs on a retired home while a reshard drains): it is listed once,
   * where the walk first meets it (no home with a lower number keeps a state for it), with its
   * figures merged over every home as `groups()` gives them. The layout is read afresh for each
   * page, so a process whose cached layout is stale lists the shards a reshard made meanwhile.
   */
  async groupPage(queue: string, cursor: string | undefined, count: number): Promise<GroupsPage> {
    const r = await this.#layouts.resolve(queue, true);
    const walk = r.members.map((name) => ({ name, n: shardNumberOf(name) })).sort((a, b) => a.n - b.n);
    let at = 0;
    let inner: string | undefined;
    if (cursor !== undefined) {
      const m = /^(-1|\d{1,9}):(.*)$/s.exec(cursor);
      // A number above every shard is none this walk gave; one below that the layout no longer
      // names was a retired set, dropped once drained: the walk goes on after it.
      if (!m || Number(m[1]) > walk[walk.length - 1]!.n) throw new ValidationError('opts.cursor', 'is not a cursor this listing gave');
      const n = Number(m[1]);
      at = walk.findIndex((w) => w.n >= n);
      inner = walk[at]!.n === n && m[2] !== '' ? m[2] : undefined;
    }
    const order = new Map(walk.map((w, i) => [w.name, i]));
    const groups: StoredGroup[] = [];
    while (at < walk.length && groups.length < count) {
      const here = walk[at]!.name;
      const page = await this.#inner.groupPage(here, inner, count - groups.length);
      groups.push(...(await this.#firstMet(queue, r, here, order, page.groups)));
      inner = page.next;
      if (inner === undefined) at++;
    }
    return { groups, next: at < walk.length ? `${walk[at]!.n}:${inner ?? ''}` : undefined };
  }

  /**
   * Of a page of store queue `here`, the groups first met there (no home earlier in the walk
   * keeps a state for them), each merged over its homes: one read of each other home, for the
   * groups of the page it is a home of.
   */
  async #firstMet(queue: string, r: Resolved, here: string, order: Map<string, number>, page: StoredGroup[]): Promise<StoredGroup[]> {
    const where = new Map(page.map((g) => [g.id, homes(queue, r, g.id)]));
    const asked = new Map<string, string[]>();
    for (const [id, ms] of where) for (const m of ms) if (m !== here) asked.set(m, [...(asked.get(m) ?? []), id]);
    const states = new Map<string, StoredGroup>(page.map((g) => [`${here}\n${g.id}`, g]));
    await Promise.all(
      [...asked].map(async ([m, ids]) => {
        for (const g of await this.#inner.groups(m, ids)) states.set(`${m}\n${g.id}`, g);
      }),
    );
    const out: StoredGroup[] = [];
    for (const g of page) {
      const ms = where.get(g.id)!;
      const all = ms.map((m) => states.get(`${m}\n${g.id}`)!);
      const earlier = ms.some((m, i) => m !== here && (order.get(m) ?? Infinity) < order.get(here)! && hasState(all[i]!));
      if (!earlier) out.push(merged(g.id, r, all));
    }
    return out;
  }
}
