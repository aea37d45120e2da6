/**
 * A claim on a sharded queue, fanned out: one call per shard that may have work (the claim
 * planner picks them), in parallel, and the answers merged into one claim's answer. A shard
 * that answers late (its node slow or failing over) does not hold up the others: its jobs are
 * leased to this process all the same, so they are kept and handed out by the next claim, and a
 * shard whose claim failed is asked again after a back-off. What a late claim leased and no
 * claim took goes back when the store closes.
 */
import { ConnectionError, ShardError } from '../../errors.js';
import { settlesWithin } from '../../settles-within.js';
import type { ClaimedJob, ClaimResult, LeaseRef, Store, UnreadableJob } from '../store.js';
import { ClaimPlanner, type ClaimPlan } from './claim-planner.js';
import { takeTagged } from './shard-token.js';

/**
 * How long a claim round waits for its shards. A healthy shard answers in a few ms; one whose
 * master is down or failing over may not for seconds, and the other shards' jobs (and the
 * worker's next claim) must not wait for it. A claim that answers later is not lost: its jobs
 * are handed out by the next claim.
 */
const SLOW_SHARD_MS = 200;
/** Failures of late claims kept per queue until the next claim reports them. */
const MAX_LATE_ERRORS = 16;
/** How long close() waits to hand back late-answered jobs no claim took. */
const CLOSE_RELEASE_MS = 1_000;
/** A shard whose claim failed is tried again after this, doubling up to the max. */
const SHARD_RETRY_MIN_MS = 100;
const SHARD_RETRY_MAX_MS = 2_000;

type Settled<T> = PromiseSettledResult<T> | { status: 'late'; promise: Promise<T> };

/** Waits for every call, at most SLOW_SHARD_MS: those still under way come back as 'late', with their promise. */
async function settleOrLeave<T>(calls: Promise<T>[]): Promise<Settled<T>[]> {
  const out: (PromiseSettledResult<T> | undefined)[] = new Array(calls.length);
  const tracked = calls.map((c, i) =>
    c.then(
      (value) => {
        out[i] = { status: 'fulfilled', value };
      },
      (reason: unknown) => {
        out[i] = { status: 'rejected', reason };
      },
    ),
  );
  if (!(await settlesWithin(Promise.all(tracked), SLOW_SHARD_MS))) {
    // A busy event loop runs the timer before it reads replies that came meanwhile: read them
    // first (setImmediate runs after the poll phase), so a shard is late only when it is.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return calls.map((promise, i) => out[i] ?? { status: 'late', promise });
}

export class ClaimFanOut {
  readonly #inner: Store;
  readonly #reportShardError: (queue: string, error: ShardError) => void;
  readonly #planners = new Map<string, ClaimPlanner>();
  readonly #shardRetryMs = new Map<string, number>();
  /** Jobs of claims that answered after their round went on, per queue (tokens tagged): the next claim hands them out. */
  readonly #late = new Map<string, { jobs: ClaimedJob[]; unreadable: UnreadableJob[] }>();
  /** Per queue: failures of claims that gave up after their round went on, for the next claim to report. */
  readonly #lateErrors = new Map<string, ShardError[]>();
  /** Per queue, a way to wake each subscriber to claim (late jobs are waiting). */
  readonly #wakers = new Map<string, Set<() => void>>();

  constructor(inner: Store, reportShardError: (queue: string, error: ShardError) => void) {
    this.#inner = inner;
    this.#reportShardError = reportShardError;
  }

  /** The queue's claim planner, made on first use. */
  planner(queue: string): ClaimPlanner {
    let p = this.#planners.get(queue);
    if (!p) {
      p = new ClaimPlanner();
      this.#planners.set(queue, p);
    }
    return p;
  }

  /** Lets the next claim of the queue ask every shard (jobs may have become due anywhere). */
  wakeAll(queue: string): void {
    this.#planners.get(queue)?.wakeAll();
  }

  /**
   * A job this process put back into a shard: the claim planner learns of it at once, without
   * waiting for the signal (which tells every other process).
   */
  putBack(queue: string, member: string, dueAtMs: number | undefined): void {
    if (dueAtMs !== undefined && Number.isFinite(dueAtMs)) this.#planners.get(queue)?.signal(member, dueAtMs);
  }

  /** Calls `wake` when late-answered jobs of the queue wait for a claim; returns a function that stops it. */
  onLateJobs(queue: string, wake: () => void): () => void {
    const wakers = this.#wakers.get(queue) ?? new Set();
    this.#wakers.set(queue, wakers.add(wake));
    return () => void wakers.delete(wake);
  }

  /**
   * Claims from the shards that may have work, splitting `count` between them; shards that had
   * more than their share are asked again for what the others lacked, so a claim hands out as
   * many due jobs as one on an unsharded queue would. What it got is handed on in priority,
   * then due-time order (each shard's own order kept among equals).
   */
  async claim(queue: string, members: string[], count: number, leaseMs: number, defaultMaxAttempts: number, workerId: string): Promise<ClaimResult> {
    const planner = this.planner(queue);
    const jobs: ClaimedJob[] = [];
    const unreadable: UnreadableJob[] = [];
    this.#takeLate(queue, count, jobs, unreadable);
    let candidates = members;
    let answered = 0;
    const errors = this.#takeLateErrors(queue);
    // When no shard looked due (a timer or an idle check), every shard is asked, to the end.
    let fallback = true;
    for (let round = 0; jobs.length + unreadable.length < count && round <= members.length; round++) {
      const wasDue = planner.anyDue(candidates);
      const { plans } = planner.plan(candidates, count - jobs.length - unreadable.length, fallback);
      if (plans.length === 0) break;
      fallback &&= !wasDue;
      const settled = await settleOrLeave(plans.map((p) => this.#inner.claim(p.shard, p.count, leaseMs, defaultMaxAttempts, workerId)));
      const answeredAt = performance.now();
      const drained = new Set<string>();
      settled.forEach((s, i) => {
        const plan = plans[i] as ClaimPlan;
        if (s.status === 'late') {
          // Its node is slow or failing over: the others' jobs go out now, and this shard backs
          // off; what the late claim leased goes out with a later claim (#lateAnswer).
          drained.add(plan.shard);
          this.#shardFailed(planner, plan.shard);
          s.promise.then(
            (res) => this.#lateAnswer(queue, planner, plan, res),
            (err: unknown) => this.#lateFailure(queue, plan.shard, err),
          );
          return;
        }
        if (s.status === 'rejected') {
          errors.push(new ShardError(plan.shard, { cause: s.reason }));
          drained.add(plan.shard);
          this.#shardFailed(planner, plan.shard);
          return;
        }
        answered++;
        this.#shardRetryMs.delete(plan.shard);
        planner.observe(plan, s.value, answeredAt);
        takeTagged(queue, plan.shard, s.value, { jobs, unreadable });
        if (!s.value.more) drained.add(plan.shard);
      });
      // Shards that gave all they had are done; the loop ends when no candidate looks due.
      candidates = candidates.filter((m) => !drained.has(m));
    }
    // One shard failing costs the others nothing: its error goes out with the claim's answer
    // (the worker reports it) and the shard is asked again after its back-off. Only when Redis
    // itself is unreachable (every shard asked failed to connect) does the claim fail, so the
    // worker reports one outage rather than an error per shard.
    if (answered === 0 && errors.length > 0 && errors.every((e) => e.cause instanceof ConnectionError)) throw errors[0]!.cause;
    for (const e of errors) this.#reportShardError(queue, e);
    // Stable: among equals, each shard's own order (its add order) is kept.
    jobs.sort((a, b) => b.priority - a.priority || a.dueAtMs - b.dueAtMs);
    return {
      nowMs: planner.now() ?? Date.now(),
      jobs,
      unreadable,
      more: this.#late.has(queue) || planner.anyDue(members, 0),
      nextWakeMs: planner.nextWake(members),
      ...(errors.length > 0 ? { errors } : {}),
    };
  }

  /**
   * A claim that answered after its round went on: its jobs are leased to this process, so they
   * wait for its next claim, which the queue's subscribers are woken for. (Handing them back
   * instead would undo every claim of a node that is merely slow.)
   */
  #lateAnswer(queue: string, planner: ClaimPlanner, plan: ClaimPlan, res: ClaimResult): void {
    this.#shardRetryMs.delete(plan.shard);
    planner.observe(plan, res, performance.now());
    if (res.jobs.length + res.unreadable.length === 0) return;
    const late = this.#late.get(queue) ?? { jobs: [], unreadable: [] };
    takeTagged(queue, plan.shard, res, late);
    this.#late.set(queue, late);
    for (const wake of this.#wakers.get(queue) ?? []) wake();
  }

  /** A claim that failed after its round went on (ioredis gave up on a node): the next claim reports it. */
  #lateFailure(queue: string, shard: string, err: unknown): void {
    const pending = this.#lateErrors.get(queue) ?? [];
    // Bounded: a shard is asked at most every 2 s once it keeps failing, and one error per
    // shard says what there is to say.
    if (pending.length < MAX_LATE_ERRORS) pending.push(new ShardError(shard, { cause: err }));
    this.#lateErrors.set(queue, pending);
  }

  #takeLateErrors(queue: string): ShardError[] {
    const pending = this.#lateErrors.get(queue) ?? [];
    this.#lateErrors.delete(queue);
    return pending;
  }

  /** Moves up to `count` late-answered jobs into a claim's answer. */
  #takeLate(queue: string, count: number, jobs: ClaimedJob[], unreadable: UnreadableJob[]): void {
    const late = this.#late.get(queue);
    if (!late) return;
    unreadable.push(...late.unreadable.splice(0, count));
    jobs.push(...late.jobs.splice(0, count - unreadable.length));
    if (late.jobs.length + late.unreadable.length === 0) this.#late.delete(queue);
  }

  #shardFailed(planner: ClaimPlanner, shard: string): void {
    const ms = Math.min(SHARD_RETRY_MAX_MS, (this.#shardRetryMs.get(shard) ?? SHARD_RETRY_MIN_MS / 2) * 2);
    this.#shardRetryMs.set(shard, ms);
    planner.failed(shard, ms);
  }

  /**
   * Hands back the late-answered jobs no claim took (by `release`, which routes their tagged
   * tokens), now rather than when their lease runs out; waits at most CLOSE_RELEASE_MS. For close().
   */
  async releaseLate(release: (queue: string, leases: LeaseRef[]) => Promise<unknown>): Promise<void> {
    const late = [...this.#late].map(([queue, l]) =>
      release(
        queue,
        [...l.jobs, ...l.unreadable].map((j) => ({ id: j.id, token: j.token })),
      ).catch(() => {}),
    );
    this.#late.clear();
    await settlesWithin(Promise.all(late), CLOSE_RELEASE_MS);
  }
}
