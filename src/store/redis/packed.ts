/**
 * Reads the packed strings of the layout (wire.ts JOB_BODY, RUN_STATE). Hand-written
 * with scans of digits and indexOf, not a generic parser or a regex: a claim reads one line per
 * job, and this is the worker's hot path.
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

/**
 * Where the run of digits that starts at `at` ends (the index after it), or -1 when it is
 * shorter than `min` or longer than 16 digits (the most a body's numbers are written with).
 */
function digitsEnd(s: string, at: number, min: number): number {
  let i = at;
  while (i < s.length && i - at <= 16) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    i++;
  }
  return i - at < min || i - at > 16 ? -1 : i;
}

/** The whole number written in `s` from `from` to `to` (digits only, as digitsEnd found them). */
function wholeAt(s: string, from: number, to: number): number {
  // Up to 15 digits the sum is exact (below 2^53); 16 are read as Number reads them.
  if (to - from > 15) return Number(s.slice(from, to));
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + (s.charCodeAt(i) - 48);
  return n;
}

/** The fields of a body that readBody writes (a JobBody, or a claim's hand-out, which has them all but seq). */
export interface BodyFields {
  createdAtMs: number;
  priority: number;
  maxAttempts: number | undefined;
  timeoutMs?: number | undefined;
  backoff: string | undefined;
  traceContext: string | undefined;
  name: string | undefined;
  data: string | undefined;
}

/**
 * Reads a packed body into `into` (its fields in place: a claim builds no object per job on
 * the way) and returns its sequence number; throws a StoreError naming what is wrong. The
 * header, `seq:created:priority:max[/timeout]:backoff len:trace len[/name len]:` (wire.ts
 * JOB_BODY), is read with indexOf-free scans of its digits, not a regex: this is the worker's
 * hot path.
 */
export function readBody(s: string, into: BodyFields): number {
  const seqEnd = digitsEnd(s, 0, 1);
  const createdEnd = seqEnd < 0 || s.charCodeAt(seqEnd) !== 58 ? -1 : digitsEnd(s, seqEnd + 1, 1);
  const minus = createdEnd >= 0 && s.charCodeAt(createdEnd) === 58 && s.charCodeAt(createdEnd + 1) === 45 ? 1 : 0;
  const priorityEnd = createdEnd < 0 || s.charCodeAt(createdEnd) !== 58 ? -1 : digitsEnd(s, createdEnd + 1 + minus, 1);
  const maxEnd = priorityEnd < 0 || s.charCodeAt(priorityEnd) !== 58 ? -1 : digitsEnd(s, priorityEnd + 1, 0);
  const timeoutEnd = maxEnd >= 0 && s.charCodeAt(maxEnd) === 47 ? digitsEnd(s, maxEnd + 1, 1) : maxEnd;
  const blEnd = timeoutEnd < 0 || s.charCodeAt(timeoutEnd) !== 58 ? -1 : digitsEnd(s, timeoutEnd + 1, 1);
  const xlEnd = blEnd < 0 || s.charCodeAt(blEnd) !== 58 ? -1 : digitsEnd(s, blEnd + 1, 1);
  const nlEnd = xlEnd >= 0 && s.charCodeAt(xlEnd) === 47 ? digitsEnd(s, xlEnd + 1, 1) : xlEnd;
  if (nlEnd < 0 || s.charCodeAt(nlEnd) !== 58) throw new StoreError(bodyProblem(s));
  const maxAt = priorityEnd + 1;
  const timed = timeoutEnd !== maxEnd;
  const named = nlEnd !== xlEnd;
  // A max of attempts written '0', a timeout or name length of 0: never written by an add.
  if ((maxEnd - maxAt === 1 && s.charCodeAt(maxAt) === 48) || (timed && wholeAt(s, maxEnd + 1, timeoutEnd) < 1) || (named && wholeAt(s, xlEnd + 1, nlEnd) < 1))
    throw new StoreError(bodyProblem(s));
  const start = nlEnd + 1;
  const bl = wholeAt(s, timeoutEnd + 1, blEnd);
  const xl = wholeAt(s, blEnd + 1, xlEnd);
  // Lengths count bytes; backoff and trace are written as ASCII (asciiOnly), so they count
  // characters here too. One that is not (a hand-written body) is not read as something else.
  let dataStart = start + bl + xl;
  if (dataStart > s.length) throw new StoreError('bad field lengths');
  let backoff: string | undefined;
  let trace: string | undefined;
  if (bl > 0 || xl > 0) {
    backoff = s.slice(start, start + bl);
    trace = s.slice(start + bl, dataStart);
    if (!ASCII.test(backoff) || !ASCII.test(trace)) throw new StoreError('bad field lengths');
  }
  let name: string | undefined;
  if (named) {
    const end = utf8End(s, dataStart, wholeAt(s, xlEnd + 1, nlEnd));
    if (end < 0) throw new StoreError('bad field lengths');
    name = s.slice(dataStart, end);
    dataStart = end;
  }
  into.createdAtMs = wholeAt(s, seqEnd + 1, createdEnd);
  const priority = wholeAt(s, createdEnd + 1 + minus, priorityEnd);
  into.priority = minus === 1 ? -priority : priority;
  into.maxAttempts = maxEnd === maxAt ? undefined : wholeAt(s, maxAt, maxEnd);
  into.timeoutMs = timed ? wholeAt(s, maxEnd + 1, timeoutEnd) : undefined;
  into.backoff = bl > 0 ? backoff : undefined;
  into.traceContext = xl > 0 ? trace : undefined;
  into.name = name;
  into.data = s.slice(dataStart);
  return wholeAt(s, 0, seqEnd);
}

/** A packed body; throws a StoreError naming what is wrong. */
export function parseBody(s: string): JobBody {
  const body: JobBody = {
    seq: 0,
    createdAtMs: 0,
    priority: 0,
    maxAttempts: undefined,
    timeoutMs: undefined,
    backoff: undefined,
    traceContext: undefined,
    name: undefined,
    data: '',
  };
  body.seq = readBody(s, body as BodyFields);
  return body;
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
