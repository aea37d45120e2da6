/**
 * A Worker claims due jobs and runs a handler on each: it keeps up to `concurrency` handlers
 * running, claims up to `batch` jobs per round trip, renews their leases, acks or fails them,
 * and sleeps until the next due time (or a wake-up signal) when nothing is due.
 *
 * Constraint: every handed-out job MUST end in exactly one of ack, fail or release; a job left
 * without one stays active until its lease runs out, which makes it late, not lost.
 *
 * The parts with a job of their own are in worker/ (lease renewal, acks, the wake timer, the
 * heartbeat, outage tracking, the log, defaults). What stays here, about 600 lines, is
 * one thing: the life of a hand-out from claim to settlement and close. The claim loop, the
 * handler slots, the settling outcomes and close() all read and write the same few fields
 * (running jobs, reserved slots, claims in flight), and the constraint above is kept only by
 * seeing them together.
 */
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { backoffDelay, checkBackoffResult, decodeBackoff, DEFAULT_BACKOFF, type BackoffFunction, type BackoffOptions } from './backoff.js';
import { ConnectionError, HandlerTimeoutError, RateLimitSignal, SnoozeSignal, UnrecoverableError, WaitForSignal } from './errors.js';
import { LOG_CAP } from './limits.js';
import { settlesWithin } from './settles-within.js';
import type { Job } from './job.js';
import type { Logger } from './logger.js';
import { fail as failSpan, Tracing } from './tracing.js';
import { parseOptions, parseQueueName, workerOptionsSchema, type WorkerOptions } from './options.js';
import { openStore } from './store/open-store.js';
import type { ClaimedJob, LeaseOutcome, LeaseRef, Store, WakeSubscription } from './store/store.js';
import { AckBatcher } from './worker/ack-batcher.js';
import { WORKER_DEFAULTS } from './worker/defaults.js';
import { logWorkerEvent } from './worker/event-log.js';
import type { WorkerEvents } from './worker/events.js';
import { HandedJob, type JobCalls, rateHoldProblem, roundedHold, roundedSnooze, snoozeProblem, waitSignalProblem } from './worker/handed-job.js';
import { Heartbeat } from './worker/heartbeat.js';
import { LeaseKeeper } from './worker/lease-keeper.js';
import { OutageTracker } from './worker/outage.js';
import { RunningJobs } from './worker/running-jobs.js';
import { errorText, newWorkerId, readableThrown, resultText } from './worker/outcome-text.js';
import { WakeTimer } from './worker/wake-timer.js';
import { routeByName } from './worker/route-by-name.js';
import { type IsolatedHandler, isolatedWorkerHandler } from './worker/isolation/pool.js';
import { setLongTimeout, timerDelay } from './timers.js';

/** How long a starting worker waits for its wake subscription before its first claim. */
const FIRST_CLAIM_WAIT_MS = 2_000;

export type Handler<T, R = unknown> = (job: Job<T>) => Promise<R> | R;

/**
 * Handlers by job name (`add(data, { name })`): a job runs the handler of its name; `default`,
 * when given, runs a job whose name has no handler here, or that has no name. Any other job
 * fails its attempt with an error that names its name and the names this worker handles (it is
 * retried as any failure is: a worker that knows the name may be on its way).
 * @example new Worker('mail', { 'send-email': sendEmail, 'send-sms': sendSms })
 */
export type Handlers<T, R = unknown> = { readonly [name: string]: Handler<T, R> };

export type { WorkerEvents };

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return v !== null && (typeof v === 'object' || typeof v === 'function') && typeof (v as PromiseLike<unknown>).then === 'function';
}

/** Whether a handler's error says it stopped because its signal aborted: the signal's reason, or an AbortError. */
function gaveUp(job: { signal: AbortSignal }, err: unknown): boolean {
  return err === job.signal.reason || (err instanceof Error && err.name === 'AbortError');
}

/** A settled promise, for a reaction to run code in a microtask of its own (#startAll). */
const SETTLED = Promise.resolve();

const CLAIM_RETRY_MIN_MS = 100;
const MAX_CLAIMS_IN_FLIGHT = 2;
const CLAIM_RETRY_MAX_MS = 5_000;
/**
 * After its handlers had all of close()'s timeout, a worker still gets this long to hand their
 * jobs back and close its connections; past it, close() resolves whatever Redis does (a job not
 * handed back runs again when its lease runs out).
 */
const CLOSE_GRACE_MS = 1_000;

export class Worker<T = unknown> extends EventEmitter<WorkerEvents<T>> {
  readonly queue: string;
  /** This worker's id: the lease holder shown on its jobs and in `queue.workers()`. */
  readonly id = newWorkerId();
  readonly concurrency: number;
  readonly batch: number;
  readonly leaseMs: number;
  readonly #handler: Handler<T>;
  /** The pool of threads or processes of an isolated handler (`isolation`), closed by close(). */
  readonly #isolated: IsolatedHandler<T> | undefined;
  readonly #store: Store;
  readonly #ownsStore: boolean;
  readonly #attempts: number;
  readonly #backoff: BackoffOptions | BackoffFunction;
  readonly #closeTimeoutMs: number;
  readonly #maxErrorLength: number;
  readonly #timeoutMs: number | undefined;
  readonly #logger: Logger | undefined;
  readonly #tracing: Tracing | undefined;

  readonly #running = new RunningJobs<HandedJob<T>>();
  readonly #acks: AckBatcher<HandedJob<T>>;
  /** What every HandedJob of this worker calls back (one object, not closures per job). */
  readonly #calls: JobCalls;
  readonly #timer: WakeTimer;
  readonly #leases: LeaseKeeper;
  readonly #heartbeat: Heartbeat;
  /**
   * Whether jobs may be due: set by a timer, a signal or a claim that left jobs behind; cleared
   * by a claim that found no more, unless a wake-up came after that claim was sent.
   */
  #workAvailable = true;
  /**
   * The last claim answered that more jobs are due than it brought: a backlog, where a second
   * claim in flight keeps Redis busy. After a wake-up (a timer, a signal) one claim goes alone.
   */
  #backlog = false;
  #wakes = 0;
  /** Claims under way, and the handler slots they hold for the jobs they will bring. */
  #claims = 0;
  #reserved = 0;
  #claimRetryMs = CLAIM_RETRY_MIN_MS;
  /** Set from a claim's sending until the turn of the event loop ends (see #pump). */
  #claimSentThisTurn = false;
  /** A pump is booked for the turn's end (#atTurnEnd); #turnEnds is set while it runs. */
  #turnEndBooked = false;
  #turnEnds = false;
  readonly #turnEnd = () => {
    this.#turnEndBooked = false;
    this.#claimSentThisTurn = false;
    this.#turnEnds = true;
    this.#pump();
    this.#turnEnds = false;
  };
  readonly #claimsInFlight = new Set<Promise<void>>();
  /** Leases of jobs that arrived after close() began, to hand back. */
  readonly #lateClaims: LeaseRef[] = [];
  #started = false;
  #closing: Promise<void> | undefined;
  /**
   * close() has resolved: calls it gave up on (an ack or hand-back waiting on an unreachable
   * Redis) may still fail later, and are not reported (their jobs come back when their leases
   * end, as close() promises); the logger, if any, still hears of them.
   */
  #closed = false;
  #subscription: Promise<WakeSubscription | undefined> | undefined;
  /** The subscription once it is up. */
  #subscribed: WakeSubscription | undefined;
  /** Stops watching the store's connection (set by start). */
  #unwatch: () => void = () => {};
  readonly #outage = new OutageTracker();
  /** Settles whenever a handler ends, so close() can wait for the last one. */
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;
  /** Outcomes of finished handlers on their way to the store (they never reject). */
  readonly #settling = new Set<Promise<void>>();

  /**
   * `handler` runs every job; or give handlers by job name (Handlers), with an optional `default`.
   * @example new Worker('orders', { 'cancel-unpaid': cancelUnpaid, default: logAndDrop })
   * Or, with `isolation`, a module path (or file URL) run in threads or processes.
   * @example new Worker('images', './resize.js', { isolation: 'thread' })
   */
  constructor(queue: string, handler: Handler<T> | Handlers<T> | string | URL, opts: WorkerOptions<T> = {}) {
    super();
    // null is as good as nothing here (a common way to say "defaults").
    opts ??= {};
    this.queue = parseQueueName(queue);
    if (typeof handler !== 'function' && typeof handler !== 'string' && (typeof handler !== 'object' || handler === null || Array.isArray(handler)))
      throw new TypeError('handler must be a function, or an object of handlers by job name');
    const o = parseOptions(workerOptionsSchema, opts);
    this.concurrency = o.concurrency ?? WORKER_DEFAULTS.concurrency;
    this.#isolated = isolatedWorkerHandler<T>(handler, o, this.concurrency);
    this.#handler = this.#isolated?.handler ?? (typeof handler === 'function' ? handler : (routeByName(handler as Handlers<T>) as Handler<T>));
    this.batch = o.batch ?? Math.min(this.concurrency, WORKER_DEFAULTS.batchMax);
    this.leaseMs = o.leaseMs ?? WORKER_DEFAULTS.leaseMs;
    this.#attempts = o.attempts ?? WORKER_DEFAULTS.attempts;
    this.#backoff = (opts.backoff ?? WORKER_DEFAULTS.backoff) as BackoffOptions | BackoffFunction;
    // Past ~24.8 days a Node timer fires at once; waiting that long is waiting for ever anyway.
    this.#closeTimeoutMs = timerDelay(o.closeTimeoutMs ?? WORKER_DEFAULTS.closeTimeoutMs);
    this.#maxErrorLength = o.maxErrorLength ?? WORKER_DEFAULTS.maxErrorLength;
    this.#timeoutMs = o.timeoutMs;
    this.#logger = opts.logger;
    this.#tracing = Tracing.from(opts.tracing);
    const { store, shards, owned } = openStore(opts);
    shards.declare(this.queue, o.shards);
    this.#store = store;
    this.#ownsStore = owned;
    this.#acks = new AckBatcher<HandedJob<T>>(
      (leases) => this.#store.complete(this.queue, leases),
      (job, result, sentAt, outcome, err) => this.#acked(job, result, sentAt, outcome, err),
      (err) => this.#emitError(err),
      () => this.#timer.serverNow(),
    );
    this.#calls = {
      extend: (job, ms) => this.#extendOne(job as HandedJob<T>, ms),
      update: (job, progress, lines) => this.#update(job, progress, lines),
      childResults: async (job) => (await this.#store.holdOf(this.queue, job.id))?.children,
    };
    this.#timer = new WakeTimer(() => this.#wake(), o.idleCheckMs ?? WORKER_DEFAULTS.idleCheckMs);
    this.#leases = new LeaseKeeper({
      intervalMs: Math.max(50, Math.floor(this.leaseMs / 3)),
      running: () => this.#running.values().filter((j) => !j.leaseGone),
      extend: (leases) => this.#extend(leases as HandedJob<T>[], this.leaseMs),
      onLost: (job) => this.#leaseLost(job as HandedJob<T>),
      onError: (err) => this.#emitError(err),
    });
    this.#heartbeat = new Heartbeat({
      store,
      queue: this.queue,
      id: this.id,
      concurrency: this.concurrency,
      running: () => this.#running.size,
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
        onRevoked: (token, why) => this.#revoked(token, why),
        onResubscribed: () => {
          this.#reachable();
          this.#wake();
          // A cancel or fail of a running job told while the subscription was down was missed:
          // renewing the leases now finds those that were ended (lease lost), not a third of a
          // lease later.
          void this.#leases.renew();
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
        // A close() that began before the SUBSCRIBE was answered cut it short: nothing is wrong.
        // Otherwise the worker still finds work through its idle check; it is only slower.
        if (!this.#closing) this.#emitError(err);
        return undefined;
      });
    // The main connection's state, from the start: calls wait through outages, so a wrong
    // address would otherwise look like an idle worker forever.
    this.#unwatch = this.#store.watchConnection({ onDown: (err) => this.#emitError(err), onUp: () => this.#reachable() });
    this.#leases.start();
    this.#heartbeat.start();
    // The first claim waits for the subscription (a round trip; at most FIRST_CLAIM_WAIT_MS): a
    // job handed out before it is live could be cancelled unheard, its holder learning only at
    // its next lease renewal.
    const first = setTimeout(() => this.#pump(), FIRST_CLAIM_WAIT_MS);
    first.unref();
    void this.#subscription.finally(() => {
      clearTimeout(first);
      this.#pump();
    });
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

  /**
   * A job of this worker was cancelled or failed from outside as it ran: its lease ended in the
   * store, so the handler is told (job.signal aborts), its slot frees now (a handler that never
   * settles costs this worker nothing), and its outcome, if it ever comes, is dropped.
   */
  #revoked(token: string, why: 'cancelled' | 'failed'): void {
    const job = this.#running.get(token);
    if (!job || job.leaseGone) return;
    job.leaseGone = true;
    job.abort(why);
    this.#end(job);
    this.#emit('revoked', job, why);
    this.#pump();
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
    // while there are free slots and due jobs; more than two buys nothing. Only in a backlog:
    // woken for a job or two, the second claim finds nothing and costs Redis a call (at 400
    // jobs/s, 2.4 claims a job, most of them empty, at ~80 µs of Redis CPU each: bench, low).
    if (this.#claims >= MAX_CLAIMS_IN_FLIGHT || (this.#claims > 0 && !this.#backlog)) return;
    const free = this.concurrency - this.#running.size - this.#reserved;
    if (free <= 0) return;
    // A second claim waits for room for a whole batch. A claim's cost is mostly per call: sent
    // for each slot as it freed, claims handed out a job or two each (measured: 3,189 script
    // calls for 100,000 jobs, against 2,202 this way, and 12% less Redis CPU per job).
    if (this.#claims > 0 && free < this.batch) return;
    // A claim for part of a batch, while handlers run, waits for the turn's end: when two claims'
    // jobs start in one turn, the first to end found a slot or two free and claimed for those
    // alone, with the other 199 about to end (a tenth of a dispatch's claims brought one job, and
    // each took one of the two claims in flight). At the turn's end the ended handlers' slots are
    // free; a slow handler's slot is claimed for then, a turn later than it ended.
    if (free < this.batch && this.#running.size > 0 && !this.#turnEnds) {
      this.#atTurnEnd();
      return;
    }
    // One claim per turn of the event loop. Two claims written together reach Redis in one read,
    // and Redis answers both only after running both: the worker then waits for both, runs both
    // batches while Redis waits, and the two take turns instead of overlapping (seen in a trace of
    // claims: sent in pairs, answered in pairs). A turn apart, the second claim runs in Redis
    // while the worker runs the first's jobs (dispatch +7%, mean of three alternating runs).
    if (this.#claimSentThisTurn) return;
    this.#claim(Math.min(this.batch, free));
  }

  /** Books one pump for the end of this turn of the event loop (setImmediate: after its I/O). */
  #atTurnEnd(): void {
    if (this.#turnEndBooked) return;
    this.#turnEndBooked = true;
    setImmediate(this.#turnEnd);
  }

  /**
   * Sends a claim for `want` jobs. Apart from #pump, which runs each time a handler ends and
   * mostly finds nothing to do: the closures here would otherwise make #pump allocate their
   * context on every call (~78 B per job, bench/worker-alloc.ts).
   */
  #claim(want: number): void {
    this.#claimSentThisTurn = true;
    this.#atTurnEnd();
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
        else this.#startAll(res.jobs);
        for (const u of res.unreadable) this.#buryCorrupt(u, u.reason);
        for (const e of res.errors ?? []) this.#emitError(e);
        this.#backlog = res.more;
        if (!res.more && this.#wakes === wakesBefore) this.#workAvailable = false;
        if (!this.#closing) this.#timer.wakeAt(res.nextWakeMs);
        this.#pump();
      },
      (err) => {
        this.#claims--;
        this.#reserved -= want;
        this.#workAvailable = false;
        this.#backlog = false;
        this.#emitError(err);
        // Back off while Redis is unreachable; the timer keeps at most one retry pending.
        this.#timer.wakeIn(this.#claimRetryMs);
        this.#claimRetryMs = Math.min(CLAIM_RETRY_MAX_MS, this.#claimRetryMs * 2);
      },
    );
    this.#claimsInFlight.add(claim);
    void claim.finally(() => this.#claimsInFlight.delete(claim));
  }

  /**
   * Starts a claim's jobs: each is running (and 'claimed') at once; their handlers run in claim
   * order in one microtask, each as it would after an await (one microtask per claim at most,
   * not a closure and a microtask per job).
   */
  #startAll(claimed: ClaimedJob[]): void {
    const before = this.#readyCount;
    // Index loops, not for-of: a for-of step here left an iterator result per job on the heap.
    for (let i = 0; i < claimed.length; i++) {
      const job = this.#start(claimed[i]!);
      if (job) this.#ready[this.#readyCount++] = job;
    }
    // A reaction on a settled promise, not queueMicrotask: Node's queueMicrotask makes an
    // AsyncResource and a bound function per call, and with none alive at a full GC (a worker
    // between bursts) their map died and this path's optimized code was thrown away with it.
    if (before === 0 && this.#readyCount > 0) void SETTLED.then(this.#runReady);
  }

  /**
   * Runs the handlers of the jobs #startAll made ready, in the order they came. One array for
   * every claim, its slots reused (an array and a closure per claim were ~7 B per job).
   */
  readonly #ready: (HandedJob<T> | undefined)[] = [];
  #readyCount = 0;
  readonly #runReady = () => {
    const ready = this.#ready;
    let i = 0;
    try {
      for (; i < this.#readyCount; i++) {
        const job = ready[i]!;
        // Emptied as it goes: a slot must not keep a finished job alive until it is reused.
        ready[i] = undefined;
        this.#run(job);
      }
    } finally {
      // Only a bug gets here with jobs left (#run catches what a handler throws): those are
      // dropped, as the rest of the microtask's loop would have been.
      for (; i < this.#readyCount; i++) ready[i] = undefined;
      this.#readyCount = 0;
    }
  };

  /** A claimed job made ready to run, or undefined when it went on its own way (corrupt, or run traced). */
  #start(c: ClaimedJob): HandedJob<T> | undefined {
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
      return undefined;
    }
    const job = new HandedJob<T>(this.queue, c, data as T, this.#attempts, this.#timeoutMs, this.#calls);
    this.#running.add(job);
    if (this.#heard('claimed')) this.#emit('claimed', job);
    if (this.#tracing) {
      this.#runTraced(this.#tracing, job, c.traceContext);
      return undefined;
    }
    return job;
  }

  /** Runs a job's handler in a span of its own. Apart from #start, so that the closures it needs are made only for a traced job. */
  #runTraced(tracing: Tracing, job: HandedJob<T>, traceContext: string | undefined): void {
    const traced = tracing.process(this.queue, job, traceContext, () => Promise.resolve().then(() => this.#handler(job)));
    const span = traced.span;
    traced.result.then(
      () => span.end(),
      (err) => {
        failSpan(span, err);
        span.end();
      },
    );
    this.#awaitHandler(job, traced.result);
  }

  /**
   * Runs a job's handler (in #startAll's microtask); a handler that returns without a promise is
   * settled at once, with no promise made for it (at tens of thousands of jobs a second,
   * promises per job are much of the worker's garbage). A handler that throws fails its job only.
   */
  #run(job: HandedJob<T>): void {
    let result: unknown;
    try {
      result = this.#handler(job);
    } catch (err) {
      this.#threw(job, err);
      return;
    }
    // Promise.resolve: a native promise as it is; any other thenable is taken in safely (its
    // `then` may throw, or call back twice). Reading `then` may throw too (a getter, a trapping
    // Proxy): that fails the attempt, as the handler's own throw would.
    let thenable: boolean;
    try {
      thenable = isThenable(result);
    } catch (err) {
      this.#threw(job, err);
      return;
    }
    if (thenable) this.#awaitHandler(job, Promise.resolve(result));
    else this.#succeeded(job, result);
  }

  /** Waits for a handler's promise, bounded by the worker's timeout when it has one. */
  #awaitHandler(job: HandedJob<T>, run: PromiseLike<unknown>): void {
    if (job.timeoutMs !== undefined) {
      const ms = job.timeoutMs;
      const timer = setLongTimeout(() => {
        job.abort('timeout');
        this.#finish(job, () => this.#fail(job, new HandlerTimeoutError(ms)));
      }, ms);
      const clear = () => timer.clear();
      run.then(clear, clear);
    }
    run.then(
      (result) => this.#succeeded(job, result),
      (err) => this.#threw(job, err),
    );
  }

  /**
   * The handler threw (or its promise rejected): the attempt fails, or snoozes. Apart, so that
   * #run makes no closure, nor a context for one, for a handler that returns.
   */
  #threw(job: HandedJob<T>, err: unknown): void {
    this.#finish(job, () => this.#failOrSnooze(job, err));
  }

  #failOrSnooze(job: HandedJob<T>, thrown: unknown): Promise<void> {
    const err = readableThrown(thrown);
    const wait = job.waiting ?? (err instanceof WaitForSignal ? err : undefined);
    if (wait && !job.snoozed) return this.#waitSignal(job, wait);
    const snooze = job.snoozed ?? (err instanceof SnoozeSignal ? err : undefined);
    if (!snooze && err instanceof RateLimitSignal) return this.#rateLimited(job, err);
    return snooze ? this.#snooze(job, snooze) : this.#fail(job, err);
  }

  /**
   * The handler threw RateLimitSignal: the job goes back with its attempt unspent, and its group
   * (the queue, for a job of no group) is held back on every worker (release.lua's hold). A bad
   * wait fails the attempt, as a bad snooze does.
   */
  async #rateLimited(job: HandedJob<T>, signal: RateLimitSignal): Promise<void> {
    const bad = rateHoldProblem(signal.retryAfterMs);
    if (bad) return this.#fail(job, bad);
    if (job.leaseGone) return;
    job.leaseGone = true;
    const holdMs = roundedHold(signal.retryAfterMs);
    const [outcome] = await this.#store.release(this.queue, [{ id: job.id, token: job.token }], holdMs);
    if (outcome === 'ok') this.#emit('rateLimited', job, holdMs);
    else this.#leaseLost(job);
  }

  /** The handler returned: the job is acked (no promise per job), or snoozed if it asked to be. */
  #succeeded(job: HandedJob<T>, result: unknown): void {
    if (job.snoozed) {
      this.#snoozed(job, job.snoozed);
      return;
    }
    if (job.waiting) {
      this.#waited(job, job.waiting);
      return;
    }
    if (!this.#end(job)) return;
    if (!job.leaseGone) this.#complete(job, result);
    this.#pump();
  }

  /** The handler called job.waitForSignal() and returned (it caught the signal): the wait holds. Apart, as #threw is. */
  #waited(job: HandedJob<T>, wait: WaitForSignal): void {
    this.#finish(job, () => this.#waitSignal(job, wait));
  }

  /** The handler called job.snooze() and returned (it caught the signal): the snooze holds. Apart, as #threw is. */
  #snoozed(job: HandedJob<T>, snoozed: SnoozeSignal): void {
    this.#finish(job, () => this.#snooze(job, snoozed));
  }

  /** Ends the job's run with `settle` (a fail, snooze or release call), which close() waits for. */
  #finish(job: HandedJob<T>, settle: () => Promise<void>): void {
    if (!this.#end(job)) return;
    if (!job.leaseGone) {
      const settled = settle().catch((err) => {
        this.#emitError(err);
        this.#emit('settleFailed', job, err instanceof Error ? err : new Error(String(err)));
      });
      this.#settling.add(settled);
      void settled.finally(() => this.#settling.delete(settled));
    }
    this.#pump();
  }

  /**
   * Takes a handler's outcome, once (a handler that ends after its timeout changes nothing), and
   * frees its slot; false when the outcome was taken already. The slot is free once the handler
   * returned: its ack or fail is on its way, and close() waits for those on their own.
   */
  #end(job: HandedJob<T>): boolean {
    if (job.settled) return false;
    job.settled = true;
    this.#running.delete(job);
    if (this.#running.size === 0) this.#idle?.resolve();
    return true;
  }

  /** Acks the job; the AckBatcher sends the acks of one turn of the event loop together (close() drains it). */
  #complete(job: HandedJob<T>, result: unknown): void {
    this.#acks.ack(job, resultText(result), result);
  }

  /** An ack's answer (AckBatcher's one handler for all acks); `sentAt`: the server clock when its batch was sent. */
  #acked(job: HandedJob<T>, result: unknown, sentAt: number, outcome: LeaseOutcome | undefined, err: unknown): void {
    if (err !== undefined) {
      this.#emitError(err);
      this.#emit('settleFailed', job, err instanceof Error ? err : new Error(String(err)));
    }
    // 'not_found' is a re-sent ack whose first run landed, or a job that another worker
    // finished after this lease ran out: which one, the lease deadline tells.
    else if (outcome === 'lease_lost' || (outcome === 'not_found' && sentAt >= job.leaseDeadlineMs)) this.#leaseLost(job);
    else if (this.#heard('completed')) this.#emit('completed', job, result);
  }

  async #fail(job: HandedJob<T>, err: unknown): Promise<void> {
    if (this.#closing && job.aborted && gaveUp(job, err)) {
      // The handler gave up because we asked it to: hand the job back, attempt unspent. Any
      // other error is a failure like any other (a job failing on every deploy must not loop).
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

  /** The handler called job.waitForSignal() (or threw a WaitForSignal): the job waits (wait-signal.lua). */
  async #waitSignal(job: HandedJob<T>, wait: WaitForSignal): Promise<void> {
    // A WaitForSignal a handler built itself skipped job.waitForSignal()'s checks: a bad one fails the attempt.
    const bad = waitSignalProblem(wait.signalName, wait.timeoutMs, 'WaitForSignal.');
    if (bad) return this.#fail(job, bad);
    const res = await this.#store.waitSignal(this.queue, {
      id: job.id,
      token: job.token,
      name: wait.signalName,
      timeoutMs: wait.timeoutMs === undefined ? undefined : Math.ceil(wait.timeoutMs),
    });
    if (res.outcome === 'lease_lost') this.#leaseLost(job);
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
    const beat = this.#heartbeat.carried();
    const outcomes = await this.#store.extend(
      this.queue,
      jobs.map((j): LeaseRef => ({ id: j.id, token: j.token })),
      ms,
      beat,
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
    this.#heartbeat.stop();
    this.#unwatch();
    // A subscription still being set up (Redis unreachable, or its connection half-open) is
    // closed whenever it arrives; close() does not wait for it.
    if (this.#subscribed) await bounded(this.#subscribed.close());
    else void this.#subscription?.then((sub) => sub?.close());
    // While Redis is unreachable a claim waits unsent in the client's queue, and closing the
    // store drops it: nothing to wait for. (One that ran and lost its reply only leased its
    // jobs; they go out again when the lease runs out.)
    const down = this.#outage.down;
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
    const unfinished = this.#running.values();
    await inGrace(
      this.#release(unfinished).catch((err: unknown) => {
        this.#emitError(err);
        for (const job of unfinished) this.#emit('settleFailed', job, err instanceof Error ? err : new Error(String(err)));
      }),
    );
    this.#leases.stop();
    await inGrace(this.#acks.drain());
    // Off the list of live workers at once, rather than when its heartbeat runs out.
    if (this.#started && !down) await inGrace(this.#heartbeat.gone().catch(() => {}));
    // Settlements (fail, release, snooze calls) of handlers that ended: each shard of a sharded
    // queue answers in its own time, so the last may come well after the first.
    if (this.#settling.size > 0) await inGrace(Promise.all([...this.#settling]));
    if (this.#ownsStore) await inGrace(this.#store.close());
    await this.#isolated?.close();
    this.#emit('closed');
    this.#closed = true;
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

  /**
   * Whether an event has anyone to hear it (a listener, or the logger): the per-job events
   * ('claimed', 'completed') are made only then.
   */
  #heard(event: keyof WorkerEvents<T>): boolean {
    return this.#logger !== undefined || this.listenerCount(event) > 0;
  }

  #emit<K extends keyof WorkerEvents<T>>(event: K, ...args: WorkerEvents<T>[K]): void {
    if (this.#logger) logWorkerEvent(this.#logger, this.queue, event, args);
    if (this.#closed) return;
    try {
      (this.emit as (e: K, ...a: WorkerEvents<T>[K]) => boolean)(event, ...args);
    } catch (err) {
      if (event !== 'error') this.#emitError(err as Error);
    }
  }

  /** Redis answered: ends an outage, reported once. */
  #reachable(): void {
    const downMs = this.#outage.end();
    if (downMs !== undefined) this.#emit('reconnected', downMs);
  }

  #emitError(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error instanceof ConnectionError) {
      // An outage is reported when it begins, not on every call or reconnect attempt during it.
      if (!this.#outage.begin()) return;
    }
    // Once closed, #emit gives it to the logger only.
    if (!this.#closed && this.listenerCount('error') === 0) {
      if (this.#logger) {
        logWorkerEvent(this.#logger, this.queue, 'error', [error]);
        return;
      }
      // An 'error' event without a listener would crash the process; a warning does not.
      process.emitWarning(`delayq worker (${this.queue}): ${error.message}`, 'DelayqWarning');
      return;
    }
    this.#emit('error', error);
  }
}
