/**
 * Reads of a sharded queue as a whole: counts, the due timeline, the dead set, a search scan and
 * a verify, each asked of every shard (the unsharded keys, current and retired shards) and
 * merged as if the queue were one set. An unsharded queue's read goes straight to its keys.
 * Listing pages, whose cursors hold a place per shard, are merged-list.ts.
 */
import { ValidationError } from '../../errors.js';
import type { DueTimeline, QueueStats } from '../../types.js';
import type { DeadJob, ObliterateResult, ScanStep, Store, VerifyReport } from '../store.js';
import { byteOrder } from '../zset-order.js';
import { sum } from './grouping.js';
import { mergeHeld } from '../held.js';
import type { Resolved } from './layout-cache.js';
import { everyShardName } from './layout.js';

/**
 * Cursor: `<inner cursor>.<member index>`; '0' starts and ends. `until` (Store.scan) in the same
 * member is passed on; one in a later member (or the end) reads this member to its end.
 */
export async function mergedScan(inner: Store, queue: string, r: Resolved, cursor: string, count: number, until?: string): Promise<ScanStep> {
  if (r.unsharded && !cursor.includes('.') && !until?.includes('.')) return inner.scan(queue, cursor, count, until);
  const [innerCursor = '0', at = '0'] = cursor.split('.');
  const index = Number(at);
  if (!Number.isInteger(index) || index < 0 || index >= r.members.length) throw new ValidationError('cursor', 'must be the cursor a previous search returned');
  const [untilInner = '0', untilAt = '0'] = until?.split('.') ?? [];
  const innerUntil = until === undefined ? undefined : Number(untilAt) === index && until !== '0' ? untilInner : '0';
  const step = await inner.scan(r.members[index]!, innerCursor, count, innerUntil);
  const totals = await Promise.all(r.members.map((m, i) => (i === index ? step.total : inner.scan(m, '0', 1).then((s) => s.total))));
  const next = step.cursor !== '0' ? `${step.cursor}.${index}` : index + 1 < r.members.length ? `0.${index + 1}` : '0';
  return { cursor: next, total: sum(totals), entries: step.entries, beyond: step.beyond };
}

export async function mergedStats(inner: Store, queue: string, r: Resolved, windowMs: number): Promise<QueueStats> {
  if (r.unsharded) return inner.stats(queue, windowMs);
  // Shards of this epoch that left the layout (retired, then found empty) hold no job, but their
  // acks still count in completedTotal and their event streams in eventStreamLength.
  const listed = new Set(r.members);
  const left = everyShardName(queue, r.layout).filter((m) => !listed.has(m));
  const [all, gone] = await Promise.all([Promise.all(r.members.map((m) => inner.stats(m, windowMs))), Promise.all(left.map((m) => inner.stats(m, 0)))]);
  const defined = (xs: (number | undefined)[]) => xs.filter((x): x is number => x !== undefined);
  // Each shard answers from its own read of the clock, a few ms apart on a busy server (its
  // stats script waits for the other shards'). The merged answer's times are all relative to
  // one now, the latest read: each shard's due times are found again from its own now.
  const nowMs = Math.max(...all.map((s) => s.nowMs));
  const next = defined(all.map((s) => (s.nextDueInMs === undefined ? undefined : Math.max(0, s.nowMs + s.nextDueInMs - nowMs))));
  const lag = defined(all.map((s) => (s.oldestDueAgeMs === undefined ? undefined : nowMs - s.nowMs + s.oldestDueAgeMs)));
  const streams = defined([...all, ...gone].map((s) => s.eventStreamLength));
  const total = (k: 'scheduled' | 'ready' | 'active' | 'dead' | 'dueWithinWindow' | 'completedTotal' | 'completed' | 'workers' | 'heldJobs') =>
    sum(all.map((s) => s[k]));
  return {
    heldJobs: total('heldJobs'),
    scheduled: total('scheduled'),
    ready: total('ready'),
    active: total('active'),
    dead: total('dead'),
    nextDueInMs: next.length > 0 ? Math.min(...next) : undefined,
    dueWithinWindow: total('dueWithinWindow'),
    windowMs,
    nowMs,
    paused: all.some((s) => s.paused),
    eventStreamLength: streams.length > 0 ? sum(streams) : undefined,
    completedTotal: total('completedTotal') + sum(gone.map((s) => s.completedTotal)),
    oldestDueAgeMs: lag.length > 0 ? Math.max(...lag) : undefined,
    completed: total('completed'),
    // The worker registry is in the unsharded keys only.
    workers: all[0]!.workers,
    held: mergeHeld(all.map((s) => s.held)),
  };
}

export async function mergedTimeline(
  inner: Store,
  queue: string,
  r: Resolved,
  fromMs: number | undefined,
  bucketMs: number,
  buckets: number,
): Promise<DueTimeline> {
  const first = await inner.timeline(queue, fromMs, bucketMs, buckets);
  if (r.unsharded) return first;
  // The same windows on every shard: those the unsharded keys' clock chose.
  const rest = await Promise.all(r.members.slice(1).map((m) => inner.timeline(m, first.fromMs, bucketMs, buckets)));
  return { ...first, counts: first.counts.map((c, i) => c + sum(rest.map((t) => t.counts[i] ?? 0))) };
}

export async function mergedDeadList(inner: Store, queue: string, r: Resolved, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }> {
  if (r.unsharded) return inner.deadList(queue, offset, limit);
  const pages = await Promise.all(r.members.map((m) => inner.deadList(m, 0, offset + limit)));
  const jobs = pages
    .flatMap((p) => p.jobs)
    .sort((a, b) => a.diedAtMs - b.diedAtMs || byteOrder(a.id, b.id))
    .slice(offset, offset + limit);
  return { total: sum(pages.map((p) => p.total)), jobs };
}

export async function mergedVerify(inner: Store, queue: string, r: Resolved): Promise<VerifyReport> {
  if (r.unsharded) return inner.verify(queue);
  const reports = await Promise.all(r.members.map((m) => inner.verify(m)));
  const counts = { scheduled: 0, ready: 0, waiting: 0, active: 0, dead: 0, completed: 0, bodies: 0 };
  const problems: string[] = [];
  reports.forEach((rep, i) => {
    for (const k of Object.keys(counts) as (keyof typeof counts)[]) counts[k] += rep.counts[k];
    for (const p of rep.problems) problems.push(`${r.members[i]}: ${p}`);
  });
  return { ok: problems.length === 0, counts, problems };
}

/** The jobs of the given store queues by state, summed (what an obliterate that refused reports). */
export async function mergedCounts(inner: Store, members: string[]): Promise<ObliterateResult['counts']> {
  const stats = await Promise.all(members.map((m) => inner.stats(m, 0)));
  return {
    scheduled: sum(stats.map((s) => s.scheduled)),
    active: sum(stats.map((s) => s.active)),
    dead: sum(stats.map((s) => s.dead)),
    completed: sum(stats.map((s) => s.completed)),
    jobs: sum(stats.map((s) => s.scheduled + s.active + s.dead + s.completed)),
  };
}
