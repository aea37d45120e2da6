/**
 * Lookups by id on a sharded queue (get, cancel, reschedule, promote): each id is asked of its
 * shard first, where an add by the current layout put it; only a miss asks the other shards
 * (a job added before a reshard, or by a schedule into the unsharded keys), and a miss there
 * reads the layout again in case a reshard moved on meanwhile.
 */
import { groupBy } from './grouping.js';
import { shardFor } from './layout.js';
import type { LayoutCache } from './layout-cache.js';

/**
 * Runs `op` for each id on its shard; the ids it did not find, on every other shard; those
 * still not found, once more on shards a fresh read of the layout adds (a reshard since).
 */
export async function byId<R>(
  layouts: LayoutCache,
  queue: string,
  ids: string[],
  op: (member: string, ids: string[]) => Promise<R[]>,
  found: (r: R) => boolean,
): Promise<R[]> {
  let r = await layouts.resolve(queue);
  const out: R[] = new Array(ids.length);
  const run = async (groups: Map<string, number[]>) => {
    await Promise.all(
      [...groups].map(async ([member, at]) => {
        const res = await op(
          member,
          at.map((i) => ids[i]!),
        );
        at.forEach((i, k) => {
          if (out[i] === undefined || (!found(out[i]!) && found(res[k]!))) out[i] = res[k]!;
        });
      }),
    );
  };
  const home = (id: string) => shardFor(queue, r.layout.current, id);
  await run(groupBy(ids, home));
  const missed = () => ids.map((_, i) => i).filter((i) => !found(out[i]!));
  let miss = missed();
  if (miss.length > 0 && !r.unsharded) {
    const others = new Map<string, number[]>();
    for (const m of r.members) {
      const at = miss.filter((i) => home(ids[i]!) !== m);
      if (at.length > 0) others.set(m, at);
    }
    await run(others);
    miss = missed();
  }
  if (miss.length > 0) {
    const tried = new Set(r.members);
    r = await layouts.load(queue);
    const fresh = r.members.filter((m) => !tried.has(m));
    if (fresh.length > 0) await run(new Map(fresh.map((m) => [m, miss])));
  }
  return out;
}
