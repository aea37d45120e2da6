/**
 * The event feed of a sharded queue: every shard's stream read at once, each with a blocking
 * read on a connection of its own, and handed on in entry-id order (the time each shard's
 * server wrote it; entries of different shards in the same millisecond may come in either order).
 * A cursor holds each shard's place, as `<tag>=<entry id>` pairs joined by
 * commas (tags: 'p' for the unsharded keys, the shard number otherwise); a shard the cursor
 * does not name is read from its start, so shards added by a reshard are followed whole.
 */
import { ValidationError } from '../../errors.js';
import type { EventReader, StreamEvent } from '../store.js';

export const SHARDED_CURSOR = /^[p0-9]+=\d+-\d+(,[p0-9]+=\d+-\d+)*$/;

function entryOrder(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am - bm || as - bs;
}

function parsePlaces(cursor: string): Map<string, string> {
  if (!SHARDED_CURSOR.test(cursor)) throw new ValidationError('after', `must be '$', '0' or a cursor this queue's feed returned (got ${cursor})`);
  return new Map(cursor.split(',').map((p) => p.split('=') as [string, string]));
}

function formatPlaces(places: Map<string, string>): string {
  return [...places].map(([t, c]) => `${t}=${c}`).join(',');
}

/**
 * A shard to read: `closed` when it takes no more entries (a retired shard that left the layout
 * once it was empty: its stream still holds what happened there), read without blocking until it
 * answers empty, and never waited on.
 */
export interface EventShard {
  tag: string;
  reader: EventReader;
  closed?: boolean;
}

export function mergedEventReader(shards: EventShard[]): EventReader {
  /** Per shard: entries read ahead of what was handed on, and the read under way. */
  const ahead = new Map<string, StreamEvent[]>(shards.map((s) => [s.tag, []]));
  const pending = new Map<string, Promise<void>>();
  /** Closed shards read to their end: nothing more can come from them. */
  const finished = new Set<string>();
  const live = shards.filter((s) => !s.closed);
  let failure: unknown;

  function start(tag: string, reader: EventReader, after: string, count: number, blockMs: number): void {
    if (pending.has(tag) || finished.has(tag)) return;
    const closed = shards.some((s) => s.tag === tag && s.closed);
    const read = reader
      .read(after, count, blockMs)
      .then(
        (events) => {
          if (closed && events.length === 0) finished.add(tag);
          ahead.get(tag)!.push(...events);
        },
        (err) => {
          failure ??= err;
        },
      )
      .finally(() => pending.delete(tag));
    pending.set(tag, read);
  }

  return {
    async lastCursor() {
      const last = await Promise.all(shards.map(async (s) => [s.tag, await s.reader.lastCursor()] as const));
      return formatPlaces(new Map(last));
    },
    async read(cursor, count, blockMs) {
      const places = cursor === '0' ? new Map<string, string>() : parsePlaces(cursor);
      const after = (tag: string) => places.get(tag) ?? '0-0';
      // Entries at or before the cursor were handed on already.
      for (const [tag, list] of ahead)
        ahead.set(
          tag,
          list.filter((e) => entryOrder(e.cursor, after(tag)) > 0),
        );
      const buffered = () => [...ahead.values()].some((l) => l.length > 0);
      const from = (tag: string) => ahead.get(tag)!.at(-1)?.cursor ?? after(tag);
      if (!buffered()) {
        // Catch up first: every shard with no read under way says, without waiting, what it
        // holds, and all of them answer before anything is handed on, so a backlog comes out
        // in time order. (A shard whose blocking read is still under way had nothing new when
        // Redis took that read, and answers it the moment something comes.)
        const fresh = shards.filter((s) => !pending.has(s.tag));
        for (const s of fresh) start(s.tag, s.reader, from(s.tag), count, 0);
        await Promise.all(fresh.map((s) => pending.get(s.tag)));
      }
      if (!buffered() && failure === undefined) {
        for (const s of live) start(s.tag, s.reader, from(s.tag), count, blockMs);
        // The first shard with news ends the wait; the others' reads stay under way for next time.
        await Promise.race([
          Promise.all(pending.values()),
          ...[...pending.values()].map((p) => p.then(() => (buffered() ? undefined : new Promise(() => {})))),
        ]);
        // Replies that reached this process in the same turn as the first are taken too: when
        // two shards' entries were written moments apart, the earlier one's reply may be read
        // off its socket just after the later one's, and would otherwise be handed on second.
        await new Promise((r) => setImmediate(r));
      }
      for (const [tag, list] of ahead)
        ahead.set(
          tag,
          list.filter((e) => entryOrder(e.cursor, after(tag)) > 0),
        );
      if (failure !== undefined) {
        const err = failure;
        failure = undefined;
        throw err;
      }
      const merged = shards.flatMap((s) => ahead.get(s.tag)!.map((e) => ({ tag: s.tag, e })));
      merged.sort((a, b) => entryOrder(a.e.cursor, b.e.cursor));
      const out: StreamEvent[] = [];
      for (const { tag, e } of merged.slice(0, count)) {
        places.set(tag, e.cursor);
        ahead.get(tag)!.shift();
        out.push({ ...e, cursor: formatPlaces(places) });
      }
      return out;
    },
    async close() {
      await Promise.all(shards.map((s) => s.reader.close()));
    },
  };
}
