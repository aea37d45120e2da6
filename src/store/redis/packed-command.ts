/**
 * A command written to the socket as one Buffer, each argument encoded into it in place, for the
 * worker's hot calls (claim, complete): the bytes on the wire are the same as ioredis writes.
 * ioredis builds a command as a string, `'$' + length + '\r\n' + arg + '\r\n'` per argument, then
 * flattens it to write it: an ack of a hundred jobs (three arguments each) made ~1,200 strings,
 * ~590 B of garbage per job (sampling heap profiler, bench/worker-alloc.ts), the largest share
 * of the worker's. ioredis's own Script subclasses Command the same way to change what it writes.
 */
import { Command } from 'ioredis';
import type { Client } from './connection.js';

const CR = 13;
const LF = 10;
const STAR = 42;
const DOLLAR = 36;

/** Decimal digits of a non-negative whole number. */
function digits(n: number): number {
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Writes `n` in decimal at `at`; returns where it ends. */
function writeNumber(buf: Buffer, at: number, n: number): number {
  const end = at + digits(n);
  for (let i = end - 1; i >= at; i--) {
    buf[i] = 48 + (n % 10);
    n = Math.floor(n / 10);
  }
  return end;
}

/** Writes a RESP header, `*count\r\n` or `$bytes\r\n`; returns where it ends. */
function writeHeader(buf: Buffer, at: number, mark: number, n: number): number {
  buf[at] = mark;
  at = writeNumber(buf, at + 1, n);
  buf[at] = CR;
  buf[at + 1] = LF;
  return at + 2;
}

export class PackedCommand extends Command {
  /**
   * The script's arguments, after the name and keys that ioredis holds in `args` (where it
   * finds the keys, to prefix them and find a cluster slot): written from the caller's array as
   * it is, not flattened into a copy by ioredis (another ~90 B per job).
   */
  readonly #rows: readonly (string | number)[];

  constructor(name: string, head: (string | number)[], rows: readonly (string | number)[], options: object) {
    super(name, head, options as never);
    this.#rows = rows;
  }

  /**
   * Made on each call, not kept: ioredis may write a command again (its offline queue, a resend
   * after a reconnection), and a socket may still hold the last Buffer it was given.
   */
  override toWritable(_socket: object): Buffer {
    const head = this.args as string[];
    const rows = this.#rows;
    const nameBytes = Buffer.byteLength(this.name);
    let total = 1 + digits(head.length + rows.length + 1) + 2 + 1 + digits(nameBytes) + 2 + nameBytes + 2;
    // Each argument measured once: its size kept for the writing below (measured twice, a string
    // cost a second call into Node for its UTF-8 length).
    const sizes = SIZES;
    let k = 0;
    for (let i = 0; i < head.length; i++) {
      const size = argSize(head[i]!);
      sizes[k++] = size;
      total += framed(size);
    }
    for (let i = 0; i < rows.length; i++) {
      const size = argSize(rows[i]!);
      sizes[k++] = size;
      total += framed(size);
    }
    const buf = Buffer.allocUnsafe(total);
    let at = writeHeader(buf, 0, STAR, head.length + rows.length + 1);
    at = writeHeader(buf, at, DOLLAR, nameBytes);
    at += buf.write(this.name, at, 'latin1');
    buf[at++] = CR;
    buf[at++] = LF;
    k = 0;
    for (let i = 0; i < head.length; i++) at = writeArg(buf, at, head[i]!, sizes[k++]!);
    for (let i = 0; i < rows.length; i++) at = writeArg(buf, at, rows[i]!, sizes[k++]!);
    // A bulk add of thousands of jobs is not kept alive in this array for the process's life.
    if (k > SIZES_KEPT) SIZES.length = 0;
    return buf;
  }
}

/**
 * The byte sizes of the arguments of the command being written (toWritable measures them, then
 * writes them): one array for every command, as a command is written from start to end in one
 * synchronous call. Emptied after a command of more than SIZES_KEPT arguments.
 */
const SIZES: number[] = [];
const SIZES_KEPT = 4096;

/**
 * How many digits a number argument written here has: a whole number from 0 to 2^31 - 1 (a
 * count, a lease's length) or an epoch ms of 13 digits (an add's run_at); 0 for any other number,
 * which goes out as ioredis writes it (numberText). Written here, not made a string first:
 * String() of an epoch ms goes to V8's runtime, and the string is then measured and copied by two
 * calls into Node (~240 ns a number, against ~30 written here; micro-benchmark), once per add.
 */
function wholeDigits(n: number): number {
  if ((n | 0) === n && n >= 0) return digits(n);
  return n >= 1e12 && n < 1e13 && Number.isInteger(n) ? 13 : 0;
}

/** Writes the `count` digits of a number wholeDigits measured at `at`; returns where they end. */
function writeWhole(buf: Buffer, at: number, n: number, count: number): number {
  let i = at + count - 1;
  // An epoch ms as two halves of seven and six digits, each a small integer: integer division
  // (`| 0`), not Math.floor on a double.
  let low = n;
  if (count === 13) {
    const high = Math.floor(n / 1e7);
    low = n - high * 1e7;
    for (const end = at + 6; i >= end; i--) {
      const q = (low / 10) | 0;
      buf[i] = 48 + low - q * 10;
      low = q;
    }
    low = high;
  }
  for (; i >= at; i--) {
    const q = (low / 10) | 0;
    buf[i] = 48 + low - q * 10;
    low = q;
  }
  return at + count;
}

/**
 * Any other number as ioredis writes one (its `toArg`): a whole number beyond 2^53 in full, as
 * BigInt writes it (String() would write 1e+21), else as String() writes it.
 */
function numberText(n: number): string {
  return Number.isInteger(n) && !Number.isSafeInteger(n) ? BigInt(n).toString() : String(n);
}

/** The bytes of one argument's text (UTF-8), or of its digits (a number). */
function argSize(arg: string | number): number {
  if (typeof arg === 'string') return arg.length === 0 ? 0 : Buffer.byteLength(arg);
  return wholeDigits(arg) || numberText(arg).length;
}

/** The bytes an argument of `size` bytes takes in a command: `$size\r\n`, the argument, `\r\n`. */
function framed(size: number): number {
  return 1 + digits(size) + 2 + size + 2;
}

/** Writes an argument argSize measured as `size` bytes; returns where it ends. */
function writeArg(buf: Buffer, at: number, arg: string | number, size: number): number {
  at = writeHeader(buf, at, DOLLAR, size);
  if (typeof arg === 'string') {
    // No length or encoding: the buffer was sized to hold the text whole, so write() writes all of
    // it (UTF-8, its default); its checks of the two cost ~10% of an ack's encoding.
    if (size > 0) at += buf.write(arg, at);
  } else if (wholeDigits(arg) > 0) at = writeWhole(buf, at, arg, size);
  else at += buf.write(numberText(arg), at, 'latin1');
  buf[at] = CR;
  buf[at + 1] = LF;
  return at + 2;
}

/**
 * Sends `name` (fcall, evalsha, eval) with its keys and arguments as a PackedCommand, as ioredis
 * sends a command when auto-pipelining is off: written at once, not at the end of the tick in a
 * pipeline (a claim or an ack is one call a tick anyway). `bytes`: its reply's strings left as
 * Buffers (ioredis otherwise converts each, and copies every array on the way).
 */
export function sendPacked(
  client: Client,
  name: string,
  what: string,
  keys: readonly string[],
  args: readonly (string | number)[],
  bytes = false,
): Promise<unknown> {
  // A reply error's `command.args` (ioredis) shows the name and keys, not the rows.
  const command = new PackedCommand(name, [what, keys.length, ...keys], args, {
    replyEncoding: bytes ? undefined : 'utf8',
    keyPrefix: client.options.keyPrefix,
    errorStack: client.options.showFriendlyErrorStack ? new Error() : undefined,
  });
  return client.sendCommand(command) as Promise<unknown>;
}

/**
 * One PackedCommand kept for the life of the process, made as sendPacked makes them: V8 holds
 * the maps a class's instances pass through only weakly, and with no command alive at a full GC
 * (a worker between bursts) the map died and the optimized code of the claim and ack paths built
 * for it was thrown away ("weak objects" in --trace-deopt) and compiled again at the next call.
 * Exported so that it is a binding of the module, alive as long as the module is.
 */
export const KEPT_COMMAND = new PackedCommand('evalsha', ['', 0], [], { replyEncoding: undefined, keyPrefix: undefined, errorStack: undefined });
