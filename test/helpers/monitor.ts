/** What a Redis server runs while a test's calls run, as MONITOR sees it (commands inside scripts too). */
import type { Redis } from 'ioredis';
import { until } from './wait.js';

/** A command as MONITOR saw it: its name (upper case) and which of the keys asked about it named. */
export interface SeenCommand {
  command: string;
  keys: string[];
}

/**
 * The commands that name one of `keys` while `fn` runs, in order: an ECHO of a marker after it
 * says when MONITOR has seen everything before it.
 */
export async function commandsNaming(client: Redis, keys: readonly string[], fn: () => Promise<void>): Promise<SeenCommand[]> {
  const names = new Set(keys);
  const mon = await client.monitor();
  const seen: string[][] = [];
  mon.on('monitor', (_time: string, args: unknown[]) => seen.push(args.map(String)));
  try {
    await fn();
    const marker = `monitor-marker-${Date.now()}-${Math.random()}`;
    await client.echo(marker);
    await until(() => seen.some((a) => a[1] === marker), 'MONITOR to see the marker');
  } finally {
    mon.disconnect();
  }
  return seen.map((a) => ({ command: a[0]!.toUpperCase(), keys: a.slice(1).filter((x) => names.has(x)) })).filter((c) => c.keys.length > 0);
}
