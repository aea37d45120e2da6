/**
 * Resharding: moving a live queue to a new shard count. Nothing is moved between shards, so
 * nothing can be lost: new adds go to the new shard set at once, workers drain the old one, and
 * lookups search both (layout.ts says how the layout records it). The steps are each safe to run
 * twice and to stop after (see reshardQueue), because two processes may reshard one queue at once.
 */
import { ValidationError } from '../../errors.js';
import type { QueueSettings, Store } from '../store.js';
import { formatLayout, isUnsharded, type Layout, memberNames, newEpoch, parseLayout, reshardedLayout, shardCount, shardFor, shardNames } from './layout.js';
import { checkShares, limitsFrom, settleShares } from './limit-shares.js';

/** Tries of a reshard (or an obliterate) whose compare-and-set of the layout lost to another process. */
export const RESHARD_ATTEMPTS = 5;

/**
 * The settings a reshard copies to new shards (the queue's own concurrency and rate limit are
 * not among them: they are split by the layout, limit-shares.ts) are the same in both.
 */
const sameSettings = (a: QueueSettings, b: QueueSettings) =>
  a.paused === b.paused &&
  a.eventsMaxLen === b.eventsMaxLen &&
  JSON.stringify(a.retention) === JSON.stringify(b.retention) &&
  a.limits.groupConcurrency === b.limits.groupConcurrency &&
  JSON.stringify(a.limits.groupRateLimit) === JSON.stringify(b.limits.groupRateLimit);

/** A retention count cap's share per shard (0 stays 0: no bound, or for completed jobs, none kept). */
export const perShard = (maxCount: number, shards: number) => (maxCount === 0 ? 0 : Math.ceil(maxCount / shards));

/**
 * With `creating`, only a queue that was never sharded is sharded: two processes that start at
 * once make one layout. Steps, each safe to run twice and to stop after:
 * 1. A queue never sharded gets its epoch stored first (a compare and set of the layout, still
 *    unsharded), so every process that shards it at once marks its shards for the same one.
 * 2. The new shards are marked live shards of the epoch (before anything else is written to
 *    them: a late obliterate of another life of the queue leaves them alone) and get the
 *    queue's settings, before any job can reach them; every store queue takes its share of the
 *    queue's limits in the new layout (limit-shares.ts): the old ones' shrink before any job can
 *    reach the new ones.
 * 3. The layout names them (a compare and set), then the old set is marked retired. A process
 *    that reads the new layout marks it retired too before it uses it (LayoutCache's
 *    finishDraining), so no moment has two shards taking adds for one routing key: ids and dedup
 *    windows stay one per key across a reshard. Nothing is moved between shards, so nothing can
 *    be lost.
 */
export async function reshardQueue(inner: Store, queue: string, count: number, creating = false): Promise<{ raw: string | undefined }> {
  for (let attempt = 0; attempt < RESHARD_ATTEMPTS; attempt++) {
    let raw = await inner.layout(queue);
    let layout = parseLayout(raw);
    // Another process got there first (a lost compare-and-set, then this read): its layout stands.
    if (creating ? !isUnsharded(layout) : attempt > 0 && layout.current !== null && shardCount(layout) === count) return { raw };
    const settings = await inner.settings(queue);
    // The queue's limits as given: the layout keeps them once sharded; before, the unsharded keys.
    const limits = layout.limits ?? limitsFrom(settings.limits);
    checkShares(queue, { ...reshardedLayout(layout, count), limits }, limits, 'shards');
    if (layout.epoch === undefined) {
      const epoch = newEpoch();
      const reserved = formatLayout({ ...layout, epoch });
      if (!(await inner.setLayout(queue, raw, reserved, epoch))) continue;
      [raw, layout] = [reserved, { ...layout, epoch }];
    }
    const epoch = layout.epoch!;
    const next: Layout = { ...reshardedLayout(layout, count), limits };
    await Promise.all(
      shardNames(queue, next.current!).map(async (n) => {
        await inner.markShard(n, epoch);
        await applySettings(inner, n, settings, count);
      }),
    );
    await copyGroupSettings(inner, queue, memberNames(queue, layout), next);
    const text = formatLayout(next);
    // Shrink first: every store queue's share of the new layout before it names the new shards.
    await settleShares(inner, queue, text, raw, false);
    if (await inner.setLayout(queue, raw, text, epoch)) {
      // From here no add reaches the old shards; workers and lookups still find their jobs.
      await Promise.all(memberNames(queue, { epoch, current: layout.current, retired: [] }).map((n) => inner.retire(n, epoch)));
      // A setting written meanwhile by a process that read the old layout: the new shards get it too.
      const now = await inner.settings(queue);
      if (!sameSettings(now, settings)) await Promise.all(shardNames(queue, next.current!).map((n) => applySettings(inner, n, now, count)));
      // And shares another process wrote meanwhile by an older layout: put right.
      await settleShares(inner, queue, text);
      return { raw: text };
    }
  }
  // Lost every compare and set: the shares of the layout that stands, not of ours.
  await settleShares(inner, queue, await inner.layout(queue));
  throw new ValidationError('shards', 'the layout kept changing while resharding (another reshard at the same time?): try again');
}

/**
 * A group's own limits and pause go with it to its shard of the new set (its jobs go there from
 * now on), before any job can reach it: the groups that have one, walked on every shard of the
 * old layout.
 */
async function copyGroupSettings(inner: Store, queue: string, members: string[], next: Layout): Promise<void> {
  for (const member of members) {
    let cursor: string | undefined;
    do {
      const page = await inner.groupPage(member, cursor, 1000);
      await Promise.all(
        page.groups
          .filter((g) => g.concurrency !== undefined || g.rateLimit !== undefined || g.paused)
          .map((g) =>
            inner.setGroup(shardFor(queue, next.current, g.id), g.id, { concurrency: g.concurrency ?? null, rateLimit: g.rateLimit ?? null, paused: g.paused }),
          ),
      );
      cursor = page.next;
    } while (cursor !== undefined);
  }
}

async function applySettings(inner: Store, member: string, s: QueueSettings, shards: number): Promise<void> {
  const { dead, completed } = s.retention;
  await Promise.all([
    inner.setPaused(member, s.paused),
    inner.setEventStream(member, s.eventsMaxLen),
    inner.setRetention(member, 'dead', perShard(dead.maxCount, shards), dead.maxAgeMs),
    inner.setRetention(member, 'completed', perShard(completed.maxCount, shards), completed.maxAgeMs),
    // The queue's own concurrency and rate limit: its share, written by settleShares.
    inner.setLimits(member, { groupConcurrency: s.limits.groupConcurrency ?? null, groupRateLimit: s.limits.groupRateLimit ?? null }),
  ]);
}
