/**
 * A Queue is the producer side: it validates, then adds, cancels, reschedules, promotes and
 * reads jobs. Every call is one script run (addBulk: one per chunk).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { encodeBackoff } from './backoff.js';
import { ValidationError } from './errors.js';
import {
  addOptionsSchema,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  MAX_DELAY_MS,
  parseId,
  parseOptions,
  parseQueueName,
  queueOptionsSchema,
  rescheduleOptionsSchema,
  type AddOptions,
  type ConnectionOptions,
  type QueueOptions,
  type RescheduleOptions,
} from './options.js';
import { EventFeed } from './event-feed.js';
import { Schedules } from './schedules/schedules.js';
import { logSafely, type Logger } from './logger.js';
import { Tracing } from './tracing.js';
import { encodePayload } from './payload.js';
import { openStore } from './store/open-store.js';
import { checkShardCount } from './store/sharded/layout.js';
import type { ShardedStore, ShardFigures, ShardStatus } from './store/sharded/sharded-store.js';
import type { DeadJob, NewJob, ObliterateResult, PurgeTarget, RetainedSet, Store, StoredAddResult, VerifyReport } from './store/store.js';
import {
  LIST_ORDERS,
  LIST_STATES,
  type AddResult,
  type CancelResult,
  type DueTimeline,
  type JobInfo,
  type JobPage,
  type ListOrder,
  type ListState,
  type QueueStats,
  type RescheduleResult,
  type RetentionRule,
  type WorkerInfo,
} from './types.js';
import { decodeCursor, encodeCursor } from './inspect/cursor.js';
import { matcher, type SearchQuery } from './inspect/match.js';
import { idsMatching } from './inspect/retained-filter.js';
import { searchScan } from './inspect/search-scan.js';

/** Timeline bounds: a bucket of 1 s to 1 day, at most a day of minutes (one ZCOUNT per bucket). */
export const TIMELINE_BUCKET_MS = { min: 1000, max: 86_400_000, default: 60_000 };
export const TIMELINE_BUCKETS = { min: 1, max: 1440, default: 60 };
/** Most jobs a listing page or a search answer holds. */
export const PAGE_LIMIT_MAX = 1000;
/** The latest epoch ms a Date can hold; far enough out, and exact in a double with a timeline added. */
const MAX_EPOCH_MS = 8_640_000_000_000_000;

/** Jobs per script run in addBulk: large enough to amortise the round trip, small enough not to stall Redis. */
const BULK_CHUNK = 500;
/** Jobs a search reads by default, and at most, per call (the caller sees how many it read). */
const SEARCH_BUDGET = 10_000;
export const SEARCH_BUDGET_MAX = 1_000_000;

export interface ListOptions {
  state: ListState;
  /** Jobs per page, 1..1000. @default 50 */
  limit?: number;
  /** The `cursor` of the previous page (of the same order). */
  cursor?: string;
  /** `asc`: the state's order (oldest or soonest first); `desc`: the reverse (newest first). @default 'asc' */
  order?: ListOrder;
}

export interface TimelineOptions {
  /** Width of a bucket, ms, whole, 1000..86400000. @default 60000 */
  bucketMs?: number;
  /** Number of buckets, whole, 1..1440. @default 60 */
  buckets?: number;
  /** Start of the first bucket, epoch ms (server clock). @default the server's now */
  fromMs?: number;
}

export interface SearchOptions extends SearchQuery {
  /** Most matches to return. @default 50 */
  limit?: number;
  /** Most jobs to read in this call. @default 10000 */
  budget?: number;
  /** The `cursor` of the previous call, to go on where it stopped. */
  cursor?: string;
}

export interface SearchResult<T> {
  jobs: JobInfo<T>[];
  /** Jobs read by this call ("searched 10,000 of 1,200,000"). */
  scanned: number;
  /** Jobs in the queue. */
  total: number;
  /** Pass it back to search on; undefined when the whole queue was read. */
  cursor: string | undefined;
}

/** Which dead jobs a retry or purge takes, besides ids, all, or an age. */
export interface DeadFilter {
  /** Dead jobs whose last error contains this text. */
  errorContains?: string;
  /** Dead jobs whose data (as stored JSON) contains this text. */
  dataContains?: string;
}

export interface CancelManyResult {
  cancelled: number;
  /** One answer per id, in order. */
  results: CancelResult[];
}

export interface BulkJob<T> {
  data: T;
  opts?: AddOptions;
}

/** A dead job with its payload decoded (raw text when it is not valid JSON). */
export interface DeadJobInfo<T> extends Omit<DeadJob, 'data'> {
  data: T | string | undefined;
}

function decode<T>(text: string | undefined): T | string | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    // Corrupt bodies stay visible as text.
    return text;
  }
}

/** In-process events, past tense. A throwing listener is logged and never fails the call. */
export interface QueueEvents {
  added: [result: AddResult];
  cancelled: [result: CancelResult];
  rescheduled: [result: RescheduleResult];
  paused: [];
  resumed: [];
}

function addResult(id: string, r: StoredAddResult): AddResult {
  const out: AddResult = {
    id,
    added: r.code === 'added' || r.code === 'replaced',
    replaced: r.code === 'replaced',
    state: r.state,
    dueAtMs: r.dueAtMs,
  };
  if (r.duplicateOf !== undefined) out.duplicateOf = r.duplicateOf;
  return out;
}

/** A job as stored (raw JSON text) with its data, result and progress decoded; text that is not JSON stays text. */
function decodeJob<T>(info: JobInfo<string>): JobInfo<T> {
  return { ...info, data: decode<T>(info.data) as T, result: decode(info.result as string | undefined), progress: decode(info.progress as string | undefined) };
}

function retentionRule(v: unknown, field: string): { maxCount: number; maxAgeMs: number } {
  if (v === null || v === undefined) return { maxCount: 0, maxAgeMs: 0 };
  if (typeof v !== 'object' || Array.isArray(v)) throw new ValidationError(field, 'must be { count?, ageMs? }, or null to keep none (completed) / all (dead)');
  for (const k of Object.keys(v)) if (k !== 'count' && k !== 'ageMs') throw new ValidationError(`${field}.${k}`, 'is not a retention setting (count, ageMs)');
  const r = v as { count?: unknown; ageMs?: unknown };
  const check = (x: unknown, name: string, max: number): number => {
    if (x === undefined || x === null) return 0;
    if (typeof x !== 'number' || !Number.isInteger(x) || x < 1 || x > max)
      throw new ValidationError(`${field}.${name}`, `must be a whole number from 1 to ${max} (got ${String(x)})`);
    return x;
  };
  const out = { maxCount: check(r.count, 'count', 1_000_000_000), maxAgeMs: check(r.ageMs, 'ageMs', MAX_DELAY_MS) };
  if (out.maxCount === 0 && out.maxAgeMs === 0) throw new ValidationError(field, 'needs count or ageMs (or null)');
  return out;
}

function asRule(r: { maxCount: number; maxAgeMs: number }): RetentionRule | null {
  return r.maxCount === 0 && r.maxAgeMs === 0 ? null : { count: r.maxCount || undefined, ageMs: r.maxAgeMs || undefined };
}

function purgeTarget(target: string | readonly string[] | { all: true } | { olderThanMs: number }): PurgeTarget {
  if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
    if ('all' in target && target.all === true) return { all: true };
    if ('olderThanMs' in target && typeof target.olderThanMs === 'number' && Number.isFinite(target.olderThanMs) && target.olderThanMs >= 0) {
      return { olderThanMs: Math.floor(target.olderThanMs) };
    }
    throw new ValidationError('target', 'must be an id, a list of ids, { all: true } or { olderThanMs }');
  }
  return { ids: idList(target as string | string[], 'id') };
}

function idList(target: string | readonly string[], field: string): string[] {
  const ids = typeof target === 'string' ? [target] : target;
  if (!Array.isArray(ids)) throw new ValidationError(field, 'must be an id, a list of ids, or { all: true }');
  return ids.map((id, i) => parseId(id, Array.isArray(target) ? `${field}[${i}]` : field));
}

export class Queue<T = unknown> extends EventEmitter<QueueEvents> {
  readonly name: string;
  readonly #store: ShardedStore;
  readonly #ownsStore: boolean;
  readonly #maxPayloadBytes: number;
  readonly #logger: Logger | undefined;
  readonly #tracing: Tracing | undefined;
  readonly #connectTimeoutMs: number;
  /** The queue's cross-process event stream (opt-in). */
  readonly events: EventFeed;
  /** Recurring jobs: store them here, run a Scheduler (in any number of processes) to enqueue them. */
  readonly schedules: Schedules;

  constructor(name: string, opts: QueueOptions = {}) {
    super();
    // null is as good as nothing here (a common way to say "defaults").
    opts ??= {};
    this.name = parseQueueName(name);
    const o = parseOptions(queueOptionsSchema, opts);
    this.#maxPayloadBytes = o.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.#logger = opts.logger;
    this.#tracing = Tracing.from(opts.tracing);
    this.#connectTimeoutMs = o.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    // A producer gets an answer in bounded time: an error it can act on beats a silence.
    const { store, owned } = openStore(opts, { connectTimeoutMs: this.#connectTimeoutMs, commandTimeoutMs: o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS });
    store.declare(this.name, o.shards);
    this.#store = store;
    this.#ownsStore = owned;
    this.events = new EventFeed(store, this.name);
    this.schedules = new Schedules(store, this.name, this.#maxPayloadBytes);
  }

  #emit<K extends keyof QueueEvents>(event: K, ...args: QueueEvents[K]): void {
    if (this.listenerCount(event) === 0) return;
    try {
      (this.emit as (e: K, ...a: QueueEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      logSafely(this.#logger, 'error', { err, queue: this.name, event }, 'delayq: a queue event listener threw');
    }
  }

  /** The store behind this queue (shared with a Worker through the `store` option). */
  get store(): Store {
    return this.#store;
  }

  /**
   * The queue's shards: how many new jobs are spread over, their store names (the hash tags),
   * and shards an earlier reshard left that still hold jobs (`draining`, with their counts).
   */
  shards(): Promise<ShardStatus> {
    return this.#store.shards(this.name);
  }

  /**
   * Every shard of the queue (current, draining, and the queue's own keys) with its counts, its
   * lag and the Redis node that holds it: to see how jobs spread over a cluster's masters, what a
   * reshard still drains, and a shard that falls behind. One stats call per shard.
   */
  shardStats(): Promise<ShardFigures[]> {
    return this.#store.shardStats(this.name);
  }

  /**
   * Spreads new jobs over `shards` shards from now on, on a live queue: adds go to the new
   * shards at once, workers drain the old ones (and follow the change within milliseconds),
   * lookups find jobs in either. Nothing is moved, so nothing can be lost on the way. The old
   * shards drop out of the layout once they hold no job (dead and kept completed ones
   * included). See docs/operations.md, "Growing a sharded queue".
   */
  async reshard(shards: number): Promise<{ from: number; to: number; changed: boolean }> {
    return this.#store.reshard(this.name, checkShardCount(shards));
  }

  #toNewJob(data: unknown, opts: AddOptions | undefined, field: string): NewJob {
    const o = parseOptions(addOptionsSchema, opts, field);
    const delay = o.delay === undefined ? undefined : Math.ceil(o.delay);
    return {
      id: o.id ?? randomUUID(),
      data: encodePayload(data, this.#maxPayloadBytes, field ? `${field.replace(/\.?opts$/, '')}.data` : 'data'),
      delayMs: o.runAt === undefined ? (delay ?? 0) : undefined,
      runAtMs: o.runAt === undefined ? undefined : Math.ceil(o.runAt),
      priority: o.priority ?? 0,
      maxAttempts: o.attempts,
      backoff: o.backoff && encodeBackoff(o.backoff),
      replace: o.replace ?? false,
      dedup: o.dedup,
      traceContext: undefined,
    };
  }

  /** Adds one job. Resolves once the job is stored; `added: false` when the id existed or the add was deduplicated. */
  async add(data: T, opts?: AddOptions): Promise<AddResult> {
    const job = this.#toNewJob(data, opts, '');
    const [r] = await this.#send([job]);
    const result = addResult(job.id, r!);
    if (result.added) this.#emit('added', result);
    return result;
  }

  /**
   * Adds many jobs, one round trip per chunk of 500. Every job is validated before anything is
   * written; a failure in Redis part-way may leave earlier chunks written (re-adding with the
   * same ids is safe).
   */
  async addBulk(jobs: readonly BulkJob<T>[]): Promise<AddResult[]> {
    if (!Array.isArray(jobs)) throw new ValidationError('jobs', `must be an array of { data, opts? } (got ${jobs === null ? 'null' : typeof jobs})`);
    const news = jobs.map((j: unknown, i) => {
      if (typeof j !== 'object' || j === null || Array.isArray(j)) {
        throw new ValidationError(`jobs[${i}]`, `must be an object { data, opts? } (got ${j === null ? 'null' : Array.isArray(j) ? 'an array' : typeof j})`);
      }
      return this.#toNewJob((j as BulkJob<T>).data, (j as BulkJob<T>).opts, `jobs[${i}].opts`);
    });
    const stored = await this.#send(news);
    const results = stored.map((r, k) => addResult(news[k]!.id, r));
    if (this.listenerCount('added') > 0) for (const r of results) if (r.added) this.#emit('added', r);
    return results;
  }

  /** Writes jobs, one script run per chunk, inside a producer span when tracing is on. */
  #send(jobs: NewJob[]): Promise<StoredAddResult[]> {
    const write = async (traceContext: string | undefined) => {
      const chunks: Promise<StoredAddResult[]>[] = [];
      for (let i = 0; i < jobs.length; i += BULK_CHUNK) {
        const chunk = jobs.slice(i, i + BULK_CHUNK);
        if (traceContext !== undefined) for (const j of chunk) j.traceContext = traceContext;
        chunks.push(this.#store.add(this.name, chunk));
      }
      // The queue's name in the registry (one command per queue per process, sent alongside).
      const [, ...written] = await Promise.all([this.#store.register(this.name), ...chunks]);
      return written.flat();
    };
    if (!this.#tracing) return write(undefined);
    return this.#tracing.produce(
      this.name,
      jobs.map((j) => j.id),
      write,
    );
  }

  /** Removes a scheduled job (the order was paid: its timeout must not run). Active, dead and completed jobs stay. */
  async cancel(id: string): Promise<CancelResult> {
    const [result] = await this.#store.cancel(this.name, [parseId(id)]);
    if (result!.cancelled) this.#emit('cancelled', result!);
    return result!;
  }

  /** Cancels many scheduled jobs, a thousand per script run; one answer per id, in order. */
  async cancelMany(ids: readonly string[]): Promise<CancelManyResult> {
    if (!Array.isArray(ids)) throw new ValidationError('ids', 'must be an array of job ids');
    const results = await this.#store.cancel(
      this.name,
      ids.map((id, i) => parseId(id, `ids[${i}]`)),
    );
    for (const r of results) if (r.cancelled) this.#emit('cancelled', r);
    return { cancelled: results.filter((r) => r.cancelled).length, results };
  }

  /**
   * Removes every scheduled job (due or not), or with `dueBefore` (epoch ms) only those due
   * before it, a thousand per script run so Redis never stalls. Active, dead and completed jobs
   * stay. Returns how many were removed.
   */
  async drain(opts: { dueBefore?: number } | null = {}): Promise<{ removed: number }> {
    const before = opts?.dueBefore;
    if (before !== undefined && (typeof before !== 'number' || !Number.isFinite(before) || before < 0)) {
      throw new ValidationError('dueBefore', `must be epoch milliseconds (got ${String(before)})`);
    }
    return { removed: await this.#store.drain(this.name, before === undefined ? undefined : Math.floor(before)) };
  }

  /**
   * Removes everything of this queue: jobs in every state, settings, event stream, schedules,
   * worker entries, and its name in the registry. Refuses (removed: false, nothing touched)
   * while jobs are active, unless `force`: their workers' acks then find nothing.
   */
  obliterate(opts: { force?: boolean } | null = {}): Promise<ObliterateResult> {
    const force = opts?.force ?? false;
    if (typeof force !== 'boolean') throw new ValidationError('force', 'must be true or false');
    return this.#store.obliterate(this.name, force);
  }

  /** The workers of this queue whose heartbeat is live (every process, every host). */
  workers(): Promise<WorkerInfo[]> {
    return this.#store.workers(this.name);
  }

  /**
   * How long this queue keeps finished jobs, for every process: `completed` (off by default:
   * a completed job is deleted at once) and `dead` (by default kept until purged), each as
   * `{ count?, ageMs? }`: at most `count` jobs, none older than `ageMs`, the oldest going first.
   * `null` turns completed retention off (kept jobs stay until purged) and lifts the dead
   * set's bounds. A setting left out is left as it is.
   */
  async setRetention(rules: { completed?: { count?: number; ageMs?: number } | null; dead?: { count?: number; ageMs?: number } | null }): Promise<void> {
    if (typeof rules !== 'object' || rules === null) throw new ValidationError('rules', 'must be { completed?, dead? }');
    for (const k of Object.keys(rules)) if (k !== 'completed' && k !== 'dead') throw new ValidationError(k, 'is not a retained set (completed, dead)');
    const writes: [RetainedSet, { maxCount: number; maxAgeMs: number }][] = [];
    for (const set of ['completed', 'dead'] as const) if (set in rules) writes.push([set, retentionRule(rules[set], set)]);
    for (const [set, r] of writes) await this.#store.setRetention(this.name, set, r.maxCount, r.maxAgeMs);
  }

  /** The retention rules in force (null: completed jobs are not kept / dead jobs are kept until purged). */
  async retention(): Promise<{ completed: RetentionRule | null; dead: RetentionRule | null }> {
    const r = await this.#store.retention(this.name);
    return { completed: asRule(r.completed), dead: asRule(r.dead) };
  }

  /** Reading jobs: listings by state, and search over payloads. */
  readonly jobs = {
    /**
     * One page of the jobs in a state, in that state's order: scheduled by due time; ready
     * (due and waiting) in hand-out order; active by lease deadline; dead by time of death;
     * completed (kept) by finish time; `order: 'desc'` lists the reverse (newest first). Pass
     * `cursor` back for the next page: paging neither repeats nor skips a job that stays put.
     * Each page costs O(log n + limit) in Redis.
     */
    list: async (opts: ListOptions): Promise<JobPage<T>> => {
      if (typeof opts !== 'object' || opts === null) throw new ValidationError('opts', 'must be { state, limit?, cursor? }');
      const state = opts.state;
      if (!LIST_STATES.includes(state)) throw new ValidationError('state', `must be one of ${LIST_STATES.join(', ')} (got ${String(state)})`);
      const limit = opts.limit ?? 50;
      if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX)
        throw new ValidationError('limit', `must be a whole number from 1 to ${PAGE_LIMIT_MAX} (got ${String(limit)})`);
      const order = opts.order ?? 'asc';
      if (!LIST_ORDERS.includes(order)) throw new ValidationError('order', `must be asc or desc (got ${String(order)})`);
      const page = await this.#store.list(this.name, state, decodeCursor(state, opts.cursor, order), limit, order);
      return { state, jobs: page.jobs.map((j) => decodeJob<T>(j)), total: page.total, cursor: page.next && encodeCursor(state, page.next, order) };
    },
    /**
     * Finds jobs by text in their id or data, or by a value at a JSON path, reading at most
     * `budget` jobs per call: the answer says how many it read of how many there are, and a
     * cursor to go on. Every state is searched (completed ones while kept).
     */
    search: async (opts: SearchOptions): Promise<SearchResult<T>> => {
      const match = matcher(opts);
      const limit = opts.limit ?? 50;
      const budget = opts.budget ?? SEARCH_BUDGET;
      if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX)
        throw new ValidationError('limit', `must be a whole number from 1 to ${PAGE_LIMIT_MAX} (got ${String(limit)})`);
      if (!Number.isInteger(budget) || budget < 1 || budget > SEARCH_BUDGET_MAX)
        throw new ValidationError('budget', `must be a whole number from 1 to ${SEARCH_BUDGET_MAX} (got ${String(budget)})`);
      const { ids, scanned, total, cursor } = await searchScan(this.#store, this.name, match, limit, budget, opts.cursor);
      const found = await this.#store.getMany(this.name, ids, false);
      return {
        jobs: found.filter((j): j is JobInfo<string> => j !== null).map((j) => decodeJob<T>(j)),
        scanned,
        total,
        cursor,
      };
    },
  };

  /** Kept completed jobs (see setRetention). */
  readonly completed = {
    /** Deletes kept completed jobs now. Returns how many. */
    purge: (target: string | readonly string[] | { all: true } | { olderThanMs: number }): Promise<number> => {
      return this.#store.purge(this.name, 'completed', purgeTarget(target));
    },
  };

  /** Ids of dead jobs that pass a filter, read a page at a time (bounded per call to Redis). */
  async #deadMatching(filter: DeadFilter): Promise<string[]> {
    const keys = Object.keys(filter);
    for (const k of keys)
      if (k !== 'errorContains' && k !== 'dataContains') throw new ValidationError(k, 'is not a dead-set filter (errorContains, dataContains)');
    for (const k of keys) {
      const v = (filter as Record<string, unknown>)[k];
      if (typeof v !== 'string' || v === '') throw new ValidationError(k, 'must be a non-empty string');
    }
    if (keys.length === 0) throw new ValidationError('filter', 'needs errorContains or dataContains (or use { all: true })');
    return idsMatching(this.#store, this.name, 'dead', filter);
  }

  /** Gives a scheduled job a new due time. */
  async reschedule(id: string, when: RescheduleOptions): Promise<RescheduleResult> {
    const o = parseOptions(rescheduleOptionsSchema, when);
    const result = await this.#store.reschedule(
      this.name,
      parseId(id),
      o.delay === undefined ? undefined : Math.ceil(o.delay),
      o.runAt === undefined ? undefined : Math.ceil(o.runAt),
    );
    if (result.rescheduled) this.#emit('rescheduled', result);
    return result;
  }

  /** Makes a scheduled job due now. */
  async promote(id: string): Promise<RescheduleResult> {
    const result = await this.#store.reschedule(this.name, parseId(id), 0, undefined);
    if (result.rescheduled) this.#emit('rescheduled', result);
    return result;
  }

  /**
   * Stops every worker of this queue, in every process, from claiming. Running jobs go on;
   * scheduled jobs keep their due times; leases that run out are still recovered. Returns
   * false when the queue was already paused.
   */
  async pause(): Promise<boolean> {
    const changed = await this.#store.setPaused(this.name, true);
    if (changed) this.#emit('paused');
    return changed;
  }

  /** Lets workers claim again; they are signalled at once, and overdue jobs run in the usual order. */
  async resume(): Promise<boolean> {
    const changed = await this.#store.setPaused(this.name, false);
    if (changed) this.#emit('resumed');
    return changed;
  }

  /**
   * The job with its state, times, lease holder, progress, logs, its last failed attempts
   * (`errors`) and (kept completed jobs) its result, or null. Data that is not valid JSON is
   * returned as its raw text.
   */
  async get(id: string): Promise<JobInfo<T> | null> {
    const info = await this.#store.get(this.name, parseId(id));
    // Corrupt bodies stay visible as text; the worker is the one that dead-letters them.
    return info ? decodeJob<T>(info) : null;
  }

  /** Counts by state, by the server's clock; `windowMs` sets `dueWithinWindow`. */
  async stats(opts: { windowMs?: number } | null = {}): Promise<QueueStats> {
    const windowMs = opts?.windowMs ?? 60_000;
    if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs < 0) {
      throw new ValidationError('windowMs', `must be a non-negative number of milliseconds (got ${String(windowMs)})`);
    }
    return this.#store.stats(this.name, windowMs);
  }

  /**
   * How many scheduled jobs fall due in each bucket of time ahead, by the server's clock:
   * `counts[i]` is the number of jobs due in [fromMs + i·bucketMs, fromMs + (i+1)·bucketMs) that
   * are not due yet (jobs already due, waiting for a worker, are `stats().ready`, not here).
   * One script run of one ZCOUNT per bucket; no job is read.
   */
  async timeline(opts: TimelineOptions | null = {}): Promise<DueTimeline> {
    opts ??= {};
    if (typeof opts !== 'object' || Array.isArray(opts)) throw new ValidationError('opts', 'must be { bucketMs?, buckets?, fromMs? }');
    for (const k of Object.keys(opts))
      if (k !== 'bucketMs' && k !== 'buckets' && k !== 'fromMs') throw new ValidationError(k, 'is not a timeline option (bucketMs, buckets, fromMs)');
    const whole = (v: unknown, field: string, b: { min: number; max: number; default: number }): number => {
      if (v === undefined) return b.default;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < b.min || v > b.max)
        throw new ValidationError(field, `must be a whole number from ${b.min} to ${b.max} (got ${String(v)})`);
      return v;
    };
    const bucketMs = whole(opts.bucketMs, 'bucketMs', TIMELINE_BUCKET_MS);
    const buckets = whole(opts.buckets, 'buckets', TIMELINE_BUCKETS);
    const from = opts.fromMs;
    if (from !== undefined && (typeof from !== 'number' || !Number.isFinite(from) || from < 0 || from > MAX_EPOCH_MS)) {
      throw new ValidationError('fromMs', `must be epoch milliseconds (got ${String(from)})`);
    }
    return this.#store.timeline(this.name, from === undefined ? undefined : Math.floor(from), bucketMs, buckets);
  }

  /** The dead set: jobs out of attempts, failed for good, or corrupt. */
  readonly dead = {
    /** One dead job with its data, attempts and last error; null when it is not dead. */
    get: async (id: string): Promise<JobInfo<T> | null> => {
      const info = await this.get(id);
      return info?.state === 'dead' ? info : null;
    },
    /** A page of dead jobs, oldest death first. */
    list: async (opts: { offset?: number; limit?: number } | null = {}): Promise<{ total: number; jobs: DeadJobInfo<T>[] }> => {
      const offset = opts?.offset ?? 0;
      const limit = opts?.limit ?? 100;
      if (!Number.isInteger(offset) || offset < 0) throw new ValidationError('offset', `must be a whole number from 0 (got ${String(offset)})`);
      if (!Number.isInteger(limit) || limit < 0 || limit > 10_000)
        throw new ValidationError('limit', `must be a whole number from 0 to 10000 (got ${String(limit)})`);
      const page = await this.#store.deadList(this.name, offset, limit);
      return { total: page.total, jobs: page.jobs.map((j) => ({ ...j, data: decode<T>(j.data) })) };
    },
    /**
     * Puts dead jobs back to scheduled, due now, with a fresh set of attempts: by id, all, or
     * by filter (`{ errorContains }`, `{ dataContains }`). Returns how many.
     */
    retry: async (target: string | readonly string[] | { all: true } | DeadFilter): Promise<number> => {
      if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
        if ('all' in target) {
          if ((target as { all?: unknown }).all !== true) throw new ValidationError('target', 'must be an id, a list of ids, { all: true } or a filter');
          return this.#store.deadRetry(this.name, 'all');
        }
        const ids = await this.#deadMatching(target as DeadFilter);
        return ids.length === 0 ? 0 : this.#store.deadRetry(this.name, ids);
      }
      return this.#store.deadRetry(this.name, idList(target as string | string[], 'id'));
    },
    /**
     * Bounds the dead set for every process: at most `maxCount` jobs, none older than
     * `maxAgeMs`; the oldest deaths are purged first (each purge is an event on the stream).
     * Sets both caps; an omitted or `null` cap means none. Without caps the dead set grows until
     * a person purges it.
     */
    setCaps: async (caps: { maxCount?: number | null; maxAgeMs?: number | null }): Promise<void> => {
      const check = (v: unknown, field: string, max: number): number => {
        if (v === null || v === undefined) return 0;
        if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max)
          throw new ValidationError(field, `must be a whole number from 1 to ${max}, or null for no cap (got ${String(v)})`);
        return v;
      };
      if (typeof caps !== 'object' || caps === null) throw new ValidationError('caps', 'must be { maxCount?, maxAgeMs? }');
      for (const k of Object.keys(caps)) if (k !== 'maxCount' && k !== 'maxAgeMs') throw new ValidationError(k, 'is not a dead-set cap (maxCount, maxAgeMs)');
      const maxCount = check(caps.maxCount, 'maxCount', 1_000_000_000);
      const maxAgeMs = check(caps.maxAgeMs, 'maxAgeMs', MAX_DELAY_MS);
      await this.#store.setRetention(this.name, 'dead', maxCount, maxAgeMs);
    },
    /** Deletes dead jobs for good: by id, all, older than an age, or by filter. Returns how many. */
    purge: async (target: string | readonly string[] | { all: true } | { olderThanMs: number } | DeadFilter): Promise<number> => {
      if (typeof target === 'object' && target !== null && !Array.isArray(target) && !('all' in target) && !('olderThanMs' in target)) {
        const ids = await this.#deadMatching(target as DeadFilter);
        return ids.length === 0 ? 0 : this.#store.purge(this.name, 'dead', { ids });
      }
      return this.#store.purge(this.name, 'dead', purgeTarget(target as string | string[] | { all: true } | { olderThanMs: number }));
    },
  };

  /**
   * Walks the queue's keys and reports any job in no state or in two, entries without a body,
   * and active jobs without a lease. For tests and incident checks; it reads the whole queue.
   */
  verify(): Promise<VerifyReport> {
    return this.#store.verify(this.name);
  }

  /**
   * Resolves once Redis is connected and answering; rejects with a ConnectionError naming the
   * address after `connectTimeoutMs`. Not needed before calls (each waits by itself), but a
   * process can check its Redis at start-up and fail fast.
   */
  waitUntilReady(): Promise<void> {
    return this.#store.waitUntilReady(this.#connectTimeoutMs);
  }

  /** Closes the queue's own connection; calls still waiting fail with a ConnectionError. Resolves within about a second whatever Redis does. */
  async close(): Promise<void> {
    if (this.#ownsStore) await this.#store.close();
  }
}

/**
 * The queues under a connection's prefix (every queue that was ever added to or had a worker,
 * until obliterated), with their counts. One registry read plus one stats call per queue.
 */
export async function listQueues(
  opts: ConnectionOptions & { connectTimeoutMs?: number; commandTimeoutMs?: number } = {},
): Promise<{ name: string; stats: QueueStats }[]> {
  const { store, owned } = openStore(opts, {
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeoutMs: opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
  });
  try {
    const names = await store.queues();
    return await Promise.all(names.map(async (name) => ({ name, stats: await store.stats(name, 60_000) })));
  } finally {
    if (owned) await store.close();
  }
}
