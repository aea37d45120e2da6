/**
 * The Redis store: one typed method per Lua script (script `claim.lua` <-> `claim()`), each a
 * few lines that build the call by name (wire.ts) and read the reply by name (replies.ts), so
 * the file stays one piece; decisions live in the scripts. The wake subscription and the event
 * reader open connections of their own (wake-subscriber.ts, event-reader.ts).
 */
import type { CancelResult, DueTimeline, HeldSummary, JobInfo, JobState, ListOrder, ListState, QueueStats, RescheduleResult, WorkerInfo } from '../../types.js';
import { rateLimitedUntil } from '../held.js';
import type {
  ClaimResult,
  CompleteRef,
  DebounceBurst,
  DedupHolder,
  ListCursor,
  ObliterateResult,
  RetainedSet,
  ScanStep,
  StoredPage,
  UpdateRequest,
  WorkerBeat,
  DeadJob,
  EventReader,
  PurgeTarget,
  QueueSettings,
  ScheduleGuard,
  StoredSchedule,
  SnoozeRequest,
  SnoozeResult,
  VerifyReport,
  FailRequest,
  FailResult,
  LeaseOutcome,
  LeaseRef,
  NewJob,
  Store,
  StoredAddResult,
  StoredHold,
  SignalResult,
  WaitSignalRequest,
  WaitSignalResult,
  WakeHandlers,
  ConnectionWatcher,
  WakeSubscription,
  CancelOptions,
  FailNowRequest,
  FailNowResult,
  WatchAnswer,
  GroupChange,
  GroupsPage,
  LimitsChange,
  QueueLimits,
  RateStatus,
  StoredGroup,
  StoredHistory,
} from '../store.js';
import { limitArg, parseGroupState, parseRateUse, rateArgs } from './group-state.js';
import { ERROR_HISTORY_LENGTH, ShardMovedError } from '../store.js';
import { ValidationError } from '../../errors.js';
import { queueOf } from '../sharded/layout.js';
import { LIMIT } from '../lifecycle.js';
import { openClient, type Client, type RedisConnection } from './connection.js';
import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { Cluster } from 'ioredis';
import { ConnectionGuard } from './connection-guard.js';
import { settlesWithin } from '../../settles-within.js';
import { dedupKey, historyKey, queueKeys, registryKey, requestKey, type QueueKeys } from './keys.js';
import { historyField, minutesUpTo, parseHistoryField } from '../history-minutes.js';
import { parseRun, tryParseBody, asciiOnly } from './packed.js';
import { runScript } from './scripts.js';
import { scanEntries, scanReached } from './hash-scan.js';
import { addResults, CLAIM_BODIES, claimResult, decodeReply, jobRow, leaseOutcomes, num, optNum, optStr, replyValue, watchAnswer } from './replies.js';
import { NO_BYTES, unpacked } from './msgpack-reply.js';
import { CODES, codeName, encodeCall, HASHTABLE_FIELD, leaseArgs, type ScriptArgs, type ScriptItem, type ScriptKeys, type ScriptName, WIRE } from './wire.js';
import { verifyQueue } from './verify.js';
import { packable, packedTail } from './packed-tail.js';
import { childOutcome, parseHoldState } from '../holds.js';
import { tooCostly } from '../too-costly.js';
import { subscribeWake } from './wake-subscriber.js';
import { openEventReader } from './event-reader.js';
import { readWorkerInfo } from '../worker-info.js';
import { ClaimWatchdog } from './claim-watchdog.js';

/** limits.lua's arguments that leave every setting as it is. */
const NO_LIMITS_CHANGE = {
  group: '',
  concurrency: '',
  group_concurrency: '',
  paused: '',
  rate_max: '',
  rate_per: '',
  group_rate_max: '',
  group_rate_per: '',
  cursor: '',
} as const;

/** The limits in groups.lua's reply fields (-1: not set). */
function limitsOf(fields: Record<string, unknown>): QueueLimits {
  const limit = (v: unknown) => (num(v) < 0 ? undefined : num(v));
  const rate = (max: unknown, per: unknown) => (num(max) < 0 || num(per) < 0 ? undefined : { max: num(max), perMs: num(per) });
  return {
    concurrency: limit(fields.concurrency),
    groupConcurrency: limit(fields.group_concurrency),
    rateLimit: rate(fields.rate_max, fields.rate_per),
    groupRateLimit: rate(fields.group_rate_max, fields.group_rate_per),
  };
}

/**
 * add.lua's refusal of a dependency (HOLDS.check: unknown, dead, later in the call) as the
 * ValidationError the memory store throws for it (memory/holds.ts), or undefined for any other error.
 */
function dependencyRefusal(err: unknown): ValidationError | undefined {
  const m = err instanceof Error ? /delayq: argument depends_on (.*?)(?: script: .*)?$/s.exec(err.message) : null;
  return m ? new ValidationError('dependsOn', m[1]!) : undefined;
}

/**
 * add's item fields, as far as a call needs them (add.lua `item_fields`): up to `timeout_ms`
 * ('base') when no job of the call has a group, cost, debounce, attempts made or hold, up to
 * `attempts_made` ('controls') when none has a hold, all of them ('holds') else.
 */
const ADD_FIELDS = {
  base: WIRE.add.each.slice(0, WIRE.add.each.indexOf('timeout_ms') + 1),
  controls: WIRE.add.each.slice(0, WIRE.add.each.indexOf('attempts_made') + 1),
  holds: undefined,
} as const;

type AddField = (typeof WIRE.add.each)[number];
type WireValue = string | number;

/** Each add item field's value, read from the job: by name, so WIRE.add.each alone orders them. */
const ADD_VALUE: Record<AddField, (j: NewJob) => WireValue> = {
  id: (j) => j.id,
  data: (j) => j.data,
  delay_ms: (j) => j.delayMs ?? '',
  run_at: (j) => (j.delayMs === undefined ? (j.runAtMs ?? 0) : ''),
  priority: (j) => j.priority,
  max_attempts: (j) => j.maxAttempts ?? '',
  backoff: (j) => (j.backoff === undefined ? '' : asciiOnly(j.backoff)),
  replace: (j) => (j.replace ? '1' : '0'),
  dedup_key: (j) => j.dedup?.key ?? '',
  dedup_ms: (j) => j.dedup?.windowMs ?? '',
  trace: (j) => (j.traceContext === undefined ? '' : asciiOnly(j.traceContext)),
  name: (j) => j.name ?? '',
  timeout_ms: (j) => j.timeoutMs ?? '',
  group: (j) => j.group ?? '',
  cost: (j) => (j.cost === 1 ? '' : j.cost),
  debounce_key: (j) => j.debounce?.key ?? '',
  debounce_ms: (j) => j.debounce?.delayMs ?? '',
  debounce_max_ms: (j) => j.debounce?.maxWaitMs ?? '',
  debounce_first_ms: (j) => j.debounce?.firstMs ?? '',
  attempts_made: (j) => j.attemptsMade || '',
  depends_on: (j) => j.hold?.dependsOn.join('\t') ?? '',
  deadline_ms: (j) => j.hold?.deadlineMs ?? '',
  deadline_at: (j) => j.hold?.deadlineAtMs ?? '',
  on_child_failure: (j) => j.hold?.onChildFailure ?? '',
};

/** The value readers of each ADD_FIELDS set, in wire order. */
const ADD_ROW = {
  packed: [ADD_VALUE.id, packedTail, ADD_VALUE.delay_ms, ADD_VALUE.run_at],
  base: ADD_FIELDS.base.map((f) => ADD_VALUE[f]),
  controls: ADD_FIELDS.controls.map((f) => ADD_VALUE[f]),
  holds: WIRE.add.each.map((f) => ADD_VALUE[f]),
};

/** add's items: the jobs, and the readers of one job's row of ARGV. */
interface AddRows {
  jobs: readonly NewJob[];
  row: readonly ((j: NewJob) => WireValue)[];
}

/**
 * Appends add's items to a call's arguments as flat ARGV rows, straight from the jobs, as
 * #rowsCall's are: an item object per job (24 fields, thousands a bulk add) only to be read
 * back by name is garbage on the hot path. The arguments are sized once: no array of rows, and
 * no growing of the call's array on the way.
 */
function appendAddRows(args: WireValue[], { jobs, row }: AddRows): void {
  let n = args.length;
  args.length = n + jobs.length * row.length;
  for (const j of jobs)
    for (const value of row) {
      // Numbers as they are: a PackedCommand writes their digits, and ioredis, when the call joins
      // its pipeline, the same text (packed-command.test.ts holds the two to the same bytes).
      args[n++] = value(j);
    }
}

export interface RedisStoreOptions {
  connection?: RedisConnection | undefined;
  /** @default 'dq' */
  prefix?: string | undefined;
  /**
   * A claim unanswered for this long is taken as a wedged connection, which is then dropped and
   * re-opened.
   * @default 15000
   */
  claimWatchdogMs?: number | undefined;
  /**
   * The subscriber connection (wake signals) must complete its handshake and SUBSCRIBE within
   * this long of connecting, and answer a PING within this long; one that does not is taken as
   * half-open, dropped and re-opened.
   * @default 5000
   */
  subscriberWatchdogMs?: number | undefined;
  /**
   * For tests only: the scripts take "now" from this key while it holds a number (a frozen
   * server clock), and from TIME otherwise.
   */
  testClockKey?: string | undefined;
  /**
   * Longest a call waits for a connection before it fails with a ConnectionError. Unset, calls
   * wait through an outage (right for a worker, which carries on when Redis is back).
   */
  connectTimeoutMs?: number | undefined;
  /** Longest a call waits for its answer before it fails with a ConnectionError. Unset, no limit. */
  commandTimeoutMs?: number | undefined;
  /**
   * A call waiting for a connection fails at the first failed attempt (refused, not Redis)
   * instead of after connectTimeoutMs: for one-shot commands a person waits on (the CLI).
   */
  failFast?: boolean | undefined;
}

/** QUIT is answered at once by a live server; one that has not answered by then gets its socket closed. */
const QUIT_WAIT_MS = 1000;
/**
 * Jobs one migrate call looks at (HSCAN COUNT of the jobs hash): each call holds Redis for about a
 * millisecond, so a queue of a million jobs converts in about a thousand short calls.
 */
const MIGRATE_STEP = 1000;

/**
 * A claim takes milliseconds. One unanswered for this long is on a wedged connection (a
 * half-open socket that TCP keepalive would take minutes to notice): drop the socket so ioredis
 * reconnects and re-sends. Wedged blocking connections are BullMQ's most reported failure.
 */
const CLAIM_WATCHDOG_MS = 15_000;
/**
 * Queues whose key names one store keeps built (~3 KB each). A queue name can come from a
 * request (the dashboard's routes), so the cache is bounded; a name dropped from it costs one
 * rebuild of a few strings.
 */
export const KEY_CACHE_MAX = 1000;
/** Default of subscriberWatchdogMs: a handshake, SUBSCRIBE or PING takes milliseconds. */
const SUBSCRIBER_WATCHDOG_MS = 5_000;

/**
 * How long a script remembers the answer to an add, cancel or reschedule, so that a call ioredis
 * re-sends after a lost reply (it does so after every reconnect) gets the first run's answer.
 * Covers reconnects and a restart of Redis; the cost is one small expiring key per call (a
 * claim's memo lives as long as its lease).
 */
export const REQUEST_MEMO_MS = 60_000;
/**
 * Where the bodies of the claim being read end in its packed reply (msgpack-reply.ts unpackReply):
 * one array for every claim, each read synchronously from its unpacking to its jobs made.
 */
const BODY_ENDS: number[] = [];
/** Reads the server's clock where the queue lives (KEYS[1] is one of the queue's keys, for routing only). */
const TIME_SCRIPT = "local t = redis.call('TIME') return { tonumber(t[1]), tonumber(t[2]) }";

export class RedisStore implements Store {
  readonly #client: Client;
  readonly #owned: boolean;
  readonly #prefix: string;
  readonly #keys = new LRUCache<string, QueueKeys>({ max: KEY_CACHE_MAX });
  readonly #subscribers = new Set<Client>();
  readonly #claimWatchdogMs: number;
  /** Drops the connection when a claim goes unanswered for claimWatchdogMs (made by the first claim). */
  #watchdog: ClaimWatchdog | undefined;
  readonly #subscriberWatchdogMs: number;
  readonly #testClockKey: string | undefined;
  /** Request ids: unique to this store instance, then a counter (see REQUEST_MEMO_MS). */
  readonly #requestPrefix = randomBytes(9).toString('base64url');
  #requestSeq = 0;
  readonly #guard: ConnectionGuard;
  /** Queues this instance has written to the registry (one ZADD per queue per process). */
  readonly #registered = new Set<string>();

  constructor(opts: RedisStoreOptions = {}) {
    const { client, owned } = openClient(opts.connection);
    this.#client = client;
    this.#owned = owned;
    this.#guard = new ConnectionGuard(client, { connectTimeoutMs: opts.connectTimeoutMs, commandTimeoutMs: opts.commandTimeoutMs, failFast: opts.failFast });
    this.#prefix = opts.prefix ?? 'dq';
    this.#claimWatchdogMs = opts.claimWatchdogMs ?? CLAIM_WATCHDOG_MS;
    this.#subscriberWatchdogMs = opts.subscriberWatchdogMs ?? SUBSCRIBER_WATCHDOG_MS;
    this.#testClockKey = opts.testClockKey;
  }

  /** The command connection, for tests and tools that read the documented layout. */
  get client(): Client {
    return this.#client;
  }

  /**
   * The node that holds the queue's keys: on a cluster the master of their slot (asked with
   * CLUSTER KEYSLOT, mapped by the client's slot table); otherwise the server this client is
   * connected to (after a Sentinel failover, the new master).
   */
  async nodeOf(queue: string): Promise<string | undefined> {
    const c = this.#client;
    if (c instanceof Cluster) {
      const slot = Number(await this.#guard.run(() => c.cluster('KEYSLOT', this.keys(queue).meta)));
      return c.slots[slot]?.[0];
    }
    const st = c.stream as { remoteAddress?: string; remotePort?: number } | undefined;
    return st?.remoteAddress ? `${st.remoteAddress}:${st.remotePort}` : this.#guard.address;
  }

  /** Queues whose key names are cached (at most KEY_CACHE_MAX). */
  get cachedQueueCount(): number {
    return this.#keys.size;
  }

  keys(queue: string): QueueKeys {
    let k = this.#keys.get(queue);
    if (!k) {
      k = queueKeys(this.#prefix, queue);
      this.#keys.set(queue, k);
    }
    return k;
  }

  #requestId(): string {
    return `${this.#requestPrefix}${(++this.#requestSeq).toString(36)}`;
  }

  /** Runs a script with its arguments by name, in the order wire.ts gives them. */
  #call<N extends ScriptName>(
    queue: string,
    name: N,
    args: ScriptArgs<N>,
    extra: { keys?: ScriptKeys<N>; items?: readonly ScriptItem<N>[]; rows?: AddRows; bytes?: boolean } = {},
  ) {
    const call = encodeCall(name, this.keys(queue), extra.keys ?? ({} as ScriptKeys<N>), args, extra.items);
    // Items given as flat rows (add).
    if (extra.rows) appendAddRows(call.args, extra.rows);
    return this.#guard.run(() => runScript(this.#client, name, call.keys, call.args, this.#testClockKey, extra.bytes));
  }

  /** A script's array reply, read by name (replies.ts). */
  async #reply<N extends ScriptName>(queue: string, name: N, args: ScriptArgs<N>, extra: { keys?: ScriptKeys<N>; items?: readonly ScriptItem<N>[] } = {}) {
    return decodeReply(name, await this.#call(queue, name, args, extra));
  }

  /** A script's one-value reply as a number. */
  async #count<N extends ScriptName>(queue: string, name: N, args: ScriptArgs<N>, extra: { keys?: ScriptKeys<N>; items?: readonly ScriptItem<N>[] } = {}) {
    return num(replyValue(name, await this.#call(queue, name, args, extra)));
  }

  /** extend, release: their items as flat rows, built by the caller (no item objects). */
  #rowsCall<N extends 'extend' | 'release'>(queue: string, name: N, keys: ScriptKeys<N>, args: ScriptArgs<N>, rows: string[]) {
    const call = encodeCall(name, this.keys(queue), keys, args);
    for (const v of rows) call.args.push(v);
    return this.#guard.run(() => runScript(this.#client, name, call.keys, call.args, this.#testClockKey));
  }

  /** The keys of the scripts that read or write the worker registry. */
  #workerKeys(queue: string): { workers: string; worker_info: string } {
    const k = this.keys(queue);
    return { workers: k.workers, worker_info: k.workerInfo };
  }

  add(queue: string, jobs: NewJob[], guard?: undefined, epoch?: string): Promise<StoredAddResult[]>;
  add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  async add(queue: string, jobs: NewJob[], guard?: ScheduleGuard, epoch?: string): Promise<StoredAddResult[] | null> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    // Items carry a group, cost, debounce, attempts made or hold only when one of them has one
    // (add.lua's `item_fields`): an argument per job costs the producer and Redis ~4% of a bulk
    // add (bench: bulk enqueue).
    // A call of jobs with none of the general path's fields sends each body packed: four
    // arguments a job, and the script writes the body as given (_add_packed.lua).
    const fields =
      guard === undefined && jobs.every(packable)
        ? 'packed'
        : jobs.some((j) => j.hold !== undefined)
          ? 'holds'
          : jobs.some((j) => j.group !== undefined || j.cost !== 1 || j.debounce !== undefined || j.attemptsMade)
            ? 'controls'
            : 'base';
    const packed = (await this.#call(
      queue,
      'add',
      {
        schedule: guard?.name ?? '',
        occurrence: guard?.occurrenceMs ?? '',
        request_id: rid,
        memo_ms: REQUEST_MEMO_MS,
        epoch: epoch ?? '',
        item_fields: fields,
        // One MessagePack string, every string in it text (msgpack-reply.ts: the producer's CPU
        // per job went to ioredis decoding four elements a job).
        packed: '1',
      },
      {
        keys: { memo: requestKey(k, rid), schedule_last: k.scheduleLast },
        rows: { jobs, row: ADD_ROW[fields] },
        bytes: true,
      },
    ).catch((err: unknown) => {
      throw dependencyRefusal(err) ?? err;
    })) as unknown;
    const reply = unpacked(packed, NO_BYTES);
    if (reply.length === 1 && reply[0] === CODES.add.too_costly) throw tooCostly(jobs);
    // A reply of one element is a code (wire.ts add note), not the made flag of an empty batch.
    if (reply.length === 1 && reply[0] === CODES.add.guard_refused) return null;
    if (reply.length === 1 && reply[0] === CODES.add.moved) throw new ShardMovedError(queue);
    // The add made the queue's keys: another process may have obliterated it (and taken its
    // name out of the registry) since this one last registered it.
    const { made, results } = addResults(reply);
    if (made) await this.#registerAgain(queueOf(queue));
    return results;
  }

  async claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number, workerId = ''): Promise<ClaimResult> {
    this.#watchdog ??= new ClaimWatchdog(this.#claimWatchdogMs, () => this.#client.disconnect(true));
    const watched = this.#watchdog.begin();
    let reply: unknown[];
    let packed: unknown;
    const rid = this.#requestId();
    try {
      packed = (await this.#call(
        queue,
        'claim',
        {
          count,
          lease_ms: leaseMs,
          default_max: defaultMaxAttempts,
          promote_limit: LIMIT.promote_per_claim,
          reap_limit: LIMIT.reap_per_claim,
          request_id: rid,
          worker: workerId,
          // One MessagePack string, read back into the array (msgpack-reply.ts: the worker's
          // CPU per job), its strings as bytes: the bodies are read from them (claimResult).
          packed: '1',
        },
        { keys: { memo: requestKey(this.keys(queue), rid) }, bytes: true },
      )) as unknown;
      // The bodies are left in the packed reply, read from it in place (claimResult).
      reply = unpacked(packed, CLAIM_BODIES, BODY_ENDS);
    } finally {
      this.#watchdog.end(watched);
    }
    return packed instanceof Buffer ? claimResult(reply, packed, BODY_ENDS) : claimResult(reply);
  }

  async complete(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]> {
    if (leases.length === 0) return [];
    // The codes as one MessagePack string (msgpack-reply.ts), read as bytes.
    const call = encodeCall('complete', this.keys(queue), {}, { packed: '1' });
    // The rows go straight into the call's arguments, sized once (the ack hot path: no array of
    // rows, no growing array, on the way; an index loop, as for-of left an iterator result per job).
    const args = call.args;
    let at = args.length;
    args.length = at + 3 * leases.length;
    for (let i = 0; i < leases.length; i++) {
      const l = leases[i]!;
      args[at++] = l.id;
      args[at++] = l.token;
      args[at++] = l.result ?? '';
    }
    const packed = await this.#guard.run(() => runScript(this.#client, 'complete', call.keys, args, this.#testClockKey, true));
    return leaseOutcomes('complete', unpacked(packed));
  }

  async fail(queue: string, req: FailRequest): Promise<FailResult> {
    const { fields } = await this.#reply(queue, 'fail', {
      id: req.id,
      token: req.token,
      error: req.error,
      retry_ms: req.retryDelayMs,
      dead: req.dead ? '1' : '0',
      default_max: req.defaultMaxAttempts,
      history: ERROR_HISTORY_LENGTH,
    });
    const due = num(fields.due_ms);
    return { outcome: codeName('fail', fields.code), dueAtMs: due < 0 ? undefined : due };
  }

  async extend(queue: string, leases: LeaseRef[], leaseMs: number, beat?: WorkerBeat): Promise<LeaseOutcome[]> {
    if (leases.length === 0) return [];
    const args = { lease_ms: leaseMs, worker: beat?.id ?? '', info: beat?.info ?? '', ttl_ms: beat?.ttlMs ?? 0 };
    return leaseOutcomes('extend', await this.#rowsCall(queue, 'extend', this.#workerKeys(queue), args, leaseArgs(leases)));
  }

  async beat(queue: string, beat: WorkerBeat, gone = false): Promise<void> {
    await this.#call(queue, 'worker-beat', { worker: beat.id, info: gone ? '' : beat.info, ttl_ms: beat.ttlMs }, { keys: this.#workerKeys(queue) });
  }

  async workers(queue: string): Promise<WorkerInfo[]> {
    const { items } = await this.#reply(queue, 'workers', { limit: 1000 }, { keys: this.#workerKeys(queue) });
    return items.map((w) => {
      const entry = String(w.entry);
      const colon = entry.indexOf(':');
      return readWorkerInfo(String(w.id), entry.slice(colon + 1), Number(entry.slice(0, colon)), num(w.expires_ms));
    });
  }

  async update(queue: string, req: UpdateRequest): Promise<LeaseOutcome> {
    const args = { id: req.id, token: req.token, progress: req.progress ?? '', log_cap: req.logCap };
    const code = replyValue('update', await this.#call(queue, 'update', args, { items: req.lines.map((line) => ({ line })) }));
    return codeName('lease', code);
  }

  async release(queue: string, leases: LeaseRef[], holdMs = 0): Promise<LeaseOutcome[]> {
    // No leases: nothing to do, unless a hold asks the queue to be held (release.lua).
    if (leases.length === 0 && holdMs <= 0) return [];
    return leaseOutcomes('release', await this.#rowsCall(queue, 'release', {}, { hold_ms: holdMs }, leaseArgs(leases)));
  }

  async cancel(queue: string, ids: string[], opts: CancelOptions = {}): Promise<CancelResult[]> {
    const k = this.keys(queue);
    const out: CancelResult[] = [];
    for (let at = 0; at < ids.length; at += LIMIT.ids_per_run) {
      const chunk = ids.slice(at, at + LIMIT.ids_per_run);
      const rid = this.#requestId();
      const { items } = await this.#reply(
        queue,
        'cancel',
        { request_id: rid, memo_ms: REQUEST_MEMO_MS, running: opts.running ? '1' : '0', reason: opts.reason ?? '' },
        { keys: { memo: requestKey(k, rid) }, items: chunk.map((id) => ({ id })) },
      );
      chunk.forEach((id, n) => {
        const state = String(items[n]?.state ?? '');
        out.push({ id, cancelled: codeName('change', items[n]?.code) === 'done', state: state === '' ? undefined : (state as JobState) });
      });
    }
    return out;
  }

  async failNow(queue: string, req: FailNowRequest): Promise<FailNowResult> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    const { fields } = await this.#reply(
      queue,
      'fail-now',
      {
        id: req.id,
        reason: req.reason,
        dead: req.dead ? '1' : '0',
        retry_ms: req.retryDelayMs,
        default_max: req.defaultMaxAttempts,
        history: ERROR_HISTORY_LENGTH,
        request_id: rid,
        memo_ms: REQUEST_MEMO_MS,
      },
      { keys: { memo: requestKey(k, rid) } },
    );
    const state = String(fields.state);
    const due = num(fields.due_ms);
    return { outcome: codeName('failNow', fields.code), state: state === '' ? undefined : (state as JobState), dueAtMs: due < 0 ? undefined : due };
  }

  async watch(queue: string, ids: string[], waitMs: number, expect = false): Promise<WatchAnswer[]> {
    const out: WatchAnswer[] = [];
    // wait_ms 0 with no ids: only the prune of waiters whose time is up.
    for (let at = 0; at < Math.max(ids.length, 1); at += LIMIT.ids_per_run) {
      const chunk = ids.slice(at, at + LIMIT.ids_per_run);
      const { items } = await this.#reply(queue, 'watch', { wait_ms: waitMs, expect: expect ? '1' : '0' }, { items: chunk.map((id) => ({ id })) });
      for (const row of items) out.push(watchAnswer(String(row.state), String(row.payload)));
    }
    return out;
  }

  async reschedule(queue: string, id: string, delayMs: number | undefined, runAtMs: number | undefined): Promise<RescheduleResult> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    const { fields } = await this.#reply(
      queue,
      'reschedule',
      { id, delay_ms: delayMs ?? '', run_at: delayMs === undefined ? (runAtMs ?? 0) : '', request_id: rid, memo_ms: REQUEST_MEMO_MS },
      { keys: { memo: requestKey(k, rid) } },
    );
    const [code, state, due] = [fields.code, String(fields.state), num(fields.due_ms)];
    return {
      id,
      rescheduled: codeName('change', code) === 'done',
      state: state === '' ? undefined : (state as JobState),
      dueAtMs: due < 0 ? undefined : due,
    };
  }

  async get(queue: string, id: string): Promise<JobInfo<string> | null> {
    return (await this.getMany(queue, [id], true))[0] ?? null;
  }

  async getMany(queue: string, ids: string[], withLogs: boolean): Promise<(JobInfo<string> | null)[]> {
    const out: (JobInfo<string> | null)[] = [];
    for (let at = 0; at < ids.length; at += LIMIT.ids_per_run) {
      const chunk = ids.slice(at, at + LIMIT.ids_per_run);
      const { fields, items } = await this.#reply(queue, 'get', { logs: withLogs ? '1' : '0' }, { items: chunk.map((id) => ({ id })) });
      const now = num(fields.now_ms);
      for (const row of items) out.push(jobRow(row, now));
    }
    return out;
  }

  async list(queue: string, state: ListState, cursor: ListCursor | undefined, limit: number, order: ListOrder = 'asc'): Promise<StoredPage> {
    const { fields, items } = await this.#reply(queue, 'list', {
      state,
      phase: cursor?.phase ?? '',
      score: cursor?.score ?? '',
      member: cursor?.member ?? '',
      limit,
      order,
    });
    const nowMs = num(fields.now_ms);
    const jobs: JobInfo<string>[] = [];
    for (const row of items) {
      const job = jobRow(row, nowMs);
      if (job) jobs.push(job);
    }
    const phase = String(fields.next_phase);
    const next = phase === '' ? undefined : { phase, score: String(fields.next_score), member: String(fields.next_member) };
    return { nowMs, total: num(fields.total), jobs, next };
  }

  async scan(queue: string, cursor: string, count: number, until?: string): Promise<ScanStep> {
    const k = this.keys(queue);
    const [[next, flat], fields, marked] = await this.#guard.run(() =>
      Promise.all([this.#client.hscan(k.jobs, cursor, 'COUNT', count), this.#client.hlen(k.jobs), this.#client.hexists(k.jobs, HASHTABLE_FIELD)] as const),
    );
    const step: ScanStep = { cursor: next, total: fields - marked, entries: scanEntries(flat) };
    if (until === undefined) return step;
    // Read again, the step must reach where it led the first time. A hash that finished a rehash
    // since walks in finer steps (a bucket of the smaller table no longer brings its twins in the
    // larger one along), so the same count can stop short of it: read on a bucket at a time. A
    // read that crosses `until` returns a bucket past it (nothing of the first read): its jobs
    // are `beyond`, and the walk goes on after them. At most `count` reads: a re-read needs a
    // bucket or a few, and a cursor made up to lead far ahead must not make a search read the
    // hash a bucket a call; stopped short, the walk goes on from where it stopped (what lay
    // between may then be found twice, never skipped).
    step.cursor = until;
    let at = next;
    for (let reads = 0; !scanReached(at, until); reads++) {
      if (reads === count) {
        step.cursor = at;
        break;
      }
      const [after, more] = await this.#guard.run(() => this.#client.hscan(k.jobs, at, 'COUNT', 1));
      if (after !== until && scanReached(after, until)) {
        step.beyond = scanEntries(more);
        step.cursor = after;
        break;
      }
      step.entries.push(...scanEntries(more));
      at = after;
    }
    return step;
  }

  async drain(queue: string, dueBeforeMs: number | undefined): Promise<number> {
    let removed = 0;
    let rank = 0;
    let waitingRank = 0;
    for (;;) {
      const { fields } = await this.#reply(queue, 'drain', {
        due_before: dueBeforeMs ?? '',
        limit: LIMIT.jobs_per_sweep,
        ready_rank: rank,
        waiting_rank: waitingRank,
      });
      removed += num(fields.removed);
      rank = num(fields.next_ready_rank);
      waitingRank = num(fields.next_waiting_rank);
      if (fields.more !== 1) return removed;
    }
  }

  async obliterate(queue: string, force: boolean, epoch?: string): Promise<ObliterateResult> {
    const k = this.keys(queue);
    // The name leaves the registry before the keys go: an add that makes them again after the
    // script (and registers the name again) can then never be undone by this ZREM. A shard's
    // name is never in the registry.
    const named = queueOf(queue) === queue;
    const registry = registryKey(this.#prefix);
    let firstSeen: string | null = null;
    if (named) {
      this.#registered.delete(queue);
      firstSeen = await this.#guard.run(async () => {
        const seen = await this.#client.zscore(registry, queue);
        await this.#client.zrem(registry, queue);
        return seen;
      });
    }
    const { fields: f } = await this.#reply(
      queue,
      'obliterate',
      { force: force ? '1' : '0', epoch: epoch ?? '' },
      { keys: { ...this.#workerKeys(queue), schedules: k.schedules, schedule_last: k.scheduleLast } },
    );
    const outcome = codeName('change', f.code);
    // Nothing was removed (jobs are active, or the keys are another epoch's): the name goes back.
    if (outcome !== 'done' && firstSeen !== null) {
      const seen = firstSeen;
      await this.#guard.run(() => this.#client.zadd(registry, 'NX', seen, queue));
    }
    if (outcome === 'not_found') throw new ShardMovedError(queue);
    const counts = { scheduled: num(f.scheduled), active: num(f.active), dead: num(f.dead), completed: num(f.completed), jobs: num(f.bodies) };
    return { removed: outcome === 'done', counts };
  }

  /** An add made the queue's keys: its name may have left the registry since this process registered it. */
  async #registerAgain(queue: string): Promise<void> {
    this.#registered.delete(queue);
    // The jobs are stored whatever happens here: a registration that fails is made by a later
    // add (a Queue registers a name this store has not cached with each add).
    await this.register(queue).catch(() => {});
  }

  async register(queue: string): Promise<void> {
    if (this.#registered.has(queue)) return;
    // NX keeps the first-seen time; a plain command, as the registry is in no queue's slot.
    await this.#guard.run(() => this.#client.zadd(registryKey(this.#prefix), 'NX', String(Date.now()), queue));
    this.#registered.add(queue);
  }

  async queues(): Promise<string[]> {
    const names = await this.#guard.run(() => this.#client.zrange(registryKey(this.#prefix), '0', '-1'));
    return names.sort();
  }

  async stats(queue: string, windowMs: number): Promise<QueueStats> {
    const { fields: f } = await this.#reply(queue, 'stats', { window_ms: windowMs }, { keys: { workers: this.keys(queue).workers } });
    const [now, ready, dueInScheduled, head, readyDue, streamLength] = [
      num(f.now_ms),
      num(f.ready),
      num(f.due_in_scheduled),
      num(f.earliest_due_ms),
      num(f.earliest_ready_due_ms),
      num(f.stream_length),
    ];
    const readyTotal = ready + dueInScheduled;
    const waitingDue = num(f.earliest_waiting_due_ms);
    const active = num(f.active);
    return {
      scheduled: num(f.not_promoted) + ready,
      ready: readyTotal,
      active: num(f.active),
      dead: num(f.dead),
      nextDueInMs: readyTotal > 0 ? 0 : head < 0 ? undefined : Math.max(0, head - now),
      dueWithinWindow: ready + num(f.due_within_window),
      windowMs,
      nowMs: now,
      paused: f.paused === 1,
      eventStreamLength: streamLength < 0 ? undefined : streamLength,
      completedTotal: num(f.completed_total),
      // The earliest due of the ready set (every priority), of the groups' lines (paused or full
      // groups included) and of the due jobs not yet moved there (a paused queue's among them).
      oldestDueAgeMs:
        readyTotal === 0
          ? undefined
          : Math.max(0, now - Math.min(dueInScheduled > 0 ? head : Infinity, readyDue >= 0 ? readyDue : Infinity, waitingDue >= 0 ? waitingDue : Infinity)),
      completed: num(f.kept_completed),
      workers: num(f.live_workers),
      held: heldFrom(f, now, readyTotal, active),
      heldJobs: num(f.held),
    };
  }

  async holdOf(queue: string, id: string): Promise<StoredHold | undefined> {
    const { fields, items } = await this.#reply(queue, 'child-results', { id });
    const state = fields.found === 1 ? parseHoldState(String(fields.hold)) : undefined;
    if (!state) return undefined;
    const deadline = num(fields.deadline_ms);
    return {
      ...state,
      deadlineAtMs: deadline < 0 || state.phase !== 'held' ? undefined : deadline,
      children: items.map((row) => childOutcome(String(row.dependency), String(row.outcome))),
    };
  }

  async timeline(queue: string, fromMs: number | undefined, bucketMs: number, buckets: number): Promise<DueTimeline> {
    const { fields, items } = await this.#reply(queue, 'timeline', { from: fromMs ?? '', bucket_ms: bucketMs, buckets });
    return { nowMs: num(fields.now_ms), fromMs: num(fields.from_ms), bucketMs, counts: items.map((b) => num(b.due)) };
  }

  async snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult> {
    const { fields } = await this.#reply(queue, 'snooze', { id: req.id, token: req.token, delay_ms: req.delayMs, deadline: req.deadlineAtMs ?? '' });
    const due = num(fields.due_ms);
    return { outcome: codeName('snooze', fields.code), dueAtMs: due < 0 ? undefined : due };
  }

  async waitSignal(queue: string, req: WaitSignalRequest): Promise<WaitSignalResult> {
    const { fields } = await this.#reply(queue, 'wait-signal', { id: req.id, token: req.token, name: req.name, timeout_ms: req.timeoutMs ?? '' });
    const due = num(fields.due_ms);
    return { outcome: codeName('waitSignal', fields.code), dueAtMs: due < 0 ? undefined : due };
  }

  async signal(queue: string, id: string, name: string, data: string): Promise<SignalResult> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    const { fields } = await this.#reply(
      queue,
      'signal',
      { id, name, data, request_id: rid, memo_ms: REQUEST_MEMO_MS },
      { keys: { memo: requestKey(k, rid) } },
    );
    const state = String(fields.state);
    return { outcome: codeName('signal', fields.code), state: state === '' ? undefined : (state as JobState) };
  }

  async deadList(queue: string, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }> {
    const { fields, items } = await this.#reply(queue, 'dead-list', { offset, limit });
    const jobs: DeadJob[] = [];
    for (const row of items) {
      const bodyText = optStr(row.body);
      const body = tryParseBody(bodyText);
      const run = parseRun(optStr(row.run));
      jobs.push({
        id: String(row.id),
        diedAtMs: num(row.died_ms),
        data: body?.data,
        attempt: run?.attempts ?? 0,
        maxAttempts: run?.maxAttempts ?? body?.maxAttempts,
        lastError: run?.lastError ?? (body ? undefined : bodyText ? 'corrupt job: unreadable body' : 'corrupt job: no body'),
        dueAtMs: run?.dueAtMs,
        createdAtMs: body?.createdAtMs,
        name: body?.name,
      });
    }
    return { total: num(fields.total), jobs };
  }

  /** Runs `act` on LIMIT.ids_per_run ids at a time (one script run each) and adds up what it counts. */
  async #byIdBatch(ids: readonly string[], act: (items: { id: string }[]) => Promise<number>): Promise<number> {
    let total = 0;
    for (let at = 0; at < ids.length; at += LIMIT.ids_per_run) total += await act(ids.slice(at, at + LIMIT.ids_per_run).map((id) => ({ id })));
    return total;
  }

  async deadRetry(queue: string, ids: string[] | 'all'): Promise<number> {
    if (ids !== 'all') return this.#byIdBatch(ids, async (items) => await this.#count(queue, 'dead-retry', { mode: 'ids', limit: 0 }, { items }));
    let total = 0;
    for (;;) {
      const n = await this.#count(queue, 'dead-retry', { mode: 'all', limit: LIMIT.jobs_per_sweep });
      total += n;
      if (n < LIMIT.jobs_per_sweep) return total;
    }
  }

  async purge(queue: string, set: RetainedSet, target: PurgeTarget): Promise<number> {
    if ('ids' in target)
      return this.#byIdBatch(target.ids, async (items) => await this.#count(queue, 'purge', { set, mode: 'ids', limit: 0, age_ms: 0 }, { items }));
    const args =
      'all' in target
        ? { set, mode: 'all', limit: LIMIT.jobs_per_sweep, age_ms: 0 }
        : { set, mode: 'older', limit: LIMIT.jobs_per_sweep, age_ms: target.olderThanMs };
    let total = 0;
    for (;;) {
      const n = await this.#count(queue, 'purge', args);
      total += n;
      if (n < LIMIT.jobs_per_sweep) return total;
    }
  }

  async migrate(queue: string): Promise<number> {
    let converted = 0;
    for (;;) {
      const { fields } = await this.#reply(queue, 'migrate', { count: MIGRATE_STEP });
      converted += num(fields.converted);
      if (num(fields.done) === 1) return converted;
    }
  }

  verify(queue: string): Promise<VerifyReport> {
    return this.#guard.run(() => verifyQueue(this.#client, this.keys(queue)));
  }

  watchConnection(watcher: ConnectionWatcher): () => void {
    return this.#guard.watch(watcher);
  }

  async subscribe(queues: readonly string[], handlers: WakeHandlers): Promise<WakeSubscription> {
    // One connection for every queue (a sharded queue's shards): in a cluster a SUBSCRIBE on
    // any node hears PUBLISH from every node, so the shards' nodes need no connection each.
    const byChannel = new Map(queues.map((q) => [this.keys(q).wake, q]));
    return subscribeWake(this.#client, this.#guard, byChannel, handlers, { watchdogMs: this.#subscriberWatchdogMs, open: this.#subscribers });
  }

  async scheduleSet(queue: string, name: string, definition: string | null): Promise<boolean> {
    const k = this.keys(queue);
    const keys = { schedules: k.schedules, schedule_last: k.scheduleLast };
    return (await this.#count(queue, 'schedule-set', { name, definition: definition ?? '' }, { keys })) === 1;
  }

  async scheduleList(queue: string): Promise<StoredSchedule[]> {
    const k = this.keys(queue);
    const [defs, last] = (await this.#guard.run(() => Promise.all([this.#client.hgetall(k.schedules), this.#client.hgetall(k.scheduleLast)]))) as [
      Record<string, string>,
      Record<string, string>,
    ];
    return Object.entries(defs)
      .map(([name, definition]) => ({ name, definition, lastOccurrenceMs: optNum(last[name]) }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async layout(queue: string): Promise<string | undefined> {
    const text = await this.#guard.run(() => this.#client.hget(this.keys(queue).meta, 'layout'));
    return text ?? undefined;
  }

  async setLayout(queue: string, expected: string | undefined, next: string, epoch: string | undefined): Promise<boolean> {
    return (await this.#count(queue, 'layout', { expected: expected ?? '', next, epoch: epoch ?? '' })) === 1;
  }

  async retire(queue: string, epoch: string): Promise<void> {
    await this.#call(queue, 'set-meta', { what: 'moved', value: epoch });
  }

  async markShard(queue: string, epoch: string): Promise<void> {
    await this.#call(queue, 'set-meta', { what: 'shard', value: epoch });
  }

  async dedupHolders(queue: string, keys: string[]): Promise<(DedupHolder | null)[]> {
    if (keys.length === 0) return [];
    const k = this.keys(queue);
    // One slot (the queue's hash tag): one MGET, on a cluster too.
    const held = await this.#guard.run(() => this.#client.mget(...keys.map((key) => dedupKey(k, key))));
    return held.map((v) => {
      const m = v === null ? null : /^(\d+):(.*)$/s.exec(v);
      return m ? { id: m[2]!, dueAtMs: Number(m[1]) } : null;
    });
  }

  async bursts(queue: string, keys: string[]): Promise<(DebounceBurst | null)[]> {
    if (keys.length === 0) return [];
    const held = await this.#guard.run(() => this.#client.hmget(this.keys(queue).debounce, ...keys));
    return held.map((v) => {
      const m = v === null ? null : /^(.*):(\d{1,16})$/s.exec(v);
      return m ? { id: m[1]!, firstMs: Number(m[2]) } : null;
    });
  }

  async setLimits(queue: string, change: LimitsChange): Promise<boolean> {
    const none = { ...NO_LIMITS_CHANGE };
    const [rateMax, ratePer] = rateArgs(change.rateLimit);
    const [groupRateMax, groupRatePer] = rateArgs(change.groupRateLimit);
    const { fields } = await this.#reply(queue, 'limits', {
      ...none,
      concurrency: limitArg(change.concurrency),
      group_concurrency: limitArg(change.groupConcurrency),
      rate_max: rateMax,
      rate_per: ratePer,
      group_rate_max: groupRateMax,
      group_rate_per: groupRatePer,
    });
    // A raised group limit sweeps the groups, a bounded step a call (limits.lua).
    for (let cursor = String(fields.cursor); cursor !== '' && cursor !== '0'; ) {
      cursor = String((await this.#reply(queue, 'limits', { ...none, cursor })).fields.cursor);
    }
    return fields.changed === 1;
  }

  async limits(queue: string): Promise<QueueLimits> {
    const { fields } = await this.#reply(queue, 'groups', { cursor: '', count: 0 });
    return limitsOf(fields);
  }

  /** The server's clock, then the minutes' fields (one HMGET of at most LIMIT.history_minutes); no script: it only reads. */
  async history(queue: string, minutes: number): Promise<StoredHistory> {
    const key = historyKey(this.keys(queue));
    const [sec, usec] = await this.#guard.run(() => this.#client.time());
    const nowMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    const wanted = minutesUpTo(nowMs, minutes);
    const values = await this.#guard.run(() => this.#client.hmget(key, ...wanted.map(historyField)));
    return { nowMs, minutes: wanted.map((m, i) => parseHistoryField(values[i], m)) };
  }

  async rateStatus(queue: string): Promise<RateStatus> {
    const { fields } = await this.#reply(queue, 'groups', { cursor: '', count: 0 });
    const nowMs = num(fields.now_ms);
    return { nowMs, queue: parseRateUse(fields.rate, fields.next_refill_ms, nowMs), groupsHeld: num(fields.groups_held) };
  }

  async setGroup(queue: string, group: string, change: GroupChange): Promise<boolean> {
    const paused = change.paused === undefined ? '' : change.paused ? '1' : '0';
    const [rateMax, ratePer] = rateArgs(change.rateLimit);
    const { fields } = await this.#reply(queue, 'limits', {
      ...NO_LIMITS_CHANGE,
      group,
      concurrency: limitArg(change.concurrency),
      paused,
      rate_max: rateMax,
      rate_per: ratePer,
    });
    return fields.changed === 1;
  }

  async groups(queue: string, ids: string[]): Promise<StoredGroup[]> {
    if (ids.length === 0) return [];
    const { fields, items } = await this.#reply(queue, 'groups', { cursor: '', count: 0 }, { items: ids.map((id) => ({ id })) });
    return items.map((it) => parseGroupState(String(it.id), it.state, parseRateUse(it.rate, it.next_refill_ms, num(fields.now_ms))));
  }

  async groupPage(queue: string, cursor: string | undefined, count: number): Promise<GroupsPage> {
    // groups.lua's cursors: k<group id> (a page of a small hash) or s<HSCAN cursor>.
    if (cursor !== undefined && !/^(k[\s\S]{1,1024}|s\d{1,20})$/.test(cursor)) throw new ValidationError('opts.cursor', 'is not a cursor this listing gave');
    const { fields, items } = await this.#reply(queue, 'groups', { cursor: cursor ?? '0', count });
    const next = String(fields.cursor);
    const now = num(fields.now_ms);
    return {
      groups: items.map((it) => parseGroupState(String(it.id), it.state, parseRateUse(it.rate, it.next_refill_ms, now))),
      next: next === '0' ? undefined : next,
    };
  }

  async setPaused(queue: string, paused: boolean): Promise<boolean> {
    return (await this.#count(queue, 'set-meta', { what: 'paused', value: paused ? '1' : '0' })) === 1;
  }

  async setEventStream(queue: string, maxLen: number): Promise<boolean> {
    return (await this.#count(queue, 'set-meta', { what: 'events', value: maxLen })) === 1;
  }

  async setRetention(queue: string, set: RetainedSet, maxCount: number, maxAgeMs: number): Promise<void> {
    await this.#call(queue, 'set-meta', { what: set === 'dead' ? 'dead' : 'done', value: `${maxCount}:${maxAgeMs}` });
  }

  async retention(queue: string): Promise<Record<RetainedSet, { maxCount: number; maxAgeMs: number }>> {
    return (await this.settings(queue)).retention;
  }

  async settings(queue: string): Promise<QueueSettings> {
    const [paused, events, dm, da, cm, ca, du, c, gc, rm, rp, grm, grp] = await this.#guard.run(() =>
      this.#client.hmget(
        this.keys(queue).meta,
        'paused',
        'events',
        'deadMax',
        'deadMaxAge',
        'doneMax',
        'doneMaxAge',
        'dedupUntil',
        'concurrency',
        'groupConcurrency',
        'rateMax',
        'ratePer',
        'groupRateMax',
        'groupRatePer',
      ),
    );
    const n = (v: string | null) => (v === null ? 0 : Number(v) || 0);
    const rate = (max: string | null, per: string | null) => (n(max) > 0 && n(per) > 0 ? { max: n(max), perMs: n(per) } : undefined);
    return {
      paused: paused === '1',
      limits: {
        concurrency: n(c) || undefined,
        groupConcurrency: n(gc) || undefined,
        rateLimit: rate(rm, rp),
        groupRateLimit: rate(grm, grp),
      },
      eventsMaxLen: n(events),
      retention: { dead: { maxCount: n(dm), maxAgeMs: n(da) }, completed: { maxCount: n(cm), maxAgeMs: n(ca) } },
      dedupUntilMs: n(du),
    };
  }

  eventReader(queue: string): EventReader {
    return openEventReader(this.#client, this.keys(queue).events, this.#subscribers);
  }

  async serverTimeMs(queue: string): Promise<number> {
    // A script keyed by the queue runs on the node that holds it (in a cluster, each node has
    // a clock of its own), and reads the same TIME the queue's scripts read.
    const [s, us] = (await this.#guard.run(() => this.#client.eval(TIME_SCRIPT, 1, this.keys(queue).base[0]!))) as [number, number];
    return num(s) * 1000 + Math.floor(num(us) / 1000);
  }

  waitUntilReady(timeoutMs?: number): Promise<void> {
    return this.#guard.waitUntilReady(timeoutMs);
  }

  /** Resolves within about a second whatever Redis does: a server that does not answer QUIT gets its socket closed. */
  async close(): Promise<void> {
    this.#guard.close();
    for (const sub of this.#subscribers) sub.disconnect();
    this.#subscribers.clear();
    if (!this.#owned) return;
    if (!(await settlesWithin(this.#client.quit(), QUIT_WAIT_MS))) this.#client.disconnect();
  }
}

/** stats.lua's figures of what holds due jobs (see src/store/held.ts). */
function heldFrom(f: Record<string, unknown>, now: number, due: number, active: number): HeldSummary {
  const opt = (v: unknown) => (num(v) < 0 ? undefined : num(v));
  const concurrency = opt(f.concurrency);
  const until = rateLimitedUntil({ used: num(f.rate_used), heldUntilMs: opt(f.rate_held_until_ms), nextRefillMs: opt(f.rate_next_refill_ms) }, opt(f.rate_max));
  return {
    queuePaused: f.paused === 1,
    queueAtLimit: concurrency !== undefined && due > 0 && active >= concurrency,
    pausedGroups: num(f.groups_paused),
    pausedGroupsWaiting: num(f.paused_waiting),
    groupsAtLimit: num(f.groups_at_limit),
    groupsAtLimitWaiting: num(f.at_limit_waiting),
    groupsComplete: f.groups_complete === 1,
    rateLimitedUntilMs: until !== undefined && until > now ? until : undefined,
    rateLimitedGroups: num(f.groups_rate_held),
  };
}
