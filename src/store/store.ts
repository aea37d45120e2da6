/**
 * The contract between Queue/Worker and a storage backend. The Redis store keeps it with one
 * Lua script per method; an embedded store must keep the same semantics (same results for the
 * same sequence of calls), which the conformance tests check.
 *
 * Payloads cross this boundary already serialised: a store never parses job data, so corrupt
 * data is found (and sent to the dead set) by the worker, not hidden by the store.
 */
import type { Finish } from './lifecycle.js';
import type { CancelResult, DueTimeline, JobInfo, JobState, ListOrder, ListState, QueueStats, RescheduleResult, WorkerInfo } from '../types.js';

/**
 * Failed attempts kept per job (JobInfo.errors), newest last: both stores keep this many, and the
 * Redis store passes it to fail.lua, so the number is written down once.
 */
export const ERROR_HISTORY_LENGTH = 10;

/**
 * The sequence counter's lives (Redis: the `seq` key), kept alike by both stores. Obliterate
 * leaves the counter at the next multiple of SEQ_LIFE above it, expiring after SEQ_FLOOR_TTL_MS,
 * so the queue's next life goes on from there: no lease token or FIFO number is handed out twice
 * under one queue name, even in the same millisecond (a token is `<claim ms>-<seq>`), and a plain
 * `INCR` still gives a valid positive number. An add whose first number is a multiple of
 * SEQ_LIFE (0 for a new queue) made the queue's keys.
 * 2^24: a live queue reaches a multiple once in 16.7 million numbers (its producer registers it
 * once more, harmless), and 16-digit numbers leave room for 500 million lives.
 */
export const SEQ_LIFE = 2 ** 24;
export const SEQ_FLOOR_TTL_MS = 30 * 86_400_000;

/**
 * An add reached a shard that takes no add for the layout it was routed by (a reshard retired it,
 * or it is not a live shard of that layout's epoch: obliterated, or made again since), or an
 * obliterate found another epoch's keys: read the layout again. Internal: the sharding view
 * handles it, and it never reaches a caller.
 */
export class ShardMovedError extends Error {
  readonly queue: string;
  constructor(queue: string) {
    super(`${queue} is not a live shard of the layout used`);
    this.name = 'ShardMovedError';
    this.queue = queue;
  }
}

/**
 * An add call whose jobs went to several shards, some of which failed: the jobs the other shards
 * wrote are answered in `results` (undefined where the job's shard failed, with its error in
 * `errors`), so that a caller answering each job on its own (the add batcher) settles each by
 * its own shard. `cause` is the first shard's error; a caller answering the call as a whole
 * throws that.
 */
export class PartialAddError extends Error {
  readonly results: readonly (StoredAddResult | undefined)[];
  readonly errors: ReadonlyMap<number, unknown>;
  constructor(results: readonly (StoredAddResult | undefined)[], errors: ReadonlyMap<number, unknown>) {
    const cause = errors.values().next().value;
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'PartialAddError';
    this.results = results;
    this.errors = errors;
  }
}

/**
 * The epoch an obliterate gives for a queue it read as never sharded: it matches no layout epoch,
 * so a queue sharded meanwhile is left alone (ShardMovedError) and obliterated as sharded.
 */
export const NO_EPOCH = '-';

/** One job to write. Exactly one of delayMs / runAtMs is set. */
export interface NewJob {
  id: string;
  data: string;
  delayMs: number | undefined;
  runAtMs: number | undefined;
  priority: number;
  maxAttempts: number | undefined;
  /** Backoff spec, serialised (see backoff.ts), or undefined for the worker's default. */
  backoff: string | undefined;
  replace: boolean;
  /** Skip this job when another add took the same key within the window (see AddOptions.dedup). */
  dedup: { key: string; windowMs: number } | undefined;
  /** Trace context of the add (propagation carrier as JSON), when tracing is on. */
  traceContext: string | undefined;
  /** The group the job belongs to (concurrency and turns are kept per group), or undefined. */
  group: string | undefined;
  /** Its name (add({ name })), kept with it for a worker to route by, or undefined. */
  name: string | undefined;
  /** Its own timeout per attempt (add({ timeoutMs })), or undefined. */
  timeoutMs?: number | undefined;
  /** Attempts it made before it was added (add({ attemptsMade })): its run state starts with them; undefined or 0 for none. */
  attemptsMade?: number | undefined;
  /** Tokens of the rate limits the job takes when it starts (1 unless add({ cost }) said more). */
  cost: number;
  /** Fold a burst of adds with one key into one run (see AddOptions.debounce); exclusive with delay, runAt, dedup, replace. */
  /**
   * `firstMs`: the first add of the burst this add starts, when it is not now (a sharded producer
   * moving a burst off a retired shard keeps its maxWaitMs bound); at most now.
   */
  debounce: { key: string; delayMs: number; maxWaitMs: number | undefined; firstMs?: number | undefined } | undefined;
  /** Held until these jobs have ended, or its deadline passes (docs/flows.md); exclusive with replace, dedup and debounce. */
  hold?: NewHold | undefined;
}

/** A new job's hold: what it waits for, until when at most, and what a failed dependency does. */
export interface NewHold {
  /** Ids of the jobs it waits for (at least one, each once): earlier jobs of the same add, or existing jobs not dead. */
  dependsOn: string[];
  /** Runs anyway this long after the add (server clock)… */
  deadlineMs?: number | undefined;
  /** …or at this epoch ms; at most one of the two. */
  deadlineAtMs?: number | undefined;
  /** A dependency that ends dead or cancelled: 'fail' buries the job with the reason, 'ignore' counts it and goes on. */
  onChildFailure: 'fail' | 'ignore';
}

/** How a held job was released, as its runs see it (job.hold). */
export interface HoldRelease {
  /** Its deadline passed before every dependency ended. */
  timedOut: boolean;
  /** The dependencies that had not ended when it was released (empty unless timedOut). */
  pending: string[];
}

/** A job's hold as stored (queue.holdOf, job.childResults): what it waits for and how it stands. */
export interface StoredHold {
  /** held: waiting; released: every dependency ended, or the signal came; timedOut: its deadline came first; failed: buried for a failed dependency. */
  phase: 'held' | 'released' | 'timedOut' | 'failed';
  /** Dependencies not ended (while held; for a wait for a signal, 1). */
  pending: number;
  /** Dependencies that ended dead or cancelled under onChildFailure 'ignore'. */
  failed: number;
  onChildFailure: 'fail' | 'ignore';
  /** The time it was added (or waited) to run at. */
  dueAtMs: number;
  /** The signal it waits (or waited) for, when it did. */
  signal: string | undefined;
  /** When it runs anyway, while held with a deadline. */
  deadlineAtMs: number | undefined;
  /** Its dependencies, in the order given, and how each ended. */
  children: StoredChildOutcome[];
}

/** How one dependency of a held job ended (job.childResults()), in the order they were given. */
export interface StoredChildOutcome {
  id: string;
  /** undefined while it has not ended. */
  outcome: 'completed' | 'dead' | 'cancelled' | undefined;
  /** The result JSON ('' for none) when completed; the reason when dead or cancelled. */
  value: string;
}

export interface StoredAddResult {
  /** debounced: folded into the pending job of its debounce key (duplicateOf), whose data and due time it replaced. */
  code: 'added' | 'exists' | 'replaced' | 'deduplicated' | 'debounced';
  /** 'finished' only when deduplicated and the job holding the key is gone. */
  state: JobState | 'finished';
  dueAtMs: number;
  /** The id of the job holding the dedup key, when deduplicated; of the burst's job, when debounced. */
  duplicateOf: string | undefined;
}

/** A job as handed out by `claim`. */
export interface ClaimedJob {
  id: string;
  token: string;
  /** Serialised payload; undefined when the stored body has none (corrupt). */
  data: string | undefined;
  attempt: number;
  maxAttempts: number | undefined;
  backoff: string | undefined;
  dueAtMs: number;
  priority: number;
  createdAtMs: number;
  leaseExpiresAtMs: number;
  /** The trace context stored by the add, if any. */
  traceContext: string | undefined;
  /** Its group, if any. */
  group: string | undefined;
  /** Its name (add({ name })), if any. */
  name: string | undefined;
  /** Its own timeout per attempt (add({ timeoutMs })), if any. */
  timeoutMs?: number | undefined;
  /** How its hold ended, when it was added with dependencies (docs/flows.md). */
  hold?: HoldRelease | undefined;
  /** The signal that ended its last wait (job.waitForSignal), if it waited for one. */
  signal?: SignalIn | undefined;
}

/** A hand-out whose stored fields could not be read; the worker sends it to the dead set. */
export interface UnreadableJob extends LeaseRef {
  reason: string;
}

export interface ClaimResult {
  /** The server's clock when the claim ran. */
  nowMs: number;
  jobs: ClaimedJob[];
  /** Jobs handed out that could not be parsed: each goes dead with its reason; the others run. */
  unreadable: UnreadableJob[];
  /** True when more jobs are due right now than were handed out. */
  more: boolean;
  /**
   * The next moment something may need a worker: the earliest scheduled due time or the
   * earliest lease deadline (an expired lease is recovered by the next claim). Undefined when
   * the queue holds neither.
   */
  nextWakeMs: number | undefined;
  /**
   * A sharded queue's shards whose claim failed while the claim went on without them (each is
   * asked again after a back-off); the worker reports each as 'error'. Absent when none did.
   */
  errors?: Error[];
}

/** Outcome of an ack/extend/release for one job. */
export type LeaseOutcome = 'ok' | 'lease_lost' | 'not_found';

export interface FailRequest {
  id: string;
  token: string;
  /** Error text to keep with the job (already bounded in size by the caller). */
  error: string;
  /** Delay before the retry, measured from the server's now. */
  retryDelayMs: number;
  /** Skip any attempts left and go to the dead set. */
  dead: boolean;
  /** Used when the job carries no attempt limit of its own. */
  defaultMaxAttempts: number;
}

export interface FailResult {
  outcome: 'retried' | 'dead' | 'lease_lost' | 'not_found';
  dueAtMs: number | undefined;
}

export interface SnoozeRequest {
  id: string;
  token: string;
  delayMs: number;
  /** Past this (server clock), the job goes dead instead of running again. */
  deadlineAtMs: number | undefined;
}

/** A handler's job.waitForSignal(name, { timeoutMs }): its attempt ends and it waits (docs/flows.md). */
export interface WaitSignalRequest {
  id: string;
  token: string;
  name: string;
  /** Runs anyway this long after the call (server clock); undefined: waits until signalled. */
  timeoutMs: number | undefined;
}

export interface WaitSignalResult {
  /** waiting: held until the signal or the timeout; signalled: a signal of that name was kept for it, it runs now. */
  outcome: 'waiting' | 'signalled' | 'lease_lost' | 'not_found';
  dueAtMs: number | undefined;
}

export interface SignalResult {
  /** released: it waited for this signal and runs now; kept: it waits for it later; refused: it has ended, or holds too many kept signals. */
  outcome: 'released' | 'kept' | 'refused' | 'not_found';
  state: JobState | undefined;
}

/** The signal that ended a job's wait, as its next run sees it (job.signalled). */
export interface SignalIn {
  name: string;
  /** The wait's timeout came first: no data. */
  timedOut: boolean;
  /** The signal's data as JSON text ('' for none). */
  data: string;
}

export interface SnoozeResult {
  outcome: 'snoozed' | 'dead' | 'lease_lost' | 'not_found';
  dueAtMs: number | undefined;
}

export interface DeadJob {
  id: string;
  diedAtMs: number;
  /** Serialised payload; undefined when the body had none. */
  data: string | undefined;
  attempt: number;
  /** The limit it ran out of (its own, or the worker's default that applied); else its own limit, if any. */
  maxAttempts: number | undefined;
  lastError: string | undefined;
  dueAtMs: number | undefined;
  createdAtMs: number | undefined;
  /** Its name (add({ name })), if any. */
  name: string | undefined;
}

export type PurgeTarget = { ids: string[] } | { all: true } | { olderThanMs: number };

/** What verify() found: every job must be in exactly one state, and every state entry must have a body. */
export interface VerifyReport {
  ok: boolean;
  counts: { scheduled: number; ready: number; waiting: number; active: number; dead: number; completed: number; bodies: number };
  problems: string[];
}

export interface LeaseRef {
  id: string;
  token: string;
}

/** An ack, with the handler's result as JSON text (kept only when retention keeps the job). */
export interface CompleteRef extends LeaseRef {
  result?: string | undefined;
}

/** A worker's heartbeat: its id, its WorkerInfo as JSON (without the times the store adds), how long it lives. */
export interface WorkerBeat {
  id: string;
  info: string;
  ttlMs: number;
}

/** Where a listing page ends: the set it was in and the last job's score and member there. */
export interface ListCursor {
  phase: string;
  score: string;
  member: string;
}

export interface StoredPage {
  nowMs: number;
  total: number;
  /** Raw stored text in data, result and progress (the Queue decodes them). */
  jobs: JobInfo<string>[];
  next: ListCursor | undefined;
}

/** Hears a store's connection go down (a ConnectionError naming the address) and come back. */
export interface ConnectionWatcher {
  onDown(err: Error): void;
  onUp(): void;
}

/** One step of a payload scan (search): raw data per job, and where to go on. */
export interface ScanStep {
  /** '0' when the scan is over. */
  cursor: string;
  /** Jobs in the queue (bodies), for "searched n of total". */
  total: number;
  /** Each job's id, raw data and name (add({ name })), undefined where absent or unreadable. */
  entries: { id: string; data: string | undefined; name?: string | undefined }[];
  /**
   * A step read again (Store.scan's `until`) whose last read went past where the first read led:
   * the jobs of that read, none of which the first read returned; `cursor` is then past them.
   */
  beyond?: ScanStep['entries'];
}

export interface ObliterateResult {
  /** False when refused: jobs were active and force was not given. Nothing was removed then. */
  removed: boolean;
  counts: { scheduled: number; active: number; dead: number; completed: number; jobs: number };
}

/** Progress and log lines of a running job, fenced by its token. */
export interface UpdateRequest extends LeaseRef {
  /** JSON text; undefined leaves it as it is. */
  progress: string | undefined;
  lines: string[];
  logCap: number;
}

export type RetainedSet = 'dead' | 'completed';

/**
 * A rate limit: at most `max` tokens taken in any window of `perMs` milliseconds (a sliding
 * window on the server's clock); a job takes its cost in tokens when it is handed out.
 */
export interface RateLimit {
  max: number;
  perMs: number;
}

/** The queue's limits as stored (undefined: no limit). */
export interface QueueLimits {
  /** Most jobs of the queue active at once, across every worker. */
  concurrency: number | undefined;
  /** Most jobs of one group active at once, for a group without a limit of its own. */
  groupConcurrency: number | undefined;
  /** Most tokens the queue's jobs take in any window, across every worker. */
  rateLimit: RateLimit | undefined;
  /** Most tokens one group's jobs take in any window, for a group without a rate limit of its own. */
  groupRateLimit: RateLimit | undefined;
}

/** A change of the queue's limits: a value sets one, null removes it, undefined leaves it. */
export interface LimitsChange {
  concurrency?: number | null | undefined;
  groupConcurrency?: number | null | undefined;
  rateLimit?: RateLimit | null | undefined;
  groupRateLimit?: RateLimit | null | undefined;
}

/** A change of one group: its own limits (null removes one), paused or resumed; undefined leaves each. */
export interface GroupChange {
  concurrency?: number | null | undefined;
  rateLimit?: RateLimit | null | undefined;
  paused?: boolean | undefined;
}

/** How much of a rate limit is taken now (server clock). */
export interface RateUse {
  /** Tokens taken in the current window. */
  used: number;
  /** Held back by a RateLimitSignal until then; undefined when not held. */
  heldUntilMs: number | undefined;
  /** When the oldest token taken comes back; undefined when none is taken. */
  nextRefillMs: number | undefined;
}

/** A limiter that gives no token now: held by a RateLimitSignal, or all of its max taken in the window. */
export function outOfTokens(use: Pick<RateUse, 'used' | 'heldUntilMs'>, limit: { max: number } | undefined): boolean {
  return use.heldUntilMs !== undefined || (limit !== undefined && use.used >= limit.max);
}

/** A queue's rate figures: its own limiter, and how many groups wait for a refill or a hold to end. */
export interface RateStatus {
  nowMs: number;
  queue: RateUse;
  /** Groups held back by their rate limit or a RateLimitSignal now. */
  groupsHeld: number;
}

/** A group's state as stored. */
export interface StoredGroup {
  id: string;
  /** Its jobs active now. */
  running: number;
  /** Its due jobs waiting for a slot or their turn. */
  waiting: number;
  /** Its own concurrency limit (undefined: the queue's groupConcurrency applies). */
  concurrency: number | undefined;
  /** Its own rate limit (undefined: the queue's groupRateLimit applies). */
  rateLimit: RateLimit | undefined;
  /** Its tokens taken in the window, and a hold. */
  rate: RateUse;
  paused: boolean;
}

export interface GroupsPage {
  groups: StoredGroup[];
  /** Where the walk goes on; undefined when it is over. */
  next: string | undefined;
}

/** A minute of the queue's history as stored: sums, so shards merge (history-minutes.ts). */
export interface StoredHistoryMinute {
  /** The minute's number: epoch ms / 60,000, rounded down. */
  minute: number;
  completed: number;
  failed: number;
  dead: number;
  started: number;
  lateSumMs: number;
  lateMaxMs: number;
}

export interface StoredHistory {
  nowMs: number;
  minutes: StoredHistoryMinute[];
}

export interface QueueSettings {
  paused: boolean;
  /** The concurrency limits (copied to new shards by a reshard). */
  limits: QueueLimits;
  /** The event stream's length cap; 0 when it is off. */
  eventsMaxLen: number;
  retention: Record<RetainedSet, { maxCount: number; maxAgeMs: number }>;
  /** When the last dedup window taken on this store queue ends (server clock, ms; 0: none was). */
  dedupUntilMs: number;
}

/** The job holding a dedup key, and the due time it was added with. */
export interface DedupHolder {
  id: string;
  dueAtMs: number;
}

/** A debounce key's pending burst: its job and its first add (the debounce hash's `<id>:<first>`). */
export interface DebounceBurst {
  id: string;
  firstMs: number;
}

/** One entry of a queue's event stream (opt-in; see Queue.events). */
export interface StreamEvent {
  /** The stream entry id (`<ms>-<n>`), usable as a cursor. */
  cursor: string;
  event: string;
  /** The job's id; empty for queue-wide events (paused, resumed). */
  id: string;
  /** Every other field of the entry, as stored (attempt, due, error). */
  fields: Record<string, string>;
}

export interface EventReader {
  /** The cursor of the newest entry ('0-0' when empty): where "only new events" starts. */
  lastCursor(): Promise<string>;
  /** Entries after `cursor` ('$' = only new ones), waiting up to `blockMs` when there are none (0: not at all). */
  read(cursor: string, count: number, blockMs: number): Promise<StreamEvent[]>;
  close(): Promise<void>;
}

export interface CancelOptions {
  /** Cancel a running job too (its lease ends at once). @default false */
  running?: boolean;
  /** Why, kept in the cancelled event and told to anyone waiting for the job. */
  reason?: string;
}

export interface FailNowRequest {
  id: string;
  reason: string;
  /** To the dead set now, whatever attempts are left; also for a job that waits. */
  dead: boolean;
  retryDelayMs: number;
  /** The attempt limit of a job without its own. */
  defaultMaxAttempts: number;
}

export interface FailNowResult {
  outcome: 'retried' | 'dead' | 'refused' | 'not_found';
  /** The job's state before the call (refused: why); undefined when not found. */
  state: JobState | undefined;
  /** When the retry is due. */
  dueAtMs: number | undefined;
}

/** What watch knows of a job now: it has not ended (a waiter is registered), it ended and is kept, or there is no such job. */
export type WatchAnswer = { state: 'waiting' } | { state: 'completed'; result: string } | { state: 'dead'; error: string } | { state: 'unknown' };

export interface WakeSubscription {
  close(): Promise<void>;
}

/** Makes an add conditional: only if `occurrenceMs` is later than the schedule's last occurrence. */
export interface ScheduleGuard {
  name: string;
  occurrenceMs: number;
}

export interface StoredSchedule {
  name: string;
  /** The definition as stored (JSON text). */
  definition: string;
  /** The last occurrence enqueued, if any. */
  lastOccurrenceMs: number | undefined;
}

export interface WakeHandlers {
  /** A job due at `dueAtMs` became the earliest scheduled job of `queue`. */
  onWake(dueAtMs: number, queue: string): void;
  /** The lease of `token` was ended from outside its holder (wire.ts REVOKED_MESSAGE): cancelled, or failed. */
  onRevoked?(token: string, why: 'cancelled' | 'failed', queue: string): void;
  /** A job someone waits for ended (wire.ts FINISHED_MESSAGE; Store.watch). */
  onFinished?(id: string, end: Finish, payload: string, queue: string): void;
  /** A recurring schedule was stored or removed. */
  onSchedulesChanged?(queue: string): void;
  /** The queue's shard layout changed (a reshard): read it again. */
  onLayoutChanged?(queue: string): void;
  /** The signal channel was (re)established; signals may have been missed before it. */
  onResubscribed(): void;
  onError(err: Error): void;
}

export interface Store {
  /**
   * Adds jobs; with a guard, adds nothing and returns null when that occurrence was enqueued
   * already. Without a guard, a retired shard, or one that is not a live shard of `epoch` (the
   * layout epoch the add was routed by; undefined for a queue's own keys), refuses the add with
   * ShardMovedError. An add that makes the queue's keys (a new queue, or one obliterated since)
   * names its queue in the registry again.
   */
  add(queue: string, jobs: NewJob[], guard?: undefined, epoch?: string): Promise<StoredAddResult[]>;
  add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  /** Stores a schedule's definition (JSON text), or removes it with null; returns whether it changed. */
  scheduleSet(queue: string, name: string, definition: string | null): Promise<boolean>;
  scheduleList(queue: string): Promise<StoredSchedule[]>;
  /** `workerId` is kept with each job as its lease holder ('' for none). */
  claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number, workerId?: string): Promise<ClaimResult>;
  complete(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]>;
  fail(queue: string, req: FailRequest): Promise<FailResult>;
  /** With `beat`, also records the worker's heartbeat (no round trip of its own). */
  extend(queue: string, leases: LeaseRef[], leaseMs: number, beat?: WorkerBeat): Promise<LeaseOutcome[]>;
  /** A heartbeat of a worker holding no lease; `gone` takes it out (it closed). */
  beat(queue: string, beat: WorkerBeat, gone?: boolean): Promise<void>;
  /** The live workers (heartbeat not run out), soonest to expire first. */
  workers(queue: string): Promise<WorkerInfo[]>;
  /** Progress and log lines of a running job; lease_lost for a stale token. */
  update(queue: string, req: UpdateRequest): Promise<LeaseOutcome>;
  /**
   * Hands active jobs back to scheduled, due now, without counting the attempt. With `holdMs`
   * (a RateLimitSignal), each job's group (the queue, for a job of no group) gets no hand-outs
   * for that long, on every worker, and the job keeps its place in its line.
   */
  release(queue: string, leases: LeaseRef[], holdMs?: number): Promise<LeaseOutcome[]>;
  /**
   * Cancels scheduled jobs, and with `running` running ones too (their leases end at once, their
   * holders are told: WakeHandlers.onRevoked); one answer per id, in order.
   */
  cancel(queue: string, ids: string[], opts?: CancelOptions): Promise<CancelResult[]>;
  /**
   * Ends a job's attempt from outside its holder (fail-now.lua): a running job fails now with the
   * reason (retried after `retryDelayMs` while attempts are left, else dead), or with `dead` goes
   * to the dead set, running or waiting.
   */
  failNow(queue: string, req: FailNowRequest): Promise<FailNowResult>;
  /**
   * Registers waiters for these jobs' ends for `waitMs` (then published to subscribers:
   * WakeHandlers.onFinished) and answers what is known now, in one step; `waitMs` 0 registers
   * nothing and clears the waiters whose time is up. Ids of no job are registered only when
   * `expect` (a job about to be added).
   */
  watch(queue: string, ids: string[], waitMs: number, expect?: boolean): Promise<WatchAnswer[]>;
  reschedule(queue: string, id: string, delayMs: number | undefined, runAtMs: number | undefined): Promise<RescheduleResult>;
  /** One job with its logs and error history; null when there is none. */
  get(queue: string, id: string): Promise<JobInfo<string> | null>;
  /** A job's hold (child-results.lua): how it stands and how its dependencies ended; undefined when it has none (never held, or gone). */
  holdOf(queue: string, id: string): Promise<StoredHold | undefined>;
  /** Jobs by id (null for none), raw stored text in data, result and progress; logs and error history only when asked. */
  getMany(queue: string, ids: string[], withLogs: boolean): Promise<(JobInfo<string> | null)[]>;
  /**
   * One page of the jobs in a state, from a cursor (undefined: from the start); limit 1..1000.
   * `desc` walks the state's order backwards (the cursor is then the last job of the previous
   * page in that walk, and the page holds the jobs before it). @default 'asc'
   */
  list(queue: string, state: ListState, cursor: ListCursor | undefined, limit: number, order?: ListOrder): Promise<StoredPage>;
  /**
   * One step of a walk over every job's data (for search); start with cursor '0'. With `until`
   * (the cursor an earlier step from `cursor` returned), the step read again: it reads on until
   * it is there, so every job that step returned and is still there comes back however the
   * store's layout moved in between (a Redis hash that finished a rehash walks in finer steps),
   * and the cursor returned is `until`, or past it with `beyond` when its last read crossed it.
   * It reads no more than about `count` jobs or reads to get there: stopped short (a cursor made
   * up to lead far ahead), it returns where it stopped.
   */
  scan(queue: string, cursor: string, count: number, until?: string): Promise<ScanStep>;
  /** Removes scheduled jobs (all, or those due before `dueBeforeMs`) in bounded steps; returns how many. */
  drain(queue: string, dueBeforeMs: number | undefined): Promise<number>;
  /**
   * Removes everything of the queue; refuses while jobs are active unless `force`. With `epoch`,
   * keys of another layout epoch are left alone (ShardMovedError); `NO_EPOCH` asks for a queue
   * that was never sharded.
   */
  obliterate(queue: string, force: boolean, epoch?: string): Promise<ObliterateResult>;
  /** Names the queue in the registry of queues under this store's prefix (idempotent, cheap after the first). */
  register(queue: string): Promise<void>;
  /** The registered queue names, sorted. */
  queues(): Promise<string[]>;
  stats(queue: string, windowMs: number): Promise<QueueStats>;
  /**
   * Scheduled jobs not yet due (server clock), counted per window: `buckets` windows of
   * `bucketMs` from `fromMs` (undefined: the server's now). Reads no job bodies.
   */
  timeline(queue: string, fromMs: number | undefined, bucketMs: number, buckets: number): Promise<DueTimeline>;
  snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult>;
  /** Ends a running job's attempt and holds it until a signal of that name or its timeout (wait-signal.lua). */
  waitSignal(queue: string, req: WaitSignalRequest): Promise<WaitSignalResult>;
  /** Sends a signal to a job (signal.lua): a job waiting for it runs now, another keeps it for its wait. */
  signal(queue: string, id: string, name: string, data: string): Promise<SignalResult>;
  deadList(queue: string, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }>;
  /** Retries the given dead jobs, or all of them; returns how many went back to scheduled. */
  deadRetry(queue: string, ids: string[] | 'all'): Promise<number>;
  /** Deletes dead or kept completed jobs for good; returns how many. */
  purge(queue: string, set: RetainedSet, target: PurgeTarget): Promise<number>;
  /** Walks the queue's keys; meant for tests and for checks after an incident, not a hot path. */
  verify(queue: string): Promise<VerifyReport>;
  /**
   * Converts what an older version stored to this version's forms, a bounded step per call until
   * none is left (today the scheduled set's members: wire.ts SCHEDULED_MEMBER); returns how many
   * entries were rewritten (a queue's mark taken off counts as one). Safe to run again, and
   * beside running workers of this version; not beside those of an older one. A store with no stored forms (memory) has nothing to convert.
   */
  migrate(queue: string): Promise<number>;
  /** Wake-up signals of these queues, on one connection. */
  subscribe(queues: readonly string[], handlers: WakeHandlers): Promise<WakeSubscription>;
  /**
   * Tells `watcher` once when the store's connection fails, from the start or later, and once
   * when it is ready again (a store without a connection never calls it). Returns an unwatch.
   */
  watchConnection(watcher: ConnectionWatcher): () => void;
  /** The queue's shard layout as stored (JSON text, see sharded/layout.ts); undefined: never sharded. */
  layout(queue: string): Promise<string | undefined>;
  /**
   * Stores `next` as the layout if the stored one is still `expected` (undefined: none); returns
   * whether it did. `epoch` (the epoch of `next`) is kept beside it, for obliterate and retire.
   */
  setLayout(queue: string, expected: string | undefined, next: string, epoch: string | undefined): Promise<boolean>;
  /**
   * Marks a queue of layout epoch `epoch` (a shard left behind by a reshard, or the unsharded
   * keys) as retired: from then on add refuses it with ShardMovedError unless a schedule guard
   * is given. A queue of another epoch is left alone.
   */
  retire(queue: string, epoch: string): Promise<void>;
  /** Marks a queue as a live shard of layout epoch `epoch`: adds routed by that epoch's layouts are taken. */
  markShard(queue: string, epoch: string): Promise<void>;
  /** The jobs holding these dedup keys now (null: the key is free or its window has ended). */
  dedupHolders(queue: string, keys: string[]): Promise<(DedupHolder | null)[]>;
  /**
   * The burst each debounce key names now: its job and when its first add was (null: none). The
   * job may have started since (a claim ends its burst; read the job to know it still waits).
   */
  bursts(queue: string, keys: string[]): Promise<(DebounceBurst | null)[]>;
  /** Sets or removes the queue's concurrency limits; returns whether one changed. */
  setLimits(queue: string, change: LimitsChange): Promise<boolean>;
  limits(queue: string): Promise<QueueLimits>;
  /** The queue's rate limiter now: tokens taken, a hold, the next refill; groups held back. */
  rateStatus(queue: string): Promise<RateStatus>;
  /**
   * The queue's last `minutes` minutes (at most LIMIT.history_minutes), oldest first, one entry a
   * minute (zeros where nothing was recorded), on the server clock (history-minutes.ts).
   */
  history(queue: string, minutes: number): Promise<StoredHistory>;
  /** Sets or removes one group's limit, pauses or resumes it; returns whether something changed. */
  setGroup(queue: string, group: string, change: GroupChange): Promise<boolean>;
  /** These groups' states (a group with none reads as nothing running or waiting, no limit, not paused). */
  groups(queue: string, ids: string[]): Promise<StoredGroup[]>;
  /**
   * One step of a walk over the groups that have a state (something running or waiting, a limit
   * of their own or a pause), from a cursor (undefined: the start); about `count` a step.
   */
  groupPage(queue: string, cursor: string | undefined, count: number): Promise<GroupsPage>;
  /** Pauses (true) or resumes (false) claiming; returns whether the setting changed. */
  setPaused(queue: string, paused: boolean): Promise<boolean>;
  /** Turns the queue's event stream on with a length cap, or off with 0; returns whether it changed. */
  setEventStream(queue: string, maxLen: number): Promise<boolean>;
  /**
   * The retention rule of the dead or completed set: at most `maxCount` jobs and none older than
   * `maxAgeMs` (0 = no bound); the oldest go first, at once and as jobs arrive. For the completed
   * set, both 0 means completed jobs are not kept at all.
   */
  setRetention(queue: string, set: RetainedSet, maxCount: number, maxAgeMs: number): Promise<void>;
  /** The server that holds the queue's keys (`host:port`; on a cluster, its slot's master), when the store knows. */
  nodeOf?(queue: string): Promise<string | undefined>;
  /** The queue's settings as stored (what a reshard copies to new shards). */
  settings(queue: string): Promise<QueueSettings>;
  /** The retention rules as stored (0 = no bound). */
  retention(queue: string): Promise<Record<RetainedSet, { maxCount: number; maxAgeMs: number }>>;
  /** A reader of the queue's event stream, with a connection of its own for blocking reads. */
  eventReader(queue: string): EventReader;
  close(): Promise<void>;
  /**
   * The clock due times are kept by (the Redis server's `TIME`, on the node that holds the
   * queue), in epoch ms: recurring schedules decide occurrences and anchors by it, never by the
   * host's clock.
   */
  serverTimeMs(queue: string): Promise<number>;
  /**
   * Resolves once the store can take calls (a Redis connection is ready); rejects with a
   * ConnectionError after `timeoutMs` (default: the store's connect timeout, else no limit).
   */
  waitUntilReady(timeoutMs?: number): Promise<void>;
}
