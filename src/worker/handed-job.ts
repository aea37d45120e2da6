/** The Job a handler receives, bound to one hand-out. Its AbortController is made only if asked for. */
import { LeaseLostError, SnoozeSignal, ValidationError, WaitForSignal } from '../errors.js';
import { idSchema } from '../options.js';
import { LOG_LINE_MAX, MAX_DELAY_MS, MAX_RATE_WINDOW_MS, MAX_RUN_AT_MS, PROGRESS_MAX_BYTES } from '../limits.js';
import type { ChildResults, Job, JobHold, JobSignal } from '../job.js';
import type { ClaimedJob, SignalIn, StoredChildOutcome } from '../store/store.js';

/**
 * What is wrong with a snooze's values, or undefined. Checked in job.snooze() (field names as
 * given) and again by the worker for a SnoozeSignal a handler built itself (`SnoozeSignal.`).
 */
export function snoozeProblem(delayMs: unknown, deadlineAtMs: unknown, prefix: string): ValidationError | undefined {
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
    return new ValidationError(`${prefix}delayMs`, `must be a number of milliseconds from 0 to ${MAX_DELAY_MS} (got ${String(delayMs)})`);
  }
  if (deadlineAtMs !== undefined && (typeof deadlineAtMs !== 'number' || !Number.isFinite(deadlineAtMs) || deadlineAtMs < 0 || deadlineAtMs > MAX_RUN_AT_MS)) {
    return new ValidationError(`${prefix}deadlineAtMs`, `must be epoch milliseconds (got ${String(deadlineAtMs)})`);
  }
  return undefined;
}

/** What is wrong with a wait for a signal (a name like an id, a timeout of whole ms from 1 to 10 years), or undefined. */
export function waitSignalProblem(name: unknown, timeoutMs: unknown, prefix: string): ValidationError | undefined {
  const bad = idSchema.safeParse(name);
  if (!bad.success)
    return new ValidationError(`${prefix}name`, `must be a signal name: 1-256 characters, no control characters (got ${JSON.stringify(String(name))})`);
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_DELAY_MS))
    return new ValidationError(`${prefix}timeoutMs`, `must be a number of milliseconds from 1 to ${MAX_DELAY_MS} (got ${String(timeoutMs)})`);
  return undefined;
}

/** What is wrong with a RateLimitSignal's wait (a whole number of milliseconds from 1 to a week), or undefined. */
export function rateHoldProblem(ms: unknown): ValidationError | undefined {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0 || ms > MAX_RATE_WINDOW_MS)
    return new ValidationError('RateLimitSignal.retryAfterMs', `must be a number of milliseconds from 0 to ${MAX_RATE_WINDOW_MS} (got ${String(ms)})`);
  return undefined;
}

/**
 * A RateLimitSignal's hold in whole milliseconds, as the scripts take them: never shorter than
 * asked; 0 hands the job back, its attempt unspent and its place kept, with no hold (an upstream
 * that answered `Retry-After: 0`).
 */
export function roundedHold(ms: number): number {
  return Math.ceil(ms);
}

/** A snooze in whole milliseconds, as the scripts take them: never earlier than asked. */
export function roundedSnooze(delayMs: number, deadlineAtMs: number | undefined): SnoozeSignal {
  return new SnoozeSignal(Math.ceil(delayMs), deadlineAtMs === undefined ? undefined : Math.floor(deadlineAtMs));
}

/**
 * The worker's calls a hand-out makes for its handler: one object per worker, not two closures
 * per job (at tens of thousands of jobs a second, closures per job are much of the garbage).
 */
export interface JobCalls {
  /** Extends the job's lease by `ms` (the worker's leaseMs when undefined); false when the lease is gone. */
  extend(job: HandedJob<unknown>, ms: number | undefined): Promise<boolean>;
  /** Writes what a hand-out tells about itself while it runs (progress, log lines); false when the lease is gone. */
  update(job: HandedJob<unknown>, progress: string | undefined, lines: string[]): Promise<boolean>;
  /** How the job's dependencies ended (store childResults), read when a handler asks. */
  childResults(job: HandedJob<unknown>): Promise<StoredChildOutcome[] | undefined>;
}

/** A delivered signal as a handler reads it: its data parsed (data that does not parse reads as the text). */
function signalOf(s: SignalIn): JobSignal {
  if (s.timedOut) return { name: s.name, timedOut: true };
  let data: unknown;
  if (s.data !== '') {
    try {
      data = JSON.parse(s.data);
    } catch {
      data = s.data;
    }
  }
  return { name: s.name, timedOut: false, data };
}

const SETTLED = 1;
const LEASE_GONE = 2;

/** A hand-out's state that few jobs ever have: kept apart, so that the others carry one field for it. */
interface RareState {
  waiting: WaitForSignal | undefined;
  snoozed: SnoozeSignal | undefined;
  controller: AbortController | undefined;
  abortReason: string | undefined;
}

function newRareState(): RareState {
  return { waiting: undefined, snoozed: undefined, controller: undefined, abortReason: undefined };
}

export class HandedJob<T> implements Job<T> {
  readonly queue: string;
  readonly id: string;
  readonly data: T;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly dueAtMs: number;
  readonly priority: number;
  readonly group: string | undefined;
  readonly name: string | undefined;
  /** This attempt's timeout: the job's own (add({ timeoutMs })), else the worker's; undefined for none. */
  readonly timeoutMs: number | undefined;
  readonly createdAtMs: number;
  readonly token: string;
  readonly hold: JobHold | undefined;
  readonly signalled: JobSignal | undefined;
  /** The lease deadline as last granted (server clock): from the claim, then each extension. */
  leaseDeadlineMs: number;
  /** The job's own backoff spec as stored, if it has one. */
  readonly backoffSpec: string | undefined;
  /** Its slot in the worker's RunningJobs; -1 when it is not running. */
  runningAt = -1;
  // The worker's own state of the hand-out, in fewer fields than it has names: every field is
  // 8 bytes of every job, and the rare ones (a snooze, a wait, an abort) share one.
  /** SETTLED | LEASE_GONE. */
  #flags = 0;
  /** What a snooze(), a waitForSignal() or an abort left; made only when one happens. */
  #rare: RareState | undefined;
  readonly #calls: JobCalls;

  constructor(queue: string, c: ClaimedJob, data: T, defaultMaxAttempts: number, defaultTimeoutMs: number | undefined, calls: JobCalls) {
    this.queue = queue;
    this.id = c.id;
    this.data = data;
    this.attempt = c.attempt;
    this.maxAttempts = c.maxAttempts ?? defaultMaxAttempts;
    this.dueAtMs = c.dueAtMs;
    this.priority = c.priority;
    this.group = c.group;
    this.name = c.name;
    this.timeoutMs = c.timeoutMs ?? defaultTimeoutMs;
    this.createdAtMs = c.createdAtMs;
    this.token = c.token;
    this.hold = c.hold;
    this.signalled = c.signal && signalOf(c.signal);
    this.leaseDeadlineMs = c.leaseExpiresAtMs;
    this.backoffSpec = c.backoff;
    this.#calls = calls;
  }

  async childResults<R = unknown>(): Promise<ChildResults<R>> {
    const out: ChildResults<R> = {};
    for (const c of (await this.#calls.childResults(this)) ?? []) {
      if (c.outcome === 'completed') out[c.id] = { outcome: 'completed', result: c.value === '' ? undefined : (JSON.parse(c.value) as R) };
      else if (c.outcome === undefined) out[c.id] = { outcome: 'pending' };
      else out[c.id] = { outcome: c.outcome, reason: c.value };
    }
    return out;
  }

  /** The rare state, made on first need. */
  #rareState(): RareState {
    if (this.#rare === undefined) this.#rare = newRareState();
    return this.#rare;
  }

  /** Set once the handler's outcome was taken (it returned, threw or timed out). */
  get settled(): boolean {
    return (this.#flags & SETTLED) !== 0;
  }

  set settled(v: boolean) {
    this.#flags = v ? this.#flags | SETTLED : this.#flags & ~SETTLED;
  }

  /** Set once the worker gave the lease up (close timeout) or learnt it was lost. */
  get leaseGone(): boolean {
    return (this.#flags & LEASE_GONE) !== 0;
  }

  set leaseGone(v: boolean) {
    this.#flags = v ? this.#flags | LEASE_GONE : this.#flags & ~LEASE_GONE;
  }

  /** Set by waitForSignal(): honoured even if the handler catches it and returns. */
  get waiting(): WaitForSignal | undefined {
    return this.#rare?.waiting;
  }

  /** Set by snooze(): honoured even if the handler catches the signal and returns. */
  get snoozed(): SnoozeSignal | undefined {
    return this.#rare?.snoozed;
  }

  get signal(): AbortSignal {
    const rare = this.#rareState();
    if (!rare.controller) {
      rare.controller = new AbortController();
      if (rare.abortReason !== undefined) rare.controller.abort(rare.abortReason);
    }
    return rare.controller.signal;
  }

  abort(reason: string): void {
    const rare = this.#rareState();
    if (rare.abortReason !== undefined) return;
    rare.abortReason = reason;
    rare.controller?.abort(reason);
  }

  get aborted(): boolean {
    return this.#rare?.abortReason !== undefined;
  }

  waitForSignal(name: string, opts: { timeoutMs?: number } = {}): never {
    const bad = waitSignalProblem(name, opts.timeoutMs, '');
    if (bad) throw bad;
    const waiting = new WaitForSignal(name, opts.timeoutMs === undefined ? undefined : Math.ceil(opts.timeoutMs));
    this.#rareState().waiting = waiting;
    throw waiting;
  }

  snooze(delayMs: number, opts: { deadlineAtMs?: number } = {}): never {
    const bad = snoozeProblem(delayMs, opts.deadlineAtMs, '');
    if (bad) throw bad;
    const snoozed = roundedSnooze(delayMs, opts.deadlineAtMs);
    this.#rareState().snoozed = snoozed;
    throw snoozed;
  }

  async progress(value: unknown): Promise<void> {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (err) {
      throw new ValidationError('progress', `must be a number or a JSON value (${(err as Error).message})`);
    }
    if (text === undefined) throw new ValidationError('progress', `must be a number or a JSON value (got ${typeof value})`);
    if (Buffer.byteLength(text) > PROGRESS_MAX_BYTES)
      throw new ValidationError('progress', `must be at most ${PROGRESS_MAX_BYTES} bytes as JSON (got ${Buffer.byteLength(text)})`);
    if (this.leaseGone || !(await this.#calls.update(this as HandedJob<unknown>, text, []))) throw new LeaseLostError(this.id, this.token);
  }

  async log(line: string): Promise<void> {
    if (typeof line !== 'string') throw new ValidationError('line', `must be a string (got ${typeof line})`);
    const cut = line.length > LOG_LINE_MAX ? `${line.slice(0, LOG_LINE_MAX - 1)}…` : line;
    if (this.leaseGone || !(await this.#calls.update(this as HandedJob<unknown>, undefined, [cut]))) throw new LeaseLostError(this.id, this.token);
  }

  async extendLease(ms?: number): Promise<void> {
    if (ms !== undefined && (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0 || ms > MAX_DELAY_MS)) {
      // Infinity would keep the job active for ever; zero or less would hand it to a second worker now.
      throw new ValidationError('ms', `must be a number of milliseconds above 0 and at most ${MAX_DELAY_MS} (got ${String(ms)})`);
    }
    if (ms !== undefined) ms = Math.ceil(ms);
    if (this.leaseGone || !(await this.#calls.extend(this as HandedJob<unknown>, ms))) throw new LeaseLostError(this.id, this.token);
  }
}

/**
 * One HandedJob kept for the life of the process, made as a claim makes them. V8 holds the maps
 * a class's instances pass through (one per field its constructor adds) only weakly: when no
 * HandedJob is alive at a full GC (a worker between bursts, or idle), the map dies, and every
 * piece of optimized code built for it is thrown away ("weak objects" in --trace-deopt) and
 * compiled again when jobs come back. One instance alive keeps the map, and that code.
 * Exported so that it is a binding of the module, alive as long as the module is: a const that
 * nothing reads after the module has run would die with it.
 */
export const KEPT_JOB = new HandedJob<undefined>(
  '',
  {
    id: '',
    token: '',
    data: undefined,
    attempt: 1,
    maxAttempts: undefined,
    backoff: undefined,
    // Times as a claim gives them (epoch ms, past the small integers): the fields take the
    // representation real jobs give them, so that the kept map is theirs.
    dueAtMs: 1_700_000_000_000,
    priority: 0,
    createdAtMs: 1_700_000_000_000,
    leaseExpiresAtMs: 1_700_000_000_000,
    traceContext: undefined,
    group: undefined,
    name: undefined,
  },
  undefined,
  1,
  undefined,
  {
    extend: async () => false,
    update: async () => false,
    childResults: async () => undefined,
  },
);
