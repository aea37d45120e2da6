/**
 * Every option of Queue, Worker and add(), documented once, with its schema. Validation happens
 * at the call, before anything is written; the error names the field.
 */
import { LIMIT } from './store/lifecycle.js';
import * as z from 'zod';
import type { BackoffFunction, BackoffOptions } from './backoff.js';
import { ValidationError } from './errors.js';
import {
  MAX_ATTEMPTS,
  MAX_BATCH,
  MAX_CONCURRENCY,
  MAX_DELAY_MS,
  MAX_ERROR_LENGTH,
  MAX_ID_LENGTH,
  MAX_PRIORITY,
  MAX_RUN_AT_MS,
  MAX_SHARDS,
  MIN_LEASE_MS,
  MIN_RUN_AT_MS,
  PRODUCER_TIMEOUT_MAX_MS,
  MAX_RATE_TOKENS,
} from './limits.js';
import type { TracerLike } from './tracing.js';
import type { Logger } from './logger.js';
import type { Store } from './store/store.js';
import type { RedisConnection } from './store/redis/connection.js';

export const DEFAULT_MAX_PAYLOAD_BYTES = 512 * 1024;

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  return typeof v;
}

/** A zod error callback whose message ends with the offending value. */
function must(text: string) {
  return { error: (iss: { input?: unknown }) => `${text} (got ${show(iss.input)})` };
}

const ms = (what: string, max: number) =>
  z
    .number(must(`must be a number of milliseconds`))
    .min(0, must(`must not be negative`))
    .max(max, must(`must be at most ${max} ms (${what})`));

/** What idSchema's two patterns refuse: control characters, and lone surrogate halves. */
const CONTROL_CHARS = /^[^\u0000-\u001f\u007f-\u009f]+$/;
const WHOLE_UNICODE = /^(?:[^\uD800-\uDFFF]|[\uD800-\uDBFF][\uDC00-\uDFFF])+$/;

export const idSchema = z
  .string(must('must be a string'))
  .min(1, must('must not be empty'))
  .max(MAX_ID_LENGTH, must(`must be at most ${MAX_ID_LENGTH} characters`))
  // Control characters (C0, DEL and C1, e.g. U+009B, a terminal escape) make ids unreadable or
  // dangerous in every tool and are never meant.
  .regex(CONTROL_CHARS, must('must not contain control characters'))
  // A lone surrogate half is not text: Redis would store it as U+FFFD, folding distinct ids into one.
  .regex(WHOLE_UNICODE, must('must be valid Unicode (no lone surrogate halves)'));

const delaySchema = ms('10 years', MAX_DELAY_MS);

const positiveInt = (max: number) =>
  z
    .number(must('must be a whole number'))
    .int(must('must be a whole number'))
    .min(1, must('must be at least 1'))
    .max(max, must(`must be at most ${max}`));

/** A job's own timeout per attempt (add({ timeoutMs })): whole ms, 1 to 10 years. */
export const timeoutMsSchema = positiveInt(MAX_DELAY_MS);

const runAtSchema = z
  .union([z.number(), z.date()], must('must be epoch milliseconds or a Date'))
  .transform((v) => (v instanceof Date ? v.getTime() : v))
  .pipe(
    z
      .number(must('must be a valid time'))
      .min(MIN_RUN_AT_MS, {
        error: (iss: { input?: unknown }) =>
          `must be epoch milliseconds, not seconds: ${show(iss.input)} is before 2001 (use Date.now() + delay, or multiply seconds by 1000)`,
      })
      .max(MAX_RUN_AT_MS, must('must not be after the year 9999')),
  );

export const backoffSchema = z.union(
  [
    z.strictObject({ type: z.literal('fixed'), delay: ms('backoff delay', MAX_DELAY_MS) }),
    z.strictObject({
      type: z.literal('exponential'),
      delay: ms('backoff delay', MAX_DELAY_MS),
      maxDelay: ms('backoff ceiling', MAX_DELAY_MS).optional(),
      jitter: z.boolean(must('must be true or false')).optional(),
    }),
  ],
  must("must be { type: 'fixed', delay } or { type: 'exponential', delay, maxDelay?, jitter? }"),
);

export const attemptsSchema = z
  .number(must('must be a whole number'))
  .int(must('must be a whole number'))
  .min(1, must('must be at least 1'))
  .max(MAX_ATTEMPTS, must(`must be at most ${MAX_ATTEMPTS}`));

/** Attempts a job made before it was added (add({ attemptsMade })): 0 up to one below the most a job may make. */
export const attemptsMadeSchema = z
  .number(must('must be a whole number'))
  .int(must('must be a whole number'))
  .min(0, must('must not be negative'))
  .max(MAX_ATTEMPTS - 1, must(`must be at most ${MAX_ATTEMPTS - 1}`));

export interface AddOptions {
  /**
   * The job's id. Adding an id that exists changes nothing (see `replace`), so an id derived
   * from your data (`order:123`) makes enqueueing idempotent.
   * @default a random UUID
   * @example 'order:123:timeout'
   */
  id?: string;
  /**
   * Run after this many milliseconds, measured from the Redis server's clock. Fractions round up.
   * Exclusive with `runAt`.
   * @default 0
   * @example 30 * 60 * 1000
   */
  delay?: number;
  /** Run at this epoch time in milliseconds (or Date), compared with the Redis server's clock. */
  runAt?: number | Date;
  /**
   * Among due jobs, higher runs first. Whole number in ±1,000,000.
   * @default 0
   */
  priority?: number;
  /** How many times the job may be handed out before it goes dead. @default the worker's `attempts` */
  attempts?: number;
  /**
   * Attempts the job has already made elsewhere (a job moved from another queue, as the BullMQ
   * importer does): its next run is attempt `attemptsMade + 1`, and it runs only the attempts it
   * has left (`attempts` 5 with 2 made: 3 more). A whole number from 0, below `attempts` when
   * that is given (without it the worker's `attempts` counts, and a job with as many made as that
   * still runs once). A job it replaces (`replace`) does not lend it its count.
   * @default 0
   * @example { attempts: 5, attemptsMade: 2 }
   */
  attemptsMade?: number;
  /** Delay between attempts. @default the worker's `backoff` */
  backoff?: BackoffOptions;
  /**
   * When a job with this id exists and is not active, overwrite its data and options and
   * reschedule it. An active job is never replaced.
   * @default false
   */
  replace?: boolean;
  /**
   * Adds the job only if no other add with the same `key` happened in the last `windowMs`,
   * whatever became of that job since ("send this reminder at most once per hour"). The window
   * starts at the first add and is kept by the Redis server's clock. A deduplicated add returns
   * `added: false` and `duplicateOf` (the id that holds the key).
   * @example { key: `reminder:${userId}`, windowMs: 3_600_000 }
   */
  dedup?: { key: string; windowMs: number };
  /**
   * The group the job belongs to: a tenant, a customer, an API key. Jobs of one group run at most
   * `groupConcurrency` at once (`queue.setLimits`, or the group's own limit), and due groups take
   * turns, so one group's backlog never starves another. Validated like an id.
   * @example `tenant:${tenantId}`
   */
  group?: string;
  /**
   * The job's name, what kind of work it is ("send-email", "charge"): shown and filterable in
   * listings, search, the CLI and the dashboard, and what a Worker given handlers by name
   * (`new Worker(queue, { 'send-email': fn })`) routes by. 1-256 characters, no control
   * characters (like an id). A job without a name runs the worker's `default` handler.
   * @example 'send-email'
   */
  name?: string;
  /**
   * How long one attempt of this job may run, in ms: an attempt that runs longer fails with a
   * HandlerTimeoutError (retries apply) and its `job.signal` aborts with reason 'timeout'. The
   * worker's `timeoutMs` applies to jobs without one. The worker keeps the lease renewed while
   * the attempt runs, so the lease never runs out before the timeout does.
   * @example 30_000
   */
  timeoutMs?: number;
  /**
   * Tokens of the rate limits (`queue.setLimits({ rateLimit })`, the group's) the job takes when
   * it starts: an API call that counts as 5 requests. A cost above a limit's `max` is refused.
   * @default 1
   */
  cost?: number;
  /**
   * Folds a burst of adds with one `key` into one run: the job runs `delayMs` after the last add
   * of the burst, with the last add's data and options; with `maxWaitMs`, no later than that
   * after the burst's first add (then the next add starts a new burst). An add while the burst's
   * job is running starts a new burst. A debounced add returns `added: false, debounced: true`
   * and the burst job's id. Exclusive with delay, runAt, dedup and replace.
   * @example { key: `recompute:${docId}`, delayMs: 2000, maxWaitMs: 5000 }
   */
  debounce?: { key: string; delayMs: number; maxWaitMs?: number };
  /**
   * Holds the job until these jobs have ended (docs/flows.md): it is in state 'held', then runs
   * at its own due time or when the last one completes, whichever is later. Each id is a job
   * that exists and is not dead (a completed one kept by retention counts as done), or an
   * earlier job of the same addBulk. Exclusive with replace, dedup and debounce.
   * @example ['charge:123', 'reserve:123']
   */
  dependsOn?: string[];
  /** With dependsOn: run anyway this many ms after the add if the jobs have not all ended (`job.hold.timedOut`). */
  waitAtMostMs?: number;
  /** With dependsOn: run anyway at this time (epoch ms or a Date) if the jobs have not all ended. */
  waitUntil?: number | Date;
  /**
   * With dependsOn: what a dependency that ends dead or cancelled does. 'fail' (the default)
   * buries this job with the reason; 'ignore' counts it as ended (`job.childResults()` marks it).
   */
  onChildFailure?: 'fail' | 'ignore';
}

export const prioritySchema = z
  .number(must('must be a whole number'))
  .int(must('must be a whole number'))
  .min(-MAX_PRIORITY, must(`must be at least -${MAX_PRIORITY}`))
  .max(MAX_PRIORITY, must(`must be at most ${MAX_PRIORITY}`));

/** A whole number of `unit` from min to max; below min reads "must not be negative" for 0, "must be at least" else. */
function whole(unit: string, min: number, max: number, tooBig: string) {
  return z
    .number(must(`must be a whole number of ${unit}`))
    .int(must(`must be a whole number of ${unit}`))
    .min(min, must(min === 0 ? 'must not be negative' : `must be at least ${min}`))
    .max(max, must(tooBig));
}

/** Whole milliseconds from min to 10 years (a window, a debounce delay). */
const wholeMs = (min: number) => whole('milliseconds', min, MAX_DELAY_MS, `must be at most ${MAX_DELAY_MS} ms (10 years)`);

export const addOptionsSchema = z
  .strictObject({
    id: idSchema.optional(),
    delay: delaySchema.optional(),
    runAt: runAtSchema.optional(),
    priority: prioritySchema.optional(),
    attempts: attemptsSchema.optional(),
    attemptsMade: attemptsMadeSchema.optional(),
    backoff: backoffSchema.optional(),
    replace: z.boolean(must('must be true or false')).optional(),
    group: idSchema.optional(),
    name: idSchema.optional(),
    timeoutMs: timeoutMsSchema.optional(),
    dedup: z
      .strictObject(
        {
          key: idSchema,
          windowMs: wholeMs(1),
        },
        must('must be { key, windowMs }'),
      )
      .optional(),
    cost: whole('tokens', 1, MAX_RATE_TOKENS, `must be at most ${MAX_RATE_TOKENS}`).optional(),
    debounce: z
      .strictObject(
        {
          key: idSchema,
          delayMs: wholeMs(0),
          maxWaitMs: wholeMs(1).optional(),
        },
        must('must be { key, delayMs, maxWaitMs? }'),
      )
      .optional(),
    dependsOn: z
      .array(idSchema, must('must be an array of job ids'))
      .min(1, must('must name at least one job'))
      .max(LIMIT.ids_per_run, must(`must name at most ${LIMIT.ids_per_run} jobs`))
      .refine((ids) => new Set(ids).size === ids.length, must('names a job twice'))
      .optional(),
    waitAtMostMs: wholeMs(0).optional(),
    waitUntil: runAtSchema.optional(),
    onChildFailure: z.enum(['fail', 'ignore'], must("must be 'fail' or 'ignore'")).optional(),
  })
  .refine((o) => o.delay === undefined || o.runAt === undefined, {
    error: 'and runAt cannot both be given',
    path: ['delay'],
  })
  .refine((o) => o.attemptsMade === undefined || o.attempts === undefined || o.attemptsMade < o.attempts, {
    error: (iss) => {
      const o = iss.input as { attempts: number; attemptsMade: number };
      return `must be below attempts (${o.attempts}) (got ${o.attemptsMade})`;
    },
    path: ['attemptsMade'],
  })
  .refine((o) => o.debounce === undefined || (o.delay === undefined && o.runAt === undefined && o.dedup === undefined && !o.replace), {
    error: 'cannot be given with delay, runAt, dedup or replace (debounce.delayMs says when the job runs)',
    path: ['debounce'],
  })
  .refine((o) => o.dependsOn === undefined || (o.dedup === undefined && o.debounce === undefined && !o.replace), {
    error: 'cannot be given with dedup, debounce or replace',
    path: ['dependsOn'],
  })
  .refine((o) => o.dependsOn !== undefined || (o.waitAtMostMs === undefined && o.waitUntil === undefined && o.onChildFailure === undefined), {
    error: 'waitAtMostMs, waitUntil and onChildFailure need dependsOn',
    path: ['dependsOn'],
  })
  .refine((o) => o.waitAtMostMs === undefined || o.waitUntil === undefined, {
    error: 'and waitUntil cannot both be given',
    path: ['waitAtMostMs'],
  });

export interface RescheduleOptions {
  delay?: number;
  runAt?: number | Date;
}

export const rescheduleOptionsSchema = z
  .strictObject({ delay: delaySchema.optional(), runAt: runAtSchema.optional() })
  .refine((o) => (o.delay === undefined) !== (o.runAt === undefined), {
    error: 'or runAt: exactly one must be given',
    path: ['delay'],
  });

export interface ConnectionOptions {
  /**
   * Where the jobs live: a Redis URL (`redis://`, `rediss://`), ioredis options, or an ioredis
   * client (which stays yours: delayq never closes it).
   * @default process.env.REDIS_URL, else 'redis://127.0.0.1:6379'
   */
  connection?: RedisConnection;
  /**
   * The first part of every key. Nothing outside it is read or written.
   * @default 'dq'
   */
  prefix?: string;
  /** A store to use instead of opening one from `connection` (several queues may share one). */
  store?: Store;
  /**
   * A pino-compatible logger (pino, or `logger.child({ component: 'delayq' })`). delayq is
   * silent without one.
   */
  logger?: Logger;
  /**
   * OpenTelemetry spans through @opentelemetry/api: `true` uses the global tracer provider, or
   * pass a Tracer. A Queue makes a producer span per add; a Worker a consumer span per attempt,
   * linked to it. Without an SDK registered, spans go nowhere. @opentelemetry/api is an optional
   * peer dependency: install it to trace.
   * @default false
   */
  tracing?: boolean | TracerLike;
}

export interface QueueOptions extends ConnectionOptions {
  /**
   * Spread the queue over this many shards, each with its own hash tag, so a Redis Cluster
   * spreads it over its nodes (docs/operations.md: choosing N). Takes effect when the queue has
   * no layout yet (a new or unsharded queue, whose jobs are then drained in place); after that
   * the layout stored with the queue rules for every producer and worker, and
   * `queue.reshard(n)` changes it.
   * @default 1 (unsharded)
   */
  shards?: number;
  /**
   * Largest accepted payload, in bytes of its JSON text.
   * @default 524288 (512 KiB)
   */
  maxPayloadBytes?: number;
  /**
   * Longest a call (add, stats, cancel, waitUntilReady…) waits for a connection to Redis before
   * it fails with a ConnectionError naming the address. Applies to the Redis store the queue
   * opens itself (not to one passed as `store`).
   * @default 10000
   */
  connectTimeoutMs?: number;
  /**
   * Longest a call waits for Redis's answer once sent before it fails with a ConnectionError. A
   * write that fails this way may or may not have run (see ConnectionError).
   * @default 10000
   */
  commandTimeoutMs?: number;
}

/** Producer defaults: ioredis's own connect timeout, and the same again for an answer (scripts take milliseconds). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;

export interface WorkerOptions<T = unknown> extends ConnectionOptions {
  /**
   * Spread the queue over this many shards, each with its own hash tag, so a Redis Cluster
   * spreads it over its nodes (docs/operations.md: choosing N). Takes effect when the queue has
   * no layout yet (a new or unsharded queue, whose jobs are then drained in place); after that
   * the layout stored with the queue rules for every producer and worker, and
   * `queue.reshard(n)` changes it.
   * @default 1 (unsharded)
   */
  shards?: number;
  /** Handlers running at once. @default 10 */
  concurrency?: number;
  /** Most jobs claimed in one round trip. @default min(concurrency, 50) */
  batch?: number;
  /**
   * How long a hand-out lasts before the job may be handed to someone else. The worker renews
   * it every third of this while the handler runs.
   * @default 30000
   */
  leaseMs?: number;
  /** Hand-outs per job, for jobs that carry no `attempts` of their own. @default 3 */
  attempts?: number;
  /** Delay between attempts, for jobs without their own. @default exponential from 1 s, jittered, capped at 1 h */
  backoff?: BackoffOptions | BackoffFunction;
  /** How long `close()` waits for running handlers before handing their jobs back. @default 30000 */
  closeTimeoutMs?: number;
  /**
   * Longest sleep without asking Redis, as a safety net for wake-up signals that can never
   * arrive (e.g. a producer that writes the documented layout by hand and does not PUBLISH).
   * @default 30000
   */
  idleCheckMs?: number;
  /**
   * Longest a handler may run; past it the job's signal aborts and the attempt fails with a
   * HandlerTimeoutError (retried while attempts are left). The lease is renewed meanwhile, so
   * this, not `leaseMs`, bounds a slow handler.
   * @default undefined (no limit)
   */
  timeoutMs?: number;
  /** Start claiming in the constructor. @default true */
  autostart?: boolean;
  /** Cap on the error text kept with a failed job. @default 8192 */
  maxErrorLength?: number;
  /**
   * Run the handler in a pool of worker threads (`'thread'`) or child processes (`'process'`)
   * instead of in this process: the handler is then given as a module path (or file URL) whose
   * default export (or `handler` export, or `handlers` by job name) runs each job. A timeout, a
   * lost lease or close() aborts the job's signal there too, and after `isolationGraceMs` the
   * thread or process is terminated for real; a crash or an out-of-memory fails only its attempt.
   * @default undefined (the handler runs in this process)
   * @example new Worker('images', './resize.js', { isolation: 'thread', timeoutMs: 60_000 })
   */
  isolation?: 'thread' | 'process';
  /** Threads or processes in the pool of an isolated handler. @default concurrency */
  isolationPoolSize?: number;
  /**
   * How long an isolated handler whose job's signal aborted may take to stop by itself before its
   * thread or process is terminated.
   * @default 200
   */
  isolationGraceMs?: number;
  /**
   * Heap cap of each isolated thread or process, MB (a thread's `resourceLimits.maxOldGenerationSizeMb`,
   * a process's `--max-old-space-size`): a handler that allocates past it fails its attempt.
   * @default Node's own
   */
  isolationMemoryMb?: number;
  /** Ignored; keeps `T` in the options type for inference. */
  readonly _data?: T;
}

const queueNameSchema = z.string(must('must be a string')).regex(/^[A-Za-z0-9_.:-]{1,100}$/, must('must be 1-100 characters of A-Z a-z 0-9 _ . : -'));

const prefixSchema = z.string(must('must be a string')).regex(/^[A-Za-z0-9_.:-]{1,50}$/, must('must be 1-50 characters of A-Z a-z 0-9 _ . : -'));

const connectionShape = {
  connection: z.any().optional(),
  prefix: prefixSchema.optional(),
  store: z.any().optional(),
  tracing: z
    .custom<boolean | TracerLike>(
      (v) => typeof v === 'boolean' || (typeof v === 'object' && v !== null && typeof (v as Record<string, unknown>).startSpan === 'function'),
      must('must be true, false or an OpenTelemetry Tracer'),
    )
    .optional(),
  logger: z
    .custom<Logger>(
      (v) => typeof v === 'object' && v !== null && ['debug', 'info', 'warn', 'error'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
      must('must have debug, info, warn and error methods (a pino-compatible logger)'),
    )
    .optional(),
};

const producerTimeoutSchema = z
  .number(must('must be a number of milliseconds'))
  .int(must('must be a whole number'))
  .min(1, must('must be at least 1'))
  .max(PRODUCER_TIMEOUT_MAX_MS, must(`must be at most ${PRODUCER_TIMEOUT_MAX_MS} (1 h)`));

const shardsSchema = z
  .number(must('must be a whole number'))
  .int(must('must be a whole number'))
  .min(1, must('must be at least 1'))
  .max(MAX_SHARDS, must(`must be at most ${MAX_SHARDS}`));

export const queueOptionsSchema = z.strictObject({
  ...connectionShape,
  shards: shardsSchema.optional(),
  maxPayloadBytes: z.number(must('must be a number')).int(must('must be a whole number')).min(1, must('must be positive')).optional(),
  connectTimeoutMs: producerTimeoutSchema.optional(),
  commandTimeoutMs: producerTimeoutSchema.optional(),
});

export const workerOptionsSchema = z.strictObject({
  ...connectionShape,
  shards: shardsSchema.optional(),
  concurrency: positiveInt(MAX_CONCURRENCY).optional(),
  batch: positiveInt(MAX_BATCH).optional(),
  leaseMs: positiveInt(MAX_DELAY_MS)
    .min(MIN_LEASE_MS, must(`must be at least ${MIN_LEASE_MS}`))
    .optional(),
  attempts: attemptsSchema.optional(),
  backoff: z.union([backoffSchema, z.function()], must('must be a backoff spec or a function')).optional(),
  closeTimeoutMs: z.number(must('must be a number')).min(0, must('must not be negative')).optional(),
  idleCheckMs: positiveInt(MAX_DELAY_MS).optional(),
  timeoutMs: positiveInt(MAX_DELAY_MS).optional(),
  autostart: z.boolean(must('must be true or false')).optional(),
  maxErrorLength: positiveInt(MAX_ERROR_LENGTH).optional(),
  isolation: z.enum(['thread', 'process'], must("must be 'thread' or 'process'")).optional(),
  isolationPoolSize: positiveInt(MAX_CONCURRENCY).optional(),
  isolationGraceMs: ms('1 minute', 60_000).optional(),
  isolationMemoryMb: positiveInt(1 << 20)
    .min(16, must('must be at least 16'))
    .optional(),
});

/** Runs an options schema (nothing or null means no options) and turns its first issue into a ValidationError naming the field. */
export function parseOptions<S extends z.ZodType>(schema: S, value: unknown, field = ''): z.output<S> {
  return parseValue(schema, value ?? {}, field);
}

type ParsedAddOptions = z.output<typeof addOptionsSchema>;

/**
 * idSchema's checks by hand, in one pass over the characters: not empty, at most MAX_ID_LENGTH,
 * no control character (CONTROL_CHARS), no lone surrogate half (WHOLE_UNICODE). The two patterns
 * cost ~65 ns an id (two regexp calls), this loop ~20 (an id of ten characters, measured).
 */
function plainId(v: unknown): boolean {
  if (typeof v !== 'string' || v.length === 0 || v.length > MAX_ID_LENGTH) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20) return false;
    if (c < 0x7f) continue;
    if (c <= 0x9f) return false;
    if (c < 0xd800 || c > 0xdfff) continue;
    // A high half followed by a low half; past the end, charCodeAt is NaN and fails the test.
    if (c > 0xdbff) return false;
    const low = v.charCodeAt(++i);
    if (!(low >= 0xdc00 && low <= 0xdfff)) return false;
  }
  return true;
}
const wholeIn = (v: unknown, min: number, max: number) => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
/** runAtSchema's bounds on epoch ms (NaN and ±Infinity fail them too). */
const runAtIn = (t: number) => t >= MIN_RUN_AT_MS && t <= MAX_RUN_AT_MS;

/**
 * An add's options of the common shape checked by hand, or undefined to say "ask the schema".
 * zod costs ~2-3 µs a job (a sixth of a bulk add's producer CPU, measured), and an addBulk of
 * 50,000 pays it 50,000 times; this is "fast accept, slow reject": it accepts only what it can
 * vouch for (a plain object with only id, delay, runAt, priority, attempts, replace, group, name,
 * timeoutMs and cost, each valid, not both delay and runAt), giving what the schema gives for it
 * as the add reads it (runAt as a Date becomes its epoch ms), and leaves everything else to
 * addOptionsSchema, which then decides and names what is wrong, so no error message has two
 * sources. The answer has every one of those keys, undefined when not given (one shape: the add
 * reads it monomorphically, and no key list is built to copy only those given).
 *
 * The keys are found as the schema finds them: unknown keys by `for…in` (the enumerable ones, as
 * zod's strictObject looks for them; a symbol or a non-enumerable one is ignored by both), known
 * ones read by name (a non-enumerable one counts). Each value is read once, before any is
 * checked: a getter cannot answer one thing to the check and another to the add.
 * test/property/add-options.test.ts holds the two to the same answers.
 */
export function fastAddOptions(value: unknown): ParsedAddOptions | undefined {
  if (value === undefined || value === null)
    return addOptionsRead(undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined);
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return undefined;
  for (const k in value) if (!fastKey(k)) return undefined;
  const o = value as Record<string, unknown>;
  const { id, delay, priority, attempts, replace, group, name, timeoutMs, cost } = o;
  let runAt = o.runAt;
  if (id !== undefined && !plainId(id)) return undefined;
  if (group !== undefined && !plainId(group)) return undefined;
  if (name !== undefined && !plainId(name)) return undefined;
  if (delay !== undefined && !(typeof delay === 'number' && delay >= 0 && delay <= MAX_DELAY_MS)) return undefined;
  if (runAt !== undefined) {
    // The schema's one refinement among these keys: not both.
    if (delay !== undefined) return undefined;
    if (runAt instanceof Date && Object.getPrototypeOf(runAt) === Date.prototype) runAt = runAt.getTime();
    if (!(typeof runAt === 'number' && runAtIn(runAt))) return undefined;
  }
  if (priority !== undefined && !wholeIn(priority, -MAX_PRIORITY, MAX_PRIORITY)) return undefined;
  if (attempts !== undefined && !wholeIn(attempts, 1, MAX_ATTEMPTS)) return undefined;
  if (replace !== undefined && typeof replace !== 'boolean') return undefined;
  if (timeoutMs !== undefined && !wholeIn(timeoutMs, 1, MAX_DELAY_MS)) return undefined;
  if (cost !== undefined && !wholeIn(cost, 1, MAX_RATE_TOKENS)) return undefined;
  return addOptionsRead(id, delay, runAt, priority, attempts, replace, group, name, timeoutMs, cost);
}

/** fastAddOptions's answer, every key in one order (checked values; unknown in, typed out). */
function addOptionsRead(
  id: unknown,
  delay: unknown,
  runAt: unknown,
  priority: unknown,
  attempts: unknown,
  replace: unknown,
  group: unknown,
  name: unknown,
  timeoutMs: unknown,
  cost: unknown,
): ParsedAddOptions {
  return { id, delay, runAt, priority, attempts, replace, group, name, timeoutMs, cost } as ParsedAddOptions;
}

/**
 * Whether fastAddOptions checks the key `k` (another, even with an undefined value, is left to the
 * schema). A switch, not a Set: ~15 ns less an add (micro-benchmark).
 */
function fastKey(k: string): boolean {
  switch (k) {
    case 'id':
    case 'delay':
    case 'runAt':
    case 'priority':
    case 'attempts':
    case 'replace':
    case 'group':
    case 'name':
    case 'timeoutMs':
    case 'cost':
      return true;
    default:
      return false;
  }
}

/** An add's options, checked: what addOptionsSchema answers (through fastAddOptions when it can vouch for them). */
export function parseAddOptions(value: unknown, field = ''): ParsedAddOptions {
  return fastAddOptions(value) ?? parseValue(addOptionsSchema, value, field);
}

/** Runs a schema on a value as given and turns its first issue into a ValidationError naming the field. */
export function parseValue<S extends z.ZodType>(schema: S, value: unknown, field = ''): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const path = [field, ...issue.path.map(String)].filter(Boolean).join('.');
  if (issue.code === 'unrecognized_keys') {
    const raw = issue.keys[0]!;
    // An empty or odd key is shown quoted, so the message still starts with something visible.
    const shown = /^[A-Za-z_$][\w$]*$/.test(raw) ? raw : JSON.stringify(raw);
    const key = [path, shown].filter(Boolean).join('.');
    throw new ValidationError(key, 'is not a known option');
  }
  if (issue.code === 'invalid_type' && issue.path.length === 0 && issue.expected === 'object') {
    throw new ValidationError(field || 'options', `must be an object (got ${show(value)})`);
  }
  throw new ValidationError(path || 'options', issue.message);
}

export function parseQueueName(name: unknown): string {
  return parseValue(queueNameSchema, name, 'queue name') as string;
}

export function parseId(id: unknown, field = 'id'): string {
  return parseValue(idSchema, id, field) as string;
}

/** `queue.cancel(id, opts)`. */
export interface CancelOptions {
  /**
   * Cancel the job even if it is running: its lease ends at once (its slot, and its group's, free
   * now), its handler's `job.signal` aborts with reason 'cancelled' wherever it runs, and
   * whatever its holder does next answers lease lost. @default false
   */
  running?: boolean;
  /** Why: kept in the `cancelled` event and given to anyone waiting for the job (JobCancelledError). */
  reason?: string;
}

export const cancelOptionsSchema = z.strictObject(
  {
    running: z.boolean(must('must be true or false')).optional(),
    reason: z
      .string(must('must be a string'))
      .max(MAX_ERROR_LENGTH, must(`must be at most ${MAX_ERROR_LENGTH} characters`))
      .optional(),
  },
  must('must be an object'),
);

/** `queue.fail(id, opts)`. */
export interface FailNowOptions {
  /** The failure's error text, kept as the job's last error and in its error history. @default 'failed by queue.fail' */
  reason?: string;
  /** To the dead set now, whatever attempts are left; also for a job that has not started. @default false */
  dead?: boolean;
  /**
   * When a running job's failed attempt is retried: this long from now. @default the default
   * backoff for its attempt (exponential from 1 s; a Queue does not know a worker's backoff)
   */
  retryDelayMs?: number;
}

export const failNowOptionsSchema = z.strictObject(
  {
    reason: z
      .string(must('must be a string'))
      .max(MAX_ERROR_LENGTH, must(`must be at most ${MAX_ERROR_LENGTH} characters`))
      .optional(),
    dead: z.boolean(must('must be true or false')).optional(),
    retryDelayMs: delaySchema.int(must('must be a whole number')).optional(),
  },
  must('must be an object'),
);

/** `queue.waitFor(id, opts)`, `queue.addAndWait(data, opts, wait)`. */
export interface WaitOptions {
  /** How long to wait for the job's end, ms. @default 60000 */
  timeoutMs?: number;
}

export const waitOptionsSchema = z.strictObject({ timeoutMs: timeoutMsSchema.optional() }, must('must be an object'));
