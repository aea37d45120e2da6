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
  type QueueOptions,
  type RescheduleOptions,
} from './options.js';
import { EventFeed } from './event-feed.js';
import { Schedules } from './schedules/schedules.js';
import { logSafely, type Logger } from './logger.js';
import { Tracing } from './tracing.js';
import { encodePayload } from './payload.js';
import { openStore } from './store/open-store.js';
import type { DeadJob, NewJob, PurgeTarget, Store, StoredAddResult, VerifyReport } from './store/store.js';
import type { AddResult, CancelResult, JobInfo, QueueStats, RescheduleResult } from './types.js';

/** Jobs per script run in addBulk: large enough to amortise the round trip, small enough not to stall Redis. */
const BULK_CHUNK = 500;

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

function idList(target: string | readonly string[], field: string): string[] {
  const ids = typeof target === 'string' ? [target] : target;
  if (!Array.isArray(ids)) throw new ValidationError(field, 'must be an id, a list of ids, or { all: true }');
  return ids.map((id, i) => parseId(id, Array.isArray(target) ? `${field}[${i}]` : field));
}

export class Queue<T = unknown> extends EventEmitter<QueueEvents> {
  readonly name: string;
  readonly #store: Store;
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
      return (await Promise.all(chunks)).flat();
    };
    if (!this.#tracing) return write(undefined);
    return this.#tracing.produce(
      this.name,
      jobs.map((j) => j.id),
      write,
    );
  }

  /** Removes a scheduled job (the order was paid: its timeout must not run). Active and dead jobs stay. */
  async cancel(id: string): Promise<CancelResult> {
    const result = await this.#store.cancel(this.name, parseId(id));
    if (result.cancelled) this.#emit('cancelled', result);
    return result;
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

  /** The job with its state, or null. Data that is not valid JSON is returned as its raw text. */
  async get(id: string): Promise<JobInfo<T> | null> {
    const info = await this.#store.get(this.name, parseId(id));
    if (!info) return null;
    let data: unknown = info.data;
    try {
      data = info.data === undefined ? undefined : JSON.parse(info.data);
    } catch {
      // Corrupt bodies stay visible as text; the worker is the one that dead-letters them.
    }
    return { ...info, data: data as T };
  }

  /** Counts by state, by the server's clock; `windowMs` sets `dueWithinWindow`. */
  async stats(opts: { windowMs?: number } | null = {}): Promise<QueueStats> {
    const windowMs = opts?.windowMs ?? 60_000;
    if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs < 0) {
      throw new ValidationError('windowMs', `must be a non-negative number of milliseconds (got ${String(windowMs)})`);
    }
    return this.#store.stats(this.name, windowMs);
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
    /** Puts dead jobs back to scheduled, due now, with a fresh set of attempts. Returns how many. */
    retry: async (target: string | readonly string[] | { all: true }): Promise<number> => {
      if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
        if ((target as { all?: unknown }).all !== true) throw new ValidationError('target', 'must be an id, a list of ids, or { all: true }');
        return this.#store.deadRetry(this.name, 'all');
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
      await this.#store.setDeadCaps(this.name, maxCount, maxAgeMs);
    },
    /** Deletes dead jobs for good. Returns how many. */
    purge: async (target: string | readonly string[] | { all: true } | { olderThanMs: number }): Promise<number> => {
      let t: PurgeTarget;
      if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
        if ('all' in target && target.all === true) t = { all: true };
        else if ('olderThanMs' in target && typeof target.olderThanMs === 'number' && Number.isFinite(target.olderThanMs) && target.olderThanMs >= 0) {
          t = { olderThanMs: Math.floor(target.olderThanMs) };
        } else throw new ValidationError('target', 'must be an id, a list of ids, { all: true } or { olderThanMs }');
      } else t = { ids: idList(target as string | string[], 'id') };
      return this.#store.deadPurge(this.name, t);
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
