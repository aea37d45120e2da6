/**
 * A reader of a queue's event stream (XREAD), on a connection of its own: XREAD BLOCK holds the
 * connection it waits on.
 */
import type { EventReader, StreamEvent } from '../store.js';
import { duplicateClient, type Client } from './connection.js';

/** Opens a reader of `stream`; its connection is in `open` (the store's extra connections) until closed. */
export function openEventReader(client: Client, stream: string, open: Set<Client>): EventReader {
  // XREAD BLOCK holds its connection, so each reader has one of its own.
  const conn = duplicateClient(client, { enableAutoPipelining: false });
  open.add(conn);
  return {
    lastCursor: async () => {
      const last = (await conn.xrevrange(stream, '+', '-', 'COUNT', 1)) as [string, string[]][];
      return last[0]?.[0] ?? '0-0';
    },
    read: async (cursor, count, blockMs) => {
      // BLOCK 0 would wait forever: 0 here means do not wait.
      const reply = (await (blockMs > 0
        ? conn.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', stream, cursor)
        : conn.xread('COUNT', count, 'STREAMS', stream, cursor))) as [string, [string, string[]][]][] | null;
      const out: StreamEvent[] = [];
      for (const [entryId, flat] of reply?.[0]?.[1] ?? []) {
        const fields: Record<string, string> = {};
        for (let i = 0; i < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
        const { event = '', id = '', ...rest } = fields;
        out.push({ cursor: entryId, event, id, fields: rest });
      }
      return out;
    },
    close: async () => {
      open.delete(conn);
      conn.disconnect();
    },
  };
}
