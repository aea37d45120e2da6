/**
 * The embedded store: the Store contract kept in process memory, for trying delayq, for
 * single-process apps and for unit-testing handlers. Same results as the Redis store for the
 * same calls (the conformance suite runs both); the process clock plays the server's.
 *
 * Structures: a map of jobs; a heap of scheduled jobs by (due, seq); a heap of due jobs by
 * (priority desc, due, seq); a heap of leases by deadline; the dead jobs in death order. Heaps
 * drop moved jobs lazily (each move bumps the job's version), so cancel/reschedule are O(log n)
 * at most and a claim of k jobs is O(k log n). stats() and verify() walk all jobs: O(n).
 *
 * What it does not give: durability (a restart loses everything) and more than one process.
 *
 * One method per Store call, each the twin of one Lua script, so this file stays one piece (a
 * reader compares `fail()` here with fail.lua); what only reads lives in reads.ts, the places a
 * job moves between in memory-queue.ts.
 */
import type { CancelResult, DueTimeline, JobInfo, JobState, ListOrder, ListState, QueueStats, RescheduleResult, WorkerInfo } from '../../types.js';
import type {
  ClaimResult,
  CompleteRef,
  ListCursor,
  ObliterateResult,
  RetainedSet,
  ScanStep,
  StoredPage,
  UpdateRequest,
  WorkerBeat,
  ClaimedJob,
  DeadJob,
  DebounceBurst,
  DedupHolder,
  EventReader,
  FailRequest,
  CancelOptions,
  FailNowRequest,
  FailNowResult,
  WatchAnswer,
  FailResult,
  LeaseOutcome,
  LeaseRef,
  NewJob,
  PurgeTarget,
  QueueSettings,
  ScheduleGuard,
  SnoozeRequest,
  StoredSchedule,
  SnoozeResult,
  Store,
  StoredAddResult,
  StoredHold,
  SignalResult,
  WaitSignalRequest,
  WaitSignalResult,
  StreamEvent,
  VerifyReport,
  WakeHandlers,
  ConnectionWatcher,
  WakeSubscription,
  GroupChange,
  GroupsPage,
  LimitsChange,
  QueueLimits,
  RateLimit,
  RateStatus,
  RateUse,
  StoredGroup,
  StoredHistory,
} from '../store.js';
import { ERROR_HISTORY_LENGTH, SEQ_LIFE, ShardMovedError } from '../store.js';
import { tooCostly } from '../too-costly.js';
import { ValidationError } from '../../errors.js';
import { queueOf } from '../sharded/layout.js';
import { MemoryQueue, type MemGroup, type MemJob } from './memory-queue.js';
import { pickInTurns } from './turns.js';
import { deadPage, dueTimeline, jobInfo, listPage, memoryEventReader, publicState, queueStats, scanStep, verifyMemoryQueue } from './reads.js';
import { LIMIT, MARK, mayHoldLease, UNGROUPED_LANE } from '../lifecycle.js';
import { readWorkerInfo } from '../worker-info.js';
import { byteOrder, readyMember, scheduledMember, waitingMember } from '../zset-order.js';

const registry = new Map<string, MemoryStore>();

/** A failed attempt (fail.lua, fail-now.lua errors_with): the job's last error, and an entry of its error history. */
function recordFailure(job: MemJob, now: number, error: string): void {
  job.lastError = error;
  job.errors = [...(job.errors ?? []), { attempt: job.attempts, atMs: now, error }].slice(-ERROR_HISTORY_LENGTH);
}

export class MemoryStore implements Store {
  readonly #queues = new Map<string, MemoryQueue>();
  /** The registry of queue names (Store.queues). */
  readonly #registered = new Set<string>();
  readonly #clock: () => number;

  /** `clock` stands in for the Redis server's TIME (tests may pass their own). */
  constructor(opts: { clock?: () => number } = {}) {
    this.#clock = opts.clock ?? Date.now;
  }

  /**
   * The store every `memory://<name>` connection in this process shares, so a Queue and a
   * Worker given the same URL see the same jobs. `memory://` is the name ''.
   */
  static shared(name = ''): MemoryStore {
    let s = registry.get(name);
    if (!s) {
      s = new MemoryStore();
      registry.set(name, s);
    }
    return s;
  }

  /** Forgets a shared store (its jobs go with it); the next `memory://<name>` starts empty. */
  static dropShared(name = ''): void {
    registry.delete(name);
  }

  #q(queue: string): MemoryQueue {
    let q = this.#queues.get(queue);
    if (!q) {
      q = new MemoryQueue(queue);
      this.#queues.set(queue, q);
    }
    return q;
  }

  #now(): number {
    return this.#clock();
  }

  add(queue: string, jobs: NewJob[], guard?: undefined, epoch?: string): Promise<StoredAddResult[]>;
  add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  async add(queue: string, jobs: NewJob[], guard?: ScheduleGuard, epoch?: string): Promise<StoredAddResult[] | null> {
    const q = this.#q(queue);
    // As add.lua: a retired shard, or one that is not a live shard of the add's layout epoch, takes no add.
    if (!guard && (q.moved || (epoch !== undefined && epoch !== '' && q.epoch !== epoch))) throw new ShardMovedError(queue);
    // An add that writes to a queue with no keys makes it (again), and names it in the registry.
    const seqBefore = q.seq;
    const now = this.#now();
    if (guard) {
      const last = q.scheduleLast.get(guard.name);
      if (last !== undefined && last >= guard.occurrenceMs) return null;
      q.scheduleLast.set(guard.name, guard.occurrenceMs);
    }
    // As add.lua: every item's dependencies are checked before anything is written, then a cost
    // above a rate limit's max is refused.
    if (jobs.some((j) => j.hold !== undefined)) {
      q.holds.check(jobs, (id) => q.jobs.get(id)?.where);
      this.#checkUnwritten(q, jobs, now);
    }
    for (const j of jobs) {
      if (j.cost <= 1) continue;
      const limit = j.group === undefined ? undefined : q.groupRate(q.groups.get(j.group));
      if ((q.rateLimit && j.cost > q.rateLimit.max) || (limit && j.cost > limit.max)) throw tooCostly(jobs);
    }
    q.expireDedup(now);
    const prevHead = q.headDue();
    let minDue: number | undefined;
    const out: StoredAddResult[] = [];
    // Job id -> due time of each job this call writes, in the order of the item that wrote it
    // last: as add.lua, a job replaced (or debounced into) by a later item of the same call is
    // never written, so it is not reported.
    const written = new Map<string, number>();
    // The burst a debounced add joins (add.lua burst_of): its key's job while it still waits.
    const burstOf = (key: string) => {
      const b = q.debounce.get(key);
      const job = b && q.jobs.get(b.id);
      return job && job.debounceKey === key && (job.where === 'scheduled' || job.where === 'ready' || job.where === 'waiting') ? b : undefined;
    };
    // The same rules as add.lua: an add that changes nothing takes no sequence number and no dedup key.
    jobs.forEach((j) => {
      let id = j.id;
      let replace = j.replace;
      let due = j.delayMs !== undefined ? now + j.delayMs : (j.runAtMs ?? 0);
      let burst: { id: string; first: number } | undefined;
      let folded = false;
      if (j.debounce) {
        const held = burstOf(j.debounce.key);
        const maxWait = j.debounce.maxWaitMs;
        if (held && (maxWait === undefined || now < held.first + maxWait)) {
          [id, replace, folded, burst] = [held.id, true, true, held];
        } else burst = { id, first: Math.min(j.debounce.firstMs ?? now, now) };
        due = now + j.debounce.delayMs;
        if (maxWait !== undefined) due = Math.min(due, burst.first + maxWait);
      }
      const existing = q.jobs.get(id);
      if (j.dedup) {
        const held = q.dedupHolder(j.dedup.key, now);
        if (held && (held.id !== id || !existing)) {
          const holder = q.jobs.get(held.id);
          out.push({ code: 'deduplicated', state: holder ? publicState(holder) : 'finished', dueAtMs: holder ? holder.due : held.due, duplicateOf: held.id });
          return;
        }
      }
      let code: 'added' | 'replaced' = 'added';
      if (existing) {
        if (!replace || existing.where === 'active') {
          out.push({ code: 'exists', state: publicState(existing), dueAtMs: existing.due, duplicateOf: undefined });
          return;
        }
        code = 'replaced';
        q.remove(existing, folded);
      }
      if (j.dedup && !q.dedupHolder(j.dedup.key, now)) q.takeDedup(j.dedup.key, id, due, now, j.dedup.windowMs);
      if (j.debounce && !folded) q.debounce.set(j.debounce.key, burst!);
      const job: MemJob = {
        id,
        data: j.data,
        due,
        seq: q.nextSeq(1) + 1,
        created: now,
        priority: j.priority,
        maxAttempts: j.maxAttempts,
        backoff: j.backoff,
        // Attempts made before it was added (add({ attemptsMade })): its next run counts on from them.
        attempts: j.attemptsMade ?? 0,
        spentMaxAttempts: undefined,
        token: undefined,
        lastError: undefined,
        traceContext: j.traceContext,
        where: 'scheduled',
        leaseDeadline: 0,
        diedAt: 0,
        startedAt: undefined,
        workerId: '',
        result: undefined,
        progress: undefined,
        logs: undefined,
        errors: undefined,
        group: j.group,
        name: j.name,
        timeoutMs: j.timeoutMs,
        cost: j.cost,
        debounceKey: j.debounce?.key,
        version: 0,
      };
      q.jobs.set(job.id, job);
      const held = j.hold !== undefined && q.holds.write(q, job, j.hold, due, now, new Set([...written.keys()].filter((w) => w !== job.id)));
      if (!held) {
        q.place(job, due);
        if (minDue === undefined || due < minDue) minDue = due;
      }
      written.delete(job.id);
      written.set(job.id, due);
      out.push(
        folded
          ? { code: 'debounced', state: 'scheduled', dueAtMs: due, duplicateOf: id }
          : { code, state: held ? 'held' : 'scheduled', dueAtMs: due, duplicateOf: undefined },
      );
    });
    for (const [id, due] of written) {
      // As add.lua: only a job written (not one a later item of the call replaced) makes the
      // queue grouped or flowed, which decides how claims take turns from then on.
      const job = q.jobs.get(id)!;
      if (job.group !== undefined) q.grouped = true;
      if (job.cost > 1 || job.debounceKey !== undefined) q.flowed = true;
      q.emit(now, 'added', id, { due: String(due) });
    }
    if (minDue !== undefined) q.wakeIfEarlier(prevHead, minDue);
    if (!q.made && q.seq > seqBefore) {
      q.made = true;
      this.#registered.add(queueOf(queue));
    }
    return out;
  }

  /**
   * As add.lua's HOLDS.plan, before anything is written: a job that waits for an earlier item of
   * the call that will not be written (deduplicated, or folded into another job's burst) while
   * no job of that id exists refuses the call. The items' fates are worked out as add() decides
   * them, on overlays of what the earlier items would write.
   */
  #checkUnwritten(q: MemoryQueue, jobs: readonly NewJob[], now: number): void {
    const written = new Set<string>();
    // The debounce key each job written by an earlier item carries (a replace without one drops it).
    const keyOf = new Map<string, string | undefined>();
    const dedup = new Map<string, string>();
    const bursts = new Map<string, { id: string; first: number }>();
    const has = (id: string) => written.has(id) || q.jobs.has(id);
    const burstOf = (key: string) => {
      const b = bursts.get(key) ?? q.debounce.get(key);
      if (!b) return undefined;
      if (written.has(b.id)) return keyOf.get(b.id) === key ? b : undefined;
      const job = q.jobs.get(b.id);
      return job && job.debounceKey === key && (job.where === 'scheduled' || job.where === 'ready' || job.where === 'waiting') ? b : undefined;
    };
    for (const j of jobs) {
      let id = j.id;
      let replace = j.replace;
      let folded = false;
      if (j.debounce) {
        const b = burstOf(j.debounce.key);
        const maxWait = j.debounce.maxWaitMs;
        if (b && (maxWait === undefined || now < b.first + maxWait)) [id, replace, folded] = [b.id, true, true];
      }
      const existing = has(id);
      if (j.dedup) {
        const holder = dedup.get(j.dedup.key) ?? q.dedupHolder(j.dedup.key, now)?.id;
        if (holder !== undefined && (holder !== id || !existing)) continue;
      }
      if (existing && (!replace || q.jobs.get(id)?.where === 'active')) continue;
      // Written: what it waits for must be a job by now.
      for (const dep of j.hold?.dependsOn ?? []) {
        if (!has(dep)) throw new ValidationError('dependsOn', `of job ${j.id} names a job this call did not add (deduplicated), got ${dep}`);
      }
      written.add(id);
      keyOf.set(id, j.debounce?.key);
      if (j.dedup && !dedup.has(j.dedup.key) && !q.dedupHolder(j.dedup.key, now)) dedup.set(j.dedup.key, id);
      if (j.debounce && !folded) bursts.set(j.debounce.key, { id, first: Math.min(j.debounce.firstMs ?? now, now) });
    }
  }

  async claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number, workerId = ''): Promise<ClaimResult> {
    const q = this.#q(queue);
    const now = this.#now();
    // 1. Recover expired leases: back to scheduled (due now), or dead when no attempts are left.
    // As claim.lua: every lease is decided first, then those out of attempts end as one call's
    // ends (MemoryQueue.finishAll), then the rest are scheduled again.
    const buried: MemJob[] = [];
    const again: MemJob[] = [];
    for (const lease of q.takeExpiredLeases(now, LIMIT.reap_per_claim)) {
      const attempts = lease.attempts;
      const max = lease.maxAttempts ?? defaultMaxAttempts;
      const why = `lease expired during attempt ${attempts} of ${max}`;
      // Marked apart from a give-up, so every later call with this token is stale.
      lease.token = MARK.recovered + (lease.token ?? '');
      lease.lastError = why;
      q.emit(now, 'leaseExpired', lease.id, { attempt: String(attempts) });
      if (attempts >= max) {
        lease.spentMaxAttempts = max;
        q.emit(now, 'dead', lease.id, { attempt: String(attempts), error: why });
        buried.push(lease);
      } else {
        again.push(lease);
      }
    }
    if (buried.length > 0) {
      q.finishAll('dead', buried, now);
      this.#trim(q, 'dead', now, buried.length);
    }
    for (const job of again) q.schedule(job, now);
    // Held jobs whose deadline passed are scheduled, so this claim can hand them out (claim.lua).
    if (q.holds.used) q.holds.releaseExpired(q, now, LIMIT.reap_per_claim);
    // A paused queue hands out nothing, nor does one at its concurrency limit (claim.lua).
    let want = count;
    let atLimit = false;
    if (q.concurrency !== undefined && !q.paused) {
      const room = q.concurrency - q.activeCount();
      if (room <= want) {
        want = Math.max(0, room);
        atLimit = true;
      }
    }
    if (q.paused || want === 0) return { nowMs: now, jobs: [], unreadable: [], more: false, nextWakeMs: q.nextLease()?.leaseDeadline };
    // The queue's rate limiter, and a hold (claim.lua): no more jobs than tokens; none left, nothing handed out.
    let qLeft = Infinity;
    if (q.rated) {
      qLeft = q.rates.tokens('', q.rateLimit, now);
      if (qLeft <= 0) return { nowMs: now, jobs: [], unreadable: [], more: false, nextWakeMs: earliest(q.rates.freeAt(''), q.nextLease()?.leaseDeadline) };
      if (qLeft < want) [want, atLimit] = [qLeft, false];
    }

    // 2. Due jobs move on and are picked: in turns between lanes on a queue with groups, else in
    // one order (priority, due time, add order) from the ready heap.
    // Turns while a job of a group has not ended (or the queue is rated), as claim.lua's
    // LIVE.turns: a queue whose jobs of a group all ended claims as one without groups.
    const turns = q.grouped && (q.groupJobs > 0 || q.rated) ? pickInTurns(q, now, want) : undefined;
    let picked: MemJob[] = [];
    if (turns) picked.push(...turns.picked);
    else {
      q.promoteDue(now);
      for (let n = 0; n < want; n++) {
        const job = q.popReady();
        if (!job) break;
        picked.push(job);
      }
    }
    // Rate limits, in hand-out order (claim.lua): a job takes its cost from the queue's tokens and
    // its group's; the first short of the queue's stops the hand-out, one short of its group's stops
    // that group; a cost above a limit's max goes to the dead set.
    let qTaken = 0;
    let qExhausted = false;
    const gTaken = new Map<string, number>();
    // The lanes that kept a job (rotate: the others were not served).
    const got = q.rated ? new Set<string>() : undefined;
    if (q.rated && picked.length > 0) {
      const kept: MemJob[] = [];
      const gLeft = new Map<string, number>();
      let stopped = false;
      for (const job of picked) {
        const lane = job.group;
        const gLimit = lane === undefined ? undefined : q.groupRate(q.groups.get(lane));
        if (lane !== undefined && !gLeft.has(lane)) gLeft.set(lane, q.rates.tokens(lane, gLimit, now));
        const tooBig = q.rateLimit && job.cost > q.rateLimit.max ? q.rateLimit.max : gLimit && job.cost > gLimit.max ? gLimit.max : undefined;
        if (tooBig !== undefined) {
          job.lastError = `cost ${job.cost} is above the rate limit max ${tooBig}`;
          job.token = '';
          q.emit(now, 'dead', job.id, { error: job.lastError });
          this.#bury(q, job, now);
        } else if (stopped || job.cost > qLeft || (lane !== undefined && (turns?.blocked.has(lane) || job.cost > gLeft.get(lane)!))) {
          if (!stopped && job.cost > qLeft) stopped = true;
          if (lane !== undefined && !stopped) turns?.blocked.add(lane);
          q.putBack(job);
        } else {
          qLeft -= job.cost;
          qTaken += job.cost;
          got?.add(lane ?? UNGROUPED_LANE);
          if (lane !== undefined) {
            gLeft.set(lane, gLeft.get(lane)! - job.cost);
            gTaken.set(lane, (gTaken.get(lane) ?? 0) + job.cost);
          }
          kept.push(job);
        }
      }
      picked = kept;
      qExhausted = qLeft <= 0 || stopped;
    }
    const jobs: ClaimedJob[] = [];
    const seqBase = q.seq;
    for (const job of picked) {
      jobs.push({
        id: job.id,
        token: '',
        data: job.data,
        attempt: 0,
        maxAttempts: job.maxAttempts,
        backoff: job.backoff,
        dueAtMs: job.due,
        priority: job.priority,
        createdAtMs: job.created,
        leaseExpiresAtMs: now + leaseMs,
        traceContext: job.traceContext,
        group: job.group,
        name: job.name,
        timeoutMs: job.timeoutMs,
      });
      if (q.holds.used) {
        const hold = q.holds.release(job.id);
        if (hold) jobs[jobs.length - 1]!.hold = hold;
        const signal = q.holds.delivered(job.id);
        if (signal) jobs[jobs.length - 1]!.signal = { ...signal };
      }
    }
    // 3. Hand them out with fresh lease tokens; how late they start goes in the history.
    q.nextSeq(jobs.length);
    if (jobs.length > 0) {
      const late = picked.map((job) => Math.max(0, now - job.due));
      q.history.note(now, { started: late.length, lateSumMs: late.reduce((a, b) => a + b, 0), lateMaxMs: Math.max(...late) });
    }
    jobs.forEach((c, i) => {
      const job = q.jobs.get(c.id)!;
      job.attempts += 1;
      job.token = `${now}-${seqBase + i + 1}`;
      job.startedAt ??= now;
      job.workerId = workerId.replaceAll(':', '_');
      q.activate(job, now + leaseMs);
      c.token = job.token;
      c.attempt = job.attempts;
      q.emit(now, 'claimed', job.id, { attempt: String(job.attempts), due: String(job.due) });
    });
    if (q.rated && picked.length > 0) {
      // The tokens taken, back one window from now; a group that took some is booked for then.
      if (q.rateLimit && qTaken > 0) q.rates.take('', qTaken, now + q.rateLimit.perMs, now);
      for (const job of picked) {
        const lane = job.group;
        const limit = lane === undefined ? undefined : q.groupRate(q.groups.get(lane));
        if (lane === undefined || !limit || !gTaken.has(lane)) continue;
        q.rates.take(lane, gTaken.get(lane)!, now + limit.perMs, now);
        q.rates.book(lane, now + limit.perMs, 'NX');
        gTaken.delete(lane);
      }
    }
    // A debounced job that starts ends its burst.
    if (q.flowed)
      for (const job of picked) if (job.debounceKey !== undefined && q.debounce.get(job.debounceKey)?.id === job.id) q.debounce.delete(job.debounceKey);
    if (turns) turns.rotate(got);
    const head = q.headDue();
    const lease = q.nextLease()?.leaseDeadline;
    // At its concurrency limit the queue hands out nothing until a slot frees (which tells workers).
    if (atLimit && jobs.length >= want) return { nowMs: now, jobs, unreadable: [], more: false, nextWakeMs: lease };
    if (qExhausted) return { nowMs: now, jobs, unreadable: [], more: false, nextWakeMs: earliest(q.rates.freeAt(''), lease) };
    const more = (turns ? q.lanes.size > 0 : q.readyCount() > 0) || (head !== undefined && head <= now);
    let wake = earliest(head, lease);
    if (q.rated && turns) wake = earliest(wake, q.rates.nextVisit());
    // A held job runs when its deadline passes.
    if (q.holds.used) wake = earliest(wake, q.holds.nextDeadline());
    return { nowMs: now, jobs, unreadable: [], more, nextWakeMs: wake };
  }

  async complete(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]> {
    const q = this.#q(queue);
    const now = this.#now();
    const keep = q.doneMax > 0 || q.doneMaxAge > 0;
    let kept = 0;
    const out = leases.map(({ id, token, result }): LeaseOutcome => {
      const job = q.jobs.get(id);
      if (!job) return this.#missing(q, id, now);
      if (job.token === MARK.kept + token) return 'ok';
      if (!holdsLease(job, token)) return 'lease_lost';
      q.emit(now, 'completed', id, {});
      if (keep) {
        job.token = MARK.kept + token;
        job.result = result || undefined;
        kept++;
      }
      q.finish('completed', job, now, keep, result);
      return 'ok';
    });
    if (kept > 0) this.#trim(q, 'completed', now, kept);
    return out;
  }

  async fail(queue: string, req: FailRequest): Promise<FailResult> {
    const q = this.#q(queue);
    const job = q.jobs.get(req.id);
    if (!job) return { outcome: this.#missing(q, req.id, this.#now()), dueAtMs: undefined };
    // A re-sent call finds its own given-up token and answers as the first did.
    if (job.token === MARK.given_up + req.token)
      return job.where === 'dead' ? { outcome: 'dead', dueAtMs: undefined } : { outcome: 'retried', dueAtMs: job.due };
    if (!holdsLease(job, req.token)) return { outcome: 'lease_lost', dueAtMs: undefined };
    const now = this.#now();
    const max = job.maxAttempts ?? req.defaultMaxAttempts;
    job.token = MARK.given_up + req.token;
    // As fail.lua: both ways (retry, dead) are an entry and a failed attempt in the history; the
    // re-send answered above adds none.
    recordFailure(job, now, req.error);
    q.history.note(now, { failed: 1 });
    if (req.dead || job.attempts >= max) {
      // Out of attempts (not only buried by request): the max that applied is kept for the reads.
      if (job.attempts >= max) job.spentMaxAttempts = max;
      this.#bury(q, job, now);
      q.emit(now, 'dead', job.id, { attempt: String(job.attempts), error: req.error });
      return { outcome: 'dead', dueAtMs: undefined };
    }
    const due = now + req.retryDelayMs;
    q.schedule(job, due);
    q.emit(now, 'retried', job.id, { attempt: String(job.attempts), due: String(due), error: req.error });
    return { outcome: 'retried', dueAtMs: due };
  }

  async extend(queue: string, leases: LeaseRef[], leaseMs: number, beat?: WorkerBeat): Promise<LeaseOutcome[]> {
    const q = this.#q(queue);
    const deadline = this.#now() + leaseMs;
    if (beat) this.#beat(q, beat, false);
    return leases.map(({ id, token }) => {
      const job = q.jobs.get(id);
      if (!job) return this.#missing(q, id, this.#now());
      if (!holdsLease(job, token) || job.where !== 'active') return 'lease_lost';
      q.renew(job, deadline);
      return 'ok';
    });
  }

  async release(queue: string, leases: LeaseRef[], holdMs = 0): Promise<LeaseOutcome[]> {
    const q = this.#q(queue);
    const now = this.#now();
    // As release.lua: no leases and a hold holds the queue (a sharded queue's other shards).
    if (leases.length === 0 && holdMs > 0) {
      q.rated = true;
      q.rates.hold('', now + holdMs);
      return [];
    }
    const outcomes = leases.map(({ id, token }): LeaseOutcome | 'held' => {
      const job = q.jobs.get(id);
      if (!job) return this.#missing(q, id, this.#now());
      if (job.token === MARK.given_up + token) return 'ok';
      if (!holdsLease(job, token)) return 'lease_lost';
      return 'held';
    });
    const released = leases.filter((_, i) => outcomes[i] === 'held').map(({ id }) => q.jobs.get(id)!);
    // As release.lua: the hold first (a held group leaves the rotation), then the jobs go back,
    // keeping their due time so they keep their place in line (and are first when a hold ends).
    if (holdMs > 0 && released.length > 0) {
      q.rated = true;
      for (const job of released) {
        q.rates.hold(job.group ?? '', now + holdMs);
        if (job.group !== undefined) q.rates.book(job.group, now + holdMs, 'LT');
      }
      for (const job of released) if (job.group !== undefined) q.lanes.delete(job.group);
    }
    for (const job of released) {
      job.token = MARK.given_up + job.token;
      job.attempts = Math.max(0, job.attempts - 1);
      q.schedule(job, job.due < now ? job.due : now);
      q.emit(now, 'released', job.id, holdMs > 0 ? { holdMs: String(holdMs) } : {});
    }
    return outcomes.map((o) => (o === 'held' ? 'ok' : o));
  }

  async cancel(queue: string, ids: string[], opts: CancelOptions = {}): Promise<CancelResult[]> {
    const q = this.#q(queue);
    const reason = opts.reason ?? '';
    return ids.map((id) => {
      const job = q.jobs.get(id);
      if (!job) return { id, cancelled: false, state: undefined };
      const now = this.#now();
      if (job.where === 'active' && opts.running) {
        q.revoke(job, 'cancelled', now);
        // As cancel.lua: its event, then its end and what that ends (docs/flows.md).
        q.emit(now, 'cancelled', id, { running: '1', reason });
        q.finish('cancelled', job, now, false, reason);
        return { id, cancelled: true, state: 'active' };
      }
      if (job.where === 'active' || job.where === 'dead' || job.where === 'completed') return { id, cancelled: false, state: job.where };
      q.emit(now, 'cancelled', id, reason === '' ? {} : { reason });
      q.finish('cancelled', job, now, false, reason);
      return { id, cancelled: true, state: 'scheduled' };
    });
  }

  async failNow(queue: string, req: FailNowRequest): Promise<FailNowResult> {
    const q = this.#q(queue);
    const job = q.jobs.get(req.id);
    if (!job) return { outcome: 'not_found', state: undefined, dueAtMs: undefined };
    const state: JobState = job.where === 'ready' || job.where === 'waiting' ? 'scheduled' : job.where;
    if (state === 'dead' || state === 'completed' || (state !== 'active' && !req.dead)) return { outcome: 'refused', state, dueAtMs: undefined };
    const now = this.#now();
    const max = job.maxAttempts ?? req.defaultMaxAttempts;
    const dies = req.dead || job.attempts >= max;
    // As fail-now.lua: the failure is an entry of the history; a running job's token is marked revoked.
    recordFailure(job, now, req.reason);
    if (state === 'active') {
      job.token = MARK.revoked + q.revoke(job, dies ? 'dead' : 'failed', now);
      q.history.note(now, { failed: 1 });
    }
    if (dies) {
      if (job.attempts >= max) job.spentMaxAttempts = max;
      this.#bury(q, job, now);
      q.emit(now, 'dead', job.id, { attempt: String(job.attempts), error: req.reason, by: 'fail-now' });
      return { outcome: 'dead', state, dueAtMs: undefined };
    }
    const due = now + req.retryDelayMs;
    q.schedule(job, due);
    q.emit(now, 'retried', job.id, { attempt: String(job.attempts), due: String(due), error: req.reason, by: 'fail-now' });
    return { outcome: 'retried', state, dueAtMs: due };
  }

  async watch(queue: string, ids: string[], waitMs: number, expect = false): Promise<WatchAnswer[]> {
    const q = this.#q(queue);
    const now = this.#now();
    for (const [id, until] of q.waiters) if (until <= now) q.waiters.delete(id);
    return ids.map((id): WatchAnswer => {
      const job = q.jobs.get(id);
      if (!job) {
        if (expect && waitMs > 0) q.waiters.set(id, Math.max(q.waiters.get(id) ?? 0, now + waitMs));
        return { state: 'unknown' };
      }
      if (job.where === 'completed') return { state: 'completed', result: job.result ?? '' };
      if (job.where === 'dead') return { state: 'dead', error: job.lastError ?? '' };
      if (waitMs > 0) q.waiters.set(id, Math.max(q.waiters.get(id) ?? 0, now + waitMs));
      return { state: 'waiting' };
    });
  }

  async reschedule(queue: string, id: string, delayMs: number | undefined, runAtMs: number | undefined): Promise<RescheduleResult> {
    const q = this.#q(queue);
    const job = q.jobs.get(id);
    if (!job) return { id, rescheduled: false, state: undefined, dueAtMs: undefined };
    if (job.where === 'active' || job.where === 'dead' || job.where === 'completed' || job.where === 'held')
      return { id, rescheduled: false, state: job.where, dueAtMs: job.due };
    const now = this.#now();
    const due = delayMs !== undefined ? now + delayMs : (runAtMs ?? 0);
    q.schedule(job, due);
    q.emit(now, 'rescheduled', id, { due: String(due) });
    return { id, rescheduled: true, state: 'scheduled', dueAtMs: due };
  }

  async get(queue: string, id: string): Promise<JobInfo<string> | null> {
    return (await this.getMany(queue, [id], true))[0] ?? null;
  }

  async getMany(queue: string, ids: string[], withLogs: boolean): Promise<(JobInfo<string> | null)[]> {
    const q = this.#q(queue);
    const now = this.#now();
    return ids.map((id) => {
      const job = q.jobs.get(id);
      return job ? jobInfo(job, now, withLogs) : null;
    });
  }

  async list(queue: string, state: ListState, cursor: ListCursor | undefined, limit: number, order: ListOrder = 'asc'): Promise<StoredPage> {
    return listPage(this.#q(queue), this.#now(), state, cursor, limit, order);
  }

  async scan(queue: string, cursor: string, count: number, until?: string): Promise<ScanStep> {
    return scanStep(this.#q(queue), cursor, count, until);
  }

  async drain(queue: string, dueBeforeMs: number | undefined): Promise<number> {
    const q = this.#q(queue);
    const now = this.#now();
    // As drain.lua: the jobs waiting now, taken first, in its order (the scheduled set, then —
    // without a bound — the held jobs, the ready set, the groups' lines, each in ZSET order), and
    // ended in one go: a held job is not told of a dependency drained with it (it ends too); one
    // a bounded drain leaves hears of them, in that order.
    const place = { scheduled: 0, held: 1, ready: 2, waiting: 3 } as Record<MemJob['where'], number>;
    // The scheduled set's members keep add order within a due time (SCHEDULED_MEMBER).
    const key = (j: MemJob): [number, string] =>
      j.where === 'scheduled'
        ? [j.due, scheduledMember(j.seq, j.id)]
        : j.where === 'held'
          ? [q.holds.deadlineOf(j.id) ?? Infinity, j.id]
          : j.where === 'ready'
            ? [-j.priority, readyMember(j.due, j.seq, j.id)]
            : [0, waitingMember(j.group!, j.priority, j.due, j.seq, j.id)];
    const victims = [...q.jobs.values()]
      .filter((job) =>
        job.where === 'held'
          ? dueBeforeMs === undefined
          : (job.where === 'scheduled' || job.where === 'ready' || job.where === 'waiting') && (dueBeforeMs === undefined || job.due < dueBeforeMs),
      )
      .sort((a, b) => place[a.where]! - place[b.where]! || key(a)[0] - key(b)[0] || byteOrder(key(a)[1], key(b)[1]));
    const ending = new Set(victims.map((j) => j.id));
    // One call's ends, as drain.lua's one `finish` (memory-queue.ts finishAll), then its events.
    q.finishAll('cancelled', victims, now, false, [], ending);
    for (const job of victims) q.emit(now, 'drained', job.id, {});
    return victims.length;
  }

  async obliterate(queue: string, force: boolean, epoch?: string): Promise<ObliterateResult> {
    const q = this.#q(queue);
    // As obliterate.lua: the keys of another layout epoch are left alone.
    if (epoch !== undefined && epoch !== '' && q.epoch !== undefined && q.epoch !== epoch) throw new ShardMovedError(queue);
    const counts = { scheduled: 0, active: 0, dead: 0, completed: 0, jobs: q.jobs.size };
    for (const job of q.jobs.values()) counts[job.where === 'ready' || job.where === 'waiting' || job.where === 'held' ? 'scheduled' : job.where]++;
    if (counts.active > 0 && !force) return { removed: false, counts };
    for (const job of [...q.jobs.values()]) q.remove(job);
    q.holds.clear();
    this.#queues.delete(queue);
    if (queueOf(queue) === queue) this.#registered.delete(queue);
    // Schedulers and sleeping workers look again, as after the Redis store's publish, and stay
    // subscribed to the queue that starts afresh under the same name.
    q.schedulesChanged();
    const fresh = this.#q(queue);
    for (const h of q.subscribers) fresh.subscribers.add(h);
    // Dedup windows outlive obliterate, as Redis's dedup keys expire by themselves (add.lua).
    fresh.keepDedup(q);
    // As obliterate.lua leaves the sequence counter at a floor: the new life goes on from it, so
    // it never hands out a stale holder's token.
    fresh.seq = Math.ceil(q.seq / SEQ_LIFE) * SEQ_LIFE;
    return { removed: true, counts };
  }

  async register(queue: string): Promise<void> {
    this.#registered.add(queue);
  }

  async queues(): Promise<string[]> {
    return [...this.#registered].sort();
  }

  async beat(queue: string, beat: WorkerBeat, gone = false): Promise<void> {
    this.#beat(this.#q(queue), beat, gone);
  }

  #beat(q: MemoryQueue, beat: WorkerBeat, gone: boolean): void {
    const now = this.#now();
    if (gone) q.workers.delete(beat.id);
    else q.workers.set(beat.id, { info: beat.info, lastSeen: now, expiresAt: now + beat.ttlMs });
    for (const [id, w] of q.workers) if (w.expiresAt <= now) q.workers.delete(id);
  }

  async workers(queue: string): Promise<WorkerInfo[]> {
    const now = this.#now();
    const out: WorkerInfo[] = [];
    for (const [id, w] of this.#q(queue).workers) {
      if (w.expiresAt > now) out.push(readWorkerInfo(id, w.info, w.lastSeen, w.expiresAt));
    }
    return out.sort((a, b) => a.expiresAtMs - b.expiresAtMs || byteOrder(a.id, b.id));
  }

  async update(queue: string, req: UpdateRequest): Promise<LeaseOutcome> {
    const q = this.#q(queue);
    const job = q.jobs.get(req.id);
    if (!job) return this.#missing(q, req.id, this.#now());
    if (!holdsLease(job, req.token)) return 'lease_lost';
    if (req.progress !== undefined) job.progress = req.progress;
    if (req.lines.length > 0 && req.logCap > 0) job.logs = [...(job.logs ?? []), ...req.lines].slice(-req.logCap);
    return 'ok';
  }

  async stats(queue: string, windowMs: number): Promise<QueueStats> {
    return queueStats(this.#q(queue), this.#now(), windowMs);
  }

  async holdOf(queue: string, id: string): Promise<StoredHold | undefined> {
    return this.#q(queue).holds.holdOf(id);
  }

  async timeline(queue: string, fromMs: number | undefined, bucketMs: number, buckets: number): Promise<DueTimeline> {
    return dueTimeline(this.#q(queue), this.#now(), fromMs, bucketMs, buckets);
  }

  async snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult> {
    const q = this.#q(queue);
    const job = q.jobs.get(req.id);
    if (!job) return { outcome: this.#missing(q, req.id, this.#now()), dueAtMs: undefined };
    if (job.token === MARK.given_up + req.token)
      return job.where === 'dead' ? { outcome: 'dead', dueAtMs: undefined } : { outcome: 'snoozed', dueAtMs: job.due };
    if (!holdsLease(job, req.token)) return { outcome: 'lease_lost', dueAtMs: undefined };
    const now = this.#now();
    const due = now + req.delayMs;
    job.token = MARK.given_up + req.token;
    if (req.deadlineAtMs !== undefined && due > req.deadlineAtMs) {
      job.lastError = `snooze deadline passed: next look at ${due} is after ${req.deadlineAtMs}`;
      this.#bury(q, job, now);
      q.emit(now, 'dead', job.id, { attempt: String(job.attempts), error: 'snooze deadline passed' });
      return { outcome: 'dead', dueAtMs: undefined };
    }
    job.attempts = Math.max(0, job.attempts - 1);
    q.schedule(job, due);
    q.emit(now, 'snoozed', job.id, { due: String(due) });
    return { outcome: 'snoozed', dueAtMs: due };
  }

  async waitSignal(queue: string, req: WaitSignalRequest): Promise<WaitSignalResult> {
    const q = this.#q(queue);
    const job = q.jobs.get(req.id);
    if (!job) return { outcome: this.#missing(q, req.id, this.#now()), dueAtMs: undefined };
    // As wait-signal.lua: a re-sent call finds its own given-up mark and answers as the first did.
    if (job.token === MARK.given_up + req.token)
      return job.where === 'held' ? { outcome: 'waiting', dueAtMs: undefined } : { outcome: 'signalled', dueAtMs: job.due };
    if (!holdsLease(job, req.token)) return { outcome: 'lease_lost', dueAtMs: undefined };
    const now = this.#now();
    job.token = MARK.given_up + req.token;
    job.attempts = Math.max(0, job.attempts - 1);
    const deadline = req.timeoutMs === undefined ? Infinity : now + req.timeoutMs;
    if (q.holds.waitSignal(q, job, req.name, now, deadline)) {
      q.schedule(job, now);
      return { outcome: 'signalled', dueAtMs: now };
    }
    if (deadline < Infinity) q.wakeIfEarlier(q.headDue(), deadline);
    return { outcome: 'waiting', dueAtMs: undefined };
  }

  async signal(queue: string, id: string, name: string, data: string): Promise<SignalResult> {
    const q = this.#q(queue);
    const job = q.jobs.get(id);
    if (!job) return { outcome: 'not_found', state: undefined };
    const state = publicState(job);
    if (state === 'dead' || state === 'completed') return { outcome: 'refused', state };
    return { outcome: q.holds.signal(q, job, name, data, this.#now()), state };
  }

  async deadList(queue: string, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }> {
    return deadPage(this.#q(queue), offset, limit);
  }

  async deadRetry(queue: string, ids: string[] | 'all'): Promise<number> {
    const q = this.#q(queue);
    const now = this.#now();
    const targets = ids === 'all' ? q.deadInOrder() : ids.map((id) => q.jobs.get(id)).filter((j): j is MemJob => j?.where === 'dead');
    let n = 0;
    const seen = new Set<string>();
    for (const job of targets) {
      if (seen.has(job.id)) continue;
      seen.add(job.id);
      job.attempts = 0;
      job.spentMaxAttempts = undefined;
      // Started afresh: its next hand-out is its start (dead-retry.lua clears it too).
      job.startedAt = undefined;
      q.schedule(job, now);
      q.emit(now, 'deadRetried', job.id, {});
      n++;
    }
    return n;
  }

  async purge(queue: string, set: RetainedSet, target: PurgeTarget): Promise<number> {
    const q = this.#q(queue);
    const now = this.#now();
    const inOrder = set === 'dead' ? q.deadInOrder() : q.completedInOrder();
    let victims: MemJob[];
    if ('ids' in target) victims = [...new Set(target.ids)].map((id) => q.jobs.get(id)).filter((j): j is MemJob => j?.where === set);
    else if ('all' in target) victims = inOrder;
    else victims = inOrder.filter((j) => j.diedAt <= now - target.olderThanMs);
    for (const job of victims) {
      q.remove(job);
      q.emit(now, 'purged', job.id, {});
    }
    return victims.length;
  }

  /** Nothing is stored in a form an older version wrote: there is nothing to convert. */
  async migrate(queue: string): Promise<number> {
    this.#q(queue);
    return 0;
  }

  async verify(queue: string): Promise<VerifyReport> {
    return verifyMemoryQueue(this.#q(queue));
  }

  /** In the process: never down. */
  watchConnection(_watcher: ConnectionWatcher): () => void {
    return () => {};
  }

  async subscribe(queues: readonly string[], handlers: WakeHandlers): Promise<WakeSubscription> {
    // Each subscription is an entry of its own, as each is a connection of its own on Redis: a
    // caller that subscribes the same handlers twice (the sharding view moving to a new layout,
    // the new subscription live before the old one closes) must keep the new one when it closes
    // the old (it did not: the old close took both, and a retired shard's signals reached no one).
    const own: WakeHandlers = {
      onWake: (dueAtMs, queue) => handlers.onWake(dueAtMs, queue),
      onRevoked: (token, why, queue) => handlers.onRevoked?.(token, why, queue),
      onFinished: (id, end, payload, queue) => handlers.onFinished?.(id, end, payload, queue),
      onSchedulesChanged: (queue) => handlers.onSchedulesChanged?.(queue),
      onLayoutChanged: (queue) => handlers.onLayoutChanged?.(queue),
      onResubscribed: () => handlers.onResubscribed(),
      onError: (err) => handlers.onError(err),
    };
    // By name, not by MemoryQueue: obliterate starts a queue afresh and moves its subscribers over.
    for (const queue of queues) this.#q(queue).subscribers.add(own);
    return {
      close: async () => {
        for (const queue of queues) this.#queues.get(queue)?.subscribers.delete(own);
      },
    };
  }

  async layout(queue: string): Promise<string | undefined> {
    return this.#q(queue).layout;
  }

  async setLayout(queue: string, expected: string | undefined, next: string, epoch: string | undefined): Promise<boolean> {
    const q = this.#q(queue);
    if (q.layout !== expected) return false;
    q.layout = next;
    if (epoch) q.epoch = epoch;
    q.layoutChanged();
    return true;
  }

  async retire(queue: string, epoch: string): Promise<void> {
    const q = this.#q(queue);
    if (q.epoch === epoch) q.moved = true;
  }

  async markShard(queue: string, epoch: string): Promise<void> {
    const q = this.#q(queue);
    if (q.epoch === epoch) return;
    q.epoch = epoch;
    q.moved = false;
  }

  async dedupHolders(queue: string, keys: string[]): Promise<(DedupHolder | null)[]> {
    const q = this.#q(queue);
    const now = this.#now();
    return keys.map((key) => {
      const held = q.dedupHolder(key, now);
      return held ? { id: held.id, dueAtMs: held.due } : null;
    });
  }

  async bursts(queue: string, keys: string[]): Promise<(DebounceBurst | null)[]> {
    const q = this.#q(queue);
    return keys.map((key) => {
      const b = q.debounce.get(key);
      return b ? { id: b.id, firstMs: b.first } : null;
    });
  }

  async scheduleSet(queue: string, name: string, definition: string | null): Promise<boolean> {
    const q = this.#q(queue);
    let changed: boolean;
    if (definition === null) {
      changed = q.schedules.delete(name);
      q.scheduleLast.delete(name);
    } else {
      changed = q.schedules.get(name) !== definition;
      q.schedules.set(name, definition);
    }
    if (changed) q.schedulesChanged();
    return changed;
  }

  async scheduleList(queue: string): Promise<StoredSchedule[]> {
    const q = this.#q(queue);
    return [...q.schedules.entries()]
      .map(([name, definition]) => ({ name, definition, lastOccurrenceMs: q.scheduleLast.get(name) }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async setLimits(queue: string, change: LimitsChange): Promise<boolean> {
    const q = this.#q(queue);
    let changed = false;
    // As limits.lua: a limit raised or removed wakes workers; a group limit raised or removed
    // puts the groups it gave room back in the rotation.
    if (change.concurrency !== undefined && (change.concurrency ?? undefined) !== q.concurrency) {
      const raised = change.concurrency === null || (q.concurrency !== undefined && change.concurrency > q.concurrency);
      q.concurrency = change.concurrency ?? undefined;
      changed = true;
      if (raised) q.signal(0);
    }
    if (change.groupConcurrency !== undefined && (change.groupConcurrency ?? undefined) !== q.groupConcurrency) {
      const raised = change.groupConcurrency === null || (q.groupConcurrency !== undefined && change.groupConcurrency > q.groupConcurrency);
      q.groupConcurrency = change.groupConcurrency ?? undefined;
      changed = true;
      if (raised && q.grouped) {
        // In byte order, as limits.lua sorts each step of its sweep.
        const joining = [...q.groups]
          .filter(([, g]) => q.groupEligible(g))
          .map(([id]) => id)
          .sort(byteOrder);
        q.lanesJoin(joining);
        if (joining.length > 0) q.signal(0);
      }
    }
    // Rate limits (limits.lua set_meta_rate): one raised or removed wakes workers; the groups'
    // default raised has every group held back looked at by the next claim.
    if (change.rateLimit !== undefined && !sameRate(change.rateLimit ?? undefined, q.rateLimit)) {
      const raised = rateRaised(q.rateLimit, change.rateLimit ?? undefined);
      q.rateLimit = change.rateLimit ?? undefined;
      if (q.rateLimit) q.rated = true;
      changed = true;
      if (raised) q.signal(0);
    }
    if (change.groupRateLimit !== undefined && !sameRate(change.groupRateLimit ?? undefined, q.groupRateLimit)) {
      const raised = rateRaised(q.groupRateLimit, change.groupRateLimit ?? undefined);
      q.groupRateLimit = change.groupRateLimit ?? undefined;
      if (q.groupRateLimit) q.rated = true;
      changed = true;
      if (raised) {
        q.rates.lookAllNow();
        q.signal(0);
      }
    }
    return changed;
  }

  async limits(queue: string): Promise<QueueLimits> {
    const q = this.#q(queue);
    return { concurrency: q.concurrency, groupConcurrency: q.groupConcurrency, rateLimit: q.rateLimit, groupRateLimit: q.groupRateLimit };
  }

  async history(queue: string, minutes: number): Promise<StoredHistory> {
    return this.#q(queue).history.read(this.#now(), minutes);
  }

  async rateStatus(queue: string): Promise<RateStatus> {
    const q = this.#q(queue);
    const now = this.#now();
    return { nowMs: now, queue: q.rates.peek('', now), groupsHeld: q.rates.wake.size };
  }

  async setGroup(queue: string, id: string, change: GroupChange): Promise<boolean> {
    const q = this.#q(queue);
    const g = q.group(id);
    const hadRoom = q.groupRoom(g) > 0;
    let changed = false;
    if (change.concurrency !== undefined && (change.concurrency ?? undefined) !== g.limit) {
      g.limit = change.concurrency ?? undefined;
      changed = true;
    }
    let rateFreed = false;
    if (change.rateLimit !== undefined && !sameRate(change.rateLimit ?? undefined, g.rateLimit)) {
      rateFreed = rateRaised(q.groupRate(g), change.rateLimit ?? q.groupRateLimit);
      g.rateLimit = change.rateLimit ?? undefined;
      if (g.rateLimit) q.rated = true;
      changed = true;
    }
    if (change.paused !== undefined && change.paused !== g.paused) {
      g.paused = change.paused;
      changed = true;
      q.emit(this.#now(), change.paused ? 'paused' : 'resumed', '', { group: id });
    }
    if (changed) {
      if (g.paused) q.lanes.delete(id);
      else if (q.groupEligible(g)) {
        q.lanesJoin([id]);
        if (!hadRoom) q.signal(0);
      }
      // Held back by its rate limit: the next claim looks at it again now.
      if (rateFreed && q.rated) {
        if (q.rates.wake.has(id)) q.rates.book(id, 0, 'set');
        q.signal(0);
      }
    }
    q.groupChanged(id);
    return changed;
  }

  async groups(queue: string, ids: string[]): Promise<StoredGroup[]> {
    const q = this.#q(queue);
    const now = this.#now();
    return ids.map((id) => storedGroup(id, q.groups.get(id), q.rates.peek(id, now)));
  }

  async groupPage(queue: string, cursor: string | undefined, count: number): Promise<GroupsPage> {
    const q = this.#q(queue);
    // The cursor is `k` and the last id returned, as groups.lua's for a small hash: groups are
    // listed in id order, so one made or dropped meanwhile shifts nothing.
    if (cursor !== undefined && !/^k[\s\S]{1,1024}$/.test(cursor)) throw new ValidationError('opts.cursor', 'is not a cursor this listing gave');
    const after = cursor?.slice(1);
    const ids = [...q.groups.keys()].sort(byteOrder).filter((id) => after === undefined || byteOrder(id, after) > 0);
    const page = ids.slice(0, count);
    const now = this.#now();
    return {
      groups: page.map((id) => storedGroup(id, q.groups.get(id), q.rates.peek(id, now))),
      next: ids.length > count ? `k${page[page.length - 1]}` : undefined,
    };
  }

  async setPaused(queue: string, paused: boolean): Promise<boolean> {
    const q = this.#q(queue);
    if (q.paused === paused) return false;
    q.paused = paused;
    const now = this.#now();
    q.emit(now, paused ? 'paused' : 'resumed', '', {});
    if (!paused) {
      const head = q.readyCount() > 0 || q.lanes.size > 0 ? now : q.headDue();
      if (head !== undefined) q.signal(head);
    }
    return true;
  }

  async setEventStream(queue: string, maxLen: number): Promise<boolean> {
    const q = this.#q(queue);
    if (q.eventsMax === maxLen) return false;
    q.eventsMax = maxLen;
    if (maxLen === 0) q.events.length = 0;
    return true;
  }

  async setRetention(queue: string, set: RetainedSet, maxCount: number, maxAgeMs: number): Promise<void> {
    const q = this.#q(queue);
    if (set === 'dead') [q.deadMax, q.deadMaxAge] = [maxCount, maxAgeMs];
    else [q.doneMax, q.doneMaxAge] = [maxCount, maxAgeMs];
    this.#trim(q, set, this.#now(), 0);
  }

  async retention(queue: string): Promise<Record<RetainedSet, { maxCount: number; maxAgeMs: number }>> {
    const q = this.#q(queue);
    return { dead: { maxCount: q.deadMax, maxAgeMs: q.deadMaxAge }, completed: { maxCount: q.doneMax, maxAgeMs: q.doneMaxAge } };
  }

  async settings(queue: string): Promise<QueueSettings> {
    const q = this.#q(queue);
    return {
      paused: q.paused,
      limits: { concurrency: q.concurrency, groupConcurrency: q.groupConcurrency, rateLimit: q.rateLimit, groupRateLimit: q.groupRateLimit },
      eventsMaxLen: q.eventsMax,
      retention: await this.retention(queue),
      dedupUntilMs: q.dedupUntil,
    };
  }

  eventReader(queue: string): EventReader {
    return memoryEventReader(this.#q(queue));
  }

  async close(): Promise<void> {
    // The data stays: other queues and workers on the same `memory://` name may still use it.
  }

  async serverTimeMs(_queue: string): Promise<number> {
    return this.#now();
  }

  async waitUntilReady(_timeoutMs?: number): Promise<void> {}

  /** The answer to a lease call for a job that is gone: lease lost while it is remembered as cancelled as it ran, else not found. */
  #missing(q: MemoryQueue, id: string, now: number): 'lease_lost' | 'not_found' {
    const until = q.revoked.get(id);
    return until !== undefined && until > now ? 'lease_lost' : 'not_found';
  }

  #bury(q: MemoryQueue, job: MemJob, now: number): void {
    q.finish('dead', job, now);
    this.#trim(q, 'dead', now, 1);
  }

  /** As the scripts' trim_set: the oldest beyond the rule go, at most max(LIMIT.trim_per_run, added) per call. */
  #trim(q: MemoryQueue, set: RetainedSet, now: number, added: number): void {
    const [maxCount, maxAge] = set === 'dead' ? [q.deadMax, q.deadMaxAge] : [q.doneMax, q.doneMaxAge];
    if (!maxCount && !maxAge) return;
    const limit = Math.max(LIMIT.trim_per_run, added);
    const jobs = set === 'dead' ? q.deadInOrder() : q.completedInOrder();
    const victims: MemJob[] = [];
    if (maxAge) for (const j of jobs) if (j.diedAt <= now - maxAge && victims.length < limit) victims.push(j);
    if (maxCount) {
      // Age victims are the oldest, so the next oldest follow them in `jobs`.
      const start = victims.length;
      const end = Math.min(jobs.length, start + Math.max(0, jobs.length - start - maxCount));
      for (let i = start; i < end && victims.length < limit; i++) victims.push(jobs[i]!);
    }
    for (const job of victims) {
      q.remove(job);
      q.emit(now, 'purged', job.id, { reason: set === 'dead' ? 'dead set cap' : 'retention' });
    }
  }
}

export type { StreamEvent };

/** The earlier of two times (undefined: none). */
function earliest(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  return b === undefined || a < b ? a : b;
}

/** A group's state as the stores answer it (no state: nothing running or waiting, no limit, not paused). */
function storedGroup(id: string, g: MemGroup | undefined, rate: RateUse): StoredGroup {
  return { id, running: g?.running ?? 0, waiting: g?.waiting ?? 0, concurrency: g?.limit, rateLimit: g?.rateLimit, rate, paused: g?.paused ?? false };
}

function sameRate(a: RateLimit | undefined, b: RateLimit | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.max === b.max && a.perMs === b.perMs;
}

/** Whether a rate limit change gives room (limits.lua rate_raised): removed, more tokens, or a shorter window. */
function rateRaised(old: RateLimit | undefined, next: RateLimit | undefined): boolean {
  if (!old) return false;
  if (!next) return true;
  return next.max > old.max || next.perMs < old.perMs;
}

/** Whether `token` holds `job`'s lease (never the empty token or a marked one: lifecycle.ts mayHoldLease). */
function holdsLease(job: { token: string | undefined }, token: string): boolean {
  return job.token === token && mayHoldLease(token);
}
