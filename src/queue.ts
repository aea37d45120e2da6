/**
 * A Queue is the producer side: it validates, then adds, cancels, reschedules, promotes and
 * reads jobs. Every call is one script run (addBulk: one per chunk).
 */
import { randomUUID } from 'node:crypto';
import { encodeBackoff } from './backoff.js';
import { ValidationError } from './errors.js';
import {
  addOptionsSchema,
  DEFAULT_MAX_PAYLOAD_BYTES,
  idSchema,
  parseId,
  parseOptions,
  parseQueueName,
  queueOptionsSchema,
  rescheduleOptionsSchema,
  type AddOptions,
  type QueueOptions,
  type RescheduleOptions,
} from './options.js';
import { encodePayload } from './payload.js';
import { openStore } from './store/open-store.js';
import type { DeadJob, NewJob, PurgeTarget, Store, VerifyReport } from './store/store.js';
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

function idList(target: string | readonly string[], field: string): string[] {
  const ids = typeof target === 'string' ? [target] : target;
  if (!Array.isArray(ids)) throw new ValidationError(field, 'must be an id, a list of ids, or { all: true }');
  return ids.map((id, i) => parseOptions(idSchema, id, Array.isArray(target) ? `${field}[${i}]` : field) as string);
}

export class Queue<T = unknown> {
  readonly name: string;
  readonly #store: Store;
  readonly #ownsStore: boolean;
  readonly #maxPayloadBytes: number;

  constructor(name: string, opts: QueueOptions = {}) {
    this.name = parseQueueName(name);
    const o = parseOptions(queueOptionsSchema, opts);
    this.#maxPayloadBytes = o.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    const { store, owned } = openStore(opts);
    this.#store = store;
    this.#ownsStore = owned;
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
    };
  }

  /** Adds one job. Resolves once the job is stored; `added: false` when the id existed. */
  async add(data: T, opts?: AddOptions): Promise<AddResult> {
    const job = this.#toNewJob(data, opts, '');
    const [r] = await this.#store.add(this.name, [job]);
    return { id: job.id, added: r!.code !== 'exists', replaced: r!.code === 'replaced', state: r!.state, dueAtMs: r!.dueAtMs };
  }

  /**
   * Adds many jobs, one round trip per chunk of 500. Every job is validated before anything is
   * written; a failure in Redis part-way may leave earlier chunks written (re-adding with the
   * same ids is safe).
   */
  async addBulk(jobs: readonly BulkJob<T>[]): Promise<AddResult[]> {
    const news = jobs.map((j, i) => this.#toNewJob(j?.data, j?.opts, `jobs[${i}].opts`));
    const chunks: Promise<AddResult[]>[] = [];
    for (let i = 0; i < news.length; i += BULK_CHUNK) {
      const chunk = news.slice(i, i + BULK_CHUNK);
      chunks.push(
        this.#store.add(this.name, chunk).then((rs) =>
          rs.map((r, k) => ({
            id: chunk[k]!.id,
            added: r.code !== 'exists',
            replaced: r.code === 'replaced',
            state: r.state,
            dueAtMs: r.dueAtMs,
          })),
        ),
      );
    }
    return (await Promise.all(chunks)).flat();
  }

  /** Removes a scheduled job (the order was paid: its timeout must not run). Active and dead jobs stay. */
  async cancel(id: string): Promise<CancelResult> {
    return this.#store.cancel(this.name, parseId(id));
  }

  /** Gives a scheduled job a new due time. */
  async reschedule(id: string, when: RescheduleOptions): Promise<RescheduleResult> {
    const o = parseOptions(rescheduleOptionsSchema, when);
    return this.#store.reschedule(
      this.name,
      parseId(id),
      o.delay === undefined ? undefined : Math.ceil(o.delay),
      o.runAt === undefined ? undefined : Math.ceil(o.runAt),
    );
  }

  /** Makes a scheduled job due now. */
  async promote(id: string): Promise<RescheduleResult> {
    return this.#store.reschedule(this.name, parseId(id), 0, undefined);
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
  async stats(opts: { windowMs?: number } = {}): Promise<QueueStats> {
    const windowMs = opts.windowMs ?? 60_000;
    if (typeof windowMs !== 'number' || !Number.isFinite(windowMs) || windowMs < 0) {
      throw new ValidationError('windowMs', `must be a non-negative number of milliseconds (got ${String(windowMs)})`);
    }
    return this.#store.stats(this.name, windowMs);
  }

  /** The dead set: jobs out of attempts, failed for good, or corrupt. */
  readonly dead = {
    /** A page of dead jobs, oldest death first. */
    list: async (opts: { offset?: number; limit?: number } = {}): Promise<{ total: number; jobs: DeadJobInfo<T>[] }> => {
      const offset = opts.offset ?? 0;
      const limit = opts.limit ?? 100;
      if (!Number.isInteger(offset) || offset < 0) throw new ValidationError('offset', `must be a whole number from 0 (got ${String(offset)})`);
      if (!Number.isInteger(limit) || limit < 0 || limit > 10_000) throw new ValidationError('limit', `must be a whole number from 0 to 10000 (got ${String(limit)})`);
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

  async close(): Promise<void> {
    if (this.#ownsStore) await this.#store.close();
  }
}
