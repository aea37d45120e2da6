/**
 * Reads the packed strings of the layout (wire.ts JOB_BODY, RUN_STATE). Hand-written
 * with indexOf and one anchored regex, not a generic parser: a claim reads one line per job, and
 * this is the worker's hot path.
 */
import { StoreError } from '../../errors.js';
import type { JobError } from '../../types.js';

export interface JobBody {
  seq: number;
  createdAtMs: number;
  priority: number;
  maxAttempts: number | undefined;
  /** The job's own timeout per attempt (`add({ timeoutMs })`); undefined when the worker's applies. */
  timeoutMs: number | undefined;
  backoff: string | undefined;
  traceContext: string | undefined;
  /** The job's name (`add({ name })`); undefined in a body without one (all bodies before names). */
  name: string | undefined;
  data: string;
}

export interface RunState {
  attempts: number | undefined;
  dueAtMs: number | undefined;
  token: string;
  /** When the job was first handed out. */
  startedAtMs: number | undefined;
  /** The last lease holder's worker id ('' when none). */
  workerId: string;
  lastError: string | undefined;
}

// The trace length may be followed by '/<name length>' (a named job's body, wire.ts JOB_BODY).
// The max attempts may be followed by '/<timeout ms>' (a job with a timeout of its own).
const BODY_HEAD = /^(\d{1,16}):(\d{1,16}):(-?\d{1,16}):(\d{0,16})(?:\/(\d{1,16}))?:(\d{1,16}):(\d{1,16})(?:\/(\d{1,16}))?:/;
const ASCII = /^\p{ASCII}*$/u;

/** What is wrong with a body header that does not read, in the words the scripts use. */
function bodyProblem(s: string): string {
  const f = s.split(':', 7);
  if (f.length < 7) return 'unreadable body header';
  const whole = (v: string | undefined, signed = false) => v !== undefined && (signed ? /^-?\d{1,16}$/ : /^\d{1,16}$/).test(v);
  if (!whole(f[0])) return 'bad sequence';
  if (!whole(f[1])) return 'bad created time';
  if (!whole(f[2], true)) return 'bad priority';
  const limits = f[3]!.split('/');
  if (limits.length > 2 || (limits[0] !== '' && (!whole(limits[0]) || Number(limits[0]) < 1))) return 'bad max attempts';
  if (limits.length === 2 && (!whole(limits[1]) || Number(limits[1]) < 1)) return 'bad timeout';
  const slash = f[5]!.indexOf('/');
  if (slash >= 0 && (!whole(f[5]!.slice(slash + 1)) || Number(f[5]!.slice(slash + 1)) < 1)) return 'bad name length';
  return 'bad field lengths';
}

/**
 * Where a text of `bytes` UTF-8 bytes that starts at `from` ends in `s` (UTF-16), or -1 when
 * `s` ends first or the count falls inside a character. Names are short (at most 256
 * characters): a loop over them costs less than encoding the body.
 */
function utf8End(s: string, from: number, bytes: number): number {
  let i = from;
  let n = 0;
  while (n < bytes) {
    if (i >= s.length) return -1;
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
    i++;
  }
  return n === bytes ? i : -1;
}

/** A packed body; throws a StoreError naming what is wrong. */
export function parseBody(s: string): JobBody {
  const m = BODY_HEAD.exec(s);
  if (!m || m[4] === '0' || (m[5] !== undefined && Number(m[5]) < 1) || (m[8] !== undefined && Number(m[8]) < 1)) throw new StoreError(bodyProblem(s));
  const start = m[0].length;
  const bl = Number(m[6]);
  const xl = Number(m[7]);
  // Lengths count bytes; backoff and trace are written as ASCII (asciiOnly), so they count
  // characters here too. One that is not (a hand-written body) is not read as something else.
  const backoff = s.slice(start, start + bl);
  const trace = s.slice(start + bl, start + bl + xl);
  if (start + bl + xl > s.length || ((bl > 0 || xl > 0) && !ASCII.test(backoff + trace))) throw new StoreError('bad field lengths');
  let dataStart = start + bl + xl;
  let name: string | undefined;
  if (m[8] !== undefined) {
    const end = utf8End(s, dataStart, Number(m[8]));
    if (end < 0) throw new StoreError('bad field lengths');
    name = s.slice(dataStart, end);
    dataStart = end;
  }
  return {
    seq: Number(m[1]),
    createdAtMs: Number(m[2]),
    priority: Number(m[3]),
    maxAttempts: m[4] === '' ? undefined : Number(m[4]),
    timeoutMs: m[5] === undefined ? undefined : Number(m[5]),
    backoff: bl > 0 ? backoff : undefined,
    traceContext: xl > 0 ? trace : undefined,
    name,
    data: s.slice(dataStart),
  };
}

/** A body, or undefined when it cannot be read (listings show what they can, never throw). */
export function tryParseBody(s: string | undefined): JobBody | undefined {
  if (!s) return undefined;
  try {
    return parseBody(s);
  } catch {
    return undefined;
  }
}

const WHOLE = /^\d{1,16}$/;

/** A run state as stored; numbers that are not whole decimals read as undefined. */
export function parseRun(s: string | undefined): RunState | undefined {
  if (!s) return undefined;
  // The short form '<due ms>': promoted to ready, never handed out.
  if (!s.includes(':'))
    return { attempts: 0, dueAtMs: WHOLE.test(s) ? Number(s) : undefined, token: '', startedAtMs: undefined, workerId: '', lastError: undefined };
  const cuts: number[] = [];
  let at = -1;
  for (let i = 0; i < 5; i++) {
    at = s.indexOf(':', at + 1);
    if (at < 0) return undefined;
    cuts.push(at);
  }
  const [a, b, c, d, e] = cuts as [number, number, number, number, number];
  const attempts = s.slice(0, a);
  const due = s.slice(a + 1, b);
  const started = s.slice(c + 1, d);
  const lastError = s.slice(e + 1);
  return {
    attempts: WHOLE.test(attempts) ? Number(attempts) : undefined,
    dueAtMs: WHOLE.test(due) ? Number(due) : undefined,
    token: s.slice(b + 1, c),
    startedAtMs: WHOLE.test(started) ? Number(started) : undefined,
    workerId: s.slice(d + 1, e),
    lastError: lastError === '' ? undefined : lastError,
  };
}

/** JSON text with every non-ASCII character escaped (\uXXXX), so its length in bytes is its length in characters. */
export function asciiOnly(json: string): string {
  return ASCII.test(json) ? json : json.replace(/[\u0080-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A job's error history as stored (wire.ts ERROR_HISTORY), or undefined when there is none or it
 * does not parse; entries that are not { attempt, atMs, error } are left out. Never throws: a
 * corrupt history must not fail a get.
 */
export function parseErrors(s: string | undefined): JobError[] | undefined {
  if (!s) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(s);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const out: JobError[] = [];
  for (const e of parsed as unknown[]) {
    if (typeof e !== 'object' || e === null) continue;
    const { attempt, atMs, error } = e as Record<string, unknown>;
    if (Number.isInteger(attempt) && Number.isInteger(atMs) && typeof error === 'string') out.push({ attempt: attempt as number, atMs: atMs as number, error });
  }
  return out;
}
