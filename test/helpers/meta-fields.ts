/** A queue's meta fields as stored (null when absent): the marks and counts the scripts keep. */
import type { Redis } from 'ioredis';
import { queueKeys } from '../../src/store/redis/keys.js';

export async function metaFields(client: Redis, queue: string, ...names: string[]): Promise<(string | null)[]> {
  return client.hmget(queueKeys('dq', queue).meta, ...names);
}
