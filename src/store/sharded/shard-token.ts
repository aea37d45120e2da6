/**
 * The shard tag, and the leases routed by it. A sharded queue's lease tokens are
 * `<tag>/<token>`: 'p' for the unsharded keys, else the shard number (`3` for `<queue>#3`), so an
 * ack, fail or renewal goes back to the shard that handed the job out without asking the layout
 * (which a reshard may have changed since). A token without a tag was handed out while the queue
 * was unsharded. The same tags name the shards in a merged event cursor (merged-events.ts).
 */
import type { ClaimedJob, ClaimResult, LeaseRef, UnreadableJob } from '../store.js';
import { groupBy } from './grouping.js';

/** `<tag>/<token>`: 'p' for the unsharded keys, else the shard number. */
export function tagOf(queue: string, member: string): string {
  return member === queue ? 'p' : member.slice(queue.length + 1);
}

/** Moves a shard's claim answer into `into`, each token tagged with its shard (see memberOfToken). */
export function takeTagged(queue: string, member: string, res: ClaimResult, into: { jobs: ClaimedJob[]; unreadable: UnreadableJob[] }): void {
  const tag = tagOf(queue, member);
  for (const j of res.jobs) into.jobs.push({ ...j, token: `${tag}/${j.token}` });
  for (const u of res.unreadable) into.unreadable.push({ ...u, token: `${tag}/${u.token}` });
}

export function memberOfToken(queue: string, token: string): { member: string; token: string } {
  const slash = token.indexOf('/');
  // A token without a tag was handed out while the queue was unsharded.
  if (slash < 0) return { member: queue, token };
  const tag = token.slice(0, slash);
  return { member: tag === 'p' ? queue : `${queue}#${tag}`, token: token.slice(slash + 1) };
}

/** Whether any lease's token carries a shard (a token without one goes to the unsharded keys). */
export function anyTagged(leases: readonly LeaseRef[]): boolean {
  // An index loop: the ack path calls this for every batch.
  for (let i = 0; i < leases.length; i++) if (leases[i]!.token.includes('/')) return true;
  return false;
}

/**
 * Runs a lease call per shard for the leases it handed out; answers in the leases' order. Each
 * lease reaches its shard as `retoken` makes it with the shard's own token (by default a copy of
 * all its fields: an ack's lease may be the worker's whole job, so complete copies only what it
 * sends).
 */
export async function byLease<L extends LeaseRef, R>(
  queue: string,
  leases: L[],
  op: (member: string, leases: L[]) => Promise<R[]>,
  retoken: (lease: L, token: string) => L = (l, token) => ({ ...l, token }),
): Promise<R[]> {
  // Tokens of an unsharded queue carry no shard: the common case goes straight through.
  if (!anyTagged(leases)) return op(queue, leases);
  const routed = leases.map((l) => ({ l, ...memberOfToken(queue, l.token) }));
  const groups = groupBy(routed, (x) => x.member);
  const out: R[] = new Array(leases.length);
  await Promise.all(
    [...groups].map(async ([member, at]) => {
      const res = await op(
        member,
        at.map((i) => retoken(routed[i]!.l, routed[i]!.token)),
      );
      at.forEach((i, k) => {
        out[i] = res[k]!;
      });
    }),
  );
  return out;
}
