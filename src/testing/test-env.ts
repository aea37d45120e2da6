/**
 * A test env runs the real engine — the MemoryStore, the real Queue, Worker and Scheduler — on a
 * virtual clock, so a test of "cancel the order after 30 minutes" takes milliseconds.
 *
 * How advance() works, without a real sleep: the store reads the virtual clock (the MemoryStore's
 * `clock` option, standing in for the Redis server's TIME). Jobs run only while the env drives
 * (claims are gated, see driven-store.ts). To drive, the env lets the engine run at the current
 * instant until it comes to rest (no store call in flight, no handler running, nothing new for a
 * few turns of the event loop), then moves the clock to the next instant the engine itself
 * announced — a claim's next wake-up, a wake signal's due time, a schedule's next occurrence —
 * tells every worker and scheduler to look, and lets it rest again, until the span ends. So every
 * job due in the span runs at its own due time, in due order, and so do the retries, snoozes,
 * lease expiries, rate-limit refills and debounce deadlines the run itself makes.
 *
 * Constraint: a handler takes no virtual time. One that waits for a real timer or a promise that
 * never settles keeps the engine from resting; the env then fails within `stallMs` of real time,
 * naming the jobs still running, instead of hanging the test.
 */
import { performance } from 'node:perf_hooks';
import { setImmediate as immediate, setTimeout as sleepReal } from 'node:timers/promises';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffFunction, type BackoffOptions } from '../backoff.js';
import { DelayqError, ValidationError } from '../errors.js';
import { MAX_RUN_AT_MS, MIN_RUN_AT_MS } from '../limits.js';
import type { QueueOptions, WorkerOptions } from '../options.js';
import { Queue } from '../queue.js';
import { decodeDefinition } from '../schedules/definition.js';
import { nextOccurrence } from '../schedules/occurrences.js';
import { Scheduler } from '../schedules/scheduler.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { JobInfo } from '../types.js';
import { type Handler, Worker } from '../worker.js';
import { DrivenStore } from './driven-store.js';
import { type AttemptRecord, decodeText, Journal, type JobRecord, type OutcomeEntry } from './journal.js';
import { type JobFilter, jobMatches, parseFilter } from './matching.js';

export interface TestEnvOptions {
  /**
   * Where the virtual clock starts: epoch ms, a Date or an ISO 8601 text.
   * @default '2025-01-01T00:00:00.000Z' (fixed, so that runs agree)
   */
  startAt?: number | Date | string;
  /**
   * Seed of the random numbers that jittered backoffs of the env's workers draw, so that a run's
   * retry times are the same every run. (A job's own `backoff` given at add keeps Math.random.)
   * @default 1
   */
  seed?: number;
  /**
   * Longest real time the engine may take to come to rest at one instant before advance() or
   * runUntilIdle() fails, naming the jobs still running.
   * @default 2000
   */
  stallMs?: number;
  /**
   * Most instants one advance() may stop at; past it, it fails (a schedule every second over a
   * year, or a job that snoozes 1 ms for ever).
   * @default 100000
   */
  maxSteps?: number;
  /**
   * How long before an occurrence the env's schedulers enqueue it (SchedulerOptions.leadMs).
   * @default 1000
   */
  schedulerLeadMs?: number;
}

/** A job waiting to run, as `enqueued()` lists it. */
export interface EnqueuedJob<T = unknown> {
  id: string;
  data: T;
  group: string | undefined;
  /** When it is due, epoch ms on the virtual clock. */
  dueAtMs: number;
  /** True when it is due now and waits for a worker (or a slot, a token, a group turn). */
  ready: boolean;
  priority: number;
  /** Hand-outs so far. */
  attempts: number;
  lastError: string | undefined;
}

/** A job that ended (completed, dead or cancelled), with its history. */
export interface FinishedJob<T = unknown> {
  queue: string;
  id: string;
  data: T;
  group: string | undefined;
  /** When it completed, died or was cancelled, epoch ms on the virtual clock. */
  atMs: number;
  /** Hand-outs it had. */
  attempts: number;
  /** The error text of each failed attempt, oldest first. */
  errors: string[];
  /** Every hand-out: when it started and ended, how, with what error. */
  history: AttemptRecord[];
  /** What the handler returned (completed jobs). */
  result: unknown;
  /** Why it died (dead jobs): the last error, or 'snooze deadline passed'. */
  reason: string | undefined;
  /** The last job.progress() value and the job.log() lines. */
  progress: unknown;
  logs: string[];
}

const DEFAULT_START_MS = Date.UTC(2025, 0, 1);
const QUIET_TURNS = 4;
/** Turns of the event loop spent spinning while a handler runs before sleeping 1 ms between looks. */
const SPIN_TURNS = 200;
const OPTION_KEYS = new Set(['startAt', 'seed', 'stallMs', 'maxSteps', 'schedulerLeadMs']);
/** Options the env gives its queues and workers itself. */
const OWN_KEYS = ['store', 'connection', 'prefix', 'shards'] as const;

function positiveInt(value: unknown, field: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new ValidationError(field, `must be a whole number of at least 1 (got ${String(value)})`);
  return value;
}

/** Epoch ms from a number, Date or ISO text, or a ValidationError naming `field`. */
export function epochOf(value: unknown, field: string): number {
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || !Number.isInteger(ms) || ms < MIN_RUN_AT_MS || ms > MAX_RUN_AT_MS) {
    throw new ValidationError(
      field,
      `must be epoch milliseconds, a Date or an ISO 8601 text between 2001 and 9999 (got ${JSON.stringify(value) ?? String(value)})`,
    );
  }
  return ms;
}

/** A small seeded generator (mulberry32): the same seed gives the same numbers. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The store and journal behind each env, for performJob (not exported from delayq/testing). */
export const INTERNALS = new WeakMap<TestEnv, { memory: MemoryStore; journal: Journal }>();

/** Thrown when the engine does not come to rest, or an advance takes too many steps. */
export class TestEnvError extends DelayqError {
  override name = 'TestEnvError';
}

export class TestEnv {
  readonly #memory: MemoryStore;
  readonly #driven: DrivenStore;
  readonly #journal = new Journal();
  #nowMs: number;
  readonly #random: () => number;
  readonly #stallMs: number;
  readonly #maxSteps: number;
  readonly #leadMs: number;
  readonly #queues = new Set<Queue<never>>();
  readonly #workers = new Set<Worker<never>>();
  readonly #crashed = new Set<Worker<never>>();
  readonly #schedulers = new Map<string, Scheduler>();
  readonly #errors: Error[] = [];
  #reported = 0;
  #driving = false;
  #closed = false;

  constructor(opts: TestEnvOptions = {}) {
    opts ??= {};
    if (typeof opts !== 'object') throw new ValidationError('createTestEnv options', `must be an object (got ${typeof opts})`);
    for (const key of Object.keys(opts)) {
      if (!OPTION_KEYS.has(key))
        throw new ValidationError('createTestEnv options', `has an unknown field ${JSON.stringify(key)} (known: ${[...OPTION_KEYS].join(', ')})`);
    }
    this.#nowMs = opts.startAt === undefined ? DEFAULT_START_MS : epochOf(opts.startAt, 'startAt');
    if (opts.seed !== undefined && (typeof opts.seed !== 'number' || !Number.isInteger(opts.seed))) {
      throw new ValidationError('seed', `must be a whole number (got ${String(opts.seed)})`);
    }
    this.#random = seededRandom(opts.seed ?? 1);
    this.#stallMs = positiveInt(opts.stallMs, 'stallMs', 2000);
    this.#maxSteps = positiveInt(opts.maxSteps, 'maxSteps', 100_000);
    if (
      opts.schedulerLeadMs !== undefined &&
      (typeof opts.schedulerLeadMs !== 'number' || !Number.isInteger(opts.schedulerLeadMs) || opts.schedulerLeadMs < 0)
    ) {
      throw new ValidationError('schedulerLeadMs', `must be a whole number of milliseconds, 0 or more (got ${String(opts.schedulerLeadMs)})`);
    }
    this.#leadMs = opts.schedulerLeadMs ?? 1000;
    this.#memory = new MemoryStore({ clock: () => this.#nowMs });
    this.#driven = new DrivenStore(this.#memory, this.#journal, () => this.#nowMs);
    INTERNALS.set(this, { memory: this.#memory, journal: this.#journal });
  }

  /** The virtual clock: epoch ms. It moves only in advance() and advanceTo(). */
  now(): number {
    return this.#nowMs;
  }

  /** The store the env's queues and workers share (the MemoryStore, seen through the env). */
  get store(): MemoryStore {
    return this.#driven.store as unknown as MemoryStore;
  }

  #check(where: string): void {
    if (this.#closed) throw new TestEnvError(`${where}: this test env is closed`);
  }

  #own<O extends object>(opts: O | undefined, where: string): O {
    if (opts === undefined || opts === null) return {} as O;
    if (typeof opts !== 'object') throw new ValidationError(`${where} options`, `must be an object (got ${typeof opts})`);
    for (const key of OWN_KEYS) {
      if (key in opts)
        throw new ValidationError(`${where} options.${key}`, 'is set by the test env (its queues and workers share its virtual-clock store, unsharded)');
    }
    return opts;
  }

  /** A Queue on the env's store. A scheduler runs for it, so its `schedules` fire on virtual time. */
  queue<T = unknown>(name: string, opts?: Omit<QueueOptions, (typeof OWN_KEYS)[number]>): Queue<T> {
    this.#check('env.queue');
    const q = new Queue<T>(name, { ...this.#own(opts, 'env.queue'), store: this.#driven.store });
    this.#queues.add(q as unknown as Queue<never>);
    this.#scheduler(q.name);
    return q;
  }

  /**
   * A real Worker on the env's store. It starts at once, but runs jobs only inside advance(),
   * advanceTo() and runUntilIdle(). Without a `backoff` of its own it has the Worker's default
   * (exponential from 1 s, jittered), with the jitter drawn from the env's seed.
   */
  worker<T = unknown>(name: string, handler: Handler<T>, opts?: Omit<WorkerOptions<T>, (typeof OWN_KEYS)[number]>): Worker<T> {
    this.#check('env.worker');
    const o = this.#own(opts, 'env.worker');
    const w = new Worker<T>(name, handler, { ...o, backoff: this.#seeded(o.backoff), store: this.#driven.store });
    w.on('error', (err) => this.#errors.push(err));
    this.#workers.add(w as unknown as Worker<never>);
    this.#scheduler(w.queue);
    return w;
  }

  /**
   * The worker's process dies, as with kill -9: nothing it does reaches the store again (its
   * handlers may go on, unheard), and the jobs it holds stay active until their leases run out;
   * then a live worker of the queue runs them again (attempt + 1), or they go to the dead set
   * when no attempt is left. Safe to call from inside one of its handlers.
   */
  crash<T>(worker: Worker<T>): void {
    this.#check('env.crash');
    const w = worker as unknown as Worker<never>;
    if (!this.#workers.has(w)) throw new ValidationError('worker', 'must be a worker of this test env (made by env.worker)');
    if (this.#crashed.has(w)) return;
    this.#crashed.add(w);
    this.#driven.crash(w.id);
    // Stops its timers and claims; whatever it hands back is answered "lease lost", unwritten.
    void w.close({ timeoutMs: 0 });
  }

  /** A jittered exponential backoff made deterministic: the same draws from the env's seed. */
  #seeded(b: BackoffOptions | BackoffFunction | undefined): BackoffOptions | BackoffFunction | undefined {
    const policy = b ?? DEFAULT_BACKOFF;
    if (typeof policy !== 'object' || policy === null || policy.type !== 'exponential' || policy.jitter === false) return b;
    return (attempt: number) => backoffDelay(policy, attempt, this.#random);
  }

  #scheduler(queue: string): void {
    if (this.#schedulers.has(queue)) return;
    this.#schedulers.set(queue, new Scheduler(queue, { store: this.#driven.store, leadMs: this.#leadMs, onError: (err) => this.#errors.push(err) }));
  }

  /**
   * Moves the virtual clock `ms` ahead, running every job that falls due on the way at its own
   * due time, then resolves. Jobs due now run first.
   */
  async advance(ms: number): Promise<void> {
    this.#check('env.advance');
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      throw new ValidationError('ms', `must be a finite number of milliseconds, 0 or more (got ${String(ms)})`);
    }
    const target = Math.floor(this.#nowMs + ms);
    if (target > MAX_RUN_AT_MS) throw new ValidationError('ms', `takes the clock past the year 9999 (got ${ms})`);
    await this.#drive(target, 'env.advance');
  }

  /** Moves the virtual clock to `time` (epoch ms, Date or ISO text, not before now), as advance() does. */
  async advanceTo(time: number | Date | string): Promise<void> {
    this.#check('env.advanceTo');
    const target = epochOf(time, 'time');
    if (target < this.#nowMs) {
      throw new ValidationError(
        'time',
        `is ${this.#nowMs - target} ms before the virtual clock (${new Date(this.#nowMs).toISOString()}): the clock only moves forward`,
      );
    }
    await this.#drive(target, 'env.advanceTo');
  }

  /** Runs what is due now, and what that makes due now, until nothing is due or running. The clock stays. */
  async runUntilIdle(): Promise<void> {
    this.#check('env.runUntilIdle');
    await this.#drive(this.#nowMs, 'env.runUntilIdle');
  }

  async #drive(target: number, where: string): Promise<void> {
    if (this.#driving) throw new TestEnvError(`${where}: another advance or runUntilIdle is under way (await it first)`);
    this.#driving = true;
    this.#driven.open();
    try {
      this.#driven.kick();
      await this.#settle(where);
      for (let steps = 0; ; steps++) {
        const next = await this.#nextInstant();
        if (next === undefined || next > target) break;
        if (steps >= this.#maxSteps) {
          throw new TestEnvError(
            `${where}: stopped after ${this.#maxSteps} instants at ${new Date(this.#nowMs).toISOString()}, short of ${new Date(target).toISOString()} (a schedule or a job that runs again and again; raise maxSteps, or advance less)`,
          );
        }
        await this.#stepTo(next, where);
      }
      if (target > this.#nowMs) await this.#stepTo(target, where);
    } finally {
      this.#driven.shut();
      this.#driving = false;
    }
    this.#throwReported(where);
  }

  async #stepTo(at: number, where: string): Promise<void> {
    this.#nowMs = at;
    this.#driven.kick();
    await this.#settle(where);
  }

  /** The next instant after now the engine announced, or a schedule's next enqueue time. */
  async #nextInstant(): Promise<number | undefined> {
    let next = this.#driven.nextWake(this.#nowMs);
    for (const queue of this.#schedulers.keys()) {
      for (const s of await this.#memory.scheduleList(queue)) {
        const def = decodeDefinition(s.definition);
        if (!def) continue;
        const occurrence = nextOccurrence(def, s.lastOccurrenceMs ?? def.anchorMs);
        if (occurrence === undefined) continue;
        const at = Math.max(occurrence - this.#leadMs, this.#nowMs + 1);
        if (next === undefined || at < next) next = at;
      }
    }
    return next;
  }

  #running(): number {
    let n = 0;
    for (const w of this.#workers) if (!this.#crashed.has(w)) n += w.running;
    return n;
  }

  /** Waits, in turns of the event loop (never a timed sleep but 1 ms while a handler awaits), until the engine is at rest. */
  async #settle(where: string): Promise<void> {
    const started = performance.now();
    let quiet = 0;
    let seen = -1;
    let spins = 0;
    while (quiet < QUIET_TURNS) {
      if (spins > SPIN_TURNS) await sleepReal(1);
      else await immediate();
      const activity = this.#driven.activity;
      const busy = this.#driven.inFlight > 0 || this.#running() > 0;
      if (busy || activity !== seen) {
        quiet = 0;
        seen = activity;
        spins = busy ? spins + 1 : 0;
      } else quiet++;
      if (performance.now() - started > this.#stallMs) throw this.#stalled(where);
    }
    await this.#reconcile();
  }

  /** Attempts left open by a worker that is gone: the store ended them (lease ran out) or still holds them. */
  async #reconcile(): Promise<void> {
    for (const { record, attempt } of this.#journal.open()) {
      const [info] = await this.#memory.getMany(record.queue, [record.id], false);
      if (!info) continue;
      if (info.state === 'dead' && info.attempt === attempt.attempt)
        this.#journal.expired(record, attempt, info.finishedAtMs ?? this.#nowMs, true, info.lastError);
      else if (info.state === 'scheduled' && info.attempt === attempt.attempt) this.#journal.expired(record, attempt, this.#nowMs, false, info.lastError);
    }
  }

  #stalled(where: string): TestEnvError {
    const open = this.#journal
      .open()
      .map(({ record, attempt }) => `${record.queue} ${record.id} (attempt ${attempt.attempt}, since ${new Date(attempt.startedAtMs).toISOString()})`);
    const running = open.length > 0 ? ` Still running: ${open.join(', ')}.` : '';
    return new TestEnvError(
      `${where}: the engine did not come to rest within ${this.#stallMs} ms of real time at ${new Date(this.#nowMs).toISOString()}.${running} A handler that waits for a real timer or a promise that never settles, or a job that adds itself again at once for ever, cannot be driven on virtual time.`,
    );
  }

  /** Errors the env's workers and schedulers reported while it drove fail the drive. */
  #throwReported(where: string): void {
    if (this.#errors.length === this.#reported) return;
    const fresh = this.#errors.slice(this.#reported);
    this.#reported = this.#errors.length;
    const err = new TestEnvError(`${where}: a worker or scheduler reported an error: ${fresh.map((e) => e.message).join('; ')}`, { cause: fresh[0] });
    throw err;
  }

  /** Errors the env's workers and schedulers reported so far (a copy). */
  get errors(): Error[] {
    return [...this.#errors];
  }

  /** Jobs of `queue` waiting to run (due or not), soonest first, with their due times; read from the store. */
  async enqueued<T = unknown>(queue: string, filter?: JobFilter): Promise<EnqueuedJob<T>[]> {
    this.#check('env.enqueued');
    const f = parseFilter(filter, 'env.enqueued');
    const out: EnqueuedJob<T>[] = [];
    for (const state of ['ready', 'scheduled'] as const) {
      let cursor: Parameters<MemoryStore['list']>[2];
      do {
        const page = await this.#memory.list(queue, state, cursor, 1000, 'asc');
        for (const j of page.jobs) out.push(this.#enqueued<T>(j));
        cursor = page.next;
      } while (cursor);
    }
    return out.filter((j) => jobMatches(j, f)).sort((a, b) => a.dueAtMs - b.dueAtMs);
  }

  #enqueued<T>(j: JobInfo<string>): EnqueuedJob<T> {
    return {
      id: j.id,
      data: decodeText(j.data) as T,
      group: j.group,
      dueAtMs: j.dueAtMs,
      ready: j.ready,
      priority: j.priority,
      attempts: j.attempt,
      lastError: j.lastError,
    };
  }

  #finished<T>(r: JobRecord, atMs: number, reason: string | undefined): FinishedJob<T> {
    const history = r.attempts.map((a) => ({ ...a }));
    return {
      queue: r.queue,
      id: r.id,
      // Copies (the data is decoded JSON): a test that changes what it was given changes nothing here.
      data: structuredClone(r.data) as T,
      group: r.group,
      atMs,
      attempts: history.length,
      errors: history.filter((a) => a.outcome === 'retried' || (a.outcome === 'dead' && a.error !== 'snooze deadline passed')).map((a) => a.error ?? ''),
      history,
      result: structuredClone(r.result),
      reason,
      progress: structuredClone(r.progress),
      logs: [...r.logs],
    };
  }

  /** Jobs of `queue` that completed, in the order they did. */
  completed<T = unknown>(queue: string, filter?: JobFilter): FinishedJob<T>[] {
    const f = parseFilter(filter, 'env.completed');
    return this.#journal
      .jobs(queue)
      .filter((r) => r.completedAtMs !== undefined)
      .map((r) => this.#finished<T>(r, r.completedAtMs!, undefined))
      .filter((j) => jobMatches(j, f))
      .sort((a, b) => a.atMs - b.atMs);
  }

  /** Jobs of `queue` that went to the dead set, in the order they did, each with its attempts and errors. */
  dead<T = unknown>(queue: string, filter?: JobFilter): FinishedJob<T>[] {
    const f = parseFilter(filter, 'env.dead');
    return this.#journal
      .jobs(queue)
      .filter((r) => r.diedAtMs !== undefined)
      .map((r) => this.#finished<T>(r, r.diedAtMs!, r.attempts.at(-1)?.error))
      .filter((j) => jobMatches(j, f))
      .sort((a, b) => a.atMs - b.atMs);
  }

  /** Jobs of `queue` cancelled before they ran (queue.cancel), in the order they were. */
  cancelled<T = unknown>(queue: string, filter?: JobFilter): FinishedJob<T>[] {
    const f = parseFilter(filter, 'env.cancelled');
    return this.#journal
      .jobs(queue)
      .filter((r) => r.cancelledAtMs !== undefined)
      .map((r) => this.#finished<T>(r, r.cancelledAtMs!, undefined))
      .filter((j) => jobMatches(j, f))
      .sort((a, b) => a.atMs - b.atMs);
  }

  /** Every hand-out of one job, oldest first: when it started and ended, and how. */
  history(queue: string, id: string): AttemptRecord[] {
    return (this.#journal.job(queue, id)?.attempts ?? []).map((a) => ({ ...a }));
  }

  /** Every outcome in the env, in the order the engine decided them (all queues). */
  outcomes(): OutcomeEntry[] {
    return this.#journal.log();
  }

  /**
   * Closes the env's workers, schedulers and queues. A worker's claim still waiting for the env
   * is answered with nothing, so close() does not wait for a drive that will not come.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#driven.close();
    await Promise.all([...this.#workers].map((w) => w.close({ timeoutMs: 1000 })));
    await Promise.all([...this.#schedulers.values()].map((s) => s.close()));
    await Promise.all([...this.#queues].map((q) => q.close()));
  }
}

/** A test env: a virtual clock, and queues and workers of the real engine that read it. */
export function createTestEnv(opts?: TestEnvOptions): TestEnv {
  return new TestEnv(opts);
}
