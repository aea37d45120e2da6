/**
 * Why due jobs are not running: the `held` summary of stats(), built the same way by every store,
 * merged over the shards of a sharded queue, and said in one line for the CLI and the dashboard.
 */
import type { HeldSummary } from '../types.js';

/** Nothing holds anything. */
export const NOTHING_HELD: HeldSummary = {
  queuePaused: false,
  queueAtLimit: false,
  pausedGroups: 0,
  pausedGroupsWaiting: 0,
  groupsAtLimit: 0,
  groupsAtLimitWaiting: 0,
  groupsComplete: true,
  rateLimitedUntilMs: undefined,
  rateLimitedGroups: 0,
};

/**
 * When a limiter gives its next token: a RateLimitSignal's hold, else (every token of the window
 * taken) the oldest token's return; undefined when it gives one now.
 */
export function rateLimitedUntil(
  use: { used: number; heldUntilMs: number | undefined; nextRefillMs: number | undefined },
  max: number | undefined,
): number | undefined {
  if (use.heldUntilMs !== undefined) return use.heldUntilMs;
  if (max !== undefined && use.used >= max) return use.nextRefillMs;
  return undefined;
}

/** The summaries of a sharded queue's shards as one: counts add up, a hold lasts until the latest shard's. */
export function mergeHeld(all: readonly HeldSummary[]): HeldSummary {
  const sum = (k: 'pausedGroups' | 'pausedGroupsWaiting' | 'groupsAtLimit' | 'groupsAtLimitWaiting' | 'rateLimitedGroups') => all.reduce((n, h) => n + h[k], 0);
  const until = all.map((h) => h.rateLimitedUntilMs).filter((t): t is number => t !== undefined);
  return {
    queuePaused: all.some((h) => h.queuePaused),
    queueAtLimit: all.some((h) => h.queueAtLimit),
    pausedGroups: sum('pausedGroups'),
    pausedGroupsWaiting: sum('pausedGroupsWaiting'),
    groupsAtLimit: sum('groupsAtLimit'),
    groupsAtLimitWaiting: sum('groupsAtLimitWaiting'),
    groupsComplete: all.every((h) => h.groupsComplete),
    rateLimitedUntilMs: until.length > 0 ? Math.max(...until) : undefined,
    rateLimitedGroups: sum('rateLimitedGroups'),
  };
}

const plural = (n: number, one: string, many: string) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/** A time of day on the server's clock, as `17:05:02 UTC`. */
export function clockTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

/**
 * What holds jobs, one phrase each ("queue paused", "1 group at its limit with 28 waiting", "rate
 * limit holding until 17:05:02 UTC"); none when nothing does.
 */
export function describeHeld(h: HeldSummary): string[] {
  const out: string[] = [];
  const floor = h.groupsComplete ? '' : ' (in the first 200 groups read)';
  if (h.queuePaused) out.push('queue paused');
  if (h.queueAtLimit) out.push('queue at its concurrency limit');
  if (h.pausedGroups > 0) out.push(`${plural(h.pausedGroups, 'group', 'groups')} paused with ${h.pausedGroupsWaiting.toLocaleString('en-US')} waiting${floor}`);
  if (h.groupsAtLimit > 0)
    out.push(
      `${plural(h.groupsAtLimit, 'group', 'groups')} at its limit with ${h.groupsAtLimitWaiting.toLocaleString('en-US')} waiting${floor}`.replace(
        'groups at its',
        'groups at their',
      ),
    );
  if (h.rateLimitedUntilMs !== undefined) out.push(`rate limit holding until ${clockTime(h.rateLimitedUntilMs)}`);
  return out;
}
