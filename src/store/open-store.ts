/**
 * Picks the store for a connection option: the one passed in, the process's embedded store for
 * `memory://[name]`, or a Redis store of our own. With no connection given, `REDIS_URL` decides
 * (so `REDIS_URL=memory://` runs an app on the embedded store without code changes).
 */
import { ValidationError } from '../errors.js';
import type { ConnectionOptions } from '../options.js';
import { MemoryStore } from './memory/memory-store.js';
import { RedisStore } from './redis/redis-store.js';
import { ShardedStore } from './sharded/sharded-store.js';

const MEMORY_URL = /^memory:\/\/([A-Za-z0-9_.-]*)\/?$/;

/** Timeouts for a Redis store opened here; unset, calls wait through outages (workers, schedulers). */
export interface StoreTimeouts {
  connectTimeoutMs?: number | undefined;
  commandTimeoutMs?: number | undefined;
  /** Fail a call at the first failed connection attempt (RedisStoreOptions.failFast). */
  failFast?: boolean | undefined;
}

/**
 * Every store comes wrapped in the sharding view (sharded/sharded-store.ts), which passes an
 * unsharded queue's calls straight through; a store given by the caller gets one shared view.
 */
export function openStore(given: ConnectionOptions | null | undefined, timeouts: StoreTimeouts = {}): { store: ShardedStore; owned: boolean } {
  const opts = given ?? {};
  if (opts.store) return { store: ShardedStore.over(opts.store), owned: false };
  // An empty REDIS_URL (common in CI templates) counts as unset.
  const fromEnv = opts.connection === undefined && Boolean(process.env.REDIS_URL);
  const url = typeof opts.connection === 'string' ? opts.connection : fromEnv ? process.env.REDIS_URL : undefined;
  const field = fromEnv ? 'REDIS_URL' : 'connection';
  if (url !== undefined && url.startsWith('memory:')) {
    const m = MEMORY_URL.exec(url);
    if (!m) throw new ValidationError(field, `must be memory:// or memory://<name> with a name of A-Z a-z 0-9 _ . - (got ${JSON.stringify(url)})`);
    // Shared by every queue and worker of the process that names it; closing them keeps the data.
    return { store: ShardedStore.over(MemoryStore.shared(m[1])), owned: false };
  }
  if (url !== undefined && !/^rediss?:\/\//.test(url)) {
    throw new ValidationError(field, `must be a redis://, rediss:// or memory:// URL (got ${JSON.stringify(url)})`);
  }
  return { store: new ShardedStore(new RedisStore({ connection: url ?? opts.connection, prefix: opts.prefix, ...timeouts })), owned: true };
}
