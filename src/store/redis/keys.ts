/**
 * The only place a Redis key or channel name is built. Every key of one queue shares the hash
 * tag `{<queue>}`, so each script touches a single Redis Cluster slot. A fixed set of keys per
 * queue, whatever the number of jobs: no key per job (see docs/data-model.md for why).
 *
 *   <prefix>:{<queue>}:scheduled   ZSET  due ms          -> job id
 *   <prefix>:{<queue>}:ready       ZSET  -priority       -> due|seq|id (due, waiting for a worker)
 *   <prefix>:{<queue>}:active      ZSET  lease deadline  -> job id
 *   <prefix>:{<queue>}:dead        ZSET  time of death   -> job id
 *   <prefix>:{<queue>}:seq         STRING counter (FIFO order, lease tokens)
 *   <prefix>:{<queue>}:jobs        HASH  job id -> packed body (wire.ts JOB_BODY), never changed
 *   <prefix>:{<queue>}:runs        HASH  job id -> run state (wire.ts RUN_STATE), once it left scheduled
 *   <prefix>:{<queue>}:meta        HASH  paused, events (the stream's MAXLEN), deadMax, deadMaxAge,
 *                                  doneMax, doneMaxAge (retention), completed (a running total)
 *   <prefix>:{<queue>}:completed   ZSET  finish time     -> job id (completed jobs kept by retention)
 *   <prefix>:{<queue>}:results     HASH  job id -> a kept job's result (JSON)
 *   <prefix>:{<queue>}:progress    HASH  job id -> progress (JSON)
 *   <prefix>:{<queue>}:logs        HASH  job id -> log lines (JSON array, capped)
 *   <prefix>:{<queue>}:errors      HASH  job id -> its last failed attempts (wire.ts ERROR_HISTORY)
 *   <prefix>:{<queue>}:group-of    HASH  job id -> its group id (jobs of a group only)
 *   <prefix>:{<queue>}:groups      HASH  group id -> wire.ts GROUP_STATE (running, waiting, limit, paused)
 *   <prefix>:{<queue>}:lanes       ZSET  turn -> group id, or '' for jobs of no group: the rotation
 *                                  of the lanes that have due jobs and room
 *   <prefix>:{<queue>}:waiting     ZSET  0 -> '<group>\0<7-digit priority key><due:16><seq:16><id>':
 *                                  due jobs of groups, each group's line in hand-out order
 *   <prefix>:{<queue>}:waiting-due ZSET due ms -> group id: for each group with jobs in its line, a
 *                                  due time at or below theirs (stats' oldest due age; wire.ts WAITING_DUE_SUFFIX)
 *   <prefix>:{<queue>}:ranked      ZSET due ms -> scheduled member: the scheduled jobs with a priority, while
 *                                  the queue counts some (claims take the due ones out by it; wire.ts RANKED_SUFFIX)
 *   <prefix>:{<queue>}:history     HASH  minute % 1440 -> wire.ts HISTORY_MINUTE: the last 24 h a minute at a
 *                                  time (completed, failed, dead, lateness; wire.ts HISTORY_SUFFIX)
 *   <prefix>:{<queue>}:flow-of     HASH  job id -> wire.ts JOB_FLOW (cost, debounce key; jobs with either only)
 *   <prefix>:{<queue>}:debounce    HASH  debounce key -> '<job id>:<first add ms>' of its pending burst
 *   <prefix>:{<queue>}:rate        HASH  '' (the queue) or group id -> wire.ts RATE_STATE (tokens taken, hold)
 *   <prefix>:{<queue>}:rate-log    ZSET  0 -> '<limiter>\0<expiry:16>:<claim seq>:<taken at ms>:<tokens>': tokens taken,
 *                                  each limiter's in expiry order (the sliding window)
 *   <prefix>:{<queue>}:rate-wake   ZSET  when to look again -> group id (held back by its rate limit,
 *                                  or with tokens to give back)
 *   <prefix>:{<queue>}:workers     ZSET  heartbeat expiry -> worker id (live workers)
 *   <prefix>:{<queue>}:worker-info HASH  worker id -> '<last seen ms>:<info JSON>'
 *   <prefix>:queues                ZSET  first seen ms -> queue name (the registry; outside
 *                                  any queue's hash tag, written by plain commands)
 *   <prefix>:{<queue>}:events      STREAM what happened (opt-in, capped)
 *   <prefix>:{<queue>}:dedup:<key> STRING '<due ms>:<job id>' of the add holding a dedup key, expiring with its window
 *   <prefix>:{<queue>}:schedules   HASH  schedule name -> definition JSON
 *   <prefix>:{<queue>}:schedule-last HASH schedule name -> last enqueued occurrence ms
 *   <prefix>:{<queue>}:req:<request id> STRING a non-idempotent call's answer, expiring (see _helpers.lua)
 *   <prefix>:{<queue>}:wake        pub/sub channel: "the earliest due time moved earlier" (a due
 *                                  time in ms), or 's': "a schedule was stored or removed"
 */
import { BASE_KEYS, DEDUP_SUFFIX, PASSED_BASE_KEYS, HISTORY_SUFFIX, HOLD_SUFFIXES, RANKED_SUFFIX, WAITING_DUE_SUFFIX } from './wire.js';

export interface QueueKeys {
  readonly root: string;
  readonly scheduled: string;
  readonly ready: string;
  readonly active: string;
  readonly dead: string;
  readonly seq: string;
  readonly jobs: string;
  readonly runs: string;
  readonly meta: string;
  readonly events: string;
  readonly completed: string;
  readonly results: string;
  readonly progress: string;
  readonly logs: string;
  readonly errors: string;
  readonly groupOf: string;
  readonly groups: string;
  readonly lanes: string;
  readonly waiting: string;
  readonly flowOf: string;
  readonly debounce: string;
  readonly rate: string;
  readonly rateLog: string;
  readonly rateWake: string;
  readonly workers: string;
  readonly workerInfo: string;
  readonly requestPrefix: string;
  readonly wake: string;
  readonly schedules: string;
  readonly scheduleLast: string;
  /** PASSED_BASE_KEYS of every script, in order (its other base keys it builds from `root`). */
  readonly base: readonly string[];
  /** BASE_ARGS of every script, in order. */
  readonly baseArgs: readonly string[];
}

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const root = `${prefix}:{${queue}}:`;
  const named = Object.fromEntries(BASE_KEYS.map((k) => [k, root + k])) as Record<(typeof BASE_KEYS)[number], string>;
  const wake = `${root}wake`;
  return {
    ...named,
    groupOf: named['group-of'],
    flowOf: named['flow-of'],
    rateLog: named['rate-log'],
    rateWake: named['rate-wake'],
    root,
    schedules: `${root}schedules`,
    scheduleLast: `${root}schedule-last`,
    workers: `${root}workers`,
    workerInfo: `${root}worker-info`,
    requestPrefix: `${root}req:`,
    wake,
    base: PASSED_BASE_KEYS.map((k) => named[k]),
    baseArgs: [root, wake],
  };
}

/** Where a script remembers the answer to the call with this request id. */
export function requestKey(keys: QueueKeys, requestId: string): string {
  return keys.requestPrefix + requestId;
}

/** The index of the earliest due time of each group's line (the scripts build the same as K_WAITING_DUE). */
export function waitingDueKey(keys: QueueKeys): string {
  return keys.root + WAITING_DUE_SUFFIX;
}

/** The index of the scheduled jobs with a priority (the scripts build the same as K_RANKED). */
export function rankedKey(keys: QueueKeys): string {
  return keys.root + RANKED_SUFFIX;
}

/** The keys of holds (docs/flows.md; the scripts build the same from HOLD_KEY). */
export function holdKeys(keys: QueueKeys): Record<keyof typeof HOLD_SUFFIXES, string> {
  return {
    held: keys.root + HOLD_SUFFIXES.held,
    holds: keys.root + HOLD_SUFFIXES.holds,
    deps: keys.root + HOLD_SUFFIXES.deps,
    dependents: keys.root + HOLD_SUFFIXES.dependents,
    results: keys.root + HOLD_SUFFIXES.results,
    signals: keys.root + HOLD_SUFFIXES.signals,
    delivered: keys.root + HOLD_SUFFIXES.delivered,
  };
}

/** The queue's per-minute history (the scripts build the same as K_HISTORY). */
export function historyKey(keys: QueueKeys): string {
  return keys.root + HISTORY_SUFFIX;
}

/** The key that holds a dedup key's window (add.lua builds the same from DEDUP_PREFIX). */
export function dedupKey(keys: QueueKeys, key: string): string {
  return keys.root + DEDUP_SUFFIX + key;
}

/** The registry of queue names under a prefix (see Store.queues). */
export function registryKey(prefix: string): string {
  return `${prefix}:queues`;
}
