/**
 * A job's score in a queue's scheduled set, whichever form its member has (wire.ts
 * SCHEDULED_MEMBER): tests that look at the set itself find a job by id through this.
 */
import type { Redis } from 'ioredis';
import { scheduledMemberId } from '../../src/store/zset-order.js';

export async function scheduledScore(client: Redis, key: string, id: string): Promise<number | null> {
  const flat = await client.zrange(key, '0', '-1', 'WITHSCORES');
  for (let i = 0; i < flat.length; i += 2) if (scheduledMemberId(flat[i]!) === id) return Number(flat[i + 1]);
  return null;
}

/** The ids of a scheduled set, in its order. */
export async function scheduledIds(client: Redis, key: string): Promise<string[]> {
  return (await client.zrange(key, '0', '-1')).map(scheduledMemberId);
}
