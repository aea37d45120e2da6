/**
 * The cross-process event feed: a capped Redis stream per queue that the scripts append to in
 * the same step as the state change they report, so the feed never claims something that did
 * not happen. Off by default (it costs one XADD per step); `enable` turns it on for every
 * process using the queue.
 */
import { ValidationError } from './errors.js';
import { EVENT_BATCH_MAX, EVENT_STREAM_MAX_LEN } from './limits.js';
import { isEventCursor } from './store/event-cursor.js';
import type { Store, StreamEvent } from './store/store.js';

export type { StreamEvent };

/** How long one blocking read waits before looking at the abort signal again. */
const BLOCK_MS = 1_000;
const DEFAULT_MAX_LEN = 10_000;

export interface FollowOptions {
  /** A cursor from an earlier event to resume after, or '$' (default) for new events only, or '0' for everything kept. */
  after?: string;
  /** Stops the iteration (and releases its connection). */
  signal?: AbortSignal;
  /** Entries fetched per read. @default 100 */
  batch?: number;
}

export class EventFeed {
  readonly #store: Store;
  readonly #queue: string;

  constructor(store: Store, queue: string) {
    this.#store = store;
    this.#queue = queue;
  }

  /** Turns the stream on for the queue, keeping about `maxLen` latest events (trimmed lazily by Redis). */
  async enable(opts: { maxLen?: number } = {}): Promise<boolean> {
    const maxLen = opts.maxLen ?? DEFAULT_MAX_LEN;
    if (!Number.isInteger(maxLen) || maxLen < 1 || maxLen > EVENT_STREAM_MAX_LEN) {
      throw new ValidationError('maxLen', `must be a whole number from 1 to ${EVENT_STREAM_MAX_LEN} (got ${String(maxLen)})`);
    }
    return this.#store.setEventStream(this.#queue, maxLen);
  }

  /** Turns the stream off and deletes what it held. */
  async disable(): Promise<boolean> {
    return this.#store.setEventStream(this.#queue, 0);
  }

  /** Follows the stream: yields each event as it is written, until `signal` aborts or the loop breaks. */
  async *follow(opts: FollowOptions = {}): AsyncGenerator<StreamEvent> {
    let cursor = opts.after ?? '$';
    if (typeof cursor !== 'string' || !(cursor === '$' || isEventCursor(cursor))) {
      throw new ValidationError('after', `must be '$', '0' or a cursor like '1700000000000-0' (got ${String(cursor)})`);
    }
    const batch = opts.batch ?? 100;
    if (!Number.isInteger(batch) || batch < 1 || batch > EVENT_BATCH_MAX)
      throw new ValidationError('batch', `must be a whole number from 1 to ${EVENT_BATCH_MAX} (got ${String(batch)})`);
    const reader = this.#store.eventReader(this.#queue);
    // Closing the reader's connection ends a blocked read at once, so an abort needs no wait.
    const onAbort = () => void reader.close();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // '$' is pinned to the newest entry once: read again as '$', it would skip whatever was
      // written between two reads.
      if (cursor === '$') cursor = await reader.lastCursor();
      while (!opts.signal?.aborted) {
        let events: StreamEvent[];
        try {
          events = await reader.read(cursor, batch, BLOCK_MS);
        } catch (err) {
          if (opts.signal?.aborted) return;
          throw err;
        }
        for (const e of events) {
          cursor = e.cursor;
          yield e;
          if (opts.signal?.aborted) return;
        }
      }
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      await reader.close();
    }
  }
}
