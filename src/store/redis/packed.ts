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
  /** The max attempts a job that ran out of them had (its own or the worker's default); undefined otherwise. */
  maxAttempts: number | undefined;
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

/** Where readBody's scan of a body header is (one module-wide cursor: the scan is synchronous). */
let cursor = 0;

/**
 * The whole number written with `min` to 16 digits at the cursor in `s`, the cursor moved past
 * its digits; -1 when there are fewer or more digits than that (the most a body writes is 16).
 */
function digitsAt(s: string, min: number): number {
  const from = cursor;
  let n = 0;
  let i = from;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  cursor = i;
  const digits = i - from;
  if (digits < min || digits > 16) return -1;
  // Up to 15 digits the sum is exact (below 2^53); 16 are read as Number reads them.
  return digits > 15 ? Number(s.slice(from, i)) : n;
}

/** Whether the character at the cursor is `code`; the cursor moves past it when it is. */
function takes(s: string, code: number): boolean {
  if (s.charCodeAt(cursor) !== code) return false;
  cursor++;
  return true;
}

const COLON = 58;
const SLASH = 47;
const MINUS = 45;

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
 * JOB_BODY), is read in one pass over its characters, each number summed as it is scanned:
 * no regex match, no string per field (this is the worker's hot path).
 */
export function readBody(s: string, into: BodyFields): number {
  cursor = 0;
  const seq = digitsAt(s, 1);
  const created = seq >= 0 && takes(s, COLON) ? digitsAt(s, 1) : -1;
  const afterCreated = created >= 0 && takes(s, COLON);
  const negative = afterCreated && takes(s, MINUS);
  const priority = afterCreated ? digitsAt(s, 1) : -1;
  const afterPriority = priority >= 0 && takes(s, COLON);
  const maxAt = cursor;
  const max = afterPriority ? digitsAt(s, 0) : -1;
  const maxDigits = cursor - maxAt;
  const timeout = max >= 0 && takes(s, SLASH) ? digitsAt(s, 1) : undefined;
  const bl = max >= 0 && timeout !== -1 && takes(s, COLON) ? digitsAt(s, 1) : -1;
  const xl = bl >= 0 && takes(s, COLON) ? digitsAt(s, 1) : -1;
  const nameBytes = xl >= 0 && takes(s, SLASH) ? digitsAt(s, 1) : undefined;
  if (xl < 0 || nameBytes === -1 || !takes(s, COLON)) throw new StoreError(bodyProblem(s));
  // A max of attempts written '0', a timeout or name length of 0: never written by an add.
  if ((maxDigits === 1 && max === 0) || (timeout !== undefined && timeout < 1) || (nameBytes !== undefined && nameBytes < 1))
    throw new StoreError(bodyProblem(s));
  const start = cursor;
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
  if (nameBytes !== undefined) {
    const end = utf8End(s, dataStart, nameBytes);
    if (end < 0) throw new StoreError('bad field lengths');
    name = s.slice(dataStart, end);
    dataStart = end;
  }
  into.createdAtMs = created;
  into.priority = negative ? -priority : priority;
  into.maxAttempts = maxDigits === 0 ? undefined : max;
  into.timeoutMs = timeout;
  into.backoff = bl > 0 ? backoff : undefined;
  into.traceContext = xl > 0 ? trace : undefined;
  into.name = name;
  into.data = s.slice(dataStart);
  return seq;
}

/** Where readBodyBytes's scan of a body's bytes is, and where the body ends (the scan is synchronous, as readBody's). */
let at = 0;
let end = 0;

/** The whole number of 1 to 15 digits at `at` in `b`, `at` moved past them; -1 for none or more. */
function byteDigits(b: Uint8Array): number {
  const from = at;
  let n = 0;
  let i = from;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c < 48 || c > 57) break;
    n = n * 10 + (c - 48);
  }
  at = i;
  return i === from || i - from > 15 ? -1 : n;
}

/** Whether the byte at `at` is `code`; `at` moves past it when it is. */
function takesByte(b: Uint8Array, code: number): boolean {
  if (at >= end || b[at] !== code) return false;
  at++;
  return true;
}

/**
 * readBody of a body as Redis sent it, bytes (a claim's reply; `from` and `to` where it is in `b`,
 * by default all of it): the body most jobs have, with no backoff, trace or name (`…:0:0:` and
 * the data), is read from the bytes, its data decoded on its own, with no string made of the
 * whole body first; any other body, or one that does not read so, goes to readBody as text,
 * which reads it or names what is wrong. What it reads is what
 * readBody reads from the same bytes decoded as UTF-8: the header is ASCII, so it decodes to
 * itself and the data to the same text (test/unit/packed-body.test.ts compares the two).
 */
export function readBodyBytes(b: Buffer, into: BodyFields, from = 0, to = b.length): number {
  at = from;
  end = to;
  const seq = byteDigits(b);
  const created = seq >= 0 && takesByte(b, COLON) ? byteDigits(b) : -1;
  const afterCreated = created >= 0 && takesByte(b, COLON);
  const negative = afterCreated && takesByte(b, MINUS);
  const priority = afterCreated ? byteDigits(b) : -1;
  let max: number | undefined;
  let timeout: number | undefined;
  let simple = priority >= 0 && takesByte(b, COLON);
  // A max of attempts and a timeout, each when written, of at least 1 (readBody refuses 0).
  if (simple && at < end && b[at] !== COLON && b[at] !== SLASH) {
    max = byteDigits(b);
    simple = max >= 1;
  }
  if (simple && takesByte(b, SLASH)) {
    timeout = byteDigits(b);
    simple = timeout >= 1;
  }
  // No backoff, no trace, no name: `:0:0:`.
  simple = simple && takesByte(b, COLON) && takesByte(b, 48) && takesByte(b, COLON) && takesByte(b, 48) && takesByte(b, COLON);
  if (!simple) return readBody(b.toString('utf8', from, to), into);
  into.createdAtMs = created;
  into.priority = negative ? -priority : priority;
  into.maxAttempts = max;
  into.timeoutMs = timeout;
  into.backoff = undefined;
  into.traceContext = undefined;
  into.name = undefined;
  into.data = b.toString('utf8', at, to);
  return seq;
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
    return {
      attempts: 0,
      maxAttempts: undefined,
      dueAtMs: WHOLE.test(s) ? Number(s) : undefined,
      token: '',
      startedAtMs: undefined,
      workerId: '',
      lastError: undefined,
    };
  const cuts: number[] = [];
  let at = -1;
  for (let i = 0; i < 5; i++) {
    at = s.indexOf(':', at + 1);
    if (at < 0) return undefined;
    cuts.push(at);
  }
  const [a, b, c, d, e] = cuts as [number, number, number, number, number];
  // `<attempts>/<max>`: a job that went dead out of attempts, with the max that applied.
  const slash = s.lastIndexOf('/', a);
  const attempts = s.slice(0, slash >= 0 ? slash : a);
  const max = slash >= 0 ? s.slice(slash + 1, a) : '';
  const due = s.slice(a + 1, b);
  const started = s.slice(c + 1, d);
  const lastError = s.slice(e + 1);
  return {
    attempts: WHOLE.test(attempts) ? Number(attempts) : undefined,
    maxAttempts: WHOLE.test(max) && Number(max) >= 1 ? Number(max) : undefined,
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
