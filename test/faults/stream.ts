/** Reads a queue's event stream straight from Redis (the documented layout), for fault checks. */
import type { Redis } from 'ioredis';

export interface Entry {
  event: string;
  id: string;
  fields: Record<string, string>;
}

export async function readStream(client: Redis, queue: string, prefix = 'dq'): Promise<Entry[]> {
  const raw = (await client.xrange(`${prefix}:{${queue}}:events`, '-', '+')) as [string, string[]][];
  return raw.map(([, flat]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i < flat.length; i += 2) f[flat[i]!] = flat[i + 1]!;
    const { event = '', id = '', ...fields } = f;
    return { event, id, fields };
  });
}

/** How many times the store recorded each job as completed (acked with its live token). */
export function completions(entries: Entry[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of entries) if (e.event === 'completed') out.set(e.id, (out.get(e.id) ?? 0) + 1);
  return out;
}
