/**
 * The published wire protocol: what a client in another language needs to run delayq's scripts
 * without this library (docs/protocol.md). Generated from wire.ts, keys.ts and lifecycle.ts, so it
 * cannot drift from what the library sends. `npm run build` writes protocol/scripts/<name>.lua
 * (scripts/protocol.js; not kept in git, shipped in the package); `npm run protocol` writes
 * protocol/manifest.json too, which is kept in git. test/unit/protocol.test.ts fails when either
 * is not what this module makes, test/package/consumers.test.ts when the packed scripts are not.
 */
import { VERSION } from '../../version.js';
import { EVENTS, LIMIT, MARK, PLACES, UNGROUPED_LANE } from '../lifecycle.js';
import { SEQ_FLOOR_TTL_MS, SEQ_LIFE } from '../store.js';
import { loadScriptSource } from './scripts.js';
import {
  type ArgRule,
  argRule,
  BASE_ARGS,
  BASE_KEYS,
  PASSED_BASE_KEYS,
  CLAIM_GROUPS,
  CLAIM_JOB,
  PACKED_REPLY,
  CODES,
  DEDUP_SUFFIX,
  WAITING_DUE_SUFFIX,
  RANKED_SUFFIX,
  HISTORY_SUFFIX,
  HISTORY_MINUTE,
  ERROR_HISTORY,
  GROUP_STATE,
  JOB_BODY,
  JOB_ROW,
  PACKED_TAIL,
  REVOKED_MESSAGE,
  FINISHED_MESSAGE,
  RUN_STATE,
  HASHTABLE_FIELD,
  type ReplyShape,
  SCHEDULED_MEMBER,
  SCRIPT_NAMES,
  type ScriptName,
  type ScriptWire,
  WIRE,
  WORKER_ENTRY,
  WORKER_INFO,
} from './wire.js';

/**
 * The protocol's version. It goes up when a script's KEYS, ARGV, items or reply change shape, or a
 * stored format changes meaning: a client built for another version must not run against this
 * one. Scripts refuse a call whose KEYS or ARGV do not have the count their wire gives (an error
 * beginning `delayq protocol:`), so a client whose lists are out of date fails loudly instead of
 * writing what the scripts would misread.
 */
export const PROTOCOL_VERSION = 8;

/** Where each key of a queue is: `<prefix>` (default `dq`), `<queue>` (a shard: `<queue>#<n>`). */
const ROOT = '<prefix>:{<queue>}:';
const KEY_TEMPLATES: Record<string, string> = {
  ...Object.fromEntries(BASE_KEYS.map((k) => [k, ROOT + k])),
  memo: `${ROOT}req:<request id> (any key of the queue when request_id is '')`,
  schedule_last: `${ROOT}schedule-last`,
  schedules: `${ROOT}schedules`,
  workers: `${ROOT}workers`,
  worker_info: `${ROOT}worker-info`,
};

type ArgType = 'integer' | 'text' | 'flag' | 'json' | 'id';
interface ArgDoc {
  type: ArgType;
  unit?: string;
  /** How "not set" is written, where it may be. */
  notSet?: string;
  doc: string;
}

/** Every script argument and item field by name (a name means the same in every script that takes it). */
const ARGS: Record<string, ArgDoc> = {
  root: { type: 'text', doc: `the queue's key root, ${ROOT}` },
  wake: { type: 'text', doc: `the queue's wake channel, ${ROOT}wake` },
  schedule: { type: 'text', notSet: "''", doc: 'a recurring schedule guarding the add (library only)' },
  occurrence: { type: 'integer', unit: 'epoch ms', notSet: "''", doc: "the schedule's occurrence (with schedule)" },
  request_id: {
    type: 'text',
    notSet: "''",
    doc: 'a unique id of this call, so a re-send after a lost reply answers as the first run did; memo is then <root>req:<request id>',
  },
  memo_ms: { type: 'integer', unit: 'ms', doc: 'how long the answer is remembered for a re-send (60000 by the library)' },
  epoch: { type: 'text', notSet: "''", doc: "the shard layout's epoch the add was routed by ('' for an unsharded queue)" },
  item_fields: {
    type: 'text',
    doc: "where each item ends: 'base' at timeout_ms, 'controls' at attempts_made (group, cost, the debounce fields and attempts_made), 'holds' at on_child_failure (those and the hold's fields: depends_on, deadline_ms, deadline_at, on_child_failure)",
  },
  id: { type: 'id', doc: 'a job id: 1-256 characters of valid Unicode, no control characters' },
  data: { type: 'json', doc: "the payload as JSON text (the worker JSON.parse's it)" },
  delay_ms: { type: 'integer', unit: 'ms', notSet: "''", doc: "from the server's now; exactly one of delay_ms and run_at is set" },
  run_at: { type: 'integer', unit: 'epoch ms', notSet: "''", doc: 'an absolute due time' },
  priority: { type: 'integer', doc: 'higher first, -1000000..1000000' },
  max_attempts: { type: 'integer', notSet: "''", doc: "hand-outs before the dead set ('': the worker's default)" },
  backoff: { type: 'text', notSet: "''", doc: "the job's own backoff as formats.BACKOFF ('': the worker's)" },
  replace: { type: 'flag', doc: "'1': replace an existing job that is not active" },
  dedup_key: { type: 'text', notSet: "''", doc: 'skip the add while another add holds this key' },
  dedup_ms: { type: 'integer', unit: 'ms', notSet: "''", doc: "the dedup key's window" },
  trace: { type: 'json', notSet: "''", doc: 'a trace propagation carrier, ASCII' },
  'add.name': {
    type: 'id',
    notSet: "''",
    doc: "the job's name (1-256 characters, no control characters), kept in its body (formats.JOB_BODY) for a worker to route by",
  },
  timeout_ms: {
    type: 'integer',
    unit: 'ms',
    notSet: "''",
    doc: "how long one attempt of the job may run ('': the worker's timeout), kept in its body (formats.JOB_BODY); a worker fails an attempt that runs longer",
  },
  running: {
    type: 'flag',
    notSet: "'' ('0')",
    doc: "'1': cancel a running job too (its lease ends; its holder hears formats.REVOKED_MESSAGE on the wake channel)",
  },
  reason: { type: 'text', notSet: "''", doc: 'why: the cancelled event and waiters hear it; fail-now keeps it as the last error' },
  wait_ms: { type: 'integer', unit: 'ms', doc: "how long the waiters are registered ('0': none, and prune those whose time is up)" },
  expect: { type: 'flag', doc: "'1': register ids of no job too (a job about to be added: addAndWait watches before it adds)" },
  group: { type: 'id', notSet: "''", doc: 'a group id (add: the job belongs to it; limits: the group to change, or the queue)' },
  cost: { type: 'integer', notSet: "'' (1)", doc: 'tokens of the rate limits the job takes when handed out; above a limit max: CODE.too_costly' },
  debounce_key: { type: 'text', notSet: "''", doc: "fold the add into this key's pending burst (see add.lua's header); delay_ms and run_at are then ignored" },
  debounce_ms: { type: 'integer', unit: 'ms', notSet: "'' (with no debounce_key)", doc: "the job runs this long after the burst's last add" },
  debounce_max_ms: { type: 'integer', unit: 'ms', notSet: "'' (no bound)", doc: "and no later than this after the burst's first add" },
  debounce_first_ms: {
    type: 'integer',
    unit: 'ms',
    notSet: "'' (now)",
    doc: 'the first add of a burst this add starts (epoch ms, at most now): a sharded producer moving a burst off a retired shard keeps its maxWaitMs bound',
  },
  attempts_made: {
    type: 'integer',
    notSet: "'' (0)",
    doc: 'attempts the job made before it was added (a job moved from another queue): it is written with a run state of that many attempts (formats.RUN_STATE), so its next hand-out is attempt attempts_made + 1; below max_attempts when that is given',
  },
  depends_on: {
    type: 'text',
    notSet: "''",
    doc: 'the ids of the jobs this one waits for, tab-separated (docs/flows.md): each an earlier item of the call or a job that exists and is not dead; the job is held until they have ended',
  },
  deadline_ms: {
    type: 'integer',
    unit: 'ms',
    notSet: "''",
    doc: 'with depends_on: run anyway this long after now if they have not all ended (at most one of deadline_ms and deadline_at)',
  },
  deadline_at: { type: 'integer', unit: 'epoch ms', notSet: "''", doc: 'with depends_on: run anyway at this time if they have not all ended' },
  on_child_failure: {
    type: 'text',
    notSet: "'' ('fail')",
    doc: "with depends_on: 'fail' buries the job when a dependency ends dead or cancelled, 'ignore' counts it as ended",
  },
  'wait-signal.name': { type: 'id', doc: 'the signal the job waits for (1-256 characters, no control characters)' },
  'wait-signal.timeout_ms': {
    type: 'integer',
    unit: 'ms',
    notSet: "'' (no timeout)",
    doc: 'the job runs anyway this long after the call, its next run seeing the wait timed out',
  },
  'signal.name': { type: 'id', doc: 'the signal to send (1-256 characters, no control characters)' },
  'signal.data': { type: 'json', notSet: "''", doc: `the signal's data as JSON text, at most ${LIMIT.signal_data_bytes} bytes: the job's next run reads it` },
  'child-results.id': { type: 'id', doc: 'the held (or released) job whose dependencies to read' },
  hold_ms: { type: 'integer', unit: 'ms', doc: "0, or (RateLimitSignal) how long the released jobs' groups, or the queue, get no hand-outs" },
  rate_max: {
    type: 'integer',
    notSet: "'' (leave it); '0' removes it",
    doc: "most tokens in any window: the queue's rate limit, or a group's own (with rate_per)",
  },
  rate_per: { type: 'integer', unit: 'ms', notSet: "'' (leave it); '0' removes it", doc: 'the window of rate_max' },
  group_rate_max: {
    type: 'integer',
    notSet: "'' (leave it); '0' removes it",
    doc: 'most tokens one group takes in any window, for groups without their own (with group_rate_per)',
  },
  group_rate_per: { type: 'integer', unit: 'ms', notSet: "'' (leave it); '0' removes it", doc: 'the window of group_rate_max' },
  count: { type: 'integer', doc: 'most jobs (claim) or groups (groups) to return' },
  lease_ms: { type: 'integer', unit: 'ms', doc: 'how long a hand-out or an extension lasts' },
  default_max: { type: 'integer', doc: 'max attempts for jobs with none of their own' },
  promote_limit: { type: 'integer', doc: `due jobs moved per claim (${LIMIT.promote_per_claim} by the library)` },
  reap_limit: { type: 'integer', doc: `expired leases recovered per claim (${LIMIT.reap_per_claim} by the library)` },
  worker: { type: 'text', notSet: "''", doc: "the worker's id, kept as the lease holder (no ':')" },
  packed: { type: 'flag', doc: "'1': the reply as one MessagePack string (PACKED_REPLY), '0': as an array" },
  token: { type: 'text', doc: 'the lease token of the hand-out: <token_prefix><token_number> from the claim' },
  result: { type: 'json', notSet: "''", doc: "the handler's result, kept when retention keeps completed jobs" },
  info: { type: 'json', notSet: "''", doc: "a worker's WorkerInfo ('': the worker closed)" },
  ttl_ms: { type: 'integer', unit: 'ms', doc: "how long a worker's heartbeat lives" },
  error: { type: 'text', doc: 'the error text kept with the job' },
  retry_ms: { type: 'integer', unit: 'ms', doc: 'delay before the retry' },
  dead: { type: 'flag', doc: "'1': skip any attempts left (fail-now: bury the job now, running or waiting)" },
  history: { type: 'integer', doc: 'failed attempts kept per job (10 by the library)' },
  deadline: { type: 'integer', unit: 'epoch ms', notSet: "''", doc: 'past this, a snoozed job goes dead' },
  logs: { type: 'flag', doc: "'1': answer log lines and error history too" },
  state: { type: 'text', doc: 'scheduled, ready, active, dead or completed' },
  phase: { type: 'text', notSet: "''", doc: "a listing cursor's set ('' to start)" },
  score: { type: 'text', notSet: "''", doc: "a listing cursor's score" },
  member: { type: 'text', notSet: "''", doc: "a listing cursor's member" },
  limit: { type: 'integer', doc: 'most entries a call handles' },
  order: { type: 'text', doc: 'asc or desc' },
  window_ms: { type: 'integer', unit: 'ms', doc: 'the window of due-soon counts' },
  from: { type: 'integer', unit: 'epoch ms', notSet: "''", doc: "the timeline's start ('': now)" },
  bucket_ms: { type: 'integer', unit: 'ms', doc: "a timeline bucket's width" },
  buckets: { type: 'integer', doc: 'timeline buckets' },
  progress: { type: 'json', notSet: "''", doc: "the job's progress" },
  log_cap: { type: 'integer', doc: 'log lines kept per job' },
  line: { type: 'text', doc: 'a log line' },
  due_before: { type: 'integer', unit: 'epoch ms', notSet: "''", doc: "drain only jobs due before this ('': all)" },
  ready_rank: { type: 'integer', doc: "where a drain goes on in the ready set (0 to start; the reply's next_ready_rank)" },
  waiting_rank: { type: 'integer', doc: "where a drain goes on in the groups' lines (0 to start; the reply's next_waiting_rank)" },
  force: { type: 'flag', doc: "'1': obliterate even while jobs are active" },
  offset: { type: 'integer', doc: 'entries to skip' },
  mode: { type: 'text', doc: 'ids, all or age (see the script)' },
  set: { type: 'text', doc: 'dead or completed' },
  age_ms: { type: 'integer', unit: 'ms', doc: 'older than this' },
  what: { type: 'text', doc: 'the setting (see set-meta)' },
  value: { type: 'text', doc: "the setting's value (see set-meta)" },
  expected: { type: 'text', notSet: "''", doc: 'the layout the caller read' },
  next: { type: 'text', doc: 'the layout to store' },
  concurrency: { type: 'integer', notSet: "'' (leave it); '0' removes it", doc: "most jobs active at once: the queue's, or a group's own" },
  group_concurrency: { type: 'integer', notSet: "'' (leave it); '0' removes it", doc: 'most jobs of one group active at once' },
  paused: { type: 'flag', notSet: "''", doc: "'1' pauses the group, '0' resumes it" },
  cursor: { type: 'text', notSet: "''", doc: "where a walk goes on ('0' to start; see the script)" },
  name: { type: 'text', doc: "a schedule's name" },
  definition: { type: 'json', notSet: "''", doc: "a schedule's definition ('': remove it)" },
};

export interface ManifestScript {
  file: string;
  keys: { index: number; name: string; key: string }[];
  /** `accepts`: what the script takes (wire.ts ARG_RULES); anything else fails the call and writes nothing. */
  args: ({ index: number; name: string; accepts: ArgRule } & ArgDoc)[];
  /** Fields of one item, repeated from ARGV[itemsFrom] to the end; absent for scripts without items. */
  items?: { itemsFrom: number; fields: ({ offset: number; name: string; accepts: ArgRule } & ArgDoc)[] };
  reply: ReplyShape;
  codes?: Record<string, number>;
}

/** An argument's doc: `<script>.<name>` when the script's differs, else the name's. */
function argDoc(script: ScriptName, name: string): ArgDoc {
  return ARGS[`${script}.${name}`] ?? ARGS[name]!;
}

function scriptEntry(name: ScriptName): ManifestScript {
  const w: ScriptWire = WIRE[name];
  const keys = [...PASSED_BASE_KEYS, ...w.keys].map((k, i) => ({ index: i + 1, name: k, key: KEY_TEMPLATES[k]! }));
  const argNames = [...BASE_ARGS, ...w.args];
  const args = argNames.map((a, i) => ({ index: i + 1, name: a, ...argDoc(name, a), accepts: argRule(name, a) }));
  const out: ManifestScript = { file: `scripts/${name}.lua`, keys, args, reply: w.reply };
  if (w.each)
    out.items = { itemsFrom: argNames.length + 1, fields: w.each.map((e, i) => ({ offset: i, name: e, ...argDoc(name, e), accepts: argRule(name, e) })) };
  if (w.codes) out.codes = { ...CODES[w.codes] };
  return out;
}

/** protocol/manifest.json. */
export function protocolManifest() {
  return {
    protocol: PROTOCOL_VERSION,
    package: { name: 'delayq', version: VERSION },
    keys: {
      root: ROOT,
      prefix: 'dq by default; nothing outside it is read or written',
      hashTag: '{<queue>}: every key of one queue is in one Redis Cluster slot; a shard n of a sharded queue is the queue <queue>#<n>',
      templates: KEY_TEMPLATES,
      builtFromRoot: `every script reads ${BASE_KEYS.join(', ')} (templates above) but takes only the first in KEYS (KEYS[1], which must be the root followed by scheduled: Redis Cluster routes the call by it); it builds the others from root (ARGV[1]), as it builds dedup, waitingDue, ranked and history`,
      dedup: `${ROOT}${DEDUP_SUFFIX}<dedup key>`,
      waitingDue: `${ROOT}${WAITING_DUE_SUFFIX} (ZSET due ms -> group id): a script that puts due jobs of a group in its line (K_WAITING) ZADDs LT the earliest of their due times under the group; one that leaves a line empty ZREMs the group. stats repairs the rest`,
      ranked: `${ROOT}${RANKED_SUFFIX} (ZSET due ms -> scheduled member): the scheduled jobs with a priority other than 0 while meta ranked counts such jobs (meta rankedSet = 1: every one is in it); every script that writes or removes a scheduled member keeps it, and claim takes the due ones out by it; a reader need not look at it (it holds no job the scheduled set does not)`,
      history: `${ROOT}${HISTORY_SUFFIX} (HASH minute % 1440 -> ${HISTORY_MINUTE}): claim, complete, fail, fail-now and every end through finish add to their minute's field; read it with HGETALL (a field whose minute is a day old or more is stale; skip HASHTABLE_FIELD)`,
      registry: '<prefix>:queues (ZSET first seen ms -> queue name; ZADD NX it after an add whose reply says made = 1)',
      wakeChannel: `${ROOT}wake`,
    },
    /** How a number or text that is not set is written in replies (arguments: each one's notSet). */
    notSet: { number: -1, text: '' },
    formats: {
      JOB_BODY,
      JOB_BODY_NOTE:
        "the lengths count bytes of UTF-8; backoff and trace are ASCII; '/<timeout ms>' only in the body of a job with a timeout of its own; '/<name length>' and the name only in a named job's body (a body without them is a job without a name); data is everything after them",
      PACKED_TAIL,
      PACKED_TAIL_NOTE:
        "add's data when item_fields is 'packed' (items of id, data, delay_ms, run_at; no schedule guard): the job's JOB_BODY from its priority on, checked (every number within its argument's rule and written as a plain whole number, the lengths within the text, the name by the id rule) and written after the seq and created time. The cheapest add, for jobs without replace, dedup, group, cost, debounce, attempts made or hold",
      BACKOFF: 'f:<delay ms> (fixed) or e:<delay ms>:<max delay ms>:<jitter 1|0> (exponential: delay · 2^(attempt − 1), at most max delay, full jitter when 1)',
      SCHEDULED_MEMBER,
      SCHEDULED_MEMBER_NOTE:
        "the scheduled set's member: on a queue whose meta `ordered` is '1' or '2' (made by protocol 5, or migrated: migrate.lua) new members take the first form, \\x01, a character 48 + n, then the n digits of the job's seq (its body's first field), then the id, so members of one due time sort in add order; the id alone is the form of older queues and versions. Read both: the id is what follows 2 + n characters after a leading \\x01",
      RUN_STATE,
      RUN_STATE_NOTE:
        "absent: never left scheduled; the short form '<due ms>': due and waiting, never run; the token is the lease token, '-' + token once its holder gave it up, '~' + token once a claim recovered it, '+' + token once completed and kept, '!' + token once ended from outside its holder (fail-now)",
      HASHTABLE_FIELD,
      HASHTABLE_FIELD_NOTE:
        'the jobs, runs, group-of, flow-of, groups and history hashes also hold this one field, which is no job and no group (an id holds no control character): its value is longer than 64 bytes, so Redis keeps the hash a hashtable, where a lookup does not read every field as it does in a listpack. A producer or worker that writes bodies or run states with HSET may set it too (any value over 64 bytes); a reader that walks or counts the hash (HSCAN, HLEN) skips it',
      GROUP_STATE,
      ERROR_HISTORY,
      WORKER_ENTRY,
      WORKER_INFO,
      WORKER_INFO_NOTE:
        "a worker beats every 10 s with ttl_ms 30000 (three missed beats and it drops off by itself): extend carries the beat while it holds leases (worker, info, ttl_ms), worker-beat otherwise; worker-beat with info '' when it closes takes it off at once",
      REVOKED_MESSAGE,
      FINISHED_MESSAGE,
      WAKE_MESSAGES_NOTE:
        "the wake channel carries a due time in ms ('0': now), 's' (schedules changed), 'L' (layout changed), REVOKED_MESSAGE (a worker holding that token aborts its handler: the lease is gone) and FINISHED_MESSAGE (the id's length counts bytes of UTF-8); ignore anything else",
      CLAIM_JOB,
      CLAIM_GROUPS,
      PACKED_REPLY,
      JOB_ROW,
      JOB_ROW_NOTE:
        "state is the internal place ('' for no such job, with an empty body and run); ready and waiting are public state scheduled; score is the lease deadline (active), time of death (dead) or finish time (completed), else -1; logs is a JSON array of strings",
    },
    lifecycle: {
      places: PLACES,
      events: EVENTS,
      marks: MARK,
      limits: LIMIT,
      ungroupedLane: UNGROUPED_LANE,
      seqLife: SEQ_LIFE,
      seqFloorTtlMs: SEQ_FLOOR_TTL_MS,
    },
    codes: CODES,
    scripts: Object.fromEntries(SCRIPT_NAMES.map((n) => [n, scriptEntry(n)])),
  };
}

/** What an argument takes, for a script's header (text takes anything: nothing said). */
function describeRule(r: ArgRule): string {
  if ('int' in r) return `, ${r.int[0]}..${r.int[1]}`;
  if ('oneOf' in r) return `, one of ${r.oneOf.join(' ')}`;
  if ('flag' in r) return ", '0' or '1'";
  if ('digits' in r) return ', digits';
  if ('id' in r) return ', 1-256 characters, no control characters';
  return '';
}

/** A script as it runs, its includes and prologue inlined, under a header naming every KEY and ARGV by position. */
export function protocolScript(name: ScriptName): string {
  const e = scriptEntry(name);
  const lines = [
    `--[[ delayq protocol ${PROTOCOL_VERSION} · ${name} (delayq ${VERSION}) · run it as it is with EVAL or EVALSHA.`,
    'Generated from src/store/redis/wire.ts (npm run protocol); protocol/manifest.json has the same in JSON.',
    `KEYS (${e.keys.length}):`,
    ...e.keys.map((k) => `  ${k.index} ${k.name} = ${k.key}`),
    `ARGV (${e.args.length}${e.items ? ', then the items' : ''}):`,
    ...e.args.map(
      (a) => `  ${a.index} ${a.name}: ${a.type}${a.unit ? ` (${a.unit})` : ''}${a.notSet ? `, not set: ${a.notSet}` : ''}${describeRule(a.accepts)}. ${a.doc}`,
    ),
  ];
  if (e.items) {
    lines.push(`Items from ARGV[${e.items.itemsFrom}], ${e.items.fields.length} fields each:`);
    for (const f of e.items.fields)
      lines.push(
        `  +${f.offset} ${f.name}: ${f.type}${f.unit ? ` (${f.unit})` : ''}${f.notSet ? `, not set: ${f.notSet}` : ''}${describeRule(f.accepts)}. ${f.doc}`,
      );
  }
  const r = e.reply;
  if (r.value !== undefined) lines.push(`Reply: one value, ${r.value}.`);
  else lines.push(`Reply: an array: ${(r.fields ?? []).join(', ') || 'no fixed fields'}${r.each ? `, then per item ${r.each.join(', ')}` : ''}.`);
  if (r.packedBy) lines.push(`  With ${r.packedBy} = 1, the same array as one MessagePack string (formats.PACKED_REPLY).`);
  if (r.note) lines.push(`  ${r.note}`);
  if (e.codes)
    lines.push(
      `Codes: ${Object.entries(e.codes)
        .map(([k, v]) => `${k} = ${v}`)
        .join(', ')}`,
    );
  lines.push(
    'Refusals: every argument is checked before the first write; one outside what its line says fails the call',
    'with `delayq: argument <name>[ of item <n>] <why>, got <value>` and writes nothing (docs/protocol.md).',
    ']]',
  );
  return `${lines.join('\n')}\n${loadScriptSource(name)}`;
}
