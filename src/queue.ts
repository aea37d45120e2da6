/**
 * A Queue is the producer side: it validates, then adds, cancels, reschedules, promotes and
 * reads jobs. Every call is one script run (addBulk: one per chunk).
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { backoffDelay, DEFAULT_BACKOFF, encodeBackoff } from './backoff.js';
import {
  addOptionsSchema,
  fastAddOptions,
  parseValue,
  cancelOptionsSchema,
  failNowOptionsSchema,
  waitOptionsSchema,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_MAX_PAYLOAD_BYTES,
  parseId,
  parseOptions,
  parseQueueName,
  queueOptionsSchema,
  rescheduleOptionsSchema,
  type AddOptions,
  type CancelOptions,
  type FailNowOptions,
  type WaitOptions,
  type QueueOptions,
  type RescheduleOptions,
} from './options.js';
import { EventFeed } from './event-feed.js';
import { ValidationError } from './errors.js';
import { dependencyOrder } from './store/holds.js';
import { waitSignalProblem } from './worker/handed-job.js';
import { LIMIT } from './store/lifecycle.js';
import { Schedules } from './schedules/schedules.js';
import { logSafely, type Logger } from './logger.js';
import { Tracing } from './tracing.js';
import { decodeJob, encodePayload, payloadText } from './payload.js';
import { openStore } from './store/open-store.js';
import type { ShardAdmin, ShardFigures, ShardStatus } from './store/shard-admin.js';
import { TooCostlyError, tooCostly } from './store/too-costly.js';
import {
  type NewJob,
  type ObliterateResult,
  PartialAddError,
  type RateLimit,
  type RateStatus,
  type Store,
  type StoredAddResult,
  type SignalResult,
  type VerifyReport,
} from './store/store.js';
import type {
  AddResult,
  HoldInfo,
  CancelResult,
  FailNowResult,
  DueTimeline,
  HistoryMinute,
  JobInfo,
  QueueStats,
  RescheduleResult,
  RetentionRule,
  WorkerInfo,
} from './types.js';
import { completedSet, type CompletedSet } from './queue/completed-set.js';
import { deadSet, type DeadSet } from './queue/dead-set.js';
import { groupsApi, setQueueLimits, type Groups, type QueueLimitsInfo } from './queue/groups-api.js';
import { jobsInspector, type JobsInspector } from './queue/jobs-inspector.js';
import { AddBatcher, afterPendingAdds } from './queue/add-batcher.js';
import { JobWaiters } from './queue/job-waiters.js';
import { WORKER_DEFAULTS } from './worker/defaults.js';
import {
  bulkArray,
  bulkEntry,
  cancelIds,
  drainBefore,
  historyMinutes,
  obliterateForce,
  retentionRules,
  statsWindow,
  timelineArgs,
} from './queue/validation.js';
import { publicMinute } from './store/history-minutes.js';

export type { DeadFilter, DeadJobInfo } from './queue/dead-set.js';
export type { GroupInfo, Groups, QueueLimitsInfo } from './queue/groups-api.js';
export type { ListOptions, SearchOptions, SearchResult } from './queue/jobs-inspector.js';
export { listQueues } from './queue/list-queues.js';

/** Jobs per script run in addBulk: large enough to amortise the round trip, small enough not to stall Redis. */
const BULK_CHUNK = 500;

/**
 * Single adds per script run: a run goes out as soon as it holds this many, not when the turn
 * ends, so Redis writes one run while the producer makes the next (two stages, not a ping-pong).
 * 100 spreads a run's fixed cost (~31 µs of Redis CPU) to ~0.3 µs a job. Measured (bench: single
 * adds, 200 in flight, 5 runs each, medians): 80k jobs/s with one run a turn, 110k at 100, 105k at
 * 75, 103k at 150.
 */
const SINGLE_ADDS_PER_RUN = 100;

export interface TimelineOptions {
  /** Width of a bucket, ms, whole, 1000..86400000. @default 60000 */
  bucketMs?: number;
  /** Number of buckets, whole, 1..1440. @default 60 */
  buckets?: number;
  /** Start of the first bucket, epoch ms (server clock). @default the server's now */
  fromMs?: number;
}

export interface CancelManyResult {
  cancelled: number;
  /** One answer per id, in order. */
  results: CancelResult[];
}

/** One job of a flow (Queue.addFlow): its data and options, and the jobs it waits for. */
export interface FlowJob<T> {
  data: T;
  opts?: AddOptions;
  /** Jobs that run before it: it is held until every one has ended (docs/flows.md). */
  children?: FlowJob<T>[];
}

/** What addFlow did with each job of the flow, in the same tree. */
export interface FlowResult extends AddResult {
  children: FlowResult[];
}

export interface BulkJob<T> {
  data: T;
  opts?: AddOptions;
}

/** In-process events, past tense. A throwing listener is logged and never fails the call. */
export interface QueueEvents {
  added: [result: AddResult];
  cancelled: [result: CancelResult];
  rescheduled: [result: RescheduleResult];
  paused: [];
  resumed: [];
}

/**
 * Where an add's options are, for an error: '' (add), 'opts', `children[0].opts`…, or addBulk's
 * index i for `jobs[i].opts`, whose name is built only when job i is refused (not for each of
 * 50,000 jobs: ~0.25 µs a job with its data's name, measured).
 */
type OptsField = string | number;
const optsField = (f: OptsField): string => (typeof f === 'number' ? `jobs[${f}].opts` : f);
/** Where the add's data is, for an error: beside its options. */
const dataField = (f: OptsField): string => (typeof f === 'number' ? `jobs[${f}].data` : f ? `${f.replace(/\.?opts$/, '')}.data` : 'data');

function addResult(id: string, r: StoredAddResult): AddResult {
  // A debounced add answers for the burst's job, which took its data.
  if (r.code === 'debounced') return { id: r.duplicateOf ?? id, added: false, replaced: false, debounced: true, state: r.state, dueAtMs: r.dueAtMs };
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

function asRule(r: { maxCount: number; maxAgeMs: number }): RetentionRule | null {
  return r.maxCount === 0 && r.maxAgeMs === 0 ? null : { count: r.maxCount || undefined, ageMs: r.maxAgeMs || undefined };
}

/** addAndWait's add was deduplicated: it waits for the job holding the key instead. */
class DeduplicatedAdd extends Error {}

/** How long waitFor and addAndWait wait by default. */
const DEFAULT_WAIT_MS = 60_000;

export class Queue<T = unknown> extends EventEmitter<QueueEvents> {
  readonly name: string;
  /** The store, as opened: what adds are written with (#send) and what `store` answers. */
  readonly #store: Store;
  /** The store for every other call: each sends the pending adds first. */
  readonly #calls: Store;
  /** Single adds of one turn of the event loop, written in one script run. */
  readonly #adds: AddBatcher<AddResult>;
  readonly #shards: ShardAdmin;
  readonly #ownsStore: boolean;
  readonly #maxPayloadBytes: number;
  readonly #logger: Logger | undefined;
  readonly #tracing: Tracing | undefined;
  readonly #connectTimeoutMs: number;
  /** Waits for jobs' ends (waitFor, addAndWait): one subscription while any is pending. */
  readonly #waiters: JobWaiters;
  /** The queue's cross-process event stream (opt-in). */
  readonly events: EventFeed;
  /** Recurring jobs: store them here, run a Scheduler (in any number of processes) to enqueue them. */
  readonly schedules: Schedules;
  /** Reading jobs: listings by state, and search over payloads. */
  readonly jobs: JobsInspector<T>;
  /** Kept completed jobs (see setRetention). */
  readonly completed: CompletedSet;
  /** The dead set: jobs out of attempts, failed for good, or corrupt. */
  readonly dead: DeadSet<T>;
  /** The groups of this queue (`add(data, { group })`): their counts, own limits and pauses. */
  readonly groups: Groups;

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
    const { store, shards, owned } = openStore(opts, {
      connectTimeoutMs: this.#connectTimeoutMs,
      commandTimeoutMs: o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    });
    shards.declare(this.name, o.shards);
    this.#store = store;
    this.#adds = new AddBatcher(
      (jobs) => this.#send(jobs),
      SINGLE_ADDS_PER_RUN,
      (job, r) => this.#answer(job, r),
    );
    // Every other call goes out after the adds made before it (see AddBatcher).
    const calls = afterPendingAdds(store, this.#adds);
    this.#calls = calls;
    this.#shards = afterPendingAdds(shards, this.#adds);
    this.#ownsStore = owned;
    this.events = new EventFeed(calls, this.name);
    this.schedules = new Schedules(calls, this.name, this.#maxPayloadBytes);
    this.jobs = jobsInspector<T>(calls, this.name);
    this.completed = completedSet(calls, this.name);
    this.dead = deadSet<T>(calls, this.name, (id) => this.get(id));
    this.groups = groupsApi(calls, this.name);
    this.#waiters = new JobWaiters(calls, this.name, (err) =>
      logSafely(this.#logger, 'warn', { queue: this.name, error: err.message }, 'waitFor: subscription error'),
    );
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
    return this.#shards.shards(this.name);
  }

  /**
   * Every shard of the queue (current, draining, and the queue's own keys) with its counts, its
   * lag and the Redis node that holds it: to see how jobs spread over a cluster's masters, what a
   * reshard still drains, and a shard that falls behind. One stats call per shard.
   */
  shardStats(): Promise<ShardFigures[]> {
    return this.#shards.shardStats(this.name);
  }

  /**
   * Spreads new jobs over `shards` shards from now on, on a live queue: adds go to the new
   * shards at once, workers drain the old ones (and follow the change within milliseconds),
   * lookups find jobs in either. Nothing is moved, so nothing can be lost on the way. The old
   * shards drop out of the layout once they hold no job (dead and kept completed ones
   * included). See docs/operations.md, "Growing a sharded queue".
   */
  async reshard(shards: number): Promise<{ from: number; to: number; changed: boolean }> {
    return this.#shards.reshard(this.name, shards);
  }

  /** A job as the store takes it; `field` names its options in errors (a number i: addBulk's `jobs[i].opts`). */
  #toNewJob(data: unknown, opts: AddOptions | undefined, field: OptsField): NewJob {
    const o = fastAddOptions(opts) ?? parseValue(addOptionsSchema, opts, optsField(field));
    const text = payloadText(data, this.#maxPayloadBytes);
    if (typeof text !== 'string') throw new ValidationError(dataField(field), text.problem);
    const delay = o.delay === undefined ? undefined : Math.ceil(o.delay);
    return {
      id: o.id ?? randomUUID(),
      data: text,
      delayMs: o.runAt === undefined ? (delay ?? 0) : undefined,
      runAtMs: o.runAt === undefined ? undefined : Math.ceil(o.runAt),
      priority: o.priority ?? 0,
      maxAttempts: o.attempts,
      attemptsMade: o.attemptsMade || undefined,
      group: o.group,
      name: o.name,
      timeoutMs: o.timeoutMs,
      backoff: o.backoff && encodeBackoff(o.backoff),
      replace: o.replace ?? false,
      dedup: o.dedup,
      cost: o.cost ?? 1,
      debounce: o.debounce && { key: o.debounce.key, delayMs: o.debounce.delayMs, maxWaitMs: o.debounce.maxWaitMs },
      traceContext: undefined,
      hold: o.dependsOn && {
        dependsOn: o.dependsOn,
        deadlineMs: o.waitAtMostMs === undefined ? undefined : Math.ceil(o.waitAtMostMs),
        deadlineAtMs: o.waitUntil === undefined ? undefined : Math.ceil(o.waitUntil),
        onChildFailure: o.onChildFailure ?? 'fail',
      },
    };
  }

  /** Adds one job. Resolves once the job is stored; `added: false` when the id existed or the add was deduplicated. */
  add(data: T, opts?: AddOptions): Promise<AddResult> {
    // Not an async function: the batcher's promise is the add's (one promise an add, not two),
    // and a refusal is still a rejected promise, never a throw.
    let job: NewJob;
    try {
      job = this.#toNewJob(data, opts, '');
    } catch (err) {
      return Promise.reject(err);
    }
    // A held one goes alone, after the adds before it (the jobs it waits for may be among those).
    // Traced adds go alone: each has its own producer span, whose context the job carries.
    if (job.hold || this.#tracing) return this.#addAlone(job);
    return this.#adds.add(job);
  }

  async #addAlone(job: NewJob): Promise<AddResult> {
    if (job.hold) {
      this.#adds.flush();
      return (await this.#addHeld([job]))[0]!;
    }
    return this.#answer(job, (await this.#send([job]))[0]!);
  }

  /** A single add's answer, told to the `added` listeners when the job was written. */
  #answer(job: NewJob, r: StoredAddResult): AddResult {
    const result = addResult(job.id, r);
    if (result.added) this.#emit('added', result);
    return result;
  }

  /**
   * Adds many jobs, one round trip per chunk of 500. Every job is validated before anything is
   * written; a failure in Redis part-way may leave earlier chunks written (re-adding with the
   * same ids is safe).
   */
  async addBulk(jobs: readonly BulkJob<T>[]): Promise<AddResult[]> {
    bulkArray(jobs);
    const news = jobs.map((j: unknown, i) => {
      const entry = bulkEntry(j, i) as BulkJob<T>;
      return this.#toNewJob(entry.data, entry.opts, i);
    });
    this.#adds.flush();
    // Jobs with dependencies go in one call, each after the jobs of the call it waits for.
    if (news.some((n) => n.hold)) return this.#addHeld(news);
    const stored = await this.#send(news).catch((err: unknown) => {
      if (err instanceof TooCostlyError) throw tooCostly(news);
      // Shards that wrote their part stay written (re-adding with the same ids is safe).
      throw err instanceof PartialAddError ? err.cause : err;
    });
    const results = stored.map((r, k) => addResult(news[k]!.id, r));
    if (this.listenerCount('added') > 0) for (const r of results) if (r.added) this.#emit('added', r);
    return results;
  }

  /**
   * Adds jobs of which some wait for others (addBulk with dependsOn, addFlow): in one call, so
   * they are written together or not at all, and in an order where each comes after the jobs of
   * the call it waits for (a cycle is refused, naming it). Results in the caller's order.
   */
  async #addHeld(news: NewJob[]): Promise<AddResult[]> {
    const order = dependencyOrder(news.map((n) => ({ id: n.id, dependsOn: n.hold?.dependsOn })));
    const sorted = order.map((i) => news[i]!);
    const stored = await this.#send(sorted, Infinity).catch((err: unknown) => {
      if (err instanceof TooCostlyError) throw tooCostly(news);
      throw err instanceof PartialAddError ? err.cause : err;
    });
    const results = new Array<AddResult>(news.length);
    order.forEach((i, k) => {
      results[i] = addResult(news[i]!.id, stored[k]!);
    });
    if (this.listenerCount('added') > 0) for (const r of results) if (r.added) this.#emit('added', r);
    return results;
  }

  /**
   * Adds a flow (docs/flows.md): a parent and its children (and theirs), written at once. Each
   * job waits for its children (dependsOn) with the parent's `onChildFailure`, `waitAtMostMs` and
   * `waitUntil`; children run first, the parent once they have ended. A child without an id gets
   * `<parent id>/<its index>`, so a flow whose root has an id is idempotent: added again, nothing
   * doubles. Returns each job's AddResult, in the same tree.
   */
  async addFlow(flow: FlowJob<T>): Promise<FlowResult> {
    const news: NewJob[] = [];
    interface Node {
      at: number;
      children: Node[];
    }
    const tree = (node: unknown, field: string, id: string | undefined): Node => {
      if (node === null || typeof node !== 'object' || Array.isArray(node)) throw new ValidationError(field || 'flow', 'must be { data, opts?, children? }');
      const { data, opts, children, ...rest } = node as FlowJob<T>;
      const extra = Object.keys(rest)[0];
      if (extra !== undefined) throw new ValidationError(`${field ? `${field}.` : ''}${extra}`, 'is not a flow field (data, opts, children)');
      if (children !== undefined && !Array.isArray(children)) throw new ValidationError(`${field ? `${field}.` : ''}children`, 'must be an array');
      if (opts !== undefined && (opts === null || typeof opts !== 'object')) throw new ValidationError(`${field ? `${field}.` : ''}opts`, 'must be an object');
      const ownId = (opts as AddOptions | undefined)?.id ?? id ?? randomUUID();
      const kids = (children ?? []).map((c, k) => {
        const childId = `${ownId}/${k}`;
        return tree(c, `${field ? `${field}.` : ''}children[${k}]`, childId.length <= 256 ? childId : undefined);
      });
      const dependsOn = kids.map((k) => news[k.at]!.id);
      const given = opts as AddOptions | undefined;
      const withDeps: AddOptions =
        dependsOn.length === 0 ? { ...given, id: ownId } : { ...given, id: ownId, dependsOn: [...(given?.dependsOn ?? []), ...dependsOn] };
      news.push(this.#toNewJob(data, withDeps, field ? `${field}.opts` : 'opts'));
      return { at: news.length - 1, children: kids };
    };
    const root = tree(flow, '', undefined);
    this.#adds.flush();
    const shape = (results: AddResult[]) => {
      const of = (n: Node): FlowResult => ({ ...results[n.at]!, children: n.children.map(of) });
      return of(root);
    };
    // A flow sent again while its root is there (its id given, so the same ids are made): every job
    // of it was written with the root the first time, so none is written again, not even a child
    // that ran and is gone (it would run twice). Read first, as the store decides each job of a
    // call as if it were added alone. Each job is answered as it is ('finished': ran and gone).
    const rootNew = news[root.at]!;
    if ((flow.opts as AddOptions | undefined)?.id !== undefined && !rootNew.replace) {
      const [there] = await this.#calls.getMany(this.name, [rootNew.id], false);
      if (there) {
        const found = await this.#calls.getMany(
          this.name,
          news.map((n) => n.id),
          false,
        );
        return shape(
          news.map((n, i) => {
            const j = found[i];
            return { id: n.id, added: false, replaced: false, state: j ? j.state : 'finished', dueAtMs: j ? j.dueAtMs : 0 };
          }),
        );
      }
    }
    return shape(await this.#addHeld(news));
  }

  /**
   * Adds a batch and its callback (docs/flows.md): the jobs, and a `callback` job that runs exactly
   * once, after every job of the batch has ended — completed, dead or cancelled — and reads how
   * each ended with `job.childResults()`. Written in one call (all or nothing), at most 1,000
   * jobs; give the batch and the callback ids to make it idempotent. (Named `callback`, not
   * `then`: an object with a `then` is taken for a promise by `await`.)
   * @example await q.addBatch(emails.map((e) => ({ data: e })), { callback: { data: { report: 'newsletter' } } })
   */
  async addBatch(jobs: readonly BulkJob<T>[], opts: { callback: BulkJob<T> }): Promise<{ jobs: AddResult[]; callback: AddResult }> {
    bulkArray(jobs);
    if (jobs.length > LIMIT.ids_per_run) throw new ValidationError('jobs', `must be at most ${LIMIT.ids_per_run} jobs in one batch (got ${jobs.length})`);
    if (opts === null || typeof opts !== 'object' || opts.callback === null || typeof opts.callback !== 'object')
      throw new ValidationError('opts.callback', 'must be { data, opts? }: the job that runs when the batch has ended');
    const news = jobs.map((j: unknown, i) => {
      const entry = bulkEntry(j, i) as BulkJob<T>;
      return this.#toNewJob(entry.data, entry.opts, i);
    });
    const callback = bulkEntry(opts.callback, 0) as BulkJob<T>;
    const given = callback.opts;
    if (given?.dependsOn !== undefined || given?.onChildFailure !== undefined)
      throw new ValidationError('opts.callback.opts', 'takes no dependsOn or onChildFailure: it waits for the batch, whatever ends it');
    news.push(this.#toNewJob(callback.data, { ...given, dependsOn: news.map((n) => n.id), onChildFailure: 'ignore' }, 'opts.callback.opts'));
    this.#adds.flush();
    const results = await this.#addHeld(news);
    return { jobs: results.slice(0, -1), callback: results.at(-1)! };
  }

  /** Writes jobs, one script run per chunk, inside a producer span when tracing is on. */
  #send(jobs: NewJob[], chunkSize = BULK_CHUNK): Promise<StoredAddResult[]> {
    const write = async (traceContext: string | undefined) => {
      const chunks: Promise<StoredAddResult[]>[] = [];
      for (let i = 0; i < jobs.length; i += chunkSize) {
        // One chunk (a batch of single adds, a small addBulk) is the list itself, not a copy.
        const chunk = jobs.length <= chunkSize ? jobs : jobs.slice(i, i + chunkSize);
        if (traceContext !== undefined) for (const j of chunk) j.traceContext = traceContext;
        chunks.push(this.#store.add(this.name, chunk));
      }
      // The queue's name in the registry (one command per queue per process, sent alongside).
      const [, ...written] = await Promise.all([this.#store.register(this.name), ...chunks]);
      if (written.length === 1) return written[0]!;
      // concat, not flat(): V8's flat() visits element by element (~0.2 µs a job, measured), concat copies.
      return ([] as StoredAddResult[]).concat(...written);
    };
    if (!this.#tracing) return write(undefined);
    return this.#tracing.produce(
      this.name,
      jobs.map((j) => j.id),
      write,
    );
  }

  /**
   * Removes a scheduled job (the order was paid: its timeout must not run). A running job is
   * left alone (`state: 'active'`) unless `running: true`: then its lease ends at once, its slot
   * frees, its handler's `job.signal` aborts with reason 'cancelled' on whichever host runs it,
   * and its holder's later ack, fail, extend or progress answer lease lost. Dead and completed
   * jobs stay. A cancelled job is deleted (not kept); anyone waiting for it gets JobCancelledError.
   */
  async cancel(id: string, opts?: CancelOptions): Promise<CancelResult> {
    const o = parseOptions(cancelOptionsSchema, opts ?? {});
    const [result] = await this.#calls.cancel(this.name, [parseId(id)], o);
    if (result!.cancelled) this.#emit('cancelled', result!);
    return result!;
  }

  /**
   * A job's hold (docs/flows.md): whether it is held, what it still waits for (dependencies, a
   * signal), until when at most, and how each dependency ended; null for a job never held (or
   * gone). Results stay JSON text here, as `get()` keeps them.
   */
  async holdOf(id: string): Promise<HoldInfo | null> {
    const h = await this.#calls.holdOf(this.name, parseId(id));
    if (!h) return null;
    return {
      state: h.phase,
      waitingFor: h.phase === 'held' ? h.children.filter((c) => c.outcome === undefined).map((c) => c.id) : [],
      signal: h.signal,
      deadlineAtMs: h.deadlineAtMs,
      onChildFailure: h.onChildFailure,
      children: h.children.map((c) =>
        c.outcome === undefined
          ? { id: c.id, outcome: 'pending' as const }
          : c.outcome === 'completed'
            ? { id: c.id, outcome: c.outcome, result: c.value }
            : { id: c.id, outcome: c.outcome, reason: c.value },
      ),
    };
  }

  /**
   * Sends a signal to a job (docs/flows.md): a job waiting for `name` (`job.waitForSignal`) is
   * due now and its next run reads `job.signalled` = `{ name, data }`; a job that has not ended
   * but does not wait for it keeps it, and a later wait for that name ends at once. `released`,
   * `kept`, `refused` (the job ended, or holds 64 KiB of kept signals) or `not_found`. `data`
   * is JSON-serialisable, at most 16 KiB as JSON. Sent twice after a lost reply, it counts once.
   * @example await orders.signal('order:123', 'payment', { paidAt: Date.now() })
   */
  async signal(id: string, name: string, data?: unknown): Promise<SignalResult> {
    const jobId = parseId(id);
    const bad = waitSignalProblem(name, undefined, '');
    if (bad) throw bad;
    const text = data === undefined ? '' : encodePayload(data, LIMIT.signal_data_bytes, 'data');
    return this.#calls.signal(this.name, jobId, name, text);
  }

  /**
   * Fails a job now, from anywhere: a running job's attempt ends as failed with `reason` (its
   * lease ends at once, its handler's `job.signal` aborts with reason 'failed', its holder's later
   * calls answer lease lost), then retries apply as to any failure (due after `retryDelayMs`) or,
   * out of attempts, it goes to the dead set. With `dead: true` the job goes to the dead set now,
   * running or not yet started. A job that has not started is refused without `dead`
   * (`outcome: 'refused'`, state 'scheduled'), as are dead and completed jobs.
   */
  async fail(id: string, opts?: FailNowOptions): Promise<FailNowResult> {
    const o = parseOptions(failNowOptionsSchema, opts ?? {});
    const jobId = parseId(id);
    let retryDelayMs = o.retryDelayMs;
    if (retryDelayMs === undefined && !o.dead) {
      const info = await this.#calls.get(this.name, jobId);
      retryDelayMs = backoffDelay(DEFAULT_BACKOFF, Math.max(1, info?.attempt ?? 1));
    }
    const res = await this.#calls.failNow(this.name, {
      id: jobId,
      reason: o.reason ?? 'failed by queue.fail',
      dead: o.dead ?? false,
      retryDelayMs: retryDelayMs ?? 0,
      defaultMaxAttempts: WORKER_DEFAULTS.attempts,
    });
    return { id: jobId, ...res };
  }

  /**
   * Waits for a job to end: resolves with its result when it completes (after any retries, once),
   * rejects with JobFailedError when it goes to the dead set, JobCancelledError when it is
   * cancelled, JobNotFoundError when there is no such job (or it ended unkept before the wait),
   * WaitTimeoutError after `timeoutMs` (60 s by default). Woken by the end itself, from any
   * process and shard, whether or not completed jobs are kept (the end carries the result).
   */
  async waitFor(id: string, opts?: WaitOptions): Promise<unknown> {
    const o = parseOptions(waitOptionsSchema, opts ?? {});
    return this.#waiters.wait(parseId(id), o.timeoutMs ?? DEFAULT_WAIT_MS);
  }

  /**
   * Adds a job and waits for its end, as `add` then `waitFor`, with no gap between: the wait is
   * registered before the job is written. A deduplicated add waits for the job holding the key;
   * a debounced add is refused (the burst's job is another).
   */
  async addAndWait(data: T, opts?: AddOptions, wait?: WaitOptions): Promise<unknown> {
    const w = parseOptions(waitOptionsSchema, wait ?? {});
    if (opts?.debounce !== undefined)
      throw new ValidationError('opts.debounce', "is not allowed in addAndWait (a debounced add runs as the burst's job, another id)");
    const id = opts?.id ?? randomUUID();
    let holder: string | undefined;
    try {
      return await this.#waiters.wait(id, w.timeoutMs ?? DEFAULT_WAIT_MS, async () => {
        const added = await this.add(data, { ...opts, id });
        if (added.duplicateOf !== undefined && added.duplicateOf !== id) {
          holder = added.duplicateOf;
          throw new DeduplicatedAdd();
        }
        // A job this add wrote: its end will be told. One that existed may have ended: ask.
        return !added.added;
      });
    } catch (err) {
      // Deduplicated: the job holding the key is the one to wait for.
      if (err instanceof DeduplicatedAdd && holder !== undefined) return this.waitFor(holder, w);
      throw err;
    }
  }

  /** Cancels many jobs as `cancel` does (running ones too with `running`), a thousand per script run; one answer per id, in order. */
  async cancelMany(ids: readonly string[], opts?: CancelOptions): Promise<CancelManyResult> {
    const o = parseOptions(cancelOptionsSchema, opts ?? {});
    const results = await this.#calls.cancel(this.name, cancelIds(ids), o);
    for (const r of results) if (r.cancelled) this.#emit('cancelled', r);
    return { cancelled: results.filter((r) => r.cancelled).length, results };
  }

  /**
   * Removes every scheduled job (due or not), or with `dueBefore` (epoch ms) only those due
   * before it, a thousand per script run so Redis never stalls. Active, dead and completed jobs
   * stay. Returns how many were removed.
   */
  async drain(opts: { dueBefore?: number } | null = {}): Promise<{ removed: number }> {
    return { removed: await this.#calls.drain(this.name, drainBefore(opts)) };
  }

  /**
   * Removes everything of this queue: jobs in every state, settings, event stream, schedules,
   * worker entries, and its name in the registry. Refuses (removed: false, nothing touched)
   * while jobs are active, unless `force`: their workers' acks then find nothing.
   */
  obliterate(opts: { force?: boolean } | null = {}): Promise<ObliterateResult> {
    return this.#calls.obliterate(this.name, obliterateForce(opts));
  }

  /** The workers of this queue whose heartbeat is live (every process, every host). */
  workers(): Promise<WorkerInfo[]> {
    return this.#calls.workers(this.name);
  }

  /**
   * How long this queue keeps finished jobs, for every process: `completed` (off by default:
   * a completed job is deleted at once) and `dead` (by default kept until purged), each as
   * `{ count?, ageMs? }`: at most `count` jobs, none older than `ageMs`, the oldest going first.
   * `null` turns completed retention off (kept jobs stay until purged) and lifts the dead
   * set's bounds. A setting left out is left as it is.
   */
  async setRetention(rules: { completed?: { count?: number; ageMs?: number } | null; dead?: { count?: number; ageMs?: number } | null }): Promise<void> {
    for (const [set, r] of retentionRules(rules)) await this.#calls.setRetention(this.name, set, r.maxCount, r.maxAgeMs);
  }

  /**
   * The queue's limits, kept in the store and seen by every worker on every host at its next
   * claim: `concurrency`, the most jobs of the queue running at once; `groupConcurrency`, the most
   * jobs of any one group (`add({ group })`) running at once, unless the group has a limit of its
   * own (`groups.setLimits`); `rateLimit` `{ max, perMs }`, the most tokens (one per job, or its
   * `cost`) the queue's jobs take in any window of `perMs`, counted on the server's clock;
   * `groupRateLimit`, the same for each group without a rate limit of its own. `null` removes a
   * limit; one left out stays. A job held back starts within milliseconds of a slot freeing or a
   * token coming back. Returns whether a limit changed.
   * @example await queue.setLimits({ groupConcurrency: 1 }) // each tenant one job at a time
   * @example await queue.setLimits({ rateLimit: { max: 100, perMs: 1000 } }) // the API takes 100 calls a second
   */
  async setLimits(limits: {
    concurrency?: number | null;
    groupConcurrency?: number | null;
    rateLimit?: RateLimit | null;
    groupRateLimit?: RateLimit | null;
  }): Promise<boolean> {
    return setQueueLimits(this.#calls, this.name, limits);
  }

  /** The queue's limits (undefined: none). */
  limits(): Promise<QueueLimitsInfo> {
    return this.#calls.limits(this.name);
  }

  /**
   * The queue's rate limiter now (server clock): tokens taken in the window, a hold set by a
   * RateLimitSignal, when the next token comes back, and how many groups are held back.
   */
  rateStatus(): Promise<RateStatus> {
    return this.#calls.rateStatus(this.name);
  }

  /** The retention rules in force (null: completed jobs are not kept / dead jobs are kept until purged). */
  async retention(): Promise<{ completed: RetentionRule | null; dead: RetentionRule | null }> {
    const r = await this.#calls.retention(this.name);
    return { completed: asRule(r.completed), dead: asRule(r.dead) };
  }

  /** Gives a scheduled job a new due time. */
  async reschedule(id: string, when: RescheduleOptions): Promise<RescheduleResult> {
    const o = parseOptions(rescheduleOptionsSchema, when);
    const result = await this.#calls.reschedule(
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
    const result = await this.#calls.reschedule(this.name, parseId(id), 0, undefined);
    if (result.rescheduled) this.#emit('rescheduled', result);
    return result;
  }

  /**
   * Stops every worker of this queue, in every process, from claiming. Running jobs go on;
   * scheduled jobs keep their due times; leases that run out are still recovered. Returns
   * false when the queue was already paused.
   */
  async pause(): Promise<boolean> {
    const changed = await this.#calls.setPaused(this.name, true);
    if (changed) this.#emit('paused');
    return changed;
  }

  /** Lets workers claim again; they are signalled at once, and overdue jobs run in the usual order. */
  async resume(): Promise<boolean> {
    const changed = await this.#calls.setPaused(this.name, false);
    if (changed) this.#emit('resumed');
    return changed;
  }

  /**
   * The job with its state, times, lease holder, progress, logs, its last failed attempts
   * (`errors`) and (kept completed jobs) its result, or null. Data that is not valid JSON is
   * returned as its raw text.
   */
  async get(id: string): Promise<JobInfo<T> | null> {
    const info = await this.#calls.get(this.name, parseId(id));
    // Corrupt bodies stay visible as text; the worker is the one that dead-letters them.
    return info ? decodeJob<T>(info) : null;
  }

  /** Counts by state, by the server's clock; `windowMs` sets `dueWithinWindow`. */
  async stats(opts: { windowMs?: number } | null = {}): Promise<QueueStats> {
    return this.#calls.stats(this.name, statsWindow(opts));
  }

  /**
   * The queue's last `minutes` minutes (60 by default, at most 1,440: the store keeps 24 hours),
   * oldest first, one entry a minute by the server's clock: jobs completed, failed attempts, jobs
   * that went dead, jobs started and how late after their due time. Recorded by the calls
   * workers make anyway (no extra round trip per job), so it outlives any process that reads
   * it: a dashboard restarted, a CLI run once. Minutes with nothing recorded read as zeros.
   */
  async history(opts: { minutes?: number } | null = {}): Promise<HistoryMinute[]> {
    const { minutes } = await this.#calls.history(this.name, historyMinutes(opts));
    return minutes.map(publicMinute);
  }

  /**
   * How many scheduled jobs fall due in each bucket of time ahead, by the server's clock:
   * `counts[i]` is the number of jobs due in [fromMs + i·bucketMs, fromMs + (i+1)·bucketMs) that
   * are not due yet (jobs already due, waiting for a worker, are `stats().ready`, not here).
   * One script run of one ZCOUNT per bucket; no job is read.
   */
  async timeline(opts: TimelineOptions | null = {}): Promise<DueTimeline> {
    const { fromMs, bucketMs, buckets } = timelineArgs(opts);
    return this.#calls.timeline(this.name, fromMs, bucketMs, buckets);
  }

  /**
   * Walks the queue's keys and reports any job in no state or in two, entries without a body,
   * and active jobs without a lease. For tests and incident checks; it reads the whole queue.
   */
  verify(): Promise<VerifyReport> {
    return this.#calls.verify(this.name);
  }

  /**
   * Converts what an older version of delayq stored for this queue to this version's forms (today
   * the scheduled set's members, so that claims on a queue without priorities keep add order with
   * no ready set: docs/operations.md, Upgrades). Bounded steps of about a millisecond each, safe
   * beside running workers of this version, and safe to run again; resolves to how many entries
   * it rewrote (0 when there was nothing to do; a mark taken off, below, counts as one). Run it
   * once no process of an older version uses the queue: an older worker cannot read the new
   * form. A queue made by this version needs none.
   * On a queue that once had a job with a priority, it also checks whether one is left and, when
   * none is, gives claims of a backlog their one pass back (no ready set): docs/operations.md.
   */
  migrate(): Promise<number> {
    return this.#calls.migrate(this.name);
  }

  /**
   * Resolves once Redis is connected and answering; rejects with a ConnectionError naming the
   * address after `connectTimeoutMs`. Not needed before calls (each waits by itself), but a
   * process can check its Redis at start-up and fail fast.
   */
  waitUntilReady(): Promise<void> {
    return this.#calls.waitUntilReady(this.#connectTimeoutMs);
  }

  /** Closes the queue's own connection; calls still waiting fail with a ConnectionError. Resolves within about a second whatever Redis does. */
  async close(): Promise<void> {
    // Adds not yet sent go out first (calls still waiting then fail, as documented).
    this.#adds.flush();
    this.#waiters.close();
    if (this.#ownsStore) await this.#store.close();
  }
}
