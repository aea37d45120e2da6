/**
 * The figures of a queue's groups that one scrape exposes: the queue's limits, its rate limiter
 * now (`queue.rateStatus`: tokens taken, a hold, the next refill, the groups held back), and sums
 * over a walk of `queue.groups.list` pages, with the few groups that have the most jobs waiting.
 *
 * Bounded on both sides: a scrape reads at most `pages` pages a queue (so a queue with a million
 * tenants costs a few round trips, and the figures then say they are partial), and only the top
 * `top` groups carry a group label (so a series per tenant is never made).
 */
import type { GroupInfo, QueueLimitsInfo } from '../queue/groups-api.js';
import type { Queue } from '../queue.js';
import { outOfTokens, type RateStatus } from '../store/store.js';

/** Groups per page of the walk: the most `queue.groups.list` takes. */
export const GROUP_PAGE_SIZE = 1000;

export interface GroupFigures {
  limits: QueueLimitsInfo;
  /** The queue's rate limiter now (server clock), and how many groups are held back. */
  rate: RateStatus;
  /** The walk reached the last page: every figure below covers every group. */
  complete: boolean;
  /** Distinct groups read (those with something running or waiting, a limit of their own or a pause). */
  listed: number;
  /** Groups with jobs waiting. */
  waitingGroups: number;
  /** Groups with jobs running. */
  runningGroups: number;
  pausedGroups: number;
  /** Groups not paused with jobs waiting and as many running as their limit (their own, else the queue's groupConcurrency) allows. */
  atLimitGroups: number;
  /** Jobs running, summed over the groups read. */
  running: number;
  /** Jobs waiting, summed over the groups read. */
  waiting: number;
  /** The groups with the most jobs waiting (ties by id), at most `top`; none without jobs waiting. */
  top: GroupInfo[];
  /**
   * Due jobs held back by a rate limit now: every due job while the queue's own limiter has no
   * token left or is held (on a sharded queue, the due jobs of each shard whose limiter has none
   * left or is held: shardStats().ready), else the waiting jobs of the groups read whose limiter
   * has none left or is held.
   */
  rateHeldJobs: number;
}

/**
 * Walks the queue's groups from the start, at most `pages` pages, and sums them. A group listed
 * twice in one walk (the hash was resized between two pages) counts once, as last read.
 */
export async function readGroupFigures(queue: Queue<unknown>, opts: { pages: number; top: number }): Promise<GroupFigures> {
  const [limits, rate] = await Promise.all([queue.limits(), queue.rateStatus()]);
  const seen = new Map<string, GroupInfo>();
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await queue.groups.list({ ...(cursor === undefined ? {} : { cursor }), limit: GROUP_PAGE_SIZE });
    for (const g of page.groups) seen.set(g.id, g);
    cursor = page.cursor;
    pages++;
  } while (cursor !== undefined && pages < opts.pages);

  const f: GroupFigures = {
    limits,
    rate,
    complete: cursor === undefined,
    listed: seen.size,
    waitingGroups: 0,
    runningGroups: 0,
    pausedGroups: 0,
    atLimitGroups: 0,
    running: 0,
    waiting: 0,
    top: [],
    rateHeldJobs: 0,
  };
  const waiting: GroupInfo[] = [];
  for (const g of seen.values()) {
    f.running += g.running;
    f.waiting += g.waiting;
    if (g.running > 0) f.runningGroups++;
    if (g.paused) f.pausedGroups++;
    if (g.waiting > 0) {
      f.waitingGroups++;
      waiting.push(g);
      const limit = g.concurrency ?? limits.groupConcurrency;
      if (!g.paused && limit !== undefined && g.running >= limit) f.atLimitGroups++;
      if (outOfTokens(g.rate, g.rateLimit ?? limits.groupRateLimit)) f.rateHeldJobs += g.waiting;
    }
  }
  // The queue's own limiter out of tokens holds back every due job (one more read, only then).
  // On a sharded queue each shard has a limiter of its own, with floor(max / N) of the queue's
  // max: their tokens summed may stay below max while each is out (issue 34, item 14), so with a
  // rate limit or a hold the shards are asked one by one (shardStats, one entry when unsharded).
  if (limits.rateLimit !== undefined || rate.queue.heldUntilMs !== undefined) {
    const held = (await queue.shardStats()).filter((s) => s.rateHeld);
    if (held.length > 0) f.rateHeldJobs = held.reduce((n, s) => n + s.ready, 0);
  }
  f.top = waiting.sort((a, b) => b.waiting - a.waiting || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, opts.top);
  return f;
}
