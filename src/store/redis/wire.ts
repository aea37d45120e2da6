/**
 * The wire format of every Lua script, written once: the names of its KEYS and ARGV in order,
 * the per-item arguments of batched scripts, its reply, and its return codes. The store builds
 * every call from these lists (`encodeCall`), scripts.ts turns them into named Lua locals at load
 * time (`luaPrologue`), so no script indexes KEYS or ARGV by number, and a test checks that each
 * `.lua` header states exactly these lists.
 */

import { StoreError } from '../../errors.js';
import {
  MAX_ATTEMPTS,
  MAX_BATCH,
  MAX_CONCURRENCY,
  MAX_DELAY_MS,
  MAX_EPOCH_MS,
  MAX_PRIORITY,
  MAX_RATE_TOKENS,
  MAX_RATE_WINDOW_MS,
  MAX_RUN_AT_MS,
  MIN_RUN_AT_MS,
} from '../../limits.js';
import { EVENTS, FINISHES, LIMIT, MARK, PLACES } from '../lifecycle.js';
import { SEQ_FLOOR_TTL_MS, SEQ_LIFE } from '../store.js';

/**
 * A dedup key is `<root>dedup:<the caller's key>`: built by add.lua from each item (so a batch
 * declares no key per job; all share the queue's hash tag) and by keys.ts dedupKey, both from
 * this one suffix.
 */
export const DEDUP_SUFFIX = 'dedup:';

/**
 * `<root>waiting-due` (ZSET due ms -> group id): for each group with jobs in its line, a due time at
 * or below theirs, so stats.lua finds the longest-waiting due job of any group without walking the
 * groups (see _groups.lua). Written by the scripts that put jobs in lines, under this one name
 * (K_WAITING_DUE in every script, keys.ts waitingDueKey), never declared as a KEY: it changes no
 * script's wire.
 */
export const WAITING_DUE_SUFFIX = 'waiting-due';

/**
 * `<root>ranked` (ZSET due ms -> scheduled member): the scheduled jobs with a priority other than
 * 0, while the queue counts such jobs (meta `ranked`, with `rankedSet` = '1' once every one of them
 * is in it). A claim takes the due ones out by it and hands out the rest of the due jobs in the
 * scheduled set's own order, instead of moving every due job through the ready set. Kept by the
 * scripts that write or remove scheduled members (_helpers.lua SCHED), under this one name
 * (K_RANKED in every script, keys.ts rankedKey), never declared as a KEY: it changes no script's
 * wire.
 */
export const RANKED_SUFFIX = 'ranked';

/**
 * `<root>history` (HASH): the queue's last 24 hours a minute at a time, so charts and the CLI
 * read throughput, failures and lateness from Redis, not from whatever process sampled them.
 * Field: a minute's number (epoch ms / 60,000) modulo LIMIT.history_minutes; value: HISTORY_MINUTE.
 * Written by the calls workers make anyway (claim: lateness; complete and every death through
 * `finish`: completed, dead; fail and fail-now: failed), one HGET and one HSET a call, under this
 * one name (K_HISTORY in every script, keys.ts historyKey), never declared as a KEY: it changes no
 * script's wire.
 */
export const HISTORY_SUFFIX = 'history';

/**
 * The keys of holds (docs/flows.md), `<root><suffix>`, made only by a queue that holds a job
 * (meta `holds` = '1'): built from these suffixes in every script (HOLD_KEY in the prologue, keys.ts
 * holdKey), never declared as KEYS, like waiting-due and history, so no script's wire grows for a
 * queue that never holds a job.
 * - `held` (ZSET deadline ms, or +inf for none -> job id): jobs held for other jobs.
 * - `holds` (HASH job id -> HOLD_STATE): every job added with dependencies, from its add until its
 *   life ends (so a released job's runs read what it waited for).
 * - `hold-deps` (HASH job id -> its dependencies' ids, tab-separated): written once, by the add.
 * - `dependents` (HASH job id -> the ids of the held jobs waiting for it, tab-separated): removed
 *   when the job's life ends and its dependents were told.
 * - `child-results` (HASH `<held id>\t<dependency id>` -> CHILD_OUTCOME): how each dependency ended.
 * - `signals` (HASH job id -> a JSON object, signal name -> its data as JSON text): signals sent to
 *   a job that was not waiting for them, kept (at most SIGNALS_KEPT_BYTES a job) until it waits.
 * - `signal-in` (HASH job id -> SIGNAL_IN): the signal that ended the job's last wait, for its runs.
 */
export const HOLD_SUFFIXES = {
  held: 'held',
  holds: 'holds',
  deps: 'hold-deps',
  dependents: 'dependents',
  results: 'child-results',
  signals: 'signals',
  delivered: 'signal-in',
} as const;

/**
 * A held job's state, its field in `holds`: `<pending>:<failed>:<on child failure f|i>:<due ms>:<phase>`.
 * pending = dependencies not ended yet; failed = those that ended dead or cancelled under
 * `onChildFailure: 'ignore'`; due = the time the job was added to run at (released, it runs at
 * the later of that and the release); phase `h` held, `r` released (every dependency ended), `t`
 * released by its deadline, `d` buried because a dependency failed.
 */
export const HOLD_STATE = '<pending>:<failed>:<f|i>:<due ms>:<h|r|t|d>[:<signal name>]';

/**
 * The signal that ended a job's wait (job.waitForSignal), its field in `signal-in`:
 * `<name>\t<1 when its timeout came first, else 0>\t<data JSON, or empty>`.
 */
export const SIGNAL_IN = '<name>\t<0|1>\t<data>';

/**
 * How a dependency ended, its field in `child-results`: `c<result JSON, or empty>` (completed),
 * `d<reason>` (dead) or `x<reason>` (cancelled).
 */
export const CHILD_OUTCOME = 'c<result> | d<reason> | x<reason>';

/**
 * The holds of a claim's jobs, one reply field like CLAIM_GROUPS (a queue that holds no job pays
 * nothing per job), as JSON (a signal's data may hold any character): one object for each job
 * handed out that was held (added with dependencies, or waiting for a signal); `timedOut` when
 * its deadline released it, with the dependencies that had not ended in `pending` (absent when
 * none); `signal` when the job waited for one: its name, 1 when its timeout came first, and the
 * data it was sent with. '' when no job handed out was held.
 */
export const CLAIM_HOLDS =
  '[{"at": <job position, from 1>, "timedOut": <bool>, "pending": [<id>, …], "signal": [<name>, <timed out 0|1>, <data JSON or "">]}, …]';

/**
 * A minute of the history: `<minute>:<completed>:<failed>:<dead>:<late jobs>:<late ms summed>:<late ms at most>`.
 * `minute` is the minute's number, so a field that still holds one a day older is read as empty
 * and started afresh; `failed` counts failed attempts (retried or not), `dead` jobs that ended
 * dead (out of attempts, failed for good, corrupt, lease lost on the last attempt); the late
 * figures are of the jobs handed out that minute: how long after their due time.
 */
export const HISTORY_MINUTE = '<minute>:<completed>:<failed>:<dead>:<late jobs>:<late ms summed>:<late ms at most>';

/**
 * The queue's own keys every script reads through `K_<KEY>` (see keys.ts for what each holds).
 * Only the first, PASSED_BASE_KEYS, goes in KEYS (KEYS[1]: Redis Cluster routes the call by it);
 * the script builds the others from ROOT (ARGV[1], `<prefix>:{<queue>}:`), as it builds the
 * history's key. Passing all 25 cost every call ~1.3k Redis instructions a key (parsed, made a
 * Redis string, then a Lua string): ~32k of a one-job claim's ~400k (protocol 7 and before).
 */
export const BASE_KEYS = [
  'scheduled',
  'ready',
  'active',
  'dead',
  'seq',
  'jobs',
  'runs',
  'meta',
  'events',
  'completed',
  'results',
  'progress',
  'logs',
  'errors',
  'group-of',
  'groups',
  'lanes',
  'waiting',
  'flow-of',
  'debounce',
  'rate',
  'rate-log',
  'rate-wake',
  'revoked',
  'waiters',
] as const;
/** The base keys a call passes in KEYS, before its own (the rest of BASE_KEYS come from ROOT). */
export const PASSED_BASE_KEYS = ['scheduled'] as const;
/** The base keys a script builds from ROOT: BASE_KEYS less PASSED_BASE_KEYS. */
export const DERIVED_BASE_KEYS = BASE_KEYS.filter((k) => !(PASSED_BASE_KEYS as readonly string[]).includes(k));

/** ARGV[1..2] of every script: the queue's key root (`<prefix>:{<queue>}:`) and its wake channel. */
export const BASE_ARGS = ['root', 'wake'] as const;

/** Return codes, by family. Lua sees them as `CODE.<name>`; the store maps them back here. */
export const CODES = {
  lease: { ok: 1, lease_lost: 0, not_found: -1 },
  add: { added: 1, exists: 0, replaced: 2, deduplicated: 3, debounced: 4, guard_refused: -1, moved: -2, too_costly: -3 },
  fail: { retried: 1, dead: 2, lease_lost: 0, not_found: -1 },
  waitSignal: { waiting: 1, signalled: 2, lease_lost: 0, not_found: -1 },
  signal: { released: 1, kept: 2, refused: 0, not_found: -1 },
  snooze: { snoozed: 1, dead: 2, lease_lost: 0, not_found: -1 },
  change: { done: 1, refused: 0, not_found: -1 },
  failNow: { retried: 1, dead: 2, refused: 0, not_found: -1 },
} as const;
export type CodeFamily = keyof typeof CODES;

export interface ScriptWire {
  /** KEYS after PASSED_BASE_KEYS. */
  readonly keys: readonly string[];
  /** ARGV after BASE_ARGS. */
  readonly args: readonly string[];
  /** Arguments repeated per item after `args` (a batch). */
  readonly each?: readonly string[];
  /** The reply by name: the header's Returns line is describeReply(reply). */
  readonly reply: ReplyShape;
  readonly codes?: CodeFamily;
}

/**
 * A script's reply by name. Most replies are an array: `fields` first, in order, then one group
 * of `each` per item (job, bucket, worker) to the end. A reply of one value is `value`. Numbers
 * that are not set are -1 and text that is not set is empty, unless `note` says otherwise.
 * Scripts write replies through the generated prologue's `R.<field>` (1-based positions) and
 * `RE.<field>` (1-based within an item, R_EACH_SIZE elements per item, the first item at
 * R_EACH_FIRST); replies.ts reads them back by the same names.
 */
export interface ReplyShape {
  readonly fields?: readonly string[];
  readonly each?: readonly string[];
  readonly value?: string;
  /** What the names do not say (units are in the names: `_ms`). */
  readonly note?: string;
  /**
   * The flag argument that asks for the same array as one MessagePack bulk string (PACKED_REPLY);
   * without it the reply is the array.
   */
  readonly packedBy?: string;
}

/**
 * A packed reply: the reply's array as `cmsgpack.pack` writes it in the script, one bulk string.
 * A client asks for it with the script's `packedBy` flag = 1; the array is the same, element for
 * element. Why: a client reads one string, not an element per value (the claim's five a job),
 * which in ioredis cost the worker more than the rest of a hand-out (msgpack-reply.ts).
 */
export const PACKED_REPLY =
  "the reply's array as one MessagePack bulk string (Redis's cmsgpack.pack): an array (fixarray, array16 or array32) of strings (fixstr, str8, str16 or str32, the bytes as stored) and whole numbers (fixint, uint8-64, int8-64); a number that is not whole comes as float64 and reads cut toward zero, as Redis makes it an integer in the array form";

/** The Returns line of a script's header: the reply's names, then its note. */
export function describeReply(r: ReplyShape): string {
  let text: string;
  if (r.value !== undefined) text = r.value;
  else {
    const parts = [...(r.fields ?? [])];
    if (r.each) parts.push(`then per item: ${r.each.join(', ')}`);
    text = `{ ${parts.join(', ')} }`;
  }
  if (r.packedBy) text += ` (with ${r.packedBy} = 1 the same array as one MessagePack string: PACKED_REPLY)`;
  return r.note ? `${text}; ${r.note}` : text;
}

/**
 * One job as a claim hands it out (claim's reply, per item): the token is `<token_prefix><token
 * number>`, the body the stored JOB_BODY. Measured against one concatenated string per job: the
 * hand-out loop went from 3.9 to 1.8 µs of Redis time per job with this and the other claim
 * changes (Lua builds no string per job), and Node gains little from one string (the body is
 * one string either way).
 */
export const CLAIM_JOB = ['id', 'body', 'attempt', 'due_ms', 'token_number'] as const;
/**
 * The groups of a claim's jobs, in one reply field rather than an element per job (a queue with
 * no groups pays nothing per job): `<position of the job in the reply, from 1>\t<group id>\n` for
 * each job that has a group. Group ids hold no control character, so neither tab nor newline.
 */
export const CLAIM_GROUPS = '<job position in the reply, from 1>\t<group>\n…';
/**
 * One job in a get or list reply: the internal place or empty, the score (lease deadline, death
 * or finish time; -1 when none), the body, RUN_STATE, the due time, result, progress, log lines
 * as a JSON array, ERROR_HISTORY, the group id, each empty when absent (logs and error history
 * only when asked: get, not list).
 */
export const JOB_ROW = ['id', 'state', 'score', 'body', 'run', 'due_ms', 'result', 'progress', 'logs', 'errors', 'group'] as const;
/**
 * A job's packed body, the value of its field in the `jobs` hash: written by add, never changed.
 *   `<seq>:<created ms>:<priority>:<max attempts or empty>[/<timeout ms>]:<backoff length>:<trace length>[/<name length>]:<backoff><trace><name><data>`
 * The timeout (whole ms, at least 1) is there only for a job with one of its own (`add({
 * timeoutMs })`). The name's length (bytes of UTF-8, at least 1) and the name are there only for a named job
 * (`add({ name })`): a body without a name is written exactly as before names existed, so a body
 * an older version wrote reads as a job without a name, and an older worker still reads every
 * job without one. Lengths count bytes; backoff and trace are ASCII, the name any text without
 * control characters (the id rule).
 */
export const JOB_BODY =
  '<seq>:<created ms>:<priority>:<max attempts or empty>[/<timeout ms>]:<backoff length>:<trace length>[/<name length>]:<backoff><trace><name><data>';
/**
 * A packed add's `data` (add.lua `item_fields` 'packed'): the job's JOB_BODY from its priority
 * on, which the script writes after `<seq>:<created ms>:`. Numbers as plain whole numbers (no
 * leading zeros), each within its argument's rule (priority, max_attempts, timeout_ms); the name
 * length is 1 to 4 digits and the name keeps the id rule; lengths count bytes.
 */
export const PACKED_TAIL = '<priority>:<max attempts or empty>[/<timeout ms>]:<backoff length>:<trace length>[/<name length>]:<backoff><trace><name><data>';
/**
 * A job's run state, the value of its field in the `runs` hash, present once the job first left
 * the scheduled set (handed out, or promoted to ready):
 *   `<attempts>:<due ms of that run>:<token>:<first started ms or empty>:<worker id or empty>:<last error>`
 * where the token is the lease token, '-'..token once given up, '~'..token once recovered,
 * '+'..token once completed and kept, '!'..token once ended from outside its holder (Queue.fail), or empty; the worker is the last lease holder's id. Or the
 * short form `<due ms>` for a job promoted to ready that never ran. A job that went dead out of
 * attempts (fail, fail-now, a lease a claim recovered) has `/<max attempts>` after its attempts:
 * the max that applied, its own or the worker's default (`default_max`); a run state without it
 * reads as before.
 */
export const RUN_STATE = '<attempts>[/<max attempts>]:<due ms>:<token>:<started ms>:<worker>:<last error>';
/**
 * A member of the `scheduled` set (score: the due time in ms). On a queue whose meta says
 * `ordered` ('1' while migrate converts it, '2' once done; a queue made by this version starts at
 * '2') it is `\x01`, then one character 48 + n (n: how many digits the job's seq has, from its
 * body), then the seq, then the id: members of one due time then sort in add order, so a claim on
 * a queue without priorities hands out in the set's order, with no ready set. Otherwise it is the
 * id alone, as every version before wrote it; reads take either form (the leading `\x01` tells
 * them apart: an id holds no control character). Written in _helpers.lua (SCHED.member); read
 * outside Lua with zset-order.ts (scheduledMemberId).
 */
export const SCHEDULED_MEMBER = '\x01<chr(48 + length of seq)><seq><id>, or <id>';

/**
 * A job's failed attempts, the value of its field in the `errors` hash: a JSON array, oldest
 * first, of at most ERROR_HISTORY_LENGTH (store.ts) entries, each written by fail.lua as
 *   `{"attempt":<n>,"atMs":<ms>,"error":<the error text as a JSON string>}`
 * (whole numbers, keys in this order). A value that does not parse so is started afresh by the
 * next fail and shown as absent by get.
 */
export const ERROR_HISTORY = '[{"attempt":<n>,"atMs":<ms>,"error":"<text>"}, …]';
/**
 * A group's state, the value of its field in the `groups` hash:
 *   `<running>:<waiting>:<limit or empty>:<1 when paused, else empty>[:<rate max>/<rate window ms>]`
 * running = its jobs in `active`, waiting = its due jobs in `waiting` (its line), limit = its own
 * concurrency (empty: the queue's groupConcurrency), the optional fifth field its own rate limit
 * (absent or empty: the queue's groupRateLimit). A group with nothing running or waiting, no
 * limit, no rate limit and no pause has no field.
 */
export const GROUP_STATE = '<running>:<waiting>:<limit>:<paused>[:<rate max>/<rate per ms>]';
/**
 * A job's flow extras, the value of its field in the `flow-of` hash (only for a job with a cost
 * above 1 or a debounce key): `<cost or empty for 1>:<debounce key or empty>`.
 */
export const JOB_FLOW = '<cost>:<debounce key>';
/**
 * A rate limiter's state, the value of its field in the `rate` hash ('' for the queue's, a group
 * id for a group's): `<tokens taken in the window>:<held until ms or empty>`. The limits
 * themselves live in meta (rateMax, ratePer, groupRateMax, groupRatePer) and in GROUP_STATE (a
 * group's own). A limiter with nothing taken and no hold has no field. Each claim that takes
 * tokens logs them in `rate-log` as `<limiter>\0<expiry ms, 16 digits>:<claim seq>:<taken at ms>:<tokens>`
 * (expiry = the claim's time + the window), and a later claim gives them back (subtracts them
 * here) once the expiry has passed: at most `max` tokens taken in any window.
 */
export const RATE_STATE = '<taken>:<held until>';
/** A worker's entry in the `worker-info` hash: `<last seen ms>:<WorkerInfo JSON>`. */
export const WORKER_ENTRY = '<last seen ms>:<info JSON>';
/**
 * The info JSON a worker sends with its heartbeat (worker-beat, extend), read back by `workers`
 * as WorkerInfo: every field shown by `queue.workers()`, `delayq workers` and the dashboard.
 */
export const WORKER_INFO =
  '{"host": <host name>, "pid": <process id>, "queue": <queue>, "concurrency": <slots>, "running": <jobs in flight>, "startedAtMs": <ms>, "version": <client version>, "language": "node" | "python" | …}';
/**
 * What the `wake` channel carries: a due time in ms ('0': now), 's' (schedules changed), 'L'
 * (the layout changed), and these two (a subscriber ignores any other message):
 * - REVOKED_MESSAGE: the lease of `token` was ended from outside its holder (a cancel of a
 *   running job, Queue.fail); why is `cancelled`, `failed` or `dead`. Its holder aborts the
 *   handler at once; every later call with the token answers lease lost.
 * - FINISHED_MESSAGE: a job someone waits for (watch.lua) ended: end is `completed` (payload
 *   its result JSON, '' for none), `dead` (its last error) or `cancelled` (the reason given).
 */
export const REVOKED_MESSAGE = 'r:<why>:<token>';
export const FINISHED_MESSAGE = 'f:<end>:<id length>:<id><payload>';

export const WIRE = {
  add: {
    keys: ['memo', 'schedule_last'],
    args: ['schedule', 'occurrence', 'request_id', 'memo_ms', 'epoch', 'item_fields', 'packed'],
    each: [
      'id',
      'data',
      'delay_ms',
      'run_at',
      'priority',
      'max_attempts',
      'backoff',
      'replace',
      'dedup_key',
      'dedup_ms',
      'trace',
      'name',
      'timeout_ms',
      'group',
      'cost',
      'debounce_key',
      'debounce_ms',
      'debounce_max_ms',
      'debounce_first_ms',
      'attempts_made',
      'depends_on',
      'deadline_ms',
      'deadline_at',
      'on_child_failure',
    ],
    reply: {
      fields: ['made'],
      each: ['code', 'state', 'due_ms', 'holder'],
      packedBy: 'packed',
      note: "made is 1 when this add made the queue's keys (took the first sequence number of a life of the queue, take_seq), else 0; per job its CODE, public state (or finished), due time and holder: the dedup holder's id, or the burst job's id when debounced. A reply of one element is CODE.guard_refused (the schedule guard refused), CODE.moved (no guard given and the queue takes no add: a retired shard, meta moved; or not a live shard of the layout epoch given, meta epoch) or CODE.too_costly (a job's cost is above a rate limit's max; nothing was written)",
    },
    codes: 'add',
  },
  claim: {
    keys: ['memo'],
    args: ['count', 'lease_ms', 'default_max', 'promote_limit', 'reap_limit', 'request_id', 'worker', 'packed'],
    reply: {
      fields: ['now_ms', 'next_wake_ms', 'more', 'deadline_ms', 'token_prefix', 'groups', 'holds'],
      each: CLAIM_JOB,
      packedBy: 'packed',
      note: "more is 1 when due jobs are left; groups names the groups of the jobs that have one, as CLAIM_GROUPS ('' when none has); holds the holds of the jobs added with dependencies, as CLAIM_HOLDS ('' when none was); per job wire.ts CLAIM_JOB",
    },
  },
  complete: {
    keys: [],
    args: ['packed'],
    each: ['id', 'token', 'result'],
    reply: { each: ['code'], packedBy: 'packed' },
    codes: 'lease',
  },
  extend: {
    keys: ['workers', 'worker_info'],
    args: ['lease_ms', 'worker', 'info', 'ttl_ms'],
    each: ['id', 'token'],
    reply: { each: ['deadline_ms'], note: 'CODE.lease_lost or CODE.not_found instead of a deadline when the lease is not held' },
    codes: 'lease',
  },
  release: {
    keys: [],
    args: ['hold_ms'],
    each: ['id', 'token'],
    reply: { each: ['code'] },
    codes: 'lease',
  },
  fail: {
    keys: [],
    args: ['id', 'token', 'error', 'retry_ms', 'dead', 'default_max', 'history'],
    reply: { fields: ['code', 'due_ms'], note: 'due_ms of the retry' },
    codes: 'fail',
  },
  snooze: {
    keys: [],
    args: ['id', 'token', 'delay_ms', 'deadline'],
    reply: { fields: ['code', 'due_ms'] },
    codes: 'snooze',
  },
  cancel: {
    keys: ['memo'],
    args: ['request_id', 'memo_ms', 'running', 'reason'],
    each: ['id'],
    reply: { each: ['code', 'state'] },
    codes: 'change',
  },
  'fail-now': {
    keys: ['memo'],
    args: ['id', 'reason', 'dead', 'retry_ms', 'default_max', 'history', 'request_id', 'memo_ms'],
    reply: {
      fields: ['code', 'state', 'due_ms'],
      note: "state is the job's state before the call (refused: why; '' when not found); due_ms of the retry",
    },
    codes: 'failNow',
  },
  watch: {
    keys: [],
    args: ['wait_ms', 'expect'],
    each: ['id'],
    reply: {
      fields: ['now_ms'],
      each: ['state', 'payload'],
      note: "per id its state: 'waiting' (registered: its end is published on the wake channel as wire.ts FINISHED_MESSAGE until now + wait_ms), 'completed' (kept; payload its result JSON, '' for none), 'dead' (payload its last error) or '' (no such job: not added yet, cancelled, or completed and not kept; registered only with expect)",
    },
  },
  reschedule: {
    keys: ['memo'],
    args: ['id', 'delay_ms', 'run_at', 'request_id', 'memo_ms'],
    reply: { fields: ['code', 'state', 'due_ms'] },
    codes: 'change',
  },
  'wait-signal': {
    keys: [],
    args: ['id', 'token', 'name', 'timeout_ms'],
    reply: { fields: ['code', 'due_ms'], note: 'due_ms is when the job runs again when signalled (a signal was kept for it), -1 while it waits' },
    codes: 'waitSignal',
  },
  signal: {
    keys: ['memo'],
    args: ['id', 'name', 'data', 'request_id', 'memo_ms'],
    reply: {
      fields: ['code', 'state'],
      note: "state is the job's state before the call ('' when not found); refused: the job has ended (dead or completed), or its kept signals would pass SIGNALS_KEPT_BYTES",
    },
    codes: 'signal',
  },
  'child-results': {
    keys: [],
    args: ['id'],
    reply: {
      fields: ['found', 'hold', 'deadline_ms'],
      each: ['dependency', 'outcome'],
      note: "found is 0 when the job has no hold (never added with dependencies nor waited for a signal, or gone); hold is its HOLD_STATE; deadline_ms its deadline while it is held (-1: none, or not held); per dependency, in the order it was given, its CHILD_OUTCOME ('' while it has not ended)",
    },
  },
  get: {
    keys: [],
    args: ['logs'],
    each: ['id'],
    reply: { fields: ['now_ms'], each: JOB_ROW, note: 'per job wire.ts JOB_ROW' },
  },
  list: {
    keys: [],
    args: ['state', 'phase', 'score', 'member', 'limit', 'order'],
    reply: {
      fields: ['now_ms', 'total', 'next_phase', 'next_score', 'next_member'],
      each: JOB_ROW,
      note: 'next_phase is empty on the last page; per job wire.ts JOB_ROW',
    },
  },
  stats: {
    keys: ['workers'],
    args: ['window_ms'],
    reply: {
      fields: [
        'now_ms',
        'not_promoted',
        'ready',
        'due_in_scheduled',
        'active',
        'dead',
        'earliest_due_ms',
        'due_within_window',
        'paused',
        'stream_length',
        'completed_total',
        'earliest_ready_due_ms',
        'kept_completed',
        'live_workers',
        'earliest_waiting_due_ms',
        'concurrency',
        'rate_max',
        'rate_used',
        'rate_held_until_ms',
        'rate_next_refill_ms',
        'groups_rate_held',
        'groups_read',
        'groups_complete',
        'groups_paused',
        'paused_waiting',
        'groups_at_limit',
        'at_limit_waiting',
        'held',
      ],
      note: "held counts the jobs held for other jobs (docs/flows.md); paused is 1 or 0; stream_length is -1 when the stream is off; earliest_waiting_due_ms is -1 when no group has jobs in its line; concurrency and rate_max are -1 when the queue has no such limit; rate_used counts the tokens of the queue's limiter still in their window, rate_held_until_ms is when a RateLimitSignal's hold ends and rate_next_refill_ms when the oldest token comes back (-1: none); groups_rate_held counts the groups waiting for their rate limiter; the group figures are summed over the first groups_read group states (groups_complete 1 when that is all of them)",
    },
  },
  timeline: {
    keys: [],
    args: ['from', 'bucket_ms', 'buckets'],
    reply: { fields: ['now_ms', 'from_ms'], each: ['due'], note: 'per bucket the scheduled jobs due in it after now' },
  },
  update: {
    keys: [],
    args: ['id', 'token', 'progress', 'log_cap'],
    each: ['line'],
    reply: { value: 'code' },
    codes: 'lease',
  },
  'worker-beat': {
    keys: ['workers', 'worker_info'],
    args: ['worker', 'info', 'ttl_ms'],
    reply: { value: 'now_ms' },
  },
  workers: {
    keys: ['workers', 'worker_info'],
    args: ['limit'],
    reply: { fields: ['now_ms'], each: ['id', 'expires_ms', 'entry'], note: 'per live worker; entry is WORKER_ENTRY' },
  },
  drain: {
    keys: [],
    args: ['due_before', 'limit', 'ready_rank', 'waiting_rank'],
    reply: { fields: ['removed', 'next_ready_rank', 'next_waiting_rank', 'more'], note: 'more is 1 when more may be left' },
  },
  obliterate: {
    keys: ['workers', 'worker_info', 'schedules', 'schedule_last'],
    args: ['force', 'epoch'],
    reply: { fields: ['code', 'scheduled', 'active', 'dead', 'completed', 'bodies'], note: 'the counts before' },
    codes: 'change',
  },
  'dead-list': {
    keys: [],
    args: ['offset', 'limit'],
    reply: { fields: ['total'], each: ['id', 'died_ms', 'body', 'run'], note: 'run is RUN_STATE' },
  },
  'dead-retry': {
    keys: [],
    args: ['mode', 'limit'],
    each: ['id'],
    reply: { value: 'retried', note: 'the number of jobs retried' },
  },
  purge: {
    keys: [],
    args: ['set', 'mode', 'limit', 'age_ms'],
    each: ['id'],
    reply: { value: 'deleted', note: 'the number of jobs deleted' },
  },
  'set-meta': {
    keys: [],
    args: ['what', 'value'],
    reply: { value: 'changed', note: '1 when the setting changed, 0 when it had that value' },
  },
  migrate: {
    keys: [],
    args: ['count'],
    reply: {
      fields: ['converted', 'done'],
      note: "converted is how many scheduled members this call wrote in the form that keeps add order (SCHEDULED_MEMBER), plus 1 when it took the mark `prioritized` off (below: an entry rewritten, so that an operator is not told there was nothing to do); done is 1 once every member has it (meta ordered = '2') and, on a queue marked prioritized, the check for a job with a priority (below) has ended",
    },
  },
  layout: {
    keys: [],
    args: ['expected', 'next', 'epoch'],
    reply: { value: 'set', note: '1 when the layout was set, 0 when the stored one was not `expected`' },
  },
  limits: {
    keys: [],
    args: ['group', 'concurrency', 'group_concurrency', 'paused', 'rate_max', 'rate_per', 'group_rate_max', 'group_rate_per', 'cursor'],
    reply: {
      fields: ['changed', 'cursor'],
      note: "changed is 1 when a setting changed; cursor is where the sweep of the groups goes on ('0' when it is over, '' when none was asked for or started)",
    },
  },
  groups: {
    keys: [],
    args: ['cursor', 'count'],
    each: ['id'],
    reply: {
      fields: [
        'now_ms',
        'cursor',
        'concurrency',
        'group_concurrency',
        'rate_max',
        'rate_per',
        'group_rate_max',
        'group_rate_per',
        'rate',
        'next_refill_ms',
        'groups_held',
      ],
      each: ['id', 'state', 'rate', 'next_refill_ms'],
      note: "cursor is '0' when a listing is over, '' when none was asked for; limits are -1 when not set; rate and next_refill_ms are the queue's RATE_STATE ('' when none) and when its oldest token taken comes back (-1: none taken); groups_held counts the groups waiting in rate-wake (for a refill, a hold's end, or tokens to give back); per group its GROUP_STATE and RATE_STATE, each '' when it has none, and when its oldest token comes back",
    },
  },
  'schedule-set': {
    keys: ['schedules', 'schedule_last'],
    args: ['name', 'definition'],
    reply: { value: 'changed', note: '1 when something changed, else 0' },
  },
} as const satisfies Record<string, ScriptWire>;

/**
 * What each script argument and item field takes, by name (a name means the same in every script,
 * unless `<script>.<name>` says otherwise). Every script checks every argument against its rule
 * before anything else runs: its own arguments as it enters (luaArgChecks, the script's
 * check_args), item fields where the script reads them, in one pass over its items before its
 * first write (add: each_int, each_valid). A value outside the rule fails the call with
 * `delayq: argument <name>[ of item <n>] <why>, got <value>` and writes nothing (Redis keeps a
 * script's writes made before an error, so nothing may be checked later).
 *   int:   a whole number of decimal digits (Lua's tonumber also takes 'nan', 'inf', '0x1A',
 *          ' 1', '1e3': all refused) from min to max; the bounds of add's fields are the Node
 *          library's (limits.ts), so a foreign producer is refused what a Queue refuses.
 *   flag:  '0' or '1'.   oneOf: one of the values.   digits: a SCAN-like cursor.
 *   id:    1-256 characters (UTF-16 units, as JavaScript counts them), no control characters.
 *   text:  anything (`why` says why no value is wrong: an unknown id or token answers not_found
 *          or lease_lost, a payload that does not parse is buried by the worker with the reason).
 * `unset: true`: '' is allowed (the argument's notSet in the manifest).
 */
export type ArgRule =
  | { readonly int: readonly [number, number]; readonly unset?: true; readonly low?: string }
  | { readonly flag: true; readonly unset?: true }
  | { readonly oneOf: readonly string[]; readonly unset?: true }
  | { readonly digits: true; readonly unset?: true }
  | { readonly id: true; readonly unset?: true }
  | { readonly text: string };

const ms = (min: number, unset?: true): ArgRule => (unset ? { int: [min, MAX_DELAY_MS], unset } : { int: [min, MAX_DELAY_MS] });
const epochMs = { int: [0, MAX_EPOCH_MS], unset: true } as const;
/** Ranks, offsets and ages: any whole number Lua holds exactly (as_int: 16 digits). */
const BIG = 999_999_999_999_999;

export const ARG_RULES: Record<string, ArgRule> = {
  root: { text: "the queue's key root; the KEYS are built from the same prefix and queue" },
  wake: { text: "the queue's wake channel" },
  schedule: { text: "a schedule's name ('': none)" },
  occurrence: epochMs,
  request_id: { text: "any text unique to the call ('': none)" },
  memo_ms: ms(1, true),
  epoch: { text: "a layout epoch, compared with the shard's ('': unsharded)" },
  item_fields: { oneOf: ['base', 'controls', 'holds', 'packed'] },
  'wait-signal.name': { id: true },
  'signal.name': { id: true },
  'wait-signal.timeout_ms': ms(1, true),
  'signal.data': { text: "the signal's data as JSON text ('' for none), at most SIGNAL_DATA_BYTES; a handler JSON.parse's it" },
  depends_on: { text: "ids separated by tabs ('': none); each is checked as add.id" },
  deadline_ms: ms(0, true),
  deadline_at: epochMs,
  on_child_failure: { oneOf: ['fail', 'ignore'], unset: true },
  id: { text: 'an id no job has answers not_found (add checks its ids: add.id)' },
  'add.id': { id: true },
  data: { text: 'JSON text; a payload that does not parse is moved to the dead set by the worker, with the reason' },
  delay_ms: ms(0, true),
  run_at: {
    int: [MIN_RUN_AT_MS, MAX_RUN_AT_MS],
    unset: true,
    low: `must be epoch milliseconds, not seconds: before 2001 (${MIN_RUN_AT_MS})`,
  },
  priority: { int: [-MAX_PRIORITY, MAX_PRIORITY] },
  max_attempts: { int: [1, MAX_ATTEMPTS], unset: true },
  backoff: { text: "formats.BACKOFF; one that does not read is the worker's default" },
  replace: { flag: true },
  dedup_key: { id: true, unset: true },
  dedup_ms: ms(1, true),
  trace: { text: 'a trace carrier; one that does not read starts no span' },
  'add.name': { id: true, unset: true },
  timeout_ms: ms(1, true),
  running: { flag: true, unset: true },
  reason: { text: "kept as it is (the job's last error, or the cancel event's reason)" },
  wait_ms: ms(0),
  expect: { flag: true },
  group: { id: true, unset: true },
  cost: { int: [1, MAX_RATE_TOKENS], unset: true },
  debounce_key: { id: true, unset: true },
  debounce_ms: ms(0, true),
  debounce_max_ms: ms(1, true),
  debounce_first_ms: epochMs,
  attempts_made: { int: [0, MAX_ATTEMPTS - 1], unset: true },
  hold_ms: { int: [0, MAX_RATE_WINDOW_MS] },
  rate_max: { int: [0, MAX_RATE_TOKENS], unset: true },
  rate_per: { int: [0, MAX_RATE_WINDOW_MS], unset: true },
  group_rate_max: { int: [0, MAX_RATE_TOKENS], unset: true },
  group_rate_per: { int: [0, MAX_RATE_WINDOW_MS], unset: true },
  count: { int: [0, MAX_BATCH] },
  'migrate.count': { int: [1, MAX_BATCH] },
  lease_ms: ms(1),
  default_max: { int: [1, MAX_ATTEMPTS] },
  promote_limit: { int: [0, 1_000_000] },
  reap_limit: { int: [0, 1_000_000] },
  worker: { text: "a worker's id ('': none)" },
  packed: { flag: true, unset: true },
  token: { text: 'a token that is not the lease answers lease_lost' },
  result: { text: 'JSON text, kept as it is' },
  info: { text: "a worker's WorkerInfo JSON, kept as it is" },
  ttl_ms: ms(0),
  error: { text: 'kept as it is' },
  retry_ms: ms(0),
  dead: { flag: true },
  history: { int: [0, 1000] },
  deadline: epochMs,
  logs: { flag: true },
  state: { oneOf: ['scheduled', 'ready', 'active', 'dead', 'completed'] },
  phase: { text: "a listing cursor's set ('' to start)" },
  score: { text: "a listing cursor's score" },
  member: { text: "a listing cursor's member" },
  limit: { int: [0, 1_000_000] },
  order: { oneOf: ['asc', 'desc'] },
  window_ms: { int: [0, MAX_EPOCH_MS] },
  from: epochMs,
  bucket_ms: { int: [1, 86_400_000] },
  buckets: { int: [1, 1440] },
  progress: { text: 'JSON text, kept as it is' },
  log_cap: { int: [0, 10_000] },
  line: { text: 'kept as it is' },
  due_before: epochMs,
  ready_rank: { int: [0, BIG] },
  waiting_rank: { int: [0, BIG] },
  force: { flag: true },
  offset: { int: [0, BIG] },
  'dead-retry.mode': { oneOf: ['ids', 'all'] },
  'purge.mode': { oneOf: ['ids', 'all', 'older'] },
  set: { oneOf: ['dead', 'completed'] },
  age_ms: { int: [0, BIG] },
  what: { oneOf: ['paused', 'events', 'dead', 'done', 'moved', 'shard'] },
  value: { text: 'checked by set-meta for its setting' },
  expected: { text: "the layout the caller read ('': none)" },
  next: { text: 'the layout to store' },
  concurrency: { int: [0, MAX_CONCURRENCY], unset: true },
  group_concurrency: { int: [0, MAX_CONCURRENCY], unset: true },
  paused: { flag: true, unset: true },
  cursor: { digits: true, unset: true },
  'groups.cursor': { text: "'' or '0' or a cursor groups answered (k<id> or s<n>); another fails the call (the script only reads)" },
  name: { text: "a schedule's name" },
  definition: { text: "a schedule's definition JSON ('': remove it)" },
};

/** The rule of a script's argument or item field. */
export function argRule(script: ScriptName, name: string): ArgRule {
  const rule = ARG_RULES[`${script}.${name}`] ?? ARG_RULES[name];
  if (!rule) throw new Error(`wire.ts: no ARG_RULES entry for ${script} ${name}`);
  return rule;
}

export type ScriptName = keyof typeof WIRE;
export const SCRIPT_NAMES = Object.keys(WIRE) as ScriptName[];

type ArgsOf<N extends ScriptName> = (typeof WIRE)[N]['args'][number];
type KeysOf<N extends ScriptName> = (typeof WIRE)[N]['keys'][number];
type EachOf<N extends ScriptName> = (typeof WIRE)[N] extends { each: readonly (infer E)[] } ? E & string : never;
type Value = string | number;
/** A script's own arguments, its own keys, and one of its items, by name. */
export type ScriptArgs<N extends ScriptName> = Record<ArgsOf<N>, Value>;
export type ScriptKeys<N extends ScriptName> = Record<KeysOf<N>, string>;
export type ScriptItem<N extends ScriptName> = Record<EachOf<N>, Value>;

export interface EncodedCall {
  keys: string[];
  args: Value[];
}

/**
 * KEYS and ARGV of one call, in the order WIRE gives: `base` are the queue's PASSED_BASE_KEYS and
 * BASE_ARGS values, `keys` and `args` name the script's own, `items` are the per-item rows.
 * (add, extend, release and complete append their rows themselves, with no item objects.)
 */
export function encodeCall<N extends ScriptName>(
  name: N,
  base: { base: readonly string[]; baseArgs: readonly Value[] },
  keys: ScriptKeys<N>,
  args: ScriptArgs<N>,
  items?: readonly ScriptItem<N>[],
): EncodedCall {
  const w: ScriptWire = WIRE[name];
  const outKeys = [...base.base];
  for (const k of w.keys) outKeys.push((keys as Record<string, string>)[k]!);
  const outArgs: Value[] = [...base.baseArgs];
  for (const a of w.args) outArgs.push((args as Record<string, Value>)[a]!);
  if (items && w.each) {
    for (const item of items) for (const e of w.each) outArgs.push((item as Record<string, Value>)[e]!);
  }
  return { keys: outKeys, args: outArgs };
}

/**
 * Flat per-item rows for the scripts whose items are `id, token` (complete, extend, release: the
 * hot path skips the item objects; the wire-headers test holds their EACH to this order).
 */
export function leaseArgs(leases: readonly { id: string; token: string }[]): string[] {
  const out: string[] = [];
  for (const l of leases) out.push(l.id, l.token);
  return out;
}

function luaName(prefix: string, name: string): string {
  return prefix + name.toUpperCase().replace(/-/g, '_');
}

/**
 * The names every script builds from ROOT, as [Lua name, what follows the root]: the base keys
 * not passed in KEYS (DERIVED_BASE_KEYS), then the dedup keys' prefix, waiting-due and history.
 * The EVAL prologue builds them on each call; the Functions library once per root (scripts.ts).
 */
export const ROOT_NAMES: readonly (readonly [string, string])[] = [
  ...DERIVED_BASE_KEYS.map((k) => [luaName('K_', k), k] as const),
  ['DEDUP_PREFIX', DEDUP_SUFFIX],
  ['K_WAITING_DUE', WAITING_DUE_SUFFIX],
  ['K_RANKED', RANKED_SUFFIX],
  ['K_HISTORY', HISTORY_SUFFIX],
];

/**
 * The Lua locals a script reads its KEYS and ARGV through, generated from WIRE:
 * `K_<KEY>` for every key, `A.<arg>` = the ARGV index of each argument, `EACH_FIRST`,
 * `EACH_SIZE` and `E.<name>` (offset within an item) for batched scripts, `CODE`, the
 * sequence counter's SEQ_LIFE and SEQ_FLOOR_TTL_MS, and the lifecycle's PLACE, EVENT, MARK and LIMIT.
 */
export function luaPrologue(name: ScriptName): string {
  const p = luaWireParts(name);
  const lines = [`local ${p.keys.join(', ')} = ${p.keys.map((_, i) => `KEYS[${i + 1}]`).join(', ')}`];
  lines.push(`local ROOT, WAKE_CHANNEL = ARGV[1], ARGV[2]`);
  lines.push(ROOT_CHECK);
  lines.push(`local ${ROOT_NAMES.map(([local]) => local).join(', ')} = ${ROOT_NAMES.map(([, key]) => `ROOT .. '${key}'`).join(', ')}`);
  for (const [local, value] of p.tables) lines.push(`local ${local} = ${value}`);
  lines.push(LUA_CONSTANTS);
  // A client whose lists are not this script's (another protocol version) fails loudly here,
  // before anything is read or written, instead of having its arguments misread.
  lines.push(`if #KEYS ~= ${p.keys.length} then error('delayq protocol: ${name} takes ${p.keys.length} KEYS, got ' .. #KEYS) end`);
  if (p.argCount !== undefined) lines.push(`if #ARGV ~= ${p.argCount} then error('delayq protocol: ${name} takes ${p.argCount} ARGV, got ' .. #ARGV) end`);
  lines.push(LIFECYCLE_LINES);
  return `${lines.join('\n')}\n`;
}

/**
 * A script's wire as Lua, in parts: its KEYS as local names (`K_<KEY>`, PASSED_BASE_KEYS first), the
 * per-script tables the helpers read (`A`: argument name -> ARGV position; `E`: item field ->
 * offset; `CODE`; `R`/`RE`: reply positions; `RULE`: argument rules) as [name, Lua expression]
 * pairs, and the ARGV count when the script takes no items. The EVAL prologue (luaPrologue)
 * makes them locals of the script; the Functions library (scripts.ts) makes them once per load
 * and points the shared upvalues at them as a call enters.
 */
export function luaWireParts(name: ScriptName): { keys: string[]; tables: [string, string][]; argCount: number | undefined } {
  const w: ScriptWire = WIRE[name];
  const keys = [...PASSED_BASE_KEYS, ...w.keys].map((k) => luaName('K_', k));
  const args = w.args.map((a, i) => `${a} = ${BASE_ARGS.length + i + 1}`);
  const first = BASE_ARGS.length + w.args.length + 1;
  const each = w.each ?? [];
  const codes = w.codes ? CODES[w.codes] : {};
  const r: ReplyShape = w.reply;
  const fields = r.fields ?? [];
  const tables: [string, string][] = [
    ['A', `{ ${args.join(', ')} }`],
    ['EACH_FIRST', String(first)],
    ['EACH_SIZE', String(each.length)],
    ['E', `{ ${each.map((e, i) => `${e} = ${i}`).join(', ')} }`],
    [
      'CODE',
      `{ ${Object.entries(codes)
        .map(([k, v]) => `${k} = ${v}`)
        .join(', ')} }`,
    ],
    ['R', `{ ${fields.map((f, i) => `${f} = ${i + 1}`).join(', ')} }`],
    ['R_EACH_FIRST', String(fields.length + 1)],
    ['R_EACH_SIZE', String(r.each?.length ?? 0)],
    ['RE', `{ ${(r.each ?? []).map((f, i) => `${f} = ${i + 1}`).join(', ')} }`],
    ['RULE', `{ ${[...w.args, ...each].flatMap((a) => luaRule(name, a)).join(', ')} }`],
    ['reply', luaReply(fields)],
  ];
  return { keys, tables, argCount: each.length === 0 ? first - 1 : undefined };
}

/**
 * A script's `check_args()`: each of its own arguments against its rule (ARG_RULES), written out
 * per script, as its call enters and before anything is read or written. A whole number is read
 * by `arg_as_int` (a look-up for the texts a worker sends on every call) and its bounds are
 * constants here; the other kinds go through _helpers.lua's `check`, as item fields do. The
 * numbers read go to ARG_INTS for `arg_int`. A function text, made where the helpers it calls
 * are in scope: after them in an EVAL script, in its function's block in the library. Written
 * out rather than a pass over A and RULE (a table walk, a call and four look-ups an argument):
 * a claim's nine arguments cost ~23k Redis instructions that way.
 */
export function luaArgChecks(name: ScriptName): string {
  const q = (v: string) => `'${v.replace(/[\\']/g, '\\$&')}'`;
  const lines = ['function()', 'local ints = {}'];
  (WIRE[name].args as readonly string[]).forEach((a, i) => {
    const r = argRule(name, a);
    const at = BASE_ARGS.length + i + 1;
    if (!('int' in r)) {
      if ('oneOf' in r || 'flag' in r || 'digits' in r || 'id' in r) lines.push(`check('${a}', ARGV[${at}], nil)`);
      return;
    }
    const [min, max] = r.int;
    const low = r.low ?? (min === 0 ? 'must not be negative' : `must be at least ${min}`);
    const unset = 'unset' in r && r.unset;
    lines.push(
      `do local v = ARGV[${at}]`,
      unset ? "if v ~= '' then" : 'do',
      'local n = arg_as_int(v)',
      `if n == nil then refuse('${a}', nil, 'must be a whole number', v) end`,
      `if n < ${min} then refuse('${a}', nil, ${q(low)}, v) end`,
      `if n > ${max} then refuse('${a}', nil, 'must be at most ${max}', v) end`,
      `ints.${a} = n`,
      'end end',
    );
  });
  lines.push('ARG_INTS = ints', 'end');
  return lines.join('\n');
}

/**
 * A script's `reply(named)`: its reply's fixed fields (ReplyShape.fields) from a table by name,
 * in their positions; a field not given fails the script, so a reply never goes out short of one.
 * Written out per script, not a loop over R: the loop (pairs, a look-up and a store per field)
 * cost ~20k Redis instructions a call, this ~1.5k.
 */
function luaReply(fields: readonly string[]): string {
  if (fields.length === 0) return 'function() return {} end';
  const v = fields.map((_, i) => `v${i + 1}`);
  const names = fields.map((f) => `'${f}'`);
  return [
    'function(named)',
    `local ${v.join(', ')} = ${names.map((f) => `named[${f}]`).join(', ')}`,
    `if ${v.map((x) => `${x} == nil`).join(' or ')} then`,
    `for _, f in ipairs({ ${names.join(', ')} }) do if named[f] == nil then error('delayq: reply field ' .. f .. ' is not set') end end`,
    'end',
    `return { ${v.join(', ')} }`,
    'end',
  ].join(' ');
}

/**
 * The one field of the `jobs` and `runs` hashes that is no job: its value is longer than Redis's
 * `hash-max-listpack-value` (64 by default), so a hash holding it is a hashtable from its first
 * write and stays one. Redis keeps a hash of at most `hash-max-listpack-entries` (512) short
 * values as a listpack, where every HGET, HSET and HDEL reads the fields one by one: with a few
 * hundred jobs running, those scans of `runs` were 35% of a dispatched job's Redis instructions
 * (callgrind), and a small queue's `jobs` paid the same on every claim. A job id holds no control
 * character, so the field's name is no job's. Readers that walk the hashes skip it.
 */
export const HASHTABLE_FIELD = '\x01hashtable';
export const HASHTABLE_VALUE = 'a field that keeps this hash a hashtable (see delayq docs/data-model.md)';

/**
 * The check that KEYS[1] is the queue's own (ROOT's `scheduled`): the other keys are built from
 * ROOT, so a caller that passed another queue's key (or no root) is refused before anything is
 * read or written, not left to touch keys in a slot the call was not routed by.
 */
export const ROOT_REFUSAL = `error('delayq protocol: KEYS[1] must be the queue key root (ARGV[1]) followed by scheduled')`;
export const ROOT_CHECK = `if type(ROOT) ~= 'string' or K_SCHEDULED ~= ROOT .. 'scheduled' then ${ROOT_REFUSAL} end`;

/** Names every script shares, whatever its wire: the sequence rules and the hashtable field. */
export const LUA_CONSTANTS = `local SEQ_LIFE, SEQ_FLOOR_TTL_MS = ${SEQ_LIFE}, ${SEQ_FLOOR_TTL_MS}\nlocal HT_FIELD, HT_VALUE = '\\1hashtable', '${HASHTABLE_VALUE}'`;

/**
 * An argument's rule (ARG_RULES) as the prologue's RULE entry, read by _helpers.lua check():
 * { kind, min, max, unset, why below min } for 'i', { kind, values as a set, unset } for 'o',
 * { kind, _, _, unset } for 'f' (flag), 'd' (digits) and 'n' (an id). Text takes anything: no entry.
 */
function luaRule(script: ScriptName, name: string): string[] {
  const r = argRule(script, name);
  const unset = 'unset' in r && r.unset ? 'true' : 'false';
  const q = (v: string) => `'${v.replace(/[\\']/g, '\\$&')}'`;
  if ('int' in r) return [`${name} = { 'i', ${r.int[0]}, ${r.int[1]}, ${unset}${r.low ? `, ${q(r.low)}` : ''} }`];
  if ('oneOf' in r) return [`${name} = { 'o', { ${r.oneOf.map((v) => `[${q(v)}] = true`).join(', ')} }, nil, ${unset} }`];
  if ('flag' in r) return [`${name} = { 'f', nil, nil, ${unset} }`];
  if ('digits' in r) return [`${name} = { 'd', nil, nil, ${unset} }`];
  if ('id' in r) return [`${name} = { 'n', nil, nil, ${unset} }`];
  return [];
}

/** The job lifecycle (lifecycle.ts) as Lua tables: PLACE.<place>, FINISH.<end>, EVENT.<event>, MARK.<mark>, LIMIT.<bound>. */
const luaTable = (entries: [string, string][]) => `{ ${entries.map(([k, v]) => `${k} = '${v}'`).join(', ')} }`;
export const LIFECYCLE_LINES = [
  `local HOLD_KEY = ${luaTable(Object.entries(HOLD_SUFFIXES))}`,
  `local PLACE = ${luaTable(PLACES.map((p) => [p, p]))}`,
  `local FINISH = ${luaTable(FINISHES.map((f) => [f, f]))}`,
  `local EVENT = ${luaTable(EVENTS.map((e) => [e, e]))}`,
  `local MARK = ${luaTable(Object.entries(MARK))}`,
  // The pattern of a run state's live token (not empty, not marked: _lifecycle.lua live_token),
  // made here: a Functions library's load runs with no `string` to make it.
  `local LIVE_TOKEN = '^[^:]*:[^:]*:([^:${Object.values(MARK)
    .map((m) => `%${m}`)
    .join('')}][^:]*):'`,
  `local LIMIT = { ${Object.entries(LIMIT)
    .map(([k, v]) => `${k} = ${v}`)
    .join(', ')} }`,
].join('\n');

/** Code -> name, per family: built once, as acks map one code per job. */
const NAMES = Object.fromEntries(
  Object.entries(CODES).map(([family, codes]) => [family, new Map(Object.entries(codes).map(([name, code]) => [code as number, name]))]),
) as Record<CodeFamily, Map<number, string>>;

/** Maps a reply code back to its name in the family; throws on a code the script never sends. */
export function codeName<F extends CodeFamily>(family: F, code: unknown): keyof (typeof CODES)[F] {
  const name = NAMES[family].get(code as number);
  if (name === undefined) throw new StoreError(`unexpected ${family} code from Redis: ${String(code)}`);
  return name as keyof (typeof CODES)[F];
}
