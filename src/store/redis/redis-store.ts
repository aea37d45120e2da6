/**
 * The Redis store: one typed method per Lua script (script `claim.lua` <-> `claim()`), plus the
 * wake-up subscription. It parses script replies and nothing else; decisions live in the scripts.
 */
import { StoreError } from '../../errors.js';
import type { CancelResult, JobInfo, JobState, QueueStats, RescheduleResult } from '../../types.js';
import type {
  ClaimResult,
  ClaimedJob,
  DeadJob,
  UnreadableJob,
  EventReader,
  PurgeTarget,
  ScheduleGuard,
  StoredSchedule,
  StreamEvent,
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
  WakeHandlers,
  WakeSubscription,
} from '../store.js';
import { duplicateClient, openClient, type Client, type RedisConnection } from './connection.js';
import { randomBytes } from 'node:crypto';
import { ConnectionGuard } from './connection-guard.js';
import { settlesWithin } from '../../settles-within.js';
import { jobKey, queueKeys, requestKey, type QueueKeys } from './keys.js';
import { runScript } from './scripts.js';
import { verifyQueue } from './verify.js';

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
}

/** QUIT is answered at once by a live server; one that has not answered by then gets its socket closed. */
const QUIT_WAIT_MS = 1000;

/** Due jobs moved into the ready set per claim; bounds one script's run time. */
const PROMOTE_LIMIT = 1000;
/** Expired leases recovered per claim. */
const REAP_LIMIT = 100;
/**
 * A claim takes milliseconds. One unanswered for this long is on a wedged connection (a
 * half-open socket that TCP keepalive would take minutes to notice): drop the socket so ioredis
 * reconnects and re-sends. Wedged blocking connections are BullMQ's most reported failure.
 */
const CLAIM_WATCHDOG_MS = 15_000;
/** Dead jobs retried or purged per script run, so a huge dead set never stalls Redis. */
const DEAD_BATCH = 1000;
/** How often an idle subscription proves its connection is alive. */
const SUBSCRIBER_PING_MS = 30_000;
const SUBSCRIBER_PING_TIMEOUT_MS = 5_000;

/**
 * How long a script remembers the answer to an add, cancel or reschedule, so that a call ioredis
 * re-sends after a lost reply (it does so after every reconnect) gets the first run's answer.
 * Covers reconnects and a restart of Redis; the cost is one small expiring key per call (a
 * claim's memo lives as long as its lease).
 */
export const REQUEST_MEMO_MS = 60_000;
/** Reads the server's clock where the queue lives (KEYS[1] is one of the queue's keys, for routing only). */
const TIME_SCRIPT = "local t = redis.call('TIME') return { tonumber(t[1]), tonumber(t[2]) }";

const ADD_CODES = { 1: 'added', 0: 'exists', 2: 'replaced', 3: 'deduplicated' } as const;
const LEASE_CODES: Record<number, LeaseOutcome> = { 1: 'ok', 0: 'lease_lost', [-1]: 'not_found' };

function num(v: unknown): number {
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) throw new StoreError(`expected a number from Redis, got ${String(v)}`);
  return n;
}

function optNum(v: unknown): number | undefined {
  if (v === '' || v === null || v === undefined) return undefined;
  return num(v);
}

function optStr(v: unknown): string | undefined {
  return v === '' || v === null || v === undefined ? undefined : String(v);
}

/** A stored number shown as it is: undefined when absent or not a finite number (corrupt data is listed, never thrown). */
function looseNum(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  // Whole decimal numbers only, as the scripts' as_int: Number() would also take '0x1A' and '1e3'.
  return typeof v === 'string' && /^-?\d{1,16}$/.test(v) ? Number(v) : undefined;
}

/** One claimed job from its 11 reply fields; throws on anything the script should never send. */
function claimedJob(reply: unknown[], i: number): ClaimedJob {
  const data = reply[i + 2];
  return {
    id: String(reply[i]),
    token: String(reply[i + 1]),
    data: data === null || data === undefined ? undefined : String(data),
    attempt: num(reply[i + 3]),
    maxAttempts: optNum(reply[i + 4]),
    backoff: optStr(reply[i + 5]),
    dueAtMs: num(reply[i + 6]),
    priority: num(reply[i + 7]),
    createdAtMs: num(reply[i + 8]),
    leaseExpiresAtMs: num(reply[i + 9]),
    traceContext: optStr(reply[i + 10]),
  };
}

function leaseOutcomes(reply: unknown): LeaseOutcome[] {
  return (reply as number[]).map((c) => LEASE_CODES[c > 0 ? 1 : c]!);
}

export class RedisStore implements Store {
  readonly #client: Client;
  readonly #owned: boolean;
  readonly #prefix: string;
  readonly #keys = new Map<string, QueueKeys>();
  readonly #subscribers = new Set<Client>();
  readonly #claimWatchdogMs: number;
  readonly #testClockKey: string | undefined;
  /** Request ids: unique to this store instance, then a counter (see REQUEST_MEMO_MS). */
  readonly #requestPrefix = randomBytes(9).toString('base64url');
  #requestSeq = 0;
  readonly #guard: ConnectionGuard;

  constructor(opts: RedisStoreOptions = {}) {
    const { client, owned } = openClient(opts.connection);
    this.#client = client;
    this.#owned = owned;
    this.#guard = new ConnectionGuard(client, { connectTimeoutMs: opts.connectTimeoutMs, commandTimeoutMs: opts.commandTimeoutMs });
    this.#prefix = opts.prefix ?? 'dq';
    this.#claimWatchdogMs = opts.claimWatchdogMs ?? CLAIM_WATCHDOG_MS;
    this.#testClockKey = opts.testClockKey;
  }

  /** The command connection, for tests and tools that read the documented layout. */
  get client(): Client {
    return this.#client;
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

  #run(queue: string, name: Parameters<typeof runScript>[1], args: (string | number)[], extraKeys: string[] = []) {
    const k = this.keys(queue);
    return this.#guard.run(() => runScript(this.#client, name, [...k.base, ...extraKeys], [...k.baseArgs, ...args], this.#testClockKey));
  }

  add(queue: string, jobs: NewJob[]): Promise<StoredAddResult[]>;
  add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  async add(queue: string, jobs: NewJob[], guard?: ScheduleGuard): Promise<StoredAddResult[] | null> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    const args: (string | number)[] = [jobs.length, guard?.name ?? '', guard?.occurrenceMs ?? '', rid, REQUEST_MEMO_MS];
    const jobKeys: string[] = [requestKey(k, rid)];
    for (const j of jobs) {
      jobKeys.push(jobKey(k, j.id));
      args.push(
        j.id,
        j.data,
        j.delayMs ?? '',
        j.delayMs === undefined ? (j.runAtMs ?? 0) : '',
        j.priority,
        j.maxAttempts ?? '',
        j.backoff ?? '',
        j.replace ? '1' : '0',
        j.dedup?.key ?? '',
        j.dedup?.windowMs ?? '',
        j.traceContext ?? '',
      );
    }
    const reply = (await this.#run(queue, 'add', args, jobKeys)) as unknown[];
    if (reply.length === 1 && num(reply[0]) === -1) return null;
    const out: StoredAddResult[] = [];
    for (let i = 0; i < reply.length; i += 4) {
      out.push({
        code: ADD_CODES[num(reply[i]) as 0 | 1 | 2 | 3],
        state: reply[i + 1] as JobState | 'finished',
        dueAtMs: num(reply[i + 2]),
        duplicateOf: reply[i + 3] === '' ? undefined : String(reply[i + 3]),
      });
    }
    return out;
  }

  async claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number): Promise<ClaimResult> {
    const watchdog = setTimeout(() => this.#client.disconnect(true), this.#claimWatchdogMs);
    let reply: unknown[];
    const rid = this.#requestId();
    try {
      reply = (await this.#run(
        queue,
        'claim',
        [count, leaseMs, defaultMaxAttempts, PROMOTE_LIMIT, REAP_LIMIT, rid],
        [requestKey(this.keys(queue), rid)],
      )) as unknown[];
    } finally {
      clearTimeout(watchdog);
    }
    const nowMs = num(reply[0]);
    const wake = num(reply[1]);
    const jobs: ClaimedJob[] = [];
    const unreadable: UnreadableJob[] = [];
    // Each job on its own: one that cannot be read goes dead, and costs the others nothing.
    for (let i = 3; i < reply.length; i += 11) {
      try {
        jobs.push(claimedJob(reply, i));
      } catch (err) {
        unreadable.push({ id: String(reply[i]), token: String(reply[i + 1]), reason: `corrupt job: ${(err as Error).message}` });
      }
    }
    return { nowMs, jobs, unreadable, more: reply[2] === 1, nextWakeMs: wake < 0 ? undefined : wake };
  }

  async complete(queue: string, leases: LeaseRef[]): Promise<LeaseOutcome[]> {
    if (leases.length === 0) return [];
    return leaseOutcomes(
      await this.#run(
        queue,
        'complete',
        leases.flatMap((l) => [l.id, l.token]),
      ),
    );
  }

  async fail(queue: string, req: FailRequest): Promise<FailResult> {
    const [code, due] = (await this.#run(queue, 'fail', [req.id, req.token, req.error, req.retryDelayMs, req.dead ? '1' : '0', req.defaultMaxAttempts])) as [
      number,
      number,
    ];
    const outcome = ({ 1: 'retried', 2: 'dead', 0: 'lease_lost', [-1]: 'not_found' } as const)[code as 1 | 2 | 0 | -1];
    return { outcome, dueAtMs: due < 0 ? undefined : due };
  }

  async extend(queue: string, leases: LeaseRef[], leaseMs: number): Promise<LeaseOutcome[]> {
    if (leases.length === 0) return [];
    return leaseOutcomes(await this.#run(queue, 'extend', [leaseMs, ...leases.flatMap((l) => [l.id, l.token])]));
  }

  async release(queue: string, leases: LeaseRef[]): Promise<LeaseOutcome[]> {
    if (leases.length === 0) return [];
    return leaseOutcomes(
      await this.#run(
        queue,
        'release',
        leases.flatMap((l) => [l.id, l.token]),
      ),
    );
  }

  async cancel(queue: string, id: string): Promise<CancelResult> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    const [code, state] = (await this.#run(queue, 'cancel', [id, rid, REQUEST_MEMO_MS], [jobKey(k, id), requestKey(k, rid)])) as [number, string];
    return { id, cancelled: code === 1, state: state === '' ? undefined : (state as JobState) };
  }

  async reschedule(queue: string, id: string, delayMs: number | undefined, runAtMs: number | undefined): Promise<RescheduleResult> {
    const k = this.keys(queue);
    const rid = this.#requestId();
    const [code, state, due] = (await this.#run(
      queue,
      'reschedule',
      [id, delayMs ?? '', delayMs === undefined ? (runAtMs ?? 0) : '', rid, REQUEST_MEMO_MS],
      [jobKey(k, id), requestKey(k, rid)],
    )) as [number, string, number];
    return {
      id,
      rescheduled: code === 1,
      state: state === '' ? undefined : (state as JobState),
      dueAtMs: due < 0 ? undefined : due,
    };
  }

  async get(queue: string, id: string): Promise<JobInfo<string> | null> {
    const reply = (await this.#run(queue, 'get', [id], [jobKey(this.keys(queue), id)])) as unknown[];
    if (reply.length === 0) return null;
    const [state, deadlineText, now] = reply as [string, string, number];
    const deadline = Number(deadlineText);
    const h: Record<string, string> = {};
    for (let i = 3; i < reply.length; i += 2) h[String(reply[i])] = String(reply[i + 1]);
    // Stored fields are shown as they are; a corrupt number reads as absent (NaN for the due time).
    const dueAtMs = looseNum(h.t) ?? Number.NaN;
    return {
      id,
      // A body in no set is reported as scheduled-but-lost by verify(); get shows what it can.
      state: state === 'ready' || state === '' ? 'scheduled' : (state as JobState),
      data: h.d as string,
      dueAtMs,
      ready: state === 'ready' || (state === 'scheduled' && dueAtMs <= now),
      priority: looseNum(h.p) ?? 0,
      attempt: looseNum(h.a) ?? 0,
      maxAttempts: looseNum(h.m),
      createdAtMs: looseNum(h.c) ?? Number.NaN,
      leaseExpiresAtMs: deadline < 0 ? undefined : deadline,
      lastError: h.e,
    };
  }

  async stats(queue: string, windowMs: number): Promise<QueueStats> {
    const [now, notPromoted, ready, dueInScheduled, active, dead, head, dueWithin, paused, streamLength, completed, readyDue] = (await this.#run(
      queue,
      'stats',
      [windowMs],
    )) as number[];
    const readyTotal = ready! + dueInScheduled!;
    return {
      scheduled: notPromoted! + ready!,
      ready: readyTotal,
      active: active!,
      dead: dead!,
      nextDueInMs: readyTotal > 0 ? 0 : head! < 0 ? undefined : Math.max(0, head! - now!),
      dueWithinWindow: ready! + dueWithin!,
      windowMs,
      nowMs: now!,
      paused: paused === 1,
      eventStreamLength: streamLength! < 0 ? undefined : streamLength,
      completedTotal: completed!,
      // The ready set is ordered by priority, so its first member is only a sample of the wait.
      oldestDueAgeMs:
        readyTotal === 0 ? undefined : Math.max(0, now! - Math.min(dueInScheduled! > 0 ? head! : Infinity, readyDue! >= 0 ? readyDue! : Infinity)),
    };
  }

  async snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult> {
    const [code, due] = (await this.#run(queue, 'snooze', [req.id, req.token, req.delayMs, req.deadlineAtMs ?? ''])) as [number, number];
    const outcome = ({ 1: 'snoozed', 2: 'dead', 0: 'lease_lost', [-1]: 'not_found' } as const)[code as 1 | 2 | 0 | -1];
    return { outcome, dueAtMs: due < 0 ? undefined : due };
  }

  async deadList(queue: string, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }> {
    const reply = (await this.#run(queue, 'dead-list', [offset, limit])) as unknown[];
    const jobs: DeadJob[] = [];
    for (let i = 1; i < reply.length; i += 8) {
      jobs.push({
        id: String(reply[i]),
        diedAtMs: num(reply[i + 1]),
        data: optStr(reply[i + 2]),
        attempt: looseNum(reply[i + 3]) ?? 0,
        maxAttempts: looseNum(reply[i + 4]),
        lastError: optStr(reply[i + 5]),
        dueAtMs: looseNum(reply[i + 6]),
        createdAtMs: looseNum(reply[i + 7]),
      });
    }
    return { total: num(reply[0]), jobs };
  }

  async deadRetry(queue: string, ids: string[] | 'all'): Promise<number> {
    if (ids !== 'all') return num(await this.#run(queue, 'dead-retry', ['ids', 0, ...ids]));
    let total = 0;
    for (;;) {
      const n = num(await this.#run(queue, 'dead-retry', ['all', DEAD_BATCH]));
      total += n;
      if (n < DEAD_BATCH) return total;
    }
  }

  async deadPurge(queue: string, target: PurgeTarget): Promise<number> {
    if ('ids' in target) return num(await this.#run(queue, 'dead-purge', ['ids', 0, 0, ...target.ids]));
    const args = 'all' in target ? ['all', DEAD_BATCH, 0] : ['older', DEAD_BATCH, target.olderThanMs];
    let total = 0;
    for (;;) {
      const n = num(await this.#run(queue, 'dead-purge', args));
      total += n;
      if (n < DEAD_BATCH) return total;
    }
  }

  verify(queue: string): Promise<VerifyReport> {
    return this.#guard.run(() => verifyQueue(this.#client, this.keys(queue)));
  }

  async subscribe(queue: string, handlers: WakeHandlers): Promise<WakeSubscription> {
    const channel = this.keys(queue).wake;
    const sub = duplicateClient(this.#client, { enableAutoPipelining: false });
    this.#subscribers.add(sub);
    let connectedOnce = false;
    // ioredis reports every failed reconnect attempt; one report per drop is enough.
    let reported = false;
    sub.on('message', (ch: string, message: string) => {
      if (ch !== channel) return;
      if (message === 's') handlers.onSchedulesChanged?.();
      else handlers.onWake(Number(message));
    });
    sub.on('error', (err: Error) => {
      if (reported) return;
      reported = true;
      handlers.onError(this.#guard.wrap(err) as Error);
    });
    sub.on('ready', () => {
      reported = false;
      // ioredis re-subscribes by itself after a reconnect; what was published meanwhile is gone.
      // It emits 'ready' before it writes the SUBSCRIBE, so wait for a PING sent after it: once
      // that is answered the subscription is live and a claim cannot miss a later signal.
      if (connectedOnce) {
        queueMicrotask(() => {
          sub.ping().then(
            () => handlers.onResubscribed(),
            () => handlers.onResubscribed(),
          );
        });
      }
      connectedOnce = true;
    });
    try {
      await sub.subscribe(channel);
    } catch (err) {
      this.#subscribers.delete(sub);
      sub.disconnect();
      throw this.#guard.wrap(err);
    }

    // A half-open TCP connection looks alive and delivers nothing. Ping it; if no answer
    // comes in time, drop the socket so ioredis reconnects and re-subscribes.
    const watchdog = setInterval(() => {
      if (sub.status !== 'ready') return;
      const timer = setTimeout(() => sub.disconnect(true), SUBSCRIBER_PING_TIMEOUT_MS);
      sub.ping().then(
        () => clearTimeout(timer),
        () => clearTimeout(timer),
      );
    }, SUBSCRIBER_PING_MS);
    watchdog.unref();

    return {
      close: async () => {
        clearInterval(watchdog);
        this.#subscribers.delete(sub);
        sub.disconnect();
      },
    };
  }

  async scheduleSet(queue: string, name: string, definition: string | null): Promise<boolean> {
    return num(await this.#run(queue, 'schedule-set', [name, definition ?? ''])) === 1;
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

  async setPaused(queue: string, paused: boolean): Promise<boolean> {
    return num(await this.#run(queue, 'set-meta', ['paused', paused ? '1' : '0'])) === 1;
  }

  async setEventStream(queue: string, maxLen: number): Promise<boolean> {
    return num(await this.#run(queue, 'set-meta', ['events', maxLen])) === 1;
  }

  async setDeadCaps(queue: string, maxCount: number, maxAgeMs: number): Promise<void> {
    await Promise.all([this.#run(queue, 'set-meta', ['deadMax', maxCount]), this.#run(queue, 'set-meta', ['deadMaxAge', maxAgeMs])]);
  }

  eventReader(queue: string): EventReader {
    const stream = this.keys(queue).events;
    // XREAD BLOCK holds its connection, so each reader has one of its own.
    const conn = duplicateClient(this.#client, { enableAutoPipelining: false });
    this.#subscribers.add(conn);
    return {
      lastCursor: async () => {
        const last = (await conn.xrevrange(stream, '+', '-', 'COUNT', 1)) as [string, string[]][];
        return last[0]?.[0] ?? '0-0';
      },
      read: async (cursor, count, blockMs) => {
        const reply = (await conn.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', stream, cursor)) as [string, [string, string[]][]][] | null;
        const out: StreamEvent[] = [];
        for (const [entryId, flat] of reply?.[0]?.[1] ?? []) {
          const fields: Record<string, string> = {};
          for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
          const { event = '', id = '', ...rest } = fields;
          out.push({ cursor: entryId, event, id, fields: rest });
        }
        return out;
      },
      close: async () => {
        this.#subscribers.delete(conn);
        conn.disconnect();
      },
    };
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
