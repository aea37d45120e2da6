/**
 * `queue.groups`: the groups of a queue (`add(data, { group })`), each with its own concurrency
 * limit and pause, and `queue.setLimits` / `queue.limits`, the queue-wide ones. Every setting
 * lives in the store, so every worker on every host sees it at its next claim.
 */
import type { GroupChange, GroupsPage, QueueLimits, RateLimit, RateUse, Store, StoredGroup } from '../store/store.js';
import { parseId } from '../options.js';
import { groupChange, groupsPage, limitsChange } from './validation.js';

/** A group as `queue.groups.get` and `list` show it. */
export interface GroupInfo {
  id: string;
  /** Its jobs running now (active), across every worker. */
  running: number;
  /** Its due jobs waiting for a slot or their turn (not those whose due time has not come). */
  waiting: number;
  /** Its own concurrency limit; undefined: the queue's `groupConcurrency` applies. */
  concurrency: number | undefined;
  /** Its own rate limit; undefined: the queue's `groupRateLimit` applies. */
  rateLimit: RateLimit | undefined;
  /** Its tokens taken in the window, a hold (RateLimitSignal) and the next refill (server clock). */
  rate: RateUse;
  /** Paused: no job of it is handed out (running ones finish). */
  paused: boolean;
}

/** The queue-wide limits (undefined: no limit). */
export type QueueLimitsInfo = QueueLimits;

export interface Groups {
  /**
   * Gives one group a concurrency limit or a rate limit of its own (`null` removes one: the
   * queue's `groupConcurrency` / `groupRateLimit` applies again; one left out stays). Returns
   * whether something changed.
   * @example await queue.groups.setLimits('tenant:big', { rateLimit: { max: 50, perMs: 60_000 } })
   */
  setLimits(id: string, limits: { concurrency?: number | null; rateLimit?: RateLimit | null }): Promise<boolean>;
  /** Stops handing out the group's jobs on every worker; running ones finish. Returns whether it changed. */
  pause(id: string): Promise<boolean>;
  /** Hands the group's jobs out again; its due jobs start at once. Returns whether it changed. */
  resume(id: string): Promise<boolean>;
  /** One group: running, waiting, its limit, paused (a group never seen reads as nothing of each). */
  get(id: string): Promise<GroupInfo>;
  /**
   * A page of the groups that have something running or waiting, a limit of their own or a
   * pause, from a cursor (undefined: the start). `cursor` in the answer is undefined on the last
   * page. A group there from start to end is listed at least once.
   * @default limit 100
   */
  list(opts?: { cursor?: string; limit?: number }): Promise<{ groups: GroupInfo[]; cursor: string | undefined }>;
}

const info = (g: StoredGroup): GroupInfo => ({
  id: g.id,
  running: g.running,
  waiting: g.waiting,
  concurrency: g.concurrency,
  rateLimit: g.rateLimit,
  rate: g.rate,
  paused: g.paused,
});

export function groupsApi(store: Store, queue: string): Groups {
  return {
    // async: a bad argument is a rejection, as every other call's.
    setLimits: async (id, limits) => changeGroup(store, queue, parseId(id, 'id'), groupChange(limits)),
    pause: async (id) => changeGroup(store, queue, parseId(id, 'id'), { paused: true }),
    resume: async (id) => changeGroup(store, queue, parseId(id, 'id'), { paused: false }),
    get: async (id) => info((await store.groups(queue, [parseId(id, 'id')]))[0]!),
    list: async (opts) => {
      const { cursor, limit } = groupsPage(opts);
      const page: GroupsPage = await store.groupPage(queue, cursor, limit);
      return { groups: page.groups.map(info), cursor: page.next };
    },
  };
}

/**
 * `queue.setLimits`: checks, then stores (null removes a limit, an omitted one stays). A queue
 * set up before its first job is named in the registry, as an add names it, so listQueues and
 * the dashboard show it.
 */
export async function setQueueLimits(store: Store, queue: string, limits: unknown): Promise<boolean> {
  const change = limitsChange(limits);
  await store.register(queue);
  return store.setLimits(queue, change);
}

/** A group's change, with the queue named in the registry (see setQueueLimits). */
async function changeGroup(store: Store, queue: string, id: string, change: GroupChange): Promise<boolean> {
  await store.register(queue);
  return store.setGroup(queue, id, change);
}
