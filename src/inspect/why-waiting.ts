/**
 * Why a job is not running: a pure reading of what `get`, `stats()`, `limits()` and
 * `groups.get()` already return, for `delayq get` and the dashboard's job page.
 *
 * It reads no more than those calls do (no walk of a group's line, no position in `ready`), so
 * it names what holds the job's kind of job, not the job's place in line: "group at its limit
 * 2/2" is true of every due job of that group. Figures are on the server's clock (`stats.nowMs`).
 * A held job (docs/flows.md) waits for what its hold names (`queue.holdOf`): dependencies that
 * have not ended, a signal, each until the hold's deadline if it has one.
 */
import { clockTime, rateLimitedUntil } from '../store/held.js';
import type { QueueLimits, RateLimit, RateUse } from '../store/store.js';
import type { HoldInfo, JobInfo, QueueStats } from '../types.js';

/** One thing that keeps a job from running. */
export type WaitReasonCode =
  | 'not_due'
  | 'queue_paused'
  | 'group_paused'
  | 'no_worker'
  | 'queue_at_limit'
  | 'group_at_limit'
  | 'rate_limited'
  | 'group_rate_limited'
  | 'in_line'
  | 'held_dependencies'
  | 'held_signal';

export interface WaitReason {
  code: WaitReasonCode;
  /** What it says, in one phrase ("due in 4.0 s", "group at its limit 2/2"). */
  text: string;
  /** When it stops holding, if that is known (not_due: the due time; a rate limit: its next token; a hold: its deadline). */
  untilMs?: number;
  /** group_at_limit, queue_at_limit: jobs running now and the limit. */
  running?: number;
  limit?: number;
}

/** A group as `queue.groups.get` returns it (the fields read here). */
export interface WaitGroup {
  running: number;
  concurrency: number | undefined;
  rateLimit: RateLimit | undefined;
  rate: RateUse;
  paused: boolean;
}

export interface WaitFacts {
  job: Pick<JobInfo, 'state' | 'ready' | 'dueAtMs' | 'group'>;
  stats: Pick<QueueStats, 'nowMs' | 'paused' | 'workers' | 'active' | 'held'>;
  limits: QueueLimits;
  /** The job's group, when it has one (`groups.get(job.group)`). */
  group?: WaitGroup | undefined;
  /** The job's hold, for a held job (`queue.holdOf(job.id)`). */
  hold?: HoldInfo | null | undefined;
}

function span(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toFixed(1)} min`;
  if (ms < 2 * 86_400_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

/** Ids as a phrase: the first five, then how many more. */
function someIds(ids: readonly string[]): string {
  const shown = ids.slice(0, 5).join(', ');
  return ids.length > 5 ? `${shown} and ${ids.length - 5} more` : shown;
}

/**
 * What a held job waits for, from its hold: the dependencies that have not ended ("waiting for 3
 * of 10 dependencies (a, b, c) until 14:30:02 UTC"), a signal ("waiting for signal 'payment'
 * until …"), each with the hold's deadline when it has one. [] for a hold that has settled
 * (released, timed out, failed) or none.
 */
export function whyHeld(hold: HoldInfo | null | undefined): WaitReason[] {
  if (!hold || hold.state !== 'held') return [];
  const until = hold.deadlineAtMs === undefined ? '' : ` until ${clockTime(hold.deadlineAtMs)}`;
  const at = hold.deadlineAtMs === undefined ? {} : { untilMs: hold.deadlineAtMs };
  const out: WaitReason[] = [];
  const pending = hold.waitingFor;
  if (pending.length > 0) {
    const of = hold.children.length;
    out.push({
      code: 'held_dependencies',
      text: `waiting for ${pending.length} of ${of} ${of === 1 ? 'dependency' : 'dependencies'} (${someIds(pending)})${until}`,
      ...at,
    });
  }
  if (hold.signal !== undefined) out.push({ code: 'held_signal', text: `waiting for signal '${hold.signal}'${until}`, ...at });
  return out;
}

/**
 * What keeps a scheduled job from running, most binding first; for a held job, what its hold
 * waits for (whyHeld); [] for a job that is neither (active, dead, completed: it is not waiting). A due job nothing named holds gets
 * `in_line`: it waits for a worker's free slot or its turn (priority, then due time).
 * A job not yet due also gets what will still hold it when it falls due (a pause, no worker).
 */
export function whyWaiting(f: WaitFacts): WaitReason[] {
  const { job, stats, limits, group } = f;
  if (job.state === 'held') return whyHeld(f.hold);
  if (job.state !== 'scheduled') return [];
  const now = stats.nowMs;
  const due = job.ready || job.dueAtMs <= now;
  const out: WaitReason[] = [];
  if (!due) out.push({ code: 'not_due', text: `due in ${span(job.dueAtMs - now)} (${clockTime(job.dueAtMs)})`, untilMs: job.dueAtMs });
  if (stats.paused) out.push({ code: 'queue_paused', text: 'queue paused' });
  if (group?.paused) out.push({ code: 'group_paused', text: 'group paused' });
  if (stats.workers === 0) out.push({ code: 'no_worker', text: 'no live worker' });
  if (!due) return out;

  const groupLimit = group ? (group.concurrency ?? limits.groupConcurrency) : undefined;
  if (group && groupLimit !== undefined && group.running >= groupLimit)
    out.push({ code: 'group_at_limit', text: `group at its limit ${group.running}/${groupLimit}`, running: group.running, limit: groupLimit });
  if (stats.held.queueAtLimit || (limits.concurrency !== undefined && stats.active >= limits.concurrency))
    out.push({
      code: 'queue_at_limit',
      text: `queue at its concurrency limit${limits.concurrency !== undefined ? ` ${stats.active}/${limits.concurrency}` : ''}`,
      running: stats.active,
      ...(limits.concurrency !== undefined ? { limit: limits.concurrency } : {}),
    });
  const rateUntil = stats.held.rateLimitedUntilMs;
  if (rateUntil !== undefined && rateUntil > now)
    out.push({ code: 'rate_limited', text: `rate limit holding until ${clockTime(rateUntil)}`, untilMs: rateUntil });
  if (group) {
    const until = rateLimitedUntil(group.rate, (group.rateLimit ?? limits.groupRateLimit)?.max);
    if (until !== undefined && until > now)
      out.push({ code: 'group_rate_limited', text: `group's rate limit holding until ${clockTime(until)}`, untilMs: until });
  }
  if (out.length === 0) out.push({ code: 'in_line', text: 'due, waiting for a free worker slot or its turn (priority, then due time)' });
  return out;
}

/** What whyWaiting reads, as a Queue has it. */
export interface WaitSource {
  stats(): Promise<QueueStats>;
  limits(): Promise<QueueLimits>;
  groups: { get(id: string): Promise<WaitGroup> };
  holdOf(id: string): Promise<HoldInfo | null>;
}

/**
 * Reads the facts for one job and says why it waits: for a scheduled job one stats, one limits
 * and (for a job of a group) one group read; for a held job its hold (`hold` when the caller read
 * it already, else one holdOf read); [] for any other.
 */
export async function explainWait(q: WaitSource, job: WaitFacts['job'] & { id: string }, hold?: HoldInfo | null): Promise<WaitReason[]> {
  if (job.state === 'held') return whyHeld(hold !== undefined ? hold : await q.holdOf(job.id));
  if (job.state !== 'scheduled') return [];
  const [stats, limits, group] = await Promise.all([q.stats(), q.limits(), job.group === undefined ? undefined : q.groups.get(job.group)]);
  return whyWaiting({ job, stats, limits, group });
}
