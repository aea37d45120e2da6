/**
 * Every key of a queue (request memos included) and the registry, as DUMP bytes: tests that a
 * refused call wrote nothing compare two of these.
 */
import type { Redis } from 'ioredis';

export async function queueDump(client: Redis, q: string): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const key of [...(await client.keys(`dq:{${q}}:*`)), 'dq:queues'].sort()) {
    const dump = await client.dumpBuffer(key);
    out[key] = dump === null ? null : dump.toString('hex');
  }
  return out;
}
