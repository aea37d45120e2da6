/**
 * Script replies read back by name: the Node side of wire.ts's ReplyShape, as the generated
 * prologue's `R` / `RE` are the Lua side. The one place that knows where a reply keeps what;
 * the store asks for `reply.fields.now_ms`, never `reply[0]`. A reply whose length does not fit
 * its shape is a StoreError (a script and this build disagree), never a silent misread. Below
 * the generic readers, the replies read into the store's types: claim's hand-outs, job rows,
 * lease outcomes.
 */
import { StoreError } from '../../errors.js';
import type { BytesAt } from './msgpack-reply.js';
import type { JobInfo, JobState } from '../../types.js';
import { handedOutAtMs } from '../lease-token.js';
import type { ClaimedJob, ClaimResult, HoldRelease, LeaseOutcome, SignalIn, StoredAddResult, UnreadableJob, WatchAnswer } from '../store.js';
import { parseErrors, parseRun, readBody, readBodyBytes, tryParseBody } from './packed.js';
import { CODES, codeName, SCRIPT_NAMES, WIRE, type ReplyShape, type ScriptName } from './wire.js';

type Shape<N extends ScriptName> = (typeof WIRE)[N]['reply'];
export type ReplyFields<N extends ScriptName> = Shape<N> extends { fields: readonly (infer F)[] } ? F & string : never;
export type ReplyItemFields<N extends ScriptName> = Shape<N> extends { each: readonly (infer F)[] } ? F & string : never;

export interface Reply<N extends ScriptName> {
  readonly fields: Record<ReplyFields<N>, unknown>;
  readonly items: Record<ReplyItemFields<N>, unknown>[];
}

/**
 * Where a script's reply keeps each name (0-based, as a JS array reads it): the fixed fields,
 * then items of `size` elements from `first`. For the hot paths (claim) that read items in
 * place instead of building an object per item.
 */
export interface ReplyLayout {
  readonly fields: Readonly<Record<string, number>>;
  readonly first: number;
  readonly size: number;
  readonly each: Readonly<Record<string, number>>;
}

function layoutOf(shape: ReplyShape): ReplyLayout {
  const fields = shape.fields ?? [];
  return {
    fields: Object.fromEntries(fields.map((f, i) => [f, i])),
    first: fields.length,
    size: shape.each?.length ?? 0,
    each: Object.fromEntries((shape.each ?? []).map((f, i) => [f, i])),
  };
}

export const REPLY_AT = Object.fromEntries(SCRIPT_NAMES.map((n) => [n, layoutOf(WIRE[n].reply)])) as Record<ScriptName, ReplyLayout>;

/** Checks an array reply's length against its shape; returns it as an array. */
export function replyArray(name: ScriptName, raw: unknown): unknown[] {
  const at = REPLY_AT[name];
  if (!Array.isArray(raw)) throw new StoreError(`${name}: expected an array reply from Redis, got ${String(raw)}`);
  const items = raw.length - at.first;
  const fits = at.size === 0 ? items === 0 : items >= 0 && items % at.size === 0;
  if (!fits) throw new StoreError(`${name}: a reply of ${raw.length} elements does not fit its shape (${at.first} fields, items of ${at.size})`);
  return raw;
}

/** An array reply by name: its fields, and its items as objects. */
export function decodeReply<N extends ScriptName>(name: N, raw: unknown): Reply<N> {
  const reply = replyArray(name, raw);
  const at = REPLY_AT[name];
  const fields: Record<string, unknown> = {};
  for (const [f, i] of Object.entries(at.fields)) fields[f] = reply[i];
  const items: Record<string, unknown>[] = [];
  const names = Object.entries(at.each);
  for (let i = at.first; i < reply.length; i += at.size) {
    const item: Record<string, unknown> = {};
    for (const [f, o] of names) item[f] = reply[i + o];
    items.push(item);
  }
  return { fields, items } as Reply<N>;
}

/** A reply of one value (ReplyShape.value). */
export function replyValue(name: ScriptName, raw: unknown): unknown {
  if ((WIRE[name].reply as ReplyShape).value === undefined) throw new StoreError(`${name}: its reply is not one value`);
  if (Array.isArray(raw)) throw new StoreError(`${name}: expected one value from Redis, got an array`);
  return raw;
}

export function num(v: unknown): number {
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) throw new StoreError(`expected a number from Redis, got ${String(v)}`);
  return n;
}

export function optNum(v: unknown): number | undefined {
  if (v === '' || v === null || v === undefined) return undefined;
  return num(v);
}

export function optStr(v: unknown): string | undefined {
  return v === '' || v === null || v === undefined ? undefined : String(v);
}

/**
 * Where claim's reply keeps each name (wire.ts CLAIM_JOB). The hot path reads each job in place
 * through these offsets instead of building an object per job first (replies.ts decodeReply).
 */
const CLAIM = REPLY_AT.claim;
const C = CLAIM.each as Record<'id' | 'body' | 'attempt' | 'due_ms' | 'token_number', number>;
const CF = CLAIM.fields as Record<'now_ms' | 'next_wake_ms' | 'more' | 'deadline_ms' | 'token_prefix' | 'groups' | 'holds', number>;
/** A packed claim reply's strings that stay bytes: the bodies (msgpack-reply.ts BytesAt). */
export const CLAIM_BODIES: BytesAt = { first: CLAIM.first, size: CLAIM.size, at: C.body };

/**
 * A claim's lease tokens, `<token_prefix><token_number>`, each made as one string from the bytes
 * of a scratch buffer holding the claim's prefix: `prefix + String(n)` made a number string and a
 * cons string, and flattening it (to test it for a shard, to send it in the ack) a third string
 * (~60 B per job). A prefix that is not short ASCII (never written by claim.lua) is concatenated.
 */
const tokenBytes = Buffer.alloc(64);
/** The scratch buffer's prefix length, or -1 when tokens are concatenated. */
let tokenPrefixBytes = -1;

function tokensAfter(prefix: string): void {
  tokenPrefixBytes = prefix.length <= 40 && /^[\x20-\x7e]*$/.test(prefix) ? tokenBytes.write(prefix, 0, 'latin1') : -1;
}

function tokenOf(prefix: string, n: unknown): string {
  if (tokenPrefixBytes < 0 || typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return prefix + String(n);
  let digits = 1;
  for (let m = n; m >= 10; m = Math.floor(m / 10)) digits++;
  const end = tokenPrefixBytes + digits;
  for (let i = end - 1, m = n; i >= tokenPrefixBytes; i--, m = Math.floor(m / 10)) tokenBytes[i] = 48 + (m % 10);
  return tokenBytes.toString('latin1', 0, end);
}

/**
 * One claimed job from its wire.ts CLAIM_JOB reply elements at `i`; throws on anything the script
 * should never send. Its body is text, bytes, or (a number) its start in `bodies`, ending at `end`.
 */
function claimedJob(
  reply: unknown[],
  i: number,
  tokenPrefix: string,
  leaseExpiresAtMs: number,
  group: string | undefined,
  bodies: Buffer | undefined,
  end: number,
): ClaimedJob {
  // Made whole, then its body's fields read into it (no JobBody object per job on the way). The
  // times start undefined, not 0, so that V8 keeps them as tagged fields, not double fields: a
  // double field takes a new heap number of its own on each store, here and again in the
  // worker's copy of the job (~80 B per job); a tagged one keeps the number it is given.
  const job: ClaimedJob = {
    id: '',
    group,
    token: '',
    data: undefined,
    attempt: 0,
    maxAttempts: undefined,
    backoff: undefined,
    dueAtMs: undefined as unknown as number,
    priority: 0,
    createdAtMs: undefined as unknown as number,
    leaseExpiresAtMs: undefined as unknown as number,
    traceContext: undefined,
    name: undefined,
    timeoutMs: undefined,
  };
  const body = reply[i + C.body];
  if (typeof body === 'number' && bodies !== undefined) readBodyBytes(bodies, job, body, end);
  else if (body instanceof Buffer) readBodyBytes(body, job);
  else readBody(String(body), job);
  job.id = String(reply[i + C.id]);
  job.token = tokenOf(tokenPrefix, reply[i + C.token_number]);
  job.attempt = num(reply[i + C.attempt]);
  job.dueAtMs = num(reply[i + C.due_ms]);
  job.leaseExpiresAtMs = leaseExpiresAtMs;
  return job;
}

/** One wire.ts JOB_ROW, or null when there is no such job. Never throws on stored data. */
export function jobRow(row: Reply<'get'>['items'][number], nowMs: number): JobInfo<string> | null {
  const id = String(row.id);
  const state = String(row.state);
  const score = Number(row.score);
  const bodyText = String(row.body ?? '');
  const runText = String(row.run ?? '');
  if (state === '' && bodyText === '' && runText === '') return null;
  const due = Number(row.due_ms);
  // Stored data is shown as it is: what cannot be read shows as absent (NaN for times).
  const body = tryParseBody(bodyText);
  const run = parseRun(runText);
  const dueAtMs = due >= 0 ? due : Number.NaN;
  const bodyProblem = bodyText === '' ? 'corrupt job: no body' : body ? undefined : 'corrupt job: unreadable body';
  const logs = optStr(row.logs);
  let logLines: string[] | undefined;
  if (logs !== undefined) {
    try {
      logLines = (JSON.parse(logs) as unknown[]).map(String);
    } catch {
      logLines = [logs];
    }
  }
  const isReady = state === 'ready' || state === 'waiting' || (state === 'scheduled' && dueAtMs <= nowMs);
  return {
    id,
    // A body in no set is reported as scheduled-but-lost by verify(); get shows what it can.
    state: state === 'ready' || state === 'waiting' || state === '' ? 'scheduled' : (state as JobState),
    data: body?.data as string,
    dueAtMs,
    group: optStr(row.group),
    name: body?.name,
    ready: isReady,
    priority: body?.priority ?? 0,
    attempt: run?.attempts ?? 0,
    // A job that ran out of attempts: the max that applied (the worker's default when it had none).
    maxAttempts: run?.maxAttempts ?? body?.maxAttempts,
    timeoutMs: body?.timeoutMs,
    createdAtMs: body?.createdAtMs ?? Number.NaN,
    leaseExpiresAtMs: state === 'active' && score >= 0 ? score : undefined,
    lastError: run?.lastError ?? bodyProblem,
    startedAtMs: run?.startedAtMs,
    runningSinceMs: state === 'active' ? handedOutAtMs(run?.token) : undefined,
    finishedAtMs: (state === 'dead' || state === 'completed') && score >= 0 ? score : undefined,
    workerId: run?.workerId || undefined,
    result: optStr(row.result),
    progress: optStr(row.progress),
    logs: logLines,
    errors: parseErrors(optStr(row.errors)),
  };
}

/**
 * complete, release, extend: one code per lease (extend answers a deadline, > 1, for a renewed
 * one). Each code is replaced by its name in the reply's own array, which no one else holds: a
 * new array of outcomes was 8 bytes of every ack (bench/worker-alloc.ts).
 */
export function leaseOutcomes(name: 'complete' | 'release' | 'extend', reply: unknown): LeaseOutcome[] {
  const out = replyArray(name, reply) as (number | LeaseOutcome)[];
  for (let i = 0; i < out.length; i++) {
    const c = out[i] as number;
    out[i] = codeName('lease', c > 0 ? CODES.lease.ok : c);
  }
  return out as LeaseOutcome[];
}

/** The groups of a claim's jobs by position (wire.ts CLAIM_GROUPS); undefined when none has one. */
function claimGroups(text: string): Map<number, string> | undefined {
  if (text === '') return undefined;
  const out = new Map<number, string>();
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0) out.set(Number(line.slice(0, tab)), line.slice(tab + 1));
  }
  return out;
}

/** How one held job handed out was released: its dependencies' hold, and the signal that ended its wait. */
export interface ClaimHold {
  hold: HoldRelease;
  signal: SignalIn | undefined;
}

/** The holds of a claim's jobs by position (wire.ts CLAIM_HOLDS, JSON); undefined when none was held. */
export function claimHolds(text: string): Map<number, ClaimHold> | undefined {
  if (text === '') return undefined;
  const out = new Map<number, ClaimHold>();
  const entries = JSON.parse(text) as { at: number; timedOut: boolean; pending?: string[]; signal?: [string, number, string] }[];
  for (const e of entries) {
    const signal = e.signal && { name: e.signal[0], timedOut: e.signal[1] === 1, data: e.signal[2] };
    out.set(e.at, { hold: { timedOut: e.timedOut, pending: Array.isArray(e.pending) ? e.pending : [] }, signal });
  }
  return out;
}

/**
 * claim's reply as the store's ClaimResult: each job on its own (one that cannot be read is
 * reported, not thrown). A reply unpacked with its bodies left in the packed reply
 * (msgpack-reply.ts unpackReply's `ends`) comes with that reply, `bodies`, and the bodies' ends.
 */
export function claimResult(reply: unknown[], bodies?: Buffer, ends?: readonly number[]): ClaimResult {
  replyArray('claim', reply);
  const nowMs = num(reply[CF.now_ms]);
  const wake = num(reply[CF.next_wake_ms]);
  const deadline = num(reply[CF.deadline_ms]);
  const tokenPrefix = String(reply[CF.token_prefix]);
  tokensAfter(tokenPrefix);
  // Made as long as the reply's jobs at once (not grown job by job), cut to those read.
  const jobs = new Array<ClaimedJob>((reply.length - CLAIM.first) / CLAIM.size);
  let read = 0;
  const unreadable: UnreadableJob[] = [];
  const groups = claimGroups(String(reply[CF.groups] ?? ''));
  const holds = claimHolds(String(reply[CF.holds] ?? ''));
  // Each job on its own: one that cannot be read goes dead, and costs the others nothing.
  for (let i = CLAIM.first, n = 1; i < reply.length; i += CLAIM.size, n++) {
    try {
      jobs[read] = claimedJob(reply, i, tokenPrefix, deadline, groups?.get(n), bodies, ends === undefined ? 0 : ends[n - 1]!);
      const held = holds?.get(n);
      if (held !== undefined) {
        // A job that waited only for a signal has no dependencies' hold to show.
        if (held.signal === undefined || held.hold.timedOut || held.hold.pending.length > 0) jobs[read]!.hold = held.hold;
        if (held.signal !== undefined) jobs[read]!.signal = held.signal;
      }
      read++;
    } catch (err) {
      unreadable.push({
        id: String(reply[i + C.id]),
        token: tokenOf(tokenPrefix, reply[i + C.token_number]),
        reason: `corrupt job: ${(err as Error).message}`,
      });
    }
  }
  jobs.length = read;
  return { nowMs, jobs, unreadable, more: reply[CF.more] === 1, nextWakeMs: wake < 0 ? undefined : wake };
}

const ADD = REPLY_AT.add;
const A = ADD.each as Record<'code' | 'state' | 'due_ms' | 'holder', number>;

/**
 * add's reply (not one of its one-code replies): whether the add made the queue's keys, and each
 * job's result, read in place as claim's are (a bulk add of thousands builds no object per job
 * on the way).
 */
export function addResults(reply: unknown[]): { made: boolean; results: StoredAddResult[] } {
  replyArray('add', reply);
  const results: StoredAddResult[] = [];
  for (let i = ADD.first; i < reply.length; i += ADD.size) {
    const code = codeName('add', reply[i + A.code]);
    if (code === 'guard_refused' || code === 'moved' || code === 'too_costly') throw new StoreError(`add: unexpected code ${code}`);
    const holder = reply[i + A.holder];
    results.push({
      code,
      state: reply[i + A.state] as JobState | 'finished',
      dueAtMs: num(reply[i + A.due_ms]),
      duplicateOf: holder === '' ? undefined : String(holder),
    });
  }
  return { made: reply[ADD.fields.made!] === 1, results };
}

/** One job of a watch reply (watch.lua): 'waiting', 'completed' with its result, 'dead' with its reason, or '' (no such job). */
export function watchAnswer(state: string, payload: string): WatchAnswer {
  if (state === 'waiting') return { state: 'waiting' };
  if (state === 'completed') return { state: 'completed', result: payload };
  if (state === 'dead') return { state: 'dead', error: payload };
  return { state: 'unknown' };
}
