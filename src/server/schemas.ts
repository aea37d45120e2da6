/**
 * The HTTP API's inputs and outputs as zod schemas. Inputs are checked with them (the job
 * options are the library's own schemas, so the API refuses exactly what `queue.add` refuses),
 * and the OpenAPI document is generated from them (openapi.ts).
 */
import * as z from 'zod';
import { addOptionsSchema, cancelOptionsSchema, failNowOptionsSchema, idSchema, rescheduleOptionsSchema } from '../options.js';
import { SEARCH_CURSOR_CHARS, SEARCH_CURSOR_MAX } from '../inspect/search-scan.js';
import { MAX_CONCURRENCY, MAX_RATE_TOKENS, MAX_RATE_WINDOW_MS, PAGE_LIMIT_MAX, SEARCH_BUDGET_MAX, TIMELINE_BUCKETS, TIMELINE_BUCKET_MS } from '../limits.js';
import { specSchema } from '../schedules/definition.js';
import { LIST_ORDERS, LIST_STATES } from '../types.js';

const wholeQuery = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/**
 * The longest listing cursor the library takes back (inspect/cursor.ts): base64url of the state
 * and the place in the listing, which on a sharded queue is a place per shard, so 256 shards
 * with long ids make cursors tens of KB long.
 */
export const LIST_CURSOR_MAX = 65_536;

/** A cursor as the API takes it: what the library hands out, bounded; the library checks the rest. */
const cursorQuery = (max: number, chars: RegExp) =>
  z.string().min(1).max(max).regex(chars, 'is not a cursor: pass back the cursor the previous page returned').optional();

/** Most jobs a filtered listing reads in one call (`budget`). */
export const FILTER_BUDGET_MAX = 100_000;

export const jobsQuery = z.strictObject({
  state: z.enum(LIST_STATES as [string, ...string[]]),
  /** `asc`: the state's order; `desc`: newest first. */
  order: z.enum(LIST_ORDERS as [string, ...string[]]).optional(),
  limit: wholeQuery(1, PAGE_LIMIT_MAX).optional(),
  cursor: cursorQuery(LIST_CURSOR_MAX, /^[A-Za-z0-9_-]+$/),
  /** Dead or completed jobs whose last error contains this text. */
  errorContains: z.string().min(1).max(1000).optional(),
  /** Only jobs of this name (`add({ name })`). */
  name: idSchema.optional(),
  /** With name or errorContains: the most jobs to read in this call. */
  budget: wholeQuery(1, FILTER_BUDGET_MAX).optional(),
});

export const countQuery = z.strictObject({ errorContains: z.string().min(1).max(1000), dataContains: z.string().min(1).max(1000).optional() });

export const searchQuery = z.strictObject({
  text: z.string().min(1).max(1000).optional(),
  /** Only jobs of this name (`add({ name })`), alone or with text or path. */
  name: idSchema.optional(),
  path: z.string().min(1).max(200).optional(),
  /** JSON text of the value at `path` (a bare word is read as a string). */
  equals: z.string().max(1000).optional(),
  limit: wholeQuery(1, PAGE_LIMIT_MAX).optional(),
  budget: wholeQuery(1, SEARCH_BUDGET_MAX).optional(),
  cursor: cursorQuery(SEARCH_CURSOR_MAX, SEARCH_CURSOR_CHARS),
});

export const timelineQuery = z.strictObject({
  bucketMs: wholeQuery(TIMELINE_BUCKET_MS.min, TIMELINE_BUCKET_MS.max).optional(),
  buckets: wholeQuery(TIMELINE_BUCKETS.min, TIMELINE_BUCKETS.max).optional(),
});

export const addBody = z
  .strictObject({
    data: z.unknown(),
    opts: addOptionsSchema.optional(),
  })
  .refine((b) => 'data' in b, { error: 'is required (any JSON value, null included)', path: ['data'] });

export const rescheduleBody = rescheduleOptionsSchema;

/** A cancel's options: `running` cancels a running job too (its lease ends, its handler is told). */
export const cancelBody = cancelOptionsSchema.optional();

/** `queue.fail`'s options: the reason, dead now, or when the retry is due. */
export const failBody = failNowOptionsSchema.optional();

/** A signal to a job (queue.signal): its name, and its data (any JSON, at most 16 KiB). */
export const signalBody = z.strictObject({ name: idSchema, data: z.unknown().optional() });
export const signalResult = z.object({ outcome: z.enum(['released', 'kept']), state: z.string().optional() });

/** How many jobs the person confirmed; the action is refused when more would be touched. */
const expect = z.number().int().min(0).optional();

export const idsBody = (max: number) => z.strictObject({ ids: z.array(idSchema).min(1).max(max) });

export const bulkBody = (max: number) =>
  z.union([
    z.strictObject({ ids: z.array(idSchema).min(1).max(max) }),
    z.strictObject({ all: z.literal(true), expect }),
    z
      .strictObject({ errorContains: z.string().min(1).max(1000).optional(), dataContains: z.string().min(1).max(1000).optional(), expect })
      .refine((f) => f.errorContains !== undefined || f.dataContains !== undefined, {
        error: 'give ids, all: true, errorContains or dataContains',
        path: ['ids'],
      }),
  ]);

export const drainBody = z.strictObject({ dueBefore: z.number().int().min(0).optional(), expect });

export const scheduleBody = specSchema;

export const loginBody = z.strictObject({ token: z.string().max(1000) });

/** A concurrency limit as `queue.setLimits` takes it: a whole number in range, or null for none. */
const concurrencyLimit = z
  .number(`must be a whole number from 1 to ${MAX_CONCURRENCY}, or null for no limit`)
  .int(`must be a whole number from 1 to ${MAX_CONCURRENCY}, or null for no limit`)
  .min(1, `must be a whole number from 1 to ${MAX_CONCURRENCY}, or null for no limit`)
  .max(MAX_CONCURRENCY, `must be a whole number from 1 to ${MAX_CONCURRENCY}, or null for no limit`)
  .nullable();

const RATE_MAX_TEXT = `must be a whole number of tokens from 1 to ${MAX_RATE_TOKENS}`;
const RATE_WINDOW_TEXT = `must be a whole number of milliseconds from 1 to ${MAX_RATE_WINDOW_MS} (a week)`;

/** A rate limit as `queue.setLimits` takes it: `{ max, perMs }` (most tokens in any window of perMs), or null for none. */
const rateLimitInput = z
  .strictObject(
    {
      max: z.number(RATE_MAX_TEXT).int(RATE_MAX_TEXT).min(1, RATE_MAX_TEXT).max(MAX_RATE_TOKENS, RATE_MAX_TEXT),
      perMs: z.number(RATE_WINDOW_TEXT).int(RATE_WINDOW_TEXT).min(1, RATE_WINDOW_TEXT).max(MAX_RATE_WINDOW_MS, RATE_WINDOW_TEXT),
    },
    'must be { max, perMs }, or null for no limit',
  )
  .nullable();

/** `queue.setLimits`: each limit a value, null to remove it, left out to leave it; at least one given. */
export const queueLimitsBody = z
  .strictObject({
    concurrency: concurrencyLimit.optional(),
    groupConcurrency: concurrencyLimit.optional(),
    rateLimit: rateLimitInput.optional(),
    groupRateLimit: rateLimitInput.optional(),
  })
  .refine((b) => b.concurrency !== undefined || b.groupConcurrency !== undefined || b.rateLimit !== undefined || b.groupRateLimit !== undefined, {
    error: 'give concurrency, groupConcurrency, rateLimit or groupRateLimit (a value, or null for no limit)',
    path: ['concurrency'],
  });

/**
 * `queue.groups.setLimits`: the group's own limit and rate limit, each null to fall back on the
 * queue's groupConcurrency / groupRateLimit, left out to leave it; at least one given.
 */
export const groupLimitBody = z
  .strictObject({ concurrency: concurrencyLimit.optional(), rateLimit: rateLimitInput.optional() })
  .refine((b) => b.concurrency !== undefined || b.rateLimit !== undefined, {
    error: 'give concurrency, rateLimit or both (a value, or null to remove the limit)',
    path: ['concurrency'],
  });

/**
 * The longest groups cursor the API takes: the dashboard's seal (see api/group-routes.ts) around
 * the library's cursor (at most 1,024 characters), base64url.
 */
export const GROUPS_CURSOR_MAX = 1500;

export const groupsQuery = z.strictObject({
  limit: wholeQuery(1, PAGE_LIMIT_MAX).optional(),
  cursor: cursorQuery(GROUPS_CURSOR_MAX, /^[A-Za-z0-9_.-]+$/),
});

// ---- outputs (documentation only: the library's types are the truth) ----

const ms = z.number().int();

export const jobInfo = z.object({
  id: z.string(),
  /** held: waiting for other jobs or a signal (docs/flows.md); `hold` on the job's own answer says what. */
  state: z.enum(['scheduled', 'active', 'dead', 'completed', 'held']),
  data: z.unknown(),
  dueAtMs: ms,
  ready: z.boolean(),
  priority: z.number().int(),
  attempt: z.number().int(),
  maxAttempts: z.number().int().optional(),
  timeoutMs: z.number().int().optional(),
  runningSinceMs: ms.optional(),
  createdAtMs: ms,
  leaseExpiresAtMs: ms.optional(),
  lastError: z.string().optional(),
  startedAtMs: ms.optional(),
  finishedAtMs: ms.optional(),
  workerId: z.string().optional(),
  result: z.unknown(),
  progress: z.unknown(),
  logs: z.array(z.string()).optional(),
  errors: z.array(z.object({ attempt: z.number().int(), atMs: ms, error: z.string() })).optional(),
  /** The group it was added to (`add({ group })`), if any. */
  group: z.string().optional(),
  /** Its name (`add({ name })`), if any. */
  name: z.string().optional(),
});

/** What keeps a scheduled job from running (`whyWaiting`), most binding first; for a held job, what its hold waits for. */
export const waitReason = z.object({
  code: z.enum([
    'not_due',
    'queue_paused',
    'group_paused',
    'no_worker',
    'queue_at_limit',
    'group_at_limit',
    'rate_limited',
    'group_rate_limited',
    'in_line',
    'held_dependencies',
    'held_signal',
  ]),
  text: z.string(),
  untilMs: ms.optional(),
  running: z.number().int().optional(),
  limit: z.number().int().optional(),
});

/** A job's hold (`queue.holdOf`, docs/flows.md): what it waits or waited for, and how each dependency ended. */
export const holdInfo = z.object({
  /** held: waiting; released: what it waited for happened; timedOut: its deadline came first; failed: buried for a failed dependency. */
  state: z.enum(['held', 'released', 'timedOut', 'failed']),
  /** The dependencies that have not ended, in the order given ([] once the hold settled). */
  waitingFor: z.array(z.string()),
  /** The signal it waits (or waited) for, if any. */
  signal: z.string().optional(),
  /** When it runs anyway, while held with a deadline (server clock, epoch ms). */
  deadlineAtMs: ms.optional(),
  onChildFailure: z.enum(['fail', 'ignore']),
  /** Each dependency, in the order given: how it ended, with its result (JSON text) or the reason. */
  children: z.array(
    z.object({
      id: z.string(),
      outcome: z.enum(['completed', 'dead', 'cancelled', 'pending']),
      result: z.string().optional(),
      reason: z.string().optional(),
    }),
  ),
});

/**
 * One job as `GET /queues/{q}/jobs/{id}` gives it: a listing's job, `why` ([] unless scheduled or
 * held) and `hold` (null for a job never held).
 */
export const jobDetail = jobInfo.extend({ why: z.array(waitReason), hold: holdInfo.nullable() });

export const queueStats = z.object({
  scheduled: z.number().int(),
  ready: z.number().int(),
  active: z.number().int(),
  dead: z.number().int(),
  completed: z.number().int(),
  workers: z.number().int(),
  nextDueInMs: ms.optional(),
  dueWithinWindow: z.number().int(),
  windowMs: ms,
  nowMs: ms,
  paused: z.boolean(),
  eventStreamLength: z.number().int().optional(),
  completedTotal: z.number().int(),
  oldestDueAgeMs: ms.optional(),
  /** Jobs in state held: waiting for other jobs or a signal (docs/flows.md). */
  heldJobs: z.number().int(),
  /** What holds due jobs back now (see describeHeld in src/store/held.ts). */
  held: z.object({
    queuePaused: z.boolean(),
    queueAtLimit: z.boolean(),
    pausedGroups: z.number().int(),
    pausedGroupsWaiting: z.number().int(),
    groupsAtLimit: z.number().int(),
    groupsAtLimitWaiting: z.number().int(),
    groupsComplete: z.boolean(),
    rateLimitedUntilMs: ms.optional(),
    rateLimitedGroups: z.number().int(),
  }),
});

export const jobPage = z.object({
  state: z.string(),
  jobs: z.array(jobInfo),
  total: z.number().int(),
  cursor: z.string().optional(),
  /** With name or errorContains: the jobs read by this call. */
  scanned: z.number().int().optional(),
});

export const matchCount = z.object({ count: z.number().int(), more: z.boolean() });

export const searchResult = z.object({
  jobs: z.array(jobInfo),
  scanned: z.number().int(),
  total: z.number().int(),
  cursor: z.string().optional(),
});

export const workerInfo = z.object({
  id: z.string(),
  host: z.string(),
  pid: z.number().int(),
  queue: z.string(),
  concurrency: z.number().int(),
  running: z.number().int(),
  startedAtMs: ms,
  lastSeenAtMs: ms,
  expiresAtMs: ms,
  version: z.string(),
  /** 'node', 'python', … ('' when the worker said none). */
  language: z.string(),
});

export const minutePoint = z.object({ t: ms, completed: z.number().int().optional(), lagMaxMs: ms.optional(), died: z.number().int().optional() });

export const histories = z.object({
  queues: z.array(
    z.object({
      name: z.string(),
      /** The first sample held (server clock): the figures cover since then, at most the last hour. */
      since: ms.optional(),
      completed: z.number().int(),
      died: z.number().int(),
      history: z.array(minutePoint),
    }),
  ),
});

export const queueSummary = z.object({ name: z.string(), stats: queueStats });

export const shardFigures = z.object({
  name: z.string(),
  role: z.enum(['current', 'draining', 'home']),
  node: z.string().optional(),
  scheduled: z.number().int(),
  ready: z.number().int(),
  active: z.number().int(),
  dead: z.number().int(),
  completed: z.number().int(),
  oldestDueAgeMs: ms.optional(),
  nextDueInMs: ms.optional(),
  rateHeld: z.boolean(),
});

/** A rate limit: at most `max` tokens in any window of `perMs` ms (server clock). */
export const rateLimit = z.object({ max: z.number().int(), perMs: z.number().int() });

/** How much of a rate limit is taken now (server clock). */
export const rateUse = z.object({
  /** Tokens taken in the current window. */
  used: z.number().int(),
  /** Held back by a RateLimitSignal until then; left out when not held. */
  heldUntilMs: ms.optional(),
  /** When the oldest token taken comes back; left out when none is taken. */
  nextRefillMs: ms.optional(),
});

/** The queue-wide limits; a limit left out is not set. */
export const queueLimits = z.object({
  concurrency: z.number().int().optional(),
  groupConcurrency: z.number().int().optional(),
  rateLimit: rateLimit.optional(),
  groupRateLimit: rateLimit.optional(),
});

/** `queue.rateStatus()`: the queue's limiter now, and how many groups are held back. */
export const rateStatus = z.object({ nowMs: ms, queue: rateUse, groupsHeld: z.number().int() });

export const queueDetail = z.object({
  name: z.string(),
  stats: queueStats,
  /**
   * `concurrency`: most jobs of the queue running at once; `groupConcurrency`: most of any one
   * group; `rateLimit` / `groupRateLimit`: most tokens the queue / one group takes in any window.
   */
  limits: queueLimits,
  /** The queue's rate limiter now: tokens taken, a hold, the next refill; groups held back. */
  rate: rateStatus,
  /** Shards new jobs are spread over (1: unsharded), and shard sets an earlier reshard left draining. */
  shards: z.number().int(),
  drainingShards: z.number().int(),
  retention: z.object({ completed: z.unknown(), dead: z.unknown() }),
  history: z.array(minutePoint),
  /** The first sample held (server clock): the history covers since then, at most the last hour. */
  historySince: ms.optional(),
});

export const timeline = z.object({ nowMs: ms, fromMs: ms, bucketMs: ms, counts: z.array(z.number().int()) });

export const scheduleInfo = z.object({
  name: z.string(),
  cron: z.string().optional(),
  every: z.number().int().optional(),
  tz: z.string(),
  data: z.unknown(),
  opts: z.unknown(),
  missed: z.enum(['latest', 'skip']),
  lastRunAtMs: ms.optional(),
  nextRunAtMs: ms.optional(),
  /** An occurrence past by more than max(1 min, half the interval) and not enqueued: no Scheduler is running it. */
  overdueAtMs: ms.optional(),
});

export const addResult = z.object({
  id: z.string(),
  added: z.boolean(),
  replaced: z.boolean(),
  duplicateOf: z.string().optional(),
  /** Folded into the pending job of its debounce key (`id`), whose data and due time it replaced. */
  debounced: z.boolean().optional(),
  state: z.string(),
  dueAtMs: ms,
});

export const changeResult = z.object({ id: z.string(), state: z.string().optional(), dueAtMs: ms.optional() });

export const countResult = z.object({ count: z.number().int() });

export const failResult = z.object({
  id: z.string(),
  outcome: z.enum(['retried', 'dead', 'refused', 'not_found']),
  state: z.string().optional(),
  dueAtMs: ms.optional(),
});

export const session = z.object({
  version: z.string(),
  readOnly: z.boolean(),
  canWrite: z.boolean(),
  user: z.string(),
  csrfToken: z.string(),
  maxBulk: z.number().int(),
  /** Payloads are redacted: search matches ids only. */
  redacted: z.boolean(),
  queues: z.array(z.string()).optional(),
});

export const errorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), field: z.string().optional() }),
});

export const ok = z.object({ ok: z.literal(true) });

export const changed = z.object({ ok: z.literal(true), changed: z.boolean() });

export const limitsChanged = z.object({ ok: z.literal(true), changed: z.boolean(), limits: queueLimits });

export const groupInfo = z.object({
  id: z.string(),
  /** Its jobs running now, across every worker. */
  running: z.number().int(),
  /** Its due jobs a claim put in its line, waiting for a slot or their turn. */
  waiting: z.number().int(),
  /** Its own limit; left out: the queue's groupConcurrency applies. */
  concurrency: z.number().int().optional(),
  /** Its own rate limit; left out: the queue's groupRateLimit applies. */
  rateLimit: rateLimit.optional(),
  /** Its tokens taken in the window, a hold and the next refill (server clock). */
  rate: rateUse,
  paused: z.boolean(),
});

export const groupsPage = z.object({
  groups: z.array(groupInfo),
  /** Pass back for the next page; left out on the last one. */
  cursor: z.string().optional(),
});

export const groupChanged = z.object({ ok: z.literal(true), changed: z.boolean(), group: groupInfo });
