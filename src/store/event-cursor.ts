/**
 * What an event feed cursor may look like, whichever store and layout wrote it: a stream entry
 * id (`1700000000000-0`, or a bare millisecond), or a sharded queue's place per shard
 * (sharded/merged-events.ts). The event feed checks a caller's cursor with this before any read,
 * so it needs to know neither how a store numbers its entries nor how shards tag their places.
 */
import { SHARDED_CURSOR } from './sharded/merged-events.js';

const ENTRY_ID = /^\d+(-\d+)?$/;

export function isEventCursor(cursor: string): boolean {
  return ENTRY_ID.test(cursor) || SHARDED_CURSOR.test(cursor);
}
