/**
 * A job's score in a queue's scheduled set, whichever form its member has (wire.ts
 * SCHEDULED_MEMBER): tests that look at the set itself find a job by id through this.
 */
import type { Redis } from 'ioredis';
import { scheduledMemberId } from '../../src/store/zset-order.js';

export async function scheduledScore(client: Redis, key: string, id: string): Promise<number | null> {
  return (await scheduledEntries(client, key)).find(([member]) => member === id)?.[1] ?? null;
}

/** A set of scheduled members (the scheduled set, or the index of its jobs with a priority) as [id, score] pairs, in its order. */
export async function scheduledEntries(client: Redis, key: string): Promise<[string, number][]> {
  const flat = await client.zrange(key, '0', '-1', 'WITHSCORES');
  const out: [string, number][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([scheduledMemberId(flat[i]!), Number(flat[i + 1])]);
  return out;
}

/** The ids of a scheduled set, in its order. */
export async function scheduledIds(client: Redis, key: string): Promise<string[]> {
  return (await client.zrange(key, '0', '-1')).map(scheduledMemberId);
}
