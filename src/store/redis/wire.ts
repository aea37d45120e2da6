/**
 * The wire format of every Lua script, written once: the names of its KEYS and ARGV in order,
 * the per-item arguments of batched scripts, its reply, and its return codes. The store builds
 * every call from these lists (`encodeCall`), scripts.ts turns them into named Lua locals at load
 * time (`luaPrologue`), so no script indexes KEYS or ARGV by number, and a test checks that each
 * `.lua` header states exactly these lists.
 */

import { EVENTS, MARK, PLACES } from '../lifecycle.js';
import { SEQ_FLOOR_TTL_MS, SEQ_LIFE } from '../store.js';

/** KEYS[1..14] of every script: the queue's own keys (see keys.ts for what each holds). */
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
] as const;
/** ARGV[1..2] of every script: the queue's key root (`<prefix>:{<queue>}:`) and its wake channel. */
export const BASE_ARGS = ['root', 'wake'] as const;

/** Return codes, by family. Lua sees them as `CODE.<name>`; the store maps them back here. */
export const CODES = {
  lease: { ok: 1, lease_lost: 0, not_found: -1 },
  add: { added: 1, exists: 0, replaced: 2, deduplicated: 3, guard_refused: -1, moved: -2 },
  fail: { retried: 1, dead: 2, lease_lost: 0, not_found: -1 },
  snooze: { snoozed: 1, dead: 2, lease_lost: 0, not_found: -1 },
  change: { done: 1, refused: 0, not_found: -1 },
} as const;
export type CodeFamily = keyof typeof CODES;

export interface ScriptWire {
  /** KEYS after BASE_KEYS. */
  readonly keys: readonly string[];
  /** ARGV after BASE_ARGS. */
  readonly args: readonly string[];
  /** Arguments repeated per item after `args` (a batch). */
  readonly each?: readonly string[];
  /** The reply, as the script's header states it. */
  readonly returns: string;
  readonly codes?: CodeFamily;
}

/**
 * One job as a claim hands it out: five reply elements, `id, body, attempt, due ms, token
 * number`; the token is `<token prefix><token number>`, the body the stored JOB_BODY. Measured
 * against one concatenated string per job: the hand-out loop went from 3.9 to 1.8 µs of Redis
 * time per job with this and the other claim changes (Lua builds no string per job), and Node
 * gains little from one string (the body is one string either way).
 */
export const CLAIM_JOB_FIELDS = 5;
/**
 * One job in a get or list reply, ten elements: `id, internal state or empty, score (lease
 * deadline, death or finish time; -1 when none), body or empty, RUN_STATE or empty, due ms or -1,
 * result or empty, progress or empty, log lines as a JSON array or empty, ERROR_HISTORY or empty`
 * (logs and error history only when asked: get, not list).
 */
export const JOB_ROW_FIELDS = 10;
/**
 * A job's packed body, the value of its field in the `jobs` hash: written by add, never changed.
 *   `<seq>:<created ms>:<priority>:<max attempts or empty>:<backoff length>:<trace length>:<backoff><trace><data>`
 */
export const JOB_BODY = '<seq>:<created ms>:<priority>:<max attempts or empty>:<backoff length>:<trace length>:<backoff><trace><data>';
/**
 * A job's run state, the value of its field in the `runs` hash, present once the job first left
 * the scheduled set (handed out, or promoted to ready):
 *   `<attempts>:<due ms of that run>:<token>:<first started ms or empty>:<worker id or empty>:<last error>`
 * where the token is the lease token, '-'..token once given up, '~'..token once recovered,
 * '+'..token once completed and kept, or empty; the worker is the last lease holder's id. Or the
 * short form `<due ms>` for a job promoted to ready that never ran.
 */
export const RUN_STATE = '<attempts>:<due ms>:<token>:<started ms>:<worker>:<last error>';
/**
 * A job's failed attempts, the value of its field in the `errors` hash: a JSON array, oldest
 * first, of at most ERROR_HISTORY_LENGTH (store.ts) entries, each written by fail.lua as
 *   `{"attempt":<n>,"atMs":<ms>,"error":<the error text as a JSON string>}`
 * (whole numbers, keys in this order). A value that does not parse so is started afresh by the
 * next fail and shown as absent by get.
 */
export const ERROR_HISTORY = '[{"attempt":<n>,"atMs":<ms>,"error":"<text>"}, …]';
/** A worker's entry in the `worker-info` hash: `<last seen ms>:<WorkerInfo JSON>`. */
export const WORKER_ENTRY = '<last seen ms>:<info JSON>';

export const WIRE = {
  add: {
    keys: ['memo'],
    args: ['schedule', 'occurrence', 'request_id', 'memo_ms', 'epoch'],
    each: ['id', 'data', 'delay_ms', 'run_at', 'priority', 'max_attempts', 'backoff', 'replace', 'dedup_key', 'dedup_ms', 'trace'],
    returns:
      "{ CODE.guard_refused } when the schedule guard refused; { CODE.moved } when no guard is given and the queue takes no add (a retired shard: meta moved; or not a live shard of the layout epoch given: meta epoch); else { 1 when this add made the queue's keys (took the first sequence number of a life of the queue, take_seq) else 0, then per job: code, public state, due ms, dedup holder id or empty }",
    codes: 'add',
  },
  claim: {
    keys: ['memo'],
    args: ['count', 'lease_ms', 'default_max', 'promote_limit', 'reap_limit', 'request_id', 'worker'],
    returns: '{ now ms, next wake ms or -1, more (1/0), lease deadline ms, token prefix, then per job: id, body, attempt, due ms, token number }',
  },
  complete: {
    keys: [],
    args: [],
    each: ['id', 'token', 'result'],
    returns: 'one CODE per job',
    codes: 'lease',
  },
  extend: {
    keys: ['workers', 'worker_info'],
    args: ['lease_ms', 'worker', 'info', 'ttl_ms'],
    each: ['id', 'token'],
    returns: 'per job: the new lease deadline ms, or CODE.lease_lost / CODE.not_found',
    codes: 'lease',
  },
  release: {
    keys: [],
    args: [],
    each: ['id', 'token'],
    returns: 'one CODE per job',
    codes: 'lease',
  },
  fail: {
    keys: [],
    args: ['id', 'token', 'error', 'retry_ms', 'dead', 'default_max', 'history'],
    returns: '{ CODE, due ms of the retry or -1 }',
    codes: 'fail',
  },
  snooze: {
    keys: [],
    args: ['id', 'token', 'delay_ms', 'deadline'],
    returns: '{ CODE, due ms or -1 }',
    codes: 'snooze',
  },
  cancel: {
    keys: ['memo'],
    args: ['request_id', 'memo_ms'],
    each: ['id'],
    returns: 'per job: CODE, state or empty',
    codes: 'change',
  },
  reschedule: {
    keys: ['memo'],
    args: ['id', 'delay_ms', 'run_at', 'request_id', 'memo_ms'],
    returns: '{ CODE, state, due ms or -1 }',
    codes: 'change',
  },
  get: {
    keys: [],
    args: ['logs'],
    each: ['id'],
    returns: '{ now ms, then per job: JOB_ROW }',
  },
  list: {
    keys: [],
    args: ['state', 'phase', 'score', 'member', 'limit', 'order'],
    returns: '{ now ms, total, next phase or empty, next score, next member, then per job: JOB_ROW }',
  },
  stats: {
    keys: ['workers'],
    args: ['window_ms'],
    returns:
      '{ now ms, scheduled not promoted, ready, due in scheduled, active, dead, earliest due ms or -1, due within window, paused 1/0, stream length or -1, completed total, earliest due ms in the ready set or -1, kept completed, live workers }',
  },
  timeline: {
    keys: [],
    args: ['from', 'bucket_ms', 'buckets'],
    returns: '{ now ms, from ms, then per bucket: scheduled jobs due in it after now }',
  },
  update: {
    keys: [],
    args: ['id', 'token', 'progress', 'log_cap'],
    each: ['line'],
    returns: 'CODE',
    codes: 'lease',
  },
  'worker-beat': {
    keys: ['workers', 'worker_info'],
    args: ['worker', 'info', 'ttl_ms'],
    returns: 'now ms',
  },
  workers: {
    keys: ['workers', 'worker_info'],
    args: ['limit'],
    returns: '{ now ms, then per live worker: id, expires at ms, WORKER_ENTRY }',
  },
  drain: {
    keys: [],
    args: ['due_before', 'limit', 'ready_rank'],
    returns: '{ jobs removed, next ready rank, 1 when more may be left else 0 }',
  },
  obliterate: {
    keys: ['workers', 'worker_info', 'schedules', 'schedule_last'],
    args: ['force', 'epoch'],
    returns: '{ CODE, scheduled, active, dead, completed, bodies } (counts before)',
    codes: 'change',
  },
  'dead-list': {
    keys: [],
    args: ['offset', 'limit'],
    returns: '{ total, then per job: id, died at ms, body or empty, RUN_STATE or empty }',
  },
  'dead-retry': {
    keys: [],
    args: ['mode', 'limit'],
    each: ['id'],
    returns: 'the number of jobs retried',
  },
  purge: {
    keys: [],
    args: ['set', 'mode', 'limit', 'age_ms'],
    each: ['id'],
    returns: 'the number of jobs deleted',
  },
  'set-meta': {
    keys: [],
    args: ['what', 'value'],
    returns: '1 when the setting changed, 0 when it had that value',
  },
  layout: {
    keys: [],
    args: ['expected', 'next', 'epoch'],
    returns: '1 when the layout was set, 0 when the stored one was not `expected`',
  },
  'schedule-set': {
    keys: [],
    args: ['name', 'definition'],
    returns: '1 when something changed, else 0',
  },
} as const satisfies Record<string, ScriptWire>;

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
 * KEYS and ARGV of one call, in the order WIRE gives: `base` are the queue's BASE_KEYS and
 * BASE_ARGS values, `keys` and `args` name the script's own, `items` are the per-item rows.
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
 * The Lua locals a script reads its KEYS and ARGV through, generated from WIRE:
 * `K_<KEY>` for every key, `A.<arg>` = the ARGV index of each argument, `EACH_FIRST`,
 * `EACH_SIZE` and `E.<name>` (offset within an item) for batched scripts, `CODE`, the
 * sequence counter's SEQ_LIFE and SEQ_FLOOR_TTL_MS, and the lifecycle's PLACE, EVENT and MARK.
 */
export function luaPrologue(name: ScriptName): string {
  const w: ScriptWire = WIRE[name];
  const keys = [...BASE_KEYS, ...w.keys];
  const lines = [`local ${keys.map((k) => luaName('K_', k)).join(', ')} = ${keys.map((_, i) => `KEYS[${i + 1}]`).join(', ')}`];
  lines.push(`local ROOT, WAKE_CHANNEL = ARGV[1], ARGV[2]`);
  const args = w.args.map((a, i) => `${a} = ${BASE_ARGS.length + i + 1}`);
  lines.push(`local A = { ${args.join(', ')} }`);
  const first = BASE_ARGS.length + w.args.length + 1;
  const each = w.each ?? [];
  lines.push(`local EACH_FIRST, EACH_SIZE = ${first}, ${each.length}`);
  lines.push(`local E = { ${each.map((e, i) => `${e} = ${i}`).join(', ')} }`);
  const codes = w.codes ? CODES[w.codes] : {};
  lines.push(
    `local CODE = { ${Object.entries(codes)
      .map(([k, v]) => `${k} = ${v}`)
      .join(', ')} }`,
  );
  lines.push(`local SEQ_LIFE, SEQ_FLOOR_TTL_MS = ${SEQ_LIFE}, ${SEQ_FLOOR_TTL_MS}`);
  lines.push(LIFECYCLE_LINES);
  return `${lines.join('\n')}\n`;
}

/** The job lifecycle's names (lifecycle.ts) as Lua tables: PLACE.<place>, EVENT.<event>, MARK.<mark>. */
const luaTable = (entries: [string, string][]) => `{ ${entries.map(([k, v]) => `${k} = '${v}'`).join(', ')} }`;
const LIFECYCLE_LINES = [
  `local PLACE = ${luaTable(PLACES.map((p) => [p, p]))}`,
  `local EVENT = ${luaTable(EVENTS.map((e) => [e, e]))}`,
  `local MARK = ${luaTable(Object.entries(MARK))}`,
].join('\n');

/** Code -> name, per family: built once, as acks map one code per job. */
const NAMES = Object.fromEntries(
  Object.entries(CODES).map(([family, codes]) => [family, new Map(Object.entries(codes).map(([name, code]) => [code as number, name]))]),
) as Record<CodeFamily, Map<number, string>>;

/** Maps a reply code back to its name in the family; throws on a code the script never sends. */
export function codeName<F extends CodeFamily>(family: F, code: unknown): keyof (typeof CODES)[F] {
  const name = NAMES[family].get(code as number);
  if (name === undefined) throw new Error(`unexpected ${family} code from Redis: ${String(code)}`);
  return name as keyof (typeof CODES)[F];
}
