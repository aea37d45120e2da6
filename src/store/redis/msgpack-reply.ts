/**
 * A script reply that comes as one MessagePack bulk string (wire.ts PACKED_REPLY: claim and
 * complete with `packed` = 1, which end in Redis's `cmsgpack.pack(out)`), read back into the
 * array the plain reply would have been: strings as Buffers (as the `bytes` calls get them from
 * ioredis) or, where `BytesAt` does not name them, as text; whole numbers as numbers.
 *
 * Why our own reader and not a MessagePack library: it reads one shape (an array of strings and
 * numbers) straight into that array, strings as views of the reply's bytes, with no object per
 * value; and it is why the packed form exists at all. ioredis 6's RESP decoder spent ~1.9 µs of
 * the worker's CPU per claimed job on the five elements of a job, this ~0.45 (one bulk string
 * and this loop; 100-job claims, bench notes in docs/benchmarks.md).
 *
 * Only what `cmsgpack.pack` writes for such a table is read: fixarray/array16/array32,
 * fixstr/str8/str16/str32 (and bin8/16/32), positive and negative fixint, uint8-64, int8-64,
 * float32/64, nil. A number that is not whole is cut toward zero, as Redis turns a Lua number
 * into an integer reply; a map (a Lua table with holes), a nested array or anything cut short is
 * refused with a StoreError, never read half.
 */
import { StoreError } from '../../errors.js';

/**
 * Which strings of a reply stay bytes: those at `first + k·size + at` (a claim's bodies, read as
 * bytes: their lengths count bytes). The others are made strings (UTF-8) as they are read: no
 * Buffer view is made for them only to be turned into a string.
 */
export interface BytesAt {
  readonly first: number;
  readonly size: number;
  readonly at: number;
}

/** Every string of a reply as text (add's: codes, states, ids). */
export const NO_BYTES: BytesAt = { first: Number.POSITIVE_INFINITY, size: 1, at: 0 };

/**
 * The reply array of a packed reply `buf`; its strings are Buffers, or (with `bytesAt`) only those
 * it names. With `ends` as well, those are left in `buf` instead: each is its start offset there
 * (a number) in the array, and its end is `ends[k]` for the k-th of them (`ends` is written from
 * 0, never shortened: one array can serve every reply). For a claim's bodies, read from the
 * reply's bytes in place: a Buffer view per body was ~91 B and ~40 ns of each job
 * (bench/worker-alloc.ts).
 */
export function unpackReply(buf: Buffer, bytesAt?: BytesAt, ends?: number[]): unknown[] {
  const r = reader;
  r.buf = buf;
  r.at = 0;
  r.ends = ends;
  r.ended = 0;
  try {
    const n = r.arrayHeader();
    const out = new Array<unknown>(n);
    if (!bytesAt) {
      for (let i = 0; i < n; i++) out[i] = r.value(true);
    } else {
      const { first, size, at } = bytesAt;
      for (let i = 0; i < n; i++) out[i] = r.value(i >= first && (i - first) % size === at);
    }
    if (r.at !== buf.length) throw new StoreError(`packed reply: ${buf.length - r.at} bytes after its array`);
    return out;
  } finally {
    // The reply is not kept alive by the reader until the next one.
    r.buf = NO_REPLY;
    r.ends = undefined;
  }
}

/** A reply asked for packed: unpacked when it is the packed string, else (already an array) as it is. */
export function unpacked(reply: unknown, bytesAt?: BytesAt, ends?: number[]): unknown[] {
  return reply instanceof Buffer ? unpackReply(reply, bytesAt, ends) : (reply as unknown[]);
}

const NO_REPLY = Buffer.alloc(0);

class Reader {
  at = 0;
  buf: Buffer = NO_REPLY;
  /** Where the strings read as bytes end, when they are left in `buf` (unpackReply's `ends`). */
  ends: number[] | undefined = undefined;
  /** Strings of `ends` read so far. */
  ended = 0;

  #need(n: number): void {
    if (this.at + n > this.buf.length) throw new StoreError('packed reply: cut short');
  }

  arrayHeader(): number {
    this.#need(1);
    const b = this.buf[this.at++]!;
    if (b >= 0x90 && b <= 0x9f) return b - 0x90;
    if (b === 0xdc) return this.#uint(2);
    if (b === 0xdd) return this.#uint(4);
    throw new StoreError(`packed reply: not an array (type byte 0x${b.toString(16)})`);
  }

  /** The next value; a string as a Buffer when `bytes`, else as text. */
  value(bytes: boolean): unknown {
    this.#need(1);
    const b = this.buf[this.at++]!;
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if (b >= 0xa0 && b <= 0xbf) return this.#string(b - 0xa0, bytes);
    switch (b) {
      case 0xd9:
      case 0xc4:
        return this.#string(this.#uint(1), bytes);
      case 0xda:
      case 0xc5:
        return this.#string(this.#uint(2), bytes);
      case 0xdb:
      case 0xc6:
        return this.#string(this.#uint(4), bytes);
      case 0xcc:
        return this.#uint(1);
      case 0xcd:
        return this.#uint(2);
      case 0xce:
        return this.#uint(4);
      case 0xcf:
        return this.#uint(8);
      case 0xd0:
        return this.#int(1);
      case 0xd1:
        return this.#int(2);
      case 0xd2:
        return this.#int(4);
      case 0xd3:
        return this.#int(8);
      case 0xca:
        this.#need(4);
        this.at += 4;
        return Math.trunc(this.buf.readFloatBE(this.at - 4));
      case 0xcb:
        this.#need(8);
        this.at += 8;
        return Math.trunc(this.buf.readDoubleBE(this.at - 8));
      case 0xc0:
        return null;
      default:
        throw new StoreError(`packed reply: a value of type byte 0x${b.toString(16)} where a string or number belongs`);
    }
  }

  #string(n: number, bytes: boolean): Buffer | string | number {
    this.#need(n);
    this.at += n;
    if (!bytes) return this.buf.toString('utf8', this.at - n, this.at);
    if (this.ends === undefined) return this.buf.subarray(this.at - n, this.at);
    this.ends[this.ended++] = this.at;
    return this.at - n;
  }

  #uint(n: number): number {
    this.#need(n);
    const { buf, at } = this;
    this.at += n;
    if (n === 1) return buf[at]!;
    if (n === 2) return buf.readUInt16BE(at);
    if (n === 4) return buf.readUInt32BE(at);
    return buf.readUInt32BE(at) * 0x1_0000_0000 + buf.readUInt32BE(at + 4);
  }

  #int(n: number): number {
    this.#need(n);
    const { buf, at } = this;
    this.at += n;
    if (n === 1) return buf.readInt8(at);
    if (n === 2) return buf.readInt16BE(at);
    if (n === 4) return buf.readInt32BE(at);
    return buf.readInt32BE(at) * 0x1_0000_0000 + buf.readUInt32BE(at + 4);
  }
}

/**
 * The one Reader, reused by every unpackReply (each reads its reply to the end, synchronously).
 * Not one per reply: V8 holds the map of a class's instances only weakly, and with no Reader
 * alive at a full GC (a worker between bursts) the map died and the reader's optimized code was
 * thrown away ("weak objects" in --trace-deopt) and compiled again at the next claim.
 */
const reader = new Reader();
