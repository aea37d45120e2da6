/**
 * How many jobs a `jobs` or `runs` hash holds: its fields but the one that keeps it a hashtable
 * (wire.ts HASHTABLE_FIELD), which is no job.
 */
import type { Redis } from 'ioredis';
import { HASHTABLE_FIELD } from '../../src/store/redis/wire.js';

export async function jobFields(client: Redis, key: string): Promise<number> {
  const [fields, marked] = await Promise.all([client.hlen(key), client.hexists(key, HASHTABLE_FIELD)]);
  return fields - marked;
}
