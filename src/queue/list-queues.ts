/**
 * `listQueues`: every queue under a connection's prefix with its counts, for a tool that shows
 * them all (the CLI's `queues`, a dashboard). It opens a store of its own for the call.
 */
import { DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_CONNECT_TIMEOUT_MS, type ConnectionOptions } from '../options.js';
import { openStore } from '../store/open-store.js';
import type { QueueStats } from '../types.js';

/**
 * The queues under a connection's prefix (every queue that was ever added to or had a worker,
 * until obliterated), with their counts. One registry read plus one stats call per queue.
 */
export async function listQueues(
  opts: ConnectionOptions & { connectTimeoutMs?: number; commandTimeoutMs?: number } = {},
): Promise<{ name: string; stats: QueueStats }[]> {
  const { store, owned } = openStore(opts, {
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeoutMs: opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
  });
  try {
    const names = await store.queues();
    return await Promise.all(names.map(async (name) => ({ name, stats: await store.stats(name, 60_000) })));
  } finally {
    if (owned) await store.close();
  }
}
