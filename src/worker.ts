/**
 * A Worker claims due jobs and runs a handler on each: it keeps up to `concurrency` handlers
 * running, claims up to `batch` jobs per round trip, renews their leases, acks or fails them,
 * and sleeps until the next due time (or a wake-up signal) when nothing is due.
 *
 * Constraint: every handed-out job MUST end in exactly one of ack, fail or release; a job left
 * without one stays active until its lease runs out, which makes it late, not lost.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { backoffDelay, checkBackoffResult, decodeBackoff, DEFAULT_BACKOFF, type BackoffFunction, type BackoffOptions } from './backoff.js';
import { ConnectionError, HandlerTimeoutError, SnoozeSignal, UnrecoverableError } from './errors.js';
import { settlesWithin } from './settles-within.js';
import type { Job } from './job.js';
import { logSafely, type Logger, type LogLevel } from './logger.js';
import { fail as failSpan, Tracing } from './tracing.js';
import { parseOptions, parseQueueName, workerOptionsSchema, type WorkerOptions } from './options.js';
import { openStore } from './store/open-store.js';
import type { ClaimedJob, LeaseOutcome, LeaseRef, Store, WakeSubscription, WorkerBeat } from './store/store.js';
import { AckBatcher } from './worker/ack-batcher.js';
import { HandedJob, roundedSnooze, snoozeProblem } from './worker/handed-job.js';
import { LOG_CAP, MAX_RESULT_BYTES } from './limits.js';
import { VERSION } from './version.js';
import { LeaseKeeper } from './worker/lease-keeper.js';
import { WakeTimer } from './worker/wake-timer.js';
import { setLongTimeout, timerDelay } from './timers.js';

export type Handler<T, R = unknown> = (job: Job<T>) => Promise<R> | R;

/** Events, past tense. Listeners that throw are reported as 'error' and never break a job's release. */
export interface WorkerEvents<T> {
  claimed: [job: Job<T>];
  completed: [job: Job<T>, result: unknown];
  failed: [job: Job<T>, error: unknown];
  retried: [job: Job<T>, error: unknown, dueAtMs: number];
  snoozed: [job: Job<T>, dueAtMs: number];
  dead: [job: Job<T> | { id: string; token: string }, reason: string];
  leaseLost: [job: Job<T>];
  released: [job: Job<T>];
  /**
   * The handler ended but its outcome (ack, retry, snooze or hand-back) could not be written,
   * e.g. Redis was unreachable. The job stays active until its lease runs out and then runs
   * again; it may also have been written after all (the error is also reported as 'error').
   */
  settleFailed: [job: Job<T>, error: Error];
  /**
   * Redis is reachable again after an outage, which was reported once, as a ConnectionError on
   * 'error', when it began. `downMs`: how long it lasted, as this worker saw it.
   */
  reconnected: [downMs: number];
  error: [error: Error];
  closed: [];
}

/** How loud each event is in the log (when a logger is given). */
const LOG_LEVELS: Record<keyof WorkerEvents<unknown>, LogLevel> = {
  claimed: 'debug',
  completed: 'debug',
  failed: 'info',
  retried: 'info',
  snoozed: 'debug',
  dead: 'warn',
  leaseLost: 'warn',
  released: 'debug',
  settleFailed: 'warn',
  reconnected: 'info',
  error: 'error',
  closed: 'info',
};

const CLAIM_RETRY_MIN_MS = 100;
const MAX_CLAIMS_IN_FLIGHT = 2;
const CLAIM_RETRY_MAX_MS = 5_000;
/**
 * After its handlers had all of close()'s timeout, a worker still gets this long to hand their
 * jobs back and close its connections; past it, close() resolves whatever Redis does (a job not
 * handed back runs again when its lease runs out).
 */
const CLOSE_GRACE_MS = 1_000;
/**
 * A worker is listed as live while its heartbeat is: one every BEAT_MS (carried by the lease
 * renewal when it has jobs, so a busy worker pays no round trip for it), and its entry expires
 * after three missed ones.
 */
const BEAT_MS = 10_000;
const BEAT_TTL_MS = 3 * BEAT_MS;

/** The handler's result as JSON for a kept job: '' for none, a note when it cannot or should not be kept. */
function resultText(result: unknown): string {
  if (result === undefined) return '';
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (err) {
    return JSON.stringify(`[result not kept: not JSON (${(err as Error).message})]`);
  }
  if (text === undefined) return '';
  if (text.length > MAX_RESULT_BYTES / 4 && Buffer.byteLength(text) > MAX_RESULT_BYTES) {
    return JSON.stringify(`[result not kept: ${Buffer.byteLength(text)} bytes, over the ${MAX_RESULT_BYTES}-byte limit]`);
  }
  return text;
}

/** `<host>-<pid>-<random>`, in characters that are safe in the run state and in a URL. */
function newWorkerId(): string {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 64) || 'host';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}
function errorText(err: unknown, max: number): string {
  let text: string;
  if (err instanceof Error) text = err.stack && err.stack.includes(err.message) ? err.stack : `${err.name}: ${err.message}\n${err.stack ?? ''}`;
  else text = `non-Error thrown: ${typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err))}`;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export class Worker<T = unknown> extends EventEmitter<WorkerEvents<T>> {
  readonly queue: string;
  /** This worker's id: the lease holder shown on its jobs and in `queue.workers()`. */
  readonly id = newWorkerId();
  readonly #startedAtMs = Date.now();
  #lastBeatAt = 0;
  #beatTimer: NodeJS.Timeout | undefined;
  readonly concurrency: number;
  readonly batch: number;
  readonly leaseMs: number;
  readonly #handler: Handler<T>;
  readonly #store: Store;
  readonly #ownsStore: boolean;
  readonly #attempts: number;
  readonly #backoff: BackoffOptions | BackoffFunction;
  readonly #closeTimeoutMs: number;
  readonly #maxErrorLength: number;
  readonly #timeoutMs: number | undefined;
  readonly #logger: Logger | undefined;
  readonly #tracing: Tracing | undefined;

  readonly #running = new Map<string, HandedJob<T>>();
  readonly #acks: AckBatcher;
  readonly #timer: WakeTimer;
  readonly #leases: LeaseKeeper;
  /**
   * Whether jobs may be due: set by a timer, a signal or a claim that left jobs behind; cleared
   * by a claim that found no more, unless a wake-up came after that claim was sent.
   */
  #workAvailable = true;
  #wakes = 0;
  /** Claims under way, and the handler slots they hold for the jobs they will bring. */
  #claims = 0;
  #reserved = 0;
  #claimRetryMs = CLAIM_RETRY_MIN_MS;
  readonly #claimsInFlight = new Set<Promise<void>>();
  /** Leases of jobs that arrived after close() began, to hand back. */
  readonly #lateClaims: LeaseRef[] = [];
  #started = false;
  #closing: Promise<void> | undefined;
  #subscription: Promise<WakeSubscription | undefined> | undefined;
  /** The subscription once it is up. */
  #subscribed: WakeSubscription | undefined;
  /** Stops watching the store's connection (set by start). */
  #unwatch: () => void = () => {};
  /** When the current outage began (performance.now()); undefined while Redis answers. */
  #outageSince: number | undefined;
  /** Settles whenever a handler ends, so close() can wait for the last one. */
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;
  /** Outcomes of finished handlers on their way to the store (they never reject). */
  readonly #settling = new Set<Promise<void>>();

  constructor(queue: string, handler: Handler<T>, opts: WorkerOptions<T> = {}) {
    super();
    // null is as good as nothing here (a common way to say "defaults").
    opts ??= {};
    this.queue = parseQueueName(queue);
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    const o = parseOptions(workerOptionsSchema, opts);
    this.#handler = handler;
    this.concurrency = o.concurrency ?? 10;
    this.batch = o.batch ?? Math.min(this.concurrency, 50);
    this.leaseMs = o.leaseMs ?? 30_000;
    this.#attempts = o.attempts ?? 3;
    this.#backoff = (opts.backoff ?? DEFAULT_BACKOFF) as BackoffOptions | BackoffFunction;
    // Past ~24.8 days a Node timer fires at once; waiting that long is waiting for ever anyway.
    this.#closeTimeoutMs = timerDelay(o.closeTimeoutMs ?? 30_000);
    this.#maxErrorLength = o.maxErrorLength ?? 8192;
    this.#timeoutMs = o.timeoutMs;
    this.#logger = opts.logger;
    this.#tracing = Tracing.from(opts.tracing);
    const { store, shards, owned } = openStore(opts);
    shards.declare(this.queue, o.shards);
    this.#store = store;
    this.#ownsStore = owned;
    this.#acks = new AckBatcher((leases) => this.#store.complete(this.queue, leases));
    this.#timer = new WakeTimer(() => this.#wake(), o.idleCheckMs ?? 30_000);
    this.#leases = new LeaseKeeper({
      intervalMs: Math.max(50, Math.floor(this.leaseMs / 3)),
      running: () => [...this.#running.values()].filter((j) => !j.leaseGone),
      extend: (leases) => this.#extend(leases as HandedJob<T>[], this.leaseMs),
      onLost: (job) => this.#leaseLost(job as HandedJob<T>),
      onError: (err) => this.#emitError(err),
    });
    if (o.autostart !== false) this.start();
  }

  /** Starts claiming (done by the constructor unless `autostart: false`). */
  start(): void {
    if (this.#started || this.#closing) return;
    this.#started = true;
    this.#subscription = this.#store
      .subscribe([this.queue], {
        onWake: (dueAtMs) => this.#signalled(dueAtMs),
        onResubscribed: () => {
          this.#reachable();
          this.#wake();
        },
        onError: (err) => this.#emitError(err),
      })
      .then((sub) => {
        this.#subscribed = sub;
        // A job added between the first claim and the subscription taking effect sent its
        // signal to no one; one claim now finds it.
        this.#wake();
        return sub;
      })
      .catch((err) => {
        // Without signals the worker still finds work through its idle check; it is only slower.
        this.#emitError(err);
        return undefined;
      });
    // The main connection's state, from the start: calls wait through outages, so a wrong
    // address would otherwise look like an idle worker forever.
    this.#unwatch = this.#store.watchConnection({ onDown: (err) => this.#emitError(err), onUp: () => this.#reachable() });
    this.#leases.start();
    this.#beat();
    this.#beatTimer = setInterval(() => {
      if (performance.now() - this.#lastBeatAt >= BEAT_MS * 0.9) this.#beat();
    }, BEAT_MS);
    this.#beatTimer.unref();
    this.#pump();
  }

  #beatInfo(): WorkerBeat {
    const info = {
      host: hostname(),
      pid: process.pid,
      queue: this.queue,
      concurrency: this.concurrency,
      running: this.#running.size,
      startedAtMs: this.#startedAtMs,
      version: VERSION,
    };
    return { id: this.id, info: JSON.stringify(info), ttlMs: BEAT_TTL_MS };
  }

  /** A heartbeat of its own (no lease renewal carried one lately); the first also names the queue in the registry. */
  #beat(): void {
    this.#lastBeatAt = performance.now();
    const first = this.#store.register(this.queue);
    first.then(() => this.#store.beat(this.queue, this.#beatInfo())).catch((err) => this.#emitError(err));
  }

  /**
   * The Redis server's clock (epoch ms) as this worker last measured it, from the `nowMs` of its
   * claims, carried forward on the local monotonic clock: the clock due times are kept by. Before
   * the first claim answered, the host's clock.
   */
  serverNow(): number {
    return this.#timer.synced ? this.#timer.serverNow() : Date.now();
  }

  /** Jobs whose handlers are running. */
  get running(): number {
    return this.#running.size;
  }

  #signalled(dueAtMs: number): void {
    if (!this.#timer.synced || dueAtMs <= this.#timer.serverNow() + 1) this.#wake();
    else this.#timer.wakeAt(dueAtMs);
  }

  #wake(): void {
    this.#wakes++;
    this.#workAvailable = true;
    this.#pump();
  }

  #pump(): void {
    if (this.#closing || !this.#workAvailable || !this.#started) return;
    // A second claim may go out while one is under way, so Redis never waits on this process
    // while there are free slots and due jobs; more than two buys nothing.
    if (this.#claims >= MAX_CLAIMS_IN_FLIGHT) return;
    const free = this.concurrency - this.#running.size - this.#reserved;
    if (free <= 0) return;
    const want = Math.min(this.batch, free);
    this.#claims++;
    this.#reserved += want;
    const wakesBefore = this.#wakes;
    const sentAt = performance.now();
    const claim = this.#store.claim(this.queue, want, this.leaseMs, this.#attempts, this.id).then(
      (res) => {
        this.#claims--;
        this.#reserved -= want;
        this.#claimRetryMs = CLAIM_RETRY_MIN_MS;
        this.#reachable();
        this.#timer.observe(res.nowMs, sentAt, performance.now());
        // A claim that comes back after close() began brings jobs no one will run: close
        // hands them back at once instead of leaving them to their lease.
        if (this.#closing) this.#lateClaims.push(...res.jobs.map((c): LeaseRef => ({ id: c.id, token: c.token })));
        else for (const c of res.jobs) this.#start(c);
        for (const u of res.unreadable) this.#buryCorrupt(u, u.reason);
        for (const e of res.errors ?? []) this.#emitError(e);
        if (!res.more && this.#wakes === wakesBefore) this.#workAvailable = false;
        if (!this.#closing) this.#timer.wakeAt(res.nextWakeMs);
        this.#pump();
      },
      (err) => {
        this.#claims--;
        this.#reserved -= want;
        this.#workAvailable = false;
        this.#emitError(err);
        // Back off while Redis is unreachable; the timer keeps at most one retry pending.
        this.#timer.wakeIn(this.#claimRetryMs);
        this.#claimRetryMs = Math.min(CLAIM_RETRY_MAX_MS, this.#claimRetryMs * 2);
      },
    );
    this.#claimsInFlight.add(claim);
    void claim.finally(() => this.#claimsInFlight.delete(claim));
  }

  #start(c: ClaimedJob): void {
    let data: unknown;
    let corrupt: string | undefined;
    if (c.data === undefined) corrupt = 'corrupt job: the body has no data field (d)';
    else {
      try {
        data = JSON.parse(c.data);
      } catch (err) {
        corrupt = `corrupt job: data is not valid JSON (${(err as Error).message})`;
      }
    }
    if (corrupt !== undefined) {
      this.#buryCorrupt(c, corrupt);
      return;
    }
    const job = new HandedJob<T>(
      this.queue,
      c,
      data as T,
      this.#attempts,
      (j, ms) => this.#extendOne(j, ms),
      (j, progress, lines) => this.#update(j, progress, lines),
    );
    this.#running.set(job.token, job);
    this.#emit('claimed', job);
    let run: Promise<unknown>;
    if (this.#tracing) {
      const traced = this.#tracing.process(this.queue, job, c.traceContext, () => Promise.resolve().then(() => this.#handler(job)));
      run = traced.result;
      const span = traced.span;
      run.then(
        () => span.end(),
        (err) => {
          failSpan(span, err);
          span.end();
        },
      );
    } else run = Promise.resolve().then(() => this.#handler(job));
    if (this.#timeoutMs !== undefined) {
      const ms = this.#timeoutMs;
      const timer = setLongTimeout(() => {
        job.abort('timeout');
        this.#finish(job, () => this.#fail(job, new HandlerTimeoutError(ms)));
      }, ms);
      const clear = () => timer.clear();
      run.then(clear, clear);
    }
    run.then(
      (result) => this.#finish(job, () => (job.snoozed ? this.#snooze(job, job.snoozed) : this.#complete(job, result))),
      (err) =>
        this.#finish(job, () => {
          const snooze = job.snoozed ?? (err instanceof SnoozeSignal ? err : undefined);
          return snooze ? this.#snooze(job, snooze) : this.#fail(job, err);
        }),
    );
  }

  /** Takes a handler's outcome, once: a handler that ends after its timeout changes nothing. */
  #finish(job: HandedJob<T>, settle: () => Promise<void>): void {
    if (job.settled) return;
    job.settled = true;
    this.#running.delete(job.token);
    // The slot is free once the handler returned; its ack travels with the next claim.
    const settled = job.leaseGone
      ? Promise.resolve()
      : settle().catch((err) => {
          this.#emitError(err);
          this.#emit('settleFailed', job, err instanceof Error ? err : new Error(String(err)));
        });
    this.#settling.add(settled);
    void settled.finally(() => {
      this.#settling.delete(settled);
      if (this.#running.size === 0) this.#idle?.resolve();
    });
    this.#pump();
  }

  async #complete(job: HandedJob<T>, result: unknown): Promise<void> {
    const sentAt = this.#timer.serverNow();
    const outcome = await this.#acks.ack(job.id, job.token, resultText(result));
    // 'not_found' is a re-sent ack whose first run landed, or a job that another worker
    // finished after this lease ran out: which one, the lease deadline tells.
    if (outcome === 'lease_lost' || (outcome === 'not_found' && sentAt >= job.leaseDeadlineMs)) this.#leaseLost(job);
    else this.#emit('completed', job, result);
  }

  async #fail(job: HandedJob<T>, err: unknown): Promise<void> {
    if (this.#closing && job.aborted) {
      // Most likely the handler gave up because we asked it to: hand the job back, attempt unspent.
      await this.#release([job]);
      return;
    }
    this.#emit('failed', job, err);
    const res = await this.#store.fail(this.queue, {
      id: job.id,
      token: job.token,
      error: errorText(err, this.#maxErrorLength),
      retryDelayMs: this.#retryDelay(job, err),
      dead: err instanceof UnrecoverableError,
      defaultMaxAttempts: this.#attempts,
    });
    if (res.outcome === 'retried') this.#emit('retried', job, err, res.dueAtMs!);
    else if (res.outcome === 'dead') this.#emit('dead', job, errorText(err, this.#maxErrorLength));
    else if (res.outcome === 'lease_lost') this.#leaseLost(job);
  }

  async #snooze(job: HandedJob<T>, signal: SnoozeSignal): Promise<void> {
    // A SnoozeSignal a handler built itself skipped job.snooze()'s checks: a bad one fails the attempt.
    const bad = snoozeProblem(signal.delayMs, signal.deadlineAtMs, 'SnoozeSignal.');
    if (bad) return this.#fail(job, bad);
    signal = roundedSnooze(signal.delayMs, signal.deadlineAtMs);
    const res = await this.#store.snooze(this.queue, {
      id: job.id,
      token: job.token,
      delayMs: signal.delayMs,
      deadlineAtMs: signal.deadlineAtMs,
    });
    if (res.outcome === 'snoozed') this.#emit('snoozed', job, res.dueAtMs!);
    else if (res.outcome === 'dead') this.#emit('dead', job, 'snooze deadline passed');
    else if (res.outcome === 'lease_lost') this.#leaseLost(job);
  }

  #retryDelay(job: HandedJob<T>, err: unknown): number {
    const own = decodeBackoff(job.backoffSpec);
    const policy = own ?? this.#backoff;
    try {
      return typeof policy === 'function' ? checkBackoffResult(policy(job.attempt, err)) : backoffDelay(policy, job.attempt);
    } catch (e) {
      this.#emitError(e as Error);
      return backoffDelay(DEFAULT_BACKOFF, job.attempt);
    }
  }

  #buryCorrupt(c: LeaseRef, reason: string): void {
    this.#store.fail(this.queue, { id: c.id, token: c.token, error: reason, retryDelayMs: 0, dead: true, defaultMaxAttempts: this.#attempts }).then(
      () => this.#emit('dead', { id: c.id, token: c.token }, reason),
      (err) => this.#emitError(err),
    );
  }

  /** Extends leases and records the new deadlines (measured from when the call was sent, to err early); carries the heartbeat. */
  async #extend(jobs: HandedJob<T>[], ms: number): Promise<LeaseOutcome[]> {
    const sentAt = this.#timer.serverNow();
    this.#lastBeatAt = performance.now();
    const outcomes = await this.#store.extend(
      this.queue,
      jobs.map((j): LeaseRef => ({ id: j.id, token: j.token })),
      ms,
      this.#beatInfo(),
    );
    jobs.forEach((j, i) => {
      if (outcomes[i] === 'ok') j.leaseDeadlineMs = Math.max(j.leaseDeadlineMs, sentAt + ms);
    });
    return outcomes;
  }

  async #extendOne(job: HandedJob<T>, ms: number | undefined): Promise<boolean> {
    const [outcome] = await this.#extend([job], ms ?? this.leaseMs);
    if (outcome !== 'ok') this.#leaseLost(job);
    return outcome === 'ok';
  }

  async #update(job: HandedJob<unknown>, progress: string | undefined, lines: string[]): Promise<boolean> {
    const outcome = await this.#store.update(this.queue, { id: job.id, token: job.token, progress, lines, logCap: LOG_CAP });
    if (outcome !== 'ok') this.#leaseLost(job as HandedJob<T>);
    return outcome === 'ok';
  }

  #leaseLost(job: HandedJob<T>): void {
    if (job.leaseGone) return;
    job.leaseGone = true;
    job.abort('lease lost');
    this.#emit('leaseLost', job);
  }

  async #release(jobs: HandedJob<T>[]): Promise<void> {
    const live = jobs.filter((j) => !j.leaseGone);
    for (const j of live) j.leaseGone = true;
    if (live.length === 0) return;
    const outcomes = await this.#store.release(
      this.queue,
      live.map((j): LeaseRef => ({ id: j.id, token: j.token })),
    );
    live.forEach((j, i) => {
      if (outcomes[i] === 'ok') this.#emit('released', j);
    });
  }

  /**
   * Stops claiming, asks running handlers to stop (their `signal` aborts), waits for them up
   * to `timeoutMs`, then hands the unfinished jobs back so another worker runs them at once.
   */
  close(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.#closing ??= this.#close(opts.timeoutMs ?? this.#closeTimeoutMs);
    return this.#closing;
  }

  async #close(timeoutMs: number): Promise<void> {
    // Every wait below is bounded: close() resolves within timeoutMs (plus CLOSE_GRACE_MS when
    // running handlers used all of it), whatever Redis does.
    const deadline = performance.now() + timeoutMs;
    const left = () => Math.max(deadline - performance.now(), 0);
    const bounded = (p: Promise<unknown>) => settlesWithin(p, left());
    this.#timer.stop();
    clearInterval(this.#beatTimer);
    this.#unwatch();
    // A subscription still being set up (Redis unreachable, or its connection half-open) is
    // closed whenever it arrives; close() does not wait for it.
    if (this.#subscribed) await bounded(this.#subscribed.close());
    else void this.#subscription?.then((sub) => sub?.close());
    // While Redis is unreachable a claim waits unsent in the client's queue, and closing the
    // store drops it: nothing to wait for. (One that ran and lost its reply only leased its
    // jobs; they go out again when the lease runs out.)
    const down = this.#outageSince !== undefined;
    if (!down) await bounded(Promise.allSettled([...this.#claimsInFlight]));
    if (this.#lateClaims.length > 0) {
      await bounded(this.#store.release(this.queue, this.#lateClaims.splice(0)).catch((err) => this.#emitError(err)));
    }
    for (const job of this.#running.values()) job.abort('worker closing');
    if (this.#running.size > 0) await bounded(this.#untilIdle());
    // Handlers still running used (nearly) all of the timeout and leave little or nothing for
    // handing their jobs back: those get at least a short grace. (Testing for exactly no time
    // left raced the timer that ended the wait, and a job then waited out its whole lease.)
    const graceUntil = this.#running.size > 0 ? Math.max(deadline, performance.now() + CLOSE_GRACE_MS) : deadline;
    const inGrace = (p: Promise<unknown>) => settlesWithin(p, graceUntil - performance.now());
    const unfinished = [...this.#running.values()];
    await inGrace(
      this.#release(unfinished).catch((err: unknown) => {
        this.#emitError(err);
        for (const job of unfinished) this.#emit('settleFailed', job, err instanceof Error ? err : new Error(String(err)));
      }),
    );
    this.#leases.stop();
    await inGrace(this.#acks.drain());
    // Off the list of live workers at once, rather than when its heartbeat runs out.
    if (this.#started && !down) await inGrace(this.#store.beat(this.queue, this.#beatInfo(), true).catch(() => {}));
    // Settlements (fail, release, snooze calls) of handlers that ended: each shard of a sharded
    // queue answers in its own time, so the last may come well after the first.
    if (this.#settling.size > 0) await inGrace(Promise.all([...this.#settling]));
    if (this.#ownsStore) await inGrace(this.#store.close());
    this.#emit('closed');
  }

  #untilIdle(): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.#idle = { promise, resolve };
    return promise;
  }

  /** The store this worker claims from (shared with a Queue through the `store` option); metrics watch it. */
  get store(): Store {
    return this.#store;
  }

  #emit<K extends keyof WorkerEvents<T>>(event: K, ...args: WorkerEvents<T>[K]): void {
    if (this.#logger) this.#log(event, args);
    try {
      (this.emit as (e: K, ...a: WorkerEvents<T>[K]) => boolean)(event, ...args);
    } catch (err) {
      if (event !== 'error') this.#emitError(err as Error);
    }
  }

  #log(event: keyof WorkerEvents<T>, args: unknown[]): void {
    const obj: Record<string, unknown> = { queue: this.queue, event };
    const [first, second, third] = args as [{ id?: string; attempt?: number } | Error | undefined, unknown, unknown];
    if (event === 'error') obj.err = first;
    else if (first && typeof first === 'object' && !(first instanceof Error)) {
      obj.jobId = first.id;
      if (first.attempt !== undefined) obj.attempt = first.attempt;
    }
    if (event === 'failed' || event === 'retried' || event === 'settleFailed') obj.err = second;
    if (event === 'dead') obj.reason = second;
    if (event === 'retried') obj.dueAtMs = third;
    if (event === 'snoozed') obj.dueAtMs = second;
    if (event === 'reconnected') obj.downMs = first;
    logSafely(this.#logger, LOG_LEVELS[event], obj, `delayq: ${event}`);
  }

  /** Redis answered: ends an outage, reported once. */
  #reachable(): void {
    if (this.#outageSince === undefined) return;
    const downMs = Math.round(performance.now() - this.#outageSince);
    this.#outageSince = undefined;
    this.#emit('reconnected', downMs);
  }

  #emitError(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error instanceof ConnectionError) {
      // An outage is reported when it begins, not on every call or reconnect attempt during it.
      if (this.#outageSince !== undefined) return;
      this.#outageSince = performance.now();
    }
    if (this.listenerCount('error') === 0) {
      if (this.#logger) {
        this.#log('error', [error]);
        return;
      }
      // An 'error' event without a listener would crash the process; a warning does not.
      process.emitWarning(`delayq worker (${this.queue}): ${error.message}`, 'DelayqWarning');
      return;
    }
    this.#emit('error', error);
  }
}
