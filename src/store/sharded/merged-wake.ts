/**
 * Wake signals of a sharded queue: one subscription per queue to every shard's channel, on one
 * connection, that follows the layout as a reshard changes it. A signal from a shard tells that
 * shard's claim planner when work falls due there, so the next claim visits it; a layout change
 * moves the subscription over, the new one live before the old one closes, so no signal falls
 * between. A worker sees one queue and never hears of shards.
 */
import type { Store, WakeHandlers, WakeSubscription } from '../store.js';
import type { ClaimFanOut } from './claim-fan-out.js';
import type { LayoutCache } from './layout-cache.js';
import { tagOf } from './shard-token.js';

/** Subscribes to each queue's signals from every one of its shards. */
export async function subscribeMerged(
  inner: Store,
  layouts: LayoutCache,
  claims: ClaimFanOut,
  queues: readonly string[],
  handlers: WakeHandlers,
): Promise<WakeSubscription> {
  const subs = await Promise.all(queues.map((q) => subscribeOne(inner, layouts, claims, q, handlers)));
  return { close: async () => void (await Promise.all(subs.map((s) => s.close()))) };
}

/** One queue's signals from every shard, on one connection, following the layout as it changes. */
async function subscribeOne(inner: Store, layouts: LayoutCache, claims: ClaimFanOut, queue: string, handlers: WakeHandlers): Promise<WakeSubscription> {
  const planner = claims.planner(queue);
  let members = (await layouts.resolve(queue)).members;
  let closed = false;
  const wrapped: WakeHandlers = {
    onWake: (dueAtMs, member) => {
      const unsharded = layouts.cached(queue)?.unsharded ?? true;
      handlers.onWake(unsharded ? dueAtMs : planner.signal(member, dueAtMs), queue);
    },
    // A shard's token reaches the worker tagged with its shard (takeTagged), unless it was handed
    // out while the queue was unsharded: both forms are told, and the worker holds at most one.
    onRevoked: (token, why, member) => {
      handlers.onRevoked?.(`${tagOf(queue, member)}/${token}`, why, queue);
      if (member === queue) handlers.onRevoked?.(token, why, queue);
    },
    onFinished: (id, end, payload) => handlers.onFinished?.(id, end, payload, queue),
    onSchedulesChanged: () => handlers.onSchedulesChanged?.(queue),
    onLayoutChanged: () => void layouts.load(queue).catch((err) => handlers.onError(err as Error)),
    onResubscribed: () => {
      planner.wakeAll();
      // A layout change may have been among the signals missed.
      layouts.load(queue).catch(() => {});
      handlers.onResubscribed();
    },
    onError: (err) => handlers.onError(err),
  };
  let sub = await inner.subscribe(members, wrapped);
  let moving = Promise.resolve();
  const follow = () => {
    moving = moving
      .then(async () => {
        const next = layouts.cached(queue)?.members ?? members;
        if (closed || next.join('\n') === members.join('\n')) return;
        // The new subscription is live before the old one closes, so no signal falls between.
        const fresh = await inner.subscribe(next, wrapped);
        const old = sub;
        [sub, members] = [fresh, next];
        await old.close();
        planner.forget(next);
        planner.wakeAll();
        handlers.onResubscribed();
      })
      .catch((err) => handlers.onError(err as Error));
  };
  const unfollow = layouts.follow(queue, follow);
  const unwake = claims.onLateJobs(queue, () => handlers.onWake(0, queue));
  // Signals sent before the subscription was live reached no one, and the layout may have
  // changed meanwhile (its 'L' lost too): read it again, and let the next claim ask every shard.
  await layouts.load(queue).catch(() => {});
  follow();
  planner.wakeAll();
  return {
    close: async () => {
      closed = true;
      unfollow();
      unwake();
      await moving;
      await sub.close();
    },
  };
}
