/** One queue's state inside the MemoryStore: its jobs, the heaps that order them, its settings. */
import type { RateLimit, StreamEvent, WakeHandlers } from '../store.js';
import { Rates } from './rates.js';
import type { JobError } from '../../types.js';
import { type EventName, type Finish, LIMIT, type Place, UNGROUPED_LANE } from '../lifecycle.js';
import { Heap } from './heap.js';
import { HistoryBook } from '../history-minutes.js';
import { MemHolds } from './holds.js';
import { byteOrder } from '../zset-order.js';

export interface MemJob {
  id: string;
  data: string;
  /** Due time (server clock = process clock), ms. */
  due: number;
  /** Add order, for FIFO among equals. */
  seq: number;
  created: number;
  priority: number;
  maxAttempts: number | undefined;
  backoff: string | undefined;
  attempts: number;
  /**
   * The max attempts it ran out of (its own, or the worker's default that applied), once it died
   * so; cleared by a retry from the dead set (the run state's `/<max attempts>` in Redis).
   */
  spentMaxAttempts: number | undefined;
  /** The current lease token; '-' + token once its holder gave it up, '~' + token once a claim recovered it. */
  token: string | undefined;
  lastError: string | undefined;
  traceContext: string | undefined;
  /**
   * 'ready' = due and waiting for a worker; 'waiting' = due, in its group's line (both public
   * state 'scheduled').
   */
  where: Place;
  /** Its group (add({ group })), or undefined. */
  group: string | undefined;
  /** Its name (add({ name })), or undefined. */
  name: string | undefined;
  /** Its own timeout per attempt (add({ timeoutMs })), or undefined. */
  timeoutMs: number | undefined;
  /** Tokens of the rate limits it takes when handed out (add({ cost })). */
  cost: number;
  /** Its debounce key (add({ debounce })), or undefined. */
  debounceKey: string | undefined;
  leaseDeadline: number;
  /** Time of death (dead) or of completion (completed and kept). */
  diedAt: number;
  /** First hand-out, once it ran. */
  startedAt: number | undefined;
  /** The last lease holder ('' when none). */
  workerId: string;
  result: string | undefined;
  progress: string | undefined;
  logs: string[] | undefined;
  /** Its last failed attempts, oldest first (ERROR_HISTORY_LENGTH at most); kept through a dead-set retry. */
  errors: JobError[] | undefined;
  /** Bumped on every move, so heap entries made before it are known to be stale. */
  version: number;
}

/**
 * A heap entry keeps the sort key the job had when it was pushed: a stale entry (the job moved
 * since) must keep its place until it surfaces and is dropped, or the heap's order breaks and a
 * due job hides behind it.
 */
interface Entry {
  job: MemJob;
  version: number;
  /** due time (scheduled, ready) or lease deadline (leases) */
  at: number;
  seq: number;
  priority: number;
}

function entry(job: MemJob, at: number): Entry {
  return { job, version: job.version, at, seq: job.seq, priority: job.priority };
}

/** Drops a removed job's payload at once: stale heap entries may keep the object a while. */
function release(job: MemJob): void {
  job.data = '';
  job.traceContext = undefined;
  job.lastError = undefined;
  clearExtras(job);
}

/** What a job carries besides its body and run: result, progress, logs, error history. */
function clearExtras(job: MemJob): void {
  job.result = undefined;
  job.progress = undefined;
  job.logs = undefined;
  job.errors = undefined;
}

/** A group's state (Redis: its field in the groups hash, and its line in the waiting set). */
export interface MemGroup {
  /** Its jobs in active. */
  running: number;
  /** Its due jobs in its line. */
  waiting: number;
  /** Its own concurrency limit (undefined: the queue's groupConcurrency). */
  limit: number | undefined;
  /** Its own rate limit (undefined: the queue's groupRateLimit). */
  rateLimit: RateLimit | undefined;
  paused: boolean;
  /** Its line: priority, then due time, then add order (as the ready heap). */
  readonly line: Heap<Entry>;
}

/** Ready order: higher priority first, then earlier due, then first added. */
const readyBefore = (a: Entry, b: Entry) => a.priority > b.priority || (a.priority === b.priority && (a.at < b.at || (a.at === b.at && a.seq < b.seq)));

export interface MemWorker {
  info: string;
  lastSeen: number;
  expiresAt: number;
}

function inZsetOrder(jobs: Iterable<MemJob>): MemJob[] {
  return [...jobs].sort((a, b) => a.diedAt - b.diedAt || byteOrder(a.id, b.id));
}

function parseCursor(c: string): [number, number] {
  const [ms, n] = c.split('-');
  return [Number(ms), Number(n ?? 0)];
}

function after(a: [number, number], b: [number, number]): boolean {
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

export class MemoryQueue {
  readonly name: string;
  /** The shard layout as stored (JSON text), as in the meta hash's `layout` field. */
  layout: string | undefined;
  /** A shard retired by a reshard: adds without a schedule guard are refused (meta `moved`). */
  moved = false;
  /** The layout epoch this queue is a shard of, or its own layout's (meta `epoch`). */
  epoch: string | undefined;
  /** The latest end of a dedup window taken here (meta `dedupUntil`; 0: none). */
  dedupUntil = 0;

  constructor(name: string) {
    this.name = name;
  }

  readonly jobs = new Map<string, MemJob>();
  /** Dead jobs in death order. */
  readonly dead = new Map<string, MemJob>();
  /** Completed jobs kept by retention, in finish order. */
  readonly completedKept = new Map<string, MemJob>();
  readonly workers = new Map<string, MemWorker>();
  readonly dedup = new Map<string, { id: string; due: number; expiresAt: number }>();
  readonly subscribers = new Set<WakeHandlers>();
  /** Jobs someone waits for (Store.watch): id -> until when (ms); told of their end in finish. */
  readonly waiters = new Map<string, number>();
  /** Jobs cancelled as they ran: id -> until when their holder's calls answer lease lost (_lifecycle.lua revoke). */
  readonly revoked = new Map<string, number>();
  readonly events: StreamEvent[] = [];
  readonly eventWaiters = new Set<() => void>();
  paused = false;
  eventsMax = 0;
  deadMax = 0;
  deadMaxAge = 0;
  doneMax = 0;
  doneMaxAge = 0;
  seq = 0;
  /** Once a job of a group was added (meta grouped): reads answer each job's group. */
  grouped = false;
  /**
   * Jobs of a group that have not ended (meta groupJobs, _groups.lua LIVE): claims take
   * turns between lanes while one is left (or the queue is rated), kept by #enter and #leave.
   */
  groupJobs = 0;
  /** Most jobs of the queue active at once (meta concurrency); undefined: no limit. */
  concurrency: number | undefined;
  /** Most jobs of one group active at once, unless it has its own limit (meta groupConcurrency). */
  groupConcurrency: number | undefined;
  /** The queue's rate limit (meta rateMax, ratePer) and each group's default (groupRateMax, groupRatePer). */
  rateLimit: RateLimit | undefined;
  groupRateLimit: RateLimit | undefined;
  /** Once a rate limit was set or a hold put (meta rated): claims look at the limiters. */
  rated = false;
  /** Once a job with a cost or a debounce key was added (meta flowed). */
  flowed = false;
  readonly rates = new Rates();
  /** Debounce key -> its pending burst's job and first add (the debounce hash). */
  readonly debounce = new Map<string, { id: string; first: number }>();
  /** Groups with a state (Redis: fields of the groups hash). */
  readonly groups = new Map<string, MemGroup>();
  /**
   * The rotation (Redis: the lanes ZSET): lanes in turn order, UNGROUPED_LANE for the jobs of no
   * group. A Map keeps insertion order: joining appends, a lane served is deleted and set again.
   */
  readonly lanes = new Map<string, true>();
  /** An add wrote to this life of the queue (Redis: its keys exist). */
  made = false;
  completed = 0;
  /** The per-minute history (the `history` hash's twin). */
  readonly history = new HistoryBook();
  readonly schedules = new Map<string, string>();
  readonly scheduleLast = new Map<string, number>();
  #lastEvent: [number, number] = [0, 0];
  #ready = 0;

  readonly #scheduled = new Heap<Entry>(
    (a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq),
    (e) => e.version === e.job.version && e.job.where === 'scheduled',
  );
  readonly #readyHeap = new Heap<Entry>(readyBefore, (e) => e.version === e.job.version && e.job.where === 'ready');
  // Ties by id bytes, as the active ZSET orders them: a claim recovers expired leases in that
  // order, and the groups they free join the rotation in it.
  readonly #leases = new Heap<Entry>(
    (a, b) => a.at < b.at || (a.at === b.at && byteOrder(a.job.id, b.job.id) < 0),
    (e) => e.version === e.job.version && e.job.where === 'active',
  );
  /** Dedup keys by expiry, so expired ones are freed without a scan. */
  readonly #dedupExpiry = new Heap<{ key: string; expiresAt: number }>(
    (a, b) => a.expiresAt < b.expiresAt,
    () => true,
  );

  nextSeq(n: number): number {
    const base = this.seq;
    this.seq += n;
    return base;
  }

  /** Jobs per state, to tell when a heap is mostly stale entries. */
  readonly #count = { scheduled: 0, ready: 0, waiting: 0, active: 0, dead: 0, completed: 0, held: 0 };
  /** Recovered leases out of active and not yet moved on: within one claim only (takeExpiredLeases). */
  readonly #leftActive = new Set<MemJob>();

  /** Jobs held for other jobs (docs/flows.md; Redis: _holds.lua). */
  readonly holds = new MemHolds();

  /** Jobs in place 'held'. */
  heldCount(): number {
    return this.#count.held;
  }

  /** Puts a new job in place 'held' (its hold was just written). */
  hold(job: MemJob): void {
    this.#move(job, 'held');
  }

  /**
   * Every move of a job between places goes through here (and its deletion through remove):
   * the memory store's twin of _lifecycle.lua. #leave and #enter are where a rule that spans
   * every transition goes, as enter_active / leave_active are on Redis.
   */
  #move(job: MemJob, where: MemJob['where']): void {
    this.#leave(job);
    job.where = where;
    job.version++;
    this.#enter(job);
  }

  /**
   * The job leaves its place (a job never placed yet, version 0, has none). A job leaving
   * `active` gives its group's slot back (leave_active): a group that gets room for the due jobs
   * it has waiting joins the rotation, and sleeping workers are told, as they are when the
   * queue was at its concurrency limit.
   */
  #leave(job: MemJob): void {
    if (job.version === 0) return;
    // Taken out of active already (takeExpiredLeases).
    if (this.#leftActive.delete(job)) return;
    if (job.group !== undefined && job.where !== 'dead' && job.where !== 'completed') this.groupJobs--;
    if (job.where === 'active' && this.concurrency !== undefined && this.#count.active >= this.concurrency) this.signal(0);
    this.#count[job.where]--;
    if (job.where === 'ready') this.#ready--;
    if (job.where === 'dead') this.dead.delete(job.id);
    if (job.where === 'completed') this.completedKept.delete(job.id);
    const g = job.group === undefined ? undefined : this.groups.get(job.group);
    if (!g) return;
    if (job.where === 'waiting') g.waiting--;
    if (job.where === 'active') {
      const hadRoom = this.groupRoom(g) > 0;
      g.running = Math.max(0, g.running - 1);
      if (g.waiting > 0 && !hadRoom && this.groupRoom(g) > 0) {
        this.lanesJoin([job.group!]);
        this.signal(0);
      }
    }
    this.#forgetGroupIfIdle(job.group!, g);
  }

  #enter(job: MemJob): void {
    this.#count[job.where]++;
    if (job.group !== undefined && job.where !== 'dead' && job.where !== 'completed') this.groupJobs++;
    if (job.where === 'ready') this.#ready++;
    if (job.group === undefined || (job.where !== 'active' && job.where !== 'waiting')) return;
    const g = this.group(job.group);
    if (job.where === 'active') g.running++;
    else {
      g.waiting++;
      g.line.push(entry(job, job.due));
    }
  }

  /** A group's state, made when first needed (Redis: a missing field reads as nothing). */
  group(id: string): MemGroup {
    let g = this.groups.get(id);
    if (!g) {
      g = {
        running: 0,
        waiting: 0,
        limit: undefined,
        rateLimit: undefined,
        paused: false,
        line: new Heap<Entry>(readyBefore, (e) => e.version === e.job.version && e.job.where === 'waiting'),
      };
      this.groups.set(id, g);
    }
    return g;
  }

  /** A group with nothing running or waiting, no limit and no pause has no state (as its field goes). */
  #forgetGroupIfIdle(id: string, g: MemGroup): void {
    if (g.running <= 0 && g.waiting <= 0 && g.limit === undefined && g.rateLimit === undefined && !g.paused) this.groups.delete(id);
  }

  /** Settings of a group changed: drop its state when it holds nothing. */
  groupChanged(id: string): void {
    const g = this.groups.get(id);
    if (g) this.#forgetGroupIfIdle(id, g);
  }

  /** How many more jobs of the group may run now (0 while paused, Infinity without a limit). */
  groupRoom(g: MemGroup): number {
    if (g.paused) return 0;
    const limit = g.limit ?? this.groupConcurrency;
    return limit === undefined ? Infinity : limit - g.running;
  }

  groupEligible(g: MemGroup): boolean {
    return g.waiting > 0 && this.groupRoom(g) > 0;
  }

  /** The rate limit a group's jobs take tokens of: its own, else the queue's groupRateLimit. */
  groupRate(g: MemGroup | undefined): RateLimit | undefined {
    return g?.rateLimit ?? this.groupRateLimit;
  }

  /** Lanes join the rotation's tail in order; those in keep their place (ZADD NX). */
  lanesJoin(lanes: readonly string[]): void {
    for (const l of lanes) if (!this.lanes.has(l)) this.lanes.set(l, true);
  }

  /** Lanes move to the rotation's tail, in order. */
  lanesToTail(lanes: readonly string[]): void {
    for (const l of lanes) {
      this.lanes.delete(l);
      this.lanes.set(l, true);
    }
  }

  activeCount(): number {
    return this.#count.active;
  }

  waitingCount(): number {
    return this.#count.waiting;
  }

  /** Stale entries (of jobs that moved or went) are dropped as they surface; compact when they outnumber the live ones. */
  #push(heap: Heap<Entry>, e: Entry, live: number): void {
    heap.push(e);
    if (heap.size > 1024 && heap.size > 2 * live) heap.compact();
  }

  /** Puts the job in the scheduled heap; the caller signals workers (add does it once per call). */
  place(job: MemJob, due: number): void {
    this.#move(job, 'scheduled');
    job.due = due;
    this.#push(this.#scheduled, entry(job, due), this.#count.scheduled);
  }

  /** Schedules the job and wakes workers when it became the earliest, like the scripts' schedule(). */
  schedule(job: MemJob, due: number): void {
    const prevHead = this.headDue();
    this.place(job, due);
    this.wakeIfEarlier(prevHead, due);
  }

  /** Hands the job out with a lease until `deadline` (claim.lua: enter_active). */
  activate(job: MemJob, deadline: number): void {
    this.#move(job, 'active');
    this.#lease(job, deadline);
  }

  /** A new deadline for a lease still held (extend.lua: renew_active): the job stays where it is. */
  renew(job: MemJob, deadline: number): void {
    job.version++; // the entry of the old deadline goes stale
    this.#lease(job, deadline);
  }

  #lease(job: MemJob, deadline: number): void {
    job.leaseDeadline = deadline;
    this.#push(this.#leases, entry(job, deadline), this.#count.active);
  }

  /**
   * Every end of a job goes through here, whatever ended it (lifecycle.ts FINISHES), as
   * _lifecycle.lua's `finish`: `completed` (acked; counted, then kept by the retention rule when
   * `keep`, else deleted), `dead` (into the dead set at `now`; its burst ends) or `cancelled`
   * (cancelled or drained before it ran: deleted, its burst ends). Trimming the retained sets
   * and events stay with the caller. The next rule that must hear of every end (flows) goes here.
   */
  finish(outcome: Finish, job: MemJob, now: number, keep = false, told = '', ending?: ReadonlySet<string>): void {
    this.finishAll(outcome, [job], now, keep, [told], ending);
  }

  /**
   * Ends of several jobs in one call, as _lifecycle.lua's `finish` takes them: each job's holds
   * hear of it and its end is written, in order; then what the holds decided follows as calls of
   * their own: every held job buried, together (and what they bury, in turn), then the
   * dependencies left to no one. (Ended one by one, a held job waiting for two drained jobs heard
   * of a held job the first one's end buried, not of the second drained job, as Redis has it.)
   */
  finishAll(outcome: Finish, jobs: readonly MemJob[], now: number, keep = false, told: readonly string[] = [], ending?: ReadonlySet<string>): void {
    const bury: MemJob[] = [];
    const orphans: string[] = [];
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!;
      const why = told[i] ?? '';
      this.#tellWaiters(outcome, job, outcome === 'dead' ? (job.lastError ?? '') : why);
      // Held jobs waiting for this one are told first (memory/holds.ts); what that ends ends after
      // the call's own writes.
      const after = this.holds.used ? this.holds.settle(this, outcome, job, why, now, ending) : undefined;
      switch (outcome) {
        case 'completed':
          this.completed++;
          this.history.note(now, { completed: 1 });
          if (!keep) {
            this.remove(job);
            break;
          }
          this.#move(job, 'completed');
          job.diedAt = now;
          this.completedKept.set(job.id, job);
          break;
        case 'dead':
          this.history.note(now, { dead: 1 });
          this.#endBurst(job);
          this.#move(job, 'dead');
          job.diedAt = now;
          this.dead.set(job.id, job);
          break;
        case 'cancelled':
          this.remove(job);
          break;
      }
      if (after) {
        bury.push(...after.bury);
        orphans.push(...after.orphans);
      }
    }
    if (bury.length > 0) this.finishAll('dead', bury, now);
    const cancel = this.holds.takeOrphans(this, orphans, now, ending);
    if (cancel.length > 0)
      this.finishAll(
        'cancelled',
        cancel,
        now,
        false,
        cancel.map(() => 'the job waiting for it was cancelled'),
        new Set(cancel.map((j) => j.id)),
      );
  }

  /**
   * Deletes the job; the version bump makes any heap entry of it stale. Its debounce burst ends
   * with it (_helpers.lua end_bursts), unless `keepBurst` (a job replaced by the add folded
   * into that same burst).
   */
  remove(job: MemJob, keepBurst = false): void {
    if (!keepBurst) this.#endBurst(job);
    this.holds.forget(job.id);
    this.#leave(job);
    job.version++;
    this.jobs.delete(job.id);
    release(job);
  }

  /** No debounce key outlives its job: a burst still naming it ends. */
  #endBurst(job: MemJob): void {
    if (job.debounceKey !== undefined && this.debounce.get(job.debounceKey)?.id === job.id) this.debounce.delete(job.debounceKey);
  }

  /** Earliest due time among scheduled jobs not yet moved to ready. */
  headDue(): number | undefined {
    return this.#scheduled.peek()?.at;
  }

  nextLease(): MemJob | undefined {
    return this.#leases.peek()?.job;
  }

  /**
   * Up to `limit` leases whose deadline is at or before `now`, in the active set's order, taken
   * out of active together, as claim.lua's leave_active takes them before it decides what
   * becomes of each: their groups' slots come back and the groups that get room join the
   * rotation in that order. Each stays `active` by name until finishAll or schedule moves it on,
   * which then gives nothing back a second time.
   */
  takeExpiredLeases(now: number, limit: number): MemJob[] {
    const out: MemJob[] = [];
    while (out.length < limit) {
      const top = this.#leases.peek();
      if (!top || top.at > now) break;
      this.#leases.pop();
      out.push(top.job);
    }
    for (const job of out) {
      this.#leave(job);
      this.#leftActive.add(job);
    }
    return out;
  }

  readyCount(): number {
    return this.#ready;
  }

  /** The first job of the ready heap in hand-out order, left there. */
  readyHead(): MemJob | undefined {
    return this.#readyHeap.peek()?.job;
  }

  /**
   * Due jobs move on: those of no group to the ready heap, those of a group to its line. Returns
   * the lanes that got jobs, each once, in the order of their earliest job (the heap pops by due
   * time, then add order); `firsts`, when given, gets each lane's earliest job.
   */
  promoteDue(now: number, firsts?: Map<string, MemJob>): string[] {
    const lanes = new Set<string>();
    for (;;) {
      const top = this.#scheduled.peek();
      if (!top || top.at > now) return [...lanes];
      this.#scheduled.pop();
      const job = top.job;
      if (job.group === undefined) {
        this.#move(job, 'ready');
        this.#push(this.#readyHeap, entry(job, job.due), this.#count.ready);
      } else this.#move(job, 'waiting');
      const lane = job.group ?? UNGROUPED_LANE;
      if (!lanes.has(lane)) firsts?.set(lane, job);
      lanes.add(lane);
    }
  }

  popReady(): MemJob | undefined {
    return this.#readyHeap.pop()?.job;
  }

  /** The next job of a group's line. */
  popWaiting(g: MemGroup): MemJob | undefined {
    return g.line.pop()?.job;
  }

  /** A job popped from the ready heap or its group's line but not handed out goes back there. */
  putBack(job: MemJob): void {
    if (job.where === 'ready') this.#readyHeap.push(entry(job, job.due));
    else if (job.where === 'waiting') this.group(job.group!).line.push(entry(job, job.due));
  }

  /** Dead jobs as the dead ZSET orders them: by time of death, then id by bytes. */
  deadInOrder(): MemJob[] {
    return inZsetOrder(this.dead.values());
  }

  /** Kept completed jobs as the completed ZSET orders them. */
  completedInOrder(): MemJob[] {
    return inZsetOrder(this.completedKept.values());
  }

  /** Takes a dedup key for `windowMs`. */
  takeDedup(key: string, id: string, due: number, now: number, windowMs: number): void {
    const expiresAt = now + windowMs;
    this.dedup.set(key, { id, due, expiresAt });
    if (expiresAt > this.dedupUntil) this.dedupUntil = expiresAt;
    this.#dedupExpiry.push({ key, expiresAt });
  }

  /** Takes over the dedup keys of the queue this one replaces (obliterate), with their expiry. */
  keepDedup(from: MemoryQueue): void {
    for (const [key, held] of from.dedup) {
      this.dedup.set(key, { ...held });
      this.#dedupExpiry.push({ key, expiresAt: held.expiresAt });
    }
  }

  /** Frees expired dedup keys (Redis expires its keys by itself). */
  expireDedup(now: number): void {
    for (let top = this.#dedupExpiry.peek(); top && top.expiresAt <= now; top = this.#dedupExpiry.peek()) {
      this.#dedupExpiry.pop();
      const held = this.dedup.get(top.key);
      if (held && held.expiresAt <= now) this.dedup.delete(top.key);
    }
  }

  dedupHolder(key: string, now: number): { id: string; due: number } | undefined {
    const held = this.dedup.get(key);
    if (!held) return undefined;
    if (held.expiresAt <= now) {
      this.dedup.delete(key);
      return undefined;
    }
    return held;
  }

  /** As _lifecycle.lua tell_waiters: a job someone waits for tells its end to every subscriber. */
  #tellWaiters(outcome: Finish, job: MemJob, payload: string): void {
    if (!this.waiters.delete(job.id) || this.subscribers.size === 0) return;
    const id = job.id;
    setImmediate(() => {
      for (const h of this.subscribers) h.onFinished?.(id, outcome, payload, this.name);
    });
  }

  /**
   * As _lifecycle.lua revoke: the running job's lease ends from outside its holder; the holder
   * hears (asynchronously, as over pub/sub), and a cancelled job (about to be deleted) is
   * remembered a while so its holder's calls answer lease lost.
   */
  revoke(job: MemJob, why: 'cancelled' | 'failed' | 'dead', now: number): string {
    const token = job.token ?? '';
    if (why === 'cancelled') {
      for (const [id, until] of this.revoked) if (until <= now) this.revoked.delete(id);
      this.revoked.set(job.id, Math.max(job.leaseDeadline ?? now, now) + LIMIT.revoked_keep_ms);
    }
    if (token !== '' && this.subscribers.size > 0) {
      const heard = why === 'cancelled' ? 'cancelled' : 'failed';
      setImmediate(() => {
        for (const h of this.subscribers) h.onRevoked?.(token, heard, this.name);
      });
    }
    return token;
  }

  /** Tells subscribers, as Redis pub/sub would (asynchronously), that work may be due at `due`. */
  signal(due: number): void {
    if (this.subscribers.size === 0) return;
    setImmediate(() => {
      for (const h of this.subscribers) h.onWake(due, this.name);
    });
  }

  schedulesChanged(): void {
    if (this.subscribers.size === 0) return;
    setImmediate(() => {
      for (const h of this.subscribers) h.onSchedulesChanged?.(this.name);
    });
  }

  layoutChanged(): void {
    if (this.subscribers.size === 0) return;
    setImmediate(() => {
      for (const h of this.subscribers) h.onLayoutChanged?.(this.name);
    });
  }

  wakeIfEarlier(prevHead: number | undefined, due: number): void {
    if (prevHead === undefined || due < prevHead) this.signal(due);
  }

  emit(now: number, event: EventName, id: string, fields: Record<string, string>): void {
    if (this.eventsMax <= 0) return;
    // Stream ids never go backwards, even if the clock does.
    const ms = Math.max(now, this.#lastEvent[0]);
    const n = ms === this.#lastEvent[0] ? this.#lastEvent[1] + 1 : 0;
    this.#lastEvent = [ms, n];
    this.events.push({ cursor: `${ms}-${n}`, event, id, fields });
    if (this.events.length > this.eventsMax) this.events.splice(0, this.events.length - this.eventsMax);
    for (const w of [...this.eventWaiters]) w();
  }

  eventsAfter(cursor: string, count: number): StreamEvent[] {
    const c = parseCursor(cursor);
    const out: StreamEvent[] = [];
    for (const e of this.events) {
      if (after(parseCursor(e.cursor), c)) {
        out.push(e);
        if (out.length >= count) break;
      }
    }
    return out;
  }
}
