/**
 * Which shards of a queue a claim visits, and how many jobs it asks of each. A shard is visited
 * only when it may have work: its last claim left jobs behind, its next due time or lease
 * deadline has come, or a signal said a job fell due there. So an idle shard costs no Redis
 * call, and the worker sleeps until the earliest moment of any shard.
 *
 * Times are kept on this process's monotonic clock: each shard's node has a clock of its own,
 * and a shard's due times are converted with the offset its own claims measured.
 */
import type { ClaimResult } from '../store.js';

/** A shard whose moment is this close is visited now (covers the rounding of clock offsets). */
const SLACK_MS = 2;
/** A timer that fires this close before a shard's moment was set for it. */
const NEAR_MS = 50;
/** A claim this long after the previous one asks every shard whatever they said. */
const IDLE_FALLBACK_MS = 1_000;
/**
 * While every shard due has a backlog (its last claim gave all it was asked and left more), a
 * claim asks a shard for at least this many jobs (all it wants when it wants fewer), of as few
 * shards as that takes, those waiting longest. A claim's Redis cost is mostly per call: split
 * evenly, a claim of 100 over 3 shards was three calls of 33, and the busiest node paid 1.8× an
 * unsharded node's CPU for each job it held. Measured (`npm run bench -- --cluster --repeat 3`):
 * split evenly, busiest node 0.67× the unsharded node's CPU per job of the queue, dispatch 0.62×
 * of one shard's; a shard a claim, 0.49–0.52× and 0.83–0.95× (two runs), lateness p99 4 ms.
 */
const BACKLOG_SHARE = 100;

interface ShardWake {
  /** When the shard may have work, on performance.now() (a past moment: now); Infinity: only on a signal. */
  at: number;
  /** The shard's server clock minus performance.now(), from its last claim. */
  offset: number | undefined;
  /** Signals received: a claim that was under way while one came cannot clear it. */
  signals: number;
  /** Its last claim left due jobs behind. */
  backlog: boolean;
}

export interface ClaimPlan {
  shard: string;
  count: number;
  /** The shard's signal count when the claim went out. */
  signals: number;
}

export class ClaimPlanner {
  readonly #shards = new Map<string, ShardWake>();
  #lastPlanAt = -Infinity;
  /** Where the next plan starts, so no shard is always served first. */
  #turn = 0;
  /** The reference clock handed to the worker (the last claim's server clock minus performance.now()). */
  #offset: number | undefined;

  #wake(shard: string): ShardWake {
    let w = this.#shards.get(shard);
    if (!w) {
      w = { at: 0, offset: undefined, signals: 0, backlog: false };
      this.#shards.set(shard, w);
    }
    return w;
  }

  /**
   * The shards to claim from now and how many jobs each, fairly: a turn that moves on each
   * time, and the count split evenly (the remainder to the first in turn), or, while every shard
   * due has a backlog, shares of BACKLOG_SHARE of those waiting longest. When no shard looks due
   * (a timer or idle check fired early), every shard is visited: the safety net.
   */
  plan(shards: readonly string[], count: number, fallback = true): { plans: ClaimPlan[]; skipped: boolean } {
    const now = performance.now();
    let due = shards.filter((s) => this.#wake(s).at <= now + SLACK_MS);
    if (due.length === 0 && fallback) {
      // A timer set for a shard's moment may fire a little before it by this clock (the offsets
      // of two nodes are measured apart): that shard is meant. A claim long after the last one
      // (the worker's idle check) asks every shard: the safety net for a signal that never came.
      // Otherwise (a signal about work a claim already took) nothing needs asking.
      const soonest = Math.min(...shards.map((s) => this.#wake(s).at));
      if (soonest <= now + NEAR_MS) due = shards.filter((s) => this.#wake(s).at <= soonest + SLACK_MS);
      else if (now - this.#lastPlanAt >= IDLE_FALLBACK_MS) due = [...shards];
    }
    this.#lastPlanAt = now;
    if (due.length === 0 || count <= 0) return { plans: [], skipped: false };
    // The shard that has waited longest goes first (its moment is the earliest: a due time, or
    // when it was last served while it had more), so a small batch takes the oldest due work
    // and no shard starves; the turn breaks ties.
    const start = this.#turn++ % due.length;
    const order = [...due.slice(start), ...due.slice(0, start)].sort((a, b) => this.#wake(a).at - this.#wake(b).at);
    let visit = Math.min(count, order.length);
    if (order.every((s) => this.#wake(s).backlog)) visit = Math.max(1, Math.min(visit, Math.floor(count / BACKLOG_SHARE)));
    const chosen = order.slice(0, visit);
    // Served now: a claim sent before this one answers (a worker keeps two in flight) goes to the
    // shards left out, not to these again.
    if (visit < order.length) for (const s of chosen) this.#wake(s).at = now;
    const base = Math.floor(count / chosen.length);
    const extra = count % chosen.length;
    const plans = chosen.map((shard, i) => ({ shard, count: base + (i < extra ? 1 : 0), signals: this.#wake(shard).signals }));
    return { plans, skipped: chosen.length < order.length };
  }

  /** A shard's claim answered: when it may next have work. */
  observe(plan: ClaimPlan, res: ClaimResult, answeredAt: number): void {
    const w = this.#wake(plan.shard);
    w.offset = res.nowMs - answeredAt;
    this.#offset = w.offset;
    // A shard with more is due at once, ranked by when it was last served.
    const at = res.more ? answeredAt : res.nextWakeMs === undefined ? Infinity : res.nextWakeMs - w.offset;
    w.backlog = res.more && res.jobs.length + res.unreadable.length >= plan.count;
    // A signal that came while the claim was under way may be about a job it did not see.
    w.at = w.signals === plan.signals ? at : Math.min(at, w.at);
  }

  /** Whether any of the shards may have work now (a claim would not come back empty-handed for want of asking). */
  anyDue(shards: readonly string[], slackMs = SLACK_MS): boolean {
    const now = performance.now();
    return shards.some((s) => this.#wake(s).at <= now + slackMs);
  }

  /** A job of this shard is due now (this process put it back: a failed attempt's retry, a release). */
  dueAt(shard: string, dueAtMs: number | undefined): void {
    if (dueAtMs === undefined) return;
    this.signal(shard, dueAtMs);
  }

  /** A claim of this shard failed: try it again after `retryMs`, not at once (its node may be down). */
  failed(shard: string, retryMs: number): void {
    this.#wake(shard).at = performance.now() + retryMs;
  }

  /** A job due at `dueAtMs` (the shard's clock) fell due there; returns it on the reference clock. */
  signal(shard: string, dueAtMs: number): number {
    const w = this.#wake(shard);
    w.signals++;
    const local = w.offset === undefined ? 0 : dueAtMs - w.offset;
    w.at = Math.min(w.at, local);
    return this.#offset === undefined || w.offset === undefined ? dueAtMs : local + this.#offset;
  }

  /** Signals may have been missed (a reconnect, a new layout): visit every shard. */
  wakeAll(): void {
    for (const w of this.#shards.values()) {
      w.signals++;
      w.at = 0;
    }
  }

  /** The earliest moment of any shard on the reference clock, or undefined when none has one. */
  nextWake(shards: readonly string[]): number | undefined {
    let at = Infinity;
    for (const s of shards) at = Math.min(at, this.#wake(s).at);
    if (at === Infinity || this.#offset === undefined) return undefined;
    return Math.max(at, performance.now()) + this.#offset;
  }

  /** The reference clock now (the server clock of the last claim, carried forward). */
  now(): number | undefined {
    return this.#offset === undefined ? undefined : performance.now() + this.#offset;
  }

  forget(keep: readonly string[]): void {
    const set = new Set(keep);
    for (const s of [...this.#shards.keys()]) if (!set.has(s)) this.#shards.delete(s);
  }
}
