/**
 * Turns the user's `connection` option into ioredis clients. A client the user passed in stays
 * theirs: delayq duplicates it for extra connections and never closes the original.
 */
import { Redis, type RedisOptions } from 'ioredis';

export type RedisConnection = string | Redis | RedisOptions;

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface OwnedClient {
  client: Redis;
  /** True when delayq created the client and must close it. */
  owned: boolean;
}

/**
 * Options for connections delayq opens. `maxRetriesPerRequest: null` keeps commands queued
 * through an outage instead of failing them after a few reconnects: a worker should carry on
 * when Redis comes back, not surface errors for every command sent while it was away.
 */
function ownOptions(extra: RedisOptions): RedisOptions {
  return { maxRetriesPerRequest: null, enableAutoPipelining: true, ...extra };
}

/**
 * Connection errors reach callers as rejected commands (and a Worker's 'error' event); without
 * a listener ioredis would also print every reconnect attempt to the console.
 */
function quiet(client: Redis): Redis {
  client.on('error', () => {});
  return client;
}

export function openClient(connection: RedisConnection | undefined, extra: RedisOptions = {}): OwnedClient {
  if (connection instanceof Redis) return { client: connection, owned: false };
  if (connection === undefined || typeof connection === 'string') {
    const url = connection ?? process.env.REDIS_URL ?? DEFAULT_REDIS_URL;
    return { client: quiet(new Redis(url, ownOptions(extra))), owned: true };
  }
  return { client: quiet(new Redis(ownOptions({ ...connection, ...extra }))), owned: true };
}

/** A second connection to the same server, e.g. for pub/sub. Always owned by delayq. */
export function duplicateClient(client: Redis, extra: RedisOptions = {}): Redis {
  return quiet(client.duplicate(ownOptions(extra)));
}
