/**
 * Picks the store for a connection option: the one passed in, the process's embedded store for
 * `memory://[name]`, or a Redis store of our own. With no connection given, `REDIS_URL` decides
 * (so `REDIS_URL=memory://` runs an app on the embedded store without code changes).
 */
import { ValidationError } from '../errors.js';
import { MemoryStore } from './memory/memory-store.js';
import type { RedisConnection } from './redis/connection.js';
import { RedisStore } from './redis/redis-store.js';
import type { ShardAdmin } from './shard-admin.js';
import { ShardedStore } from './sharded/sharded-store.js';
import type { Store } from './store.js';

const MEMORY_URL = /^memory:\/\/([A-Za-z0-9_.-]*)\/?$/;

/**
 * Where a store comes from: the store part of ConnectionOptions (options.ts), declared here so
 * that the store layer never depends on the options above it.
 */
export interface StoreSource {
  connection?: RedisConnection | undefined;
  prefix?: string | undefined;
  store?: Store | undefined;
}

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
 * `shards` is that same view, seen as the shard admin a Queue or Worker needs beside the Store.
 */
export function openStore(given: StoreSource | null | undefined, timeouts: StoreTimeouts = {}): { store: Store; shards: ShardAdmin; owned: boolean } {
  const opts = given ?? {};
  if (opts.store) return viewOf(ShardedStore.over(opts.store), false);
  // An empty REDIS_URL (common in CI templates) counts as unset.
  const fromEnv = opts.connection === undefined && Boolean(process.env.REDIS_URL);
  const url = typeof opts.connection === 'string' ? opts.connection : fromEnv ? process.env.REDIS_URL : undefined;
  const field = fromEnv ? 'REDIS_URL' : 'connection';
  if (url !== undefined && url.startsWith('memory:')) {
    const m = MEMORY_URL.exec(url);
    if (!m) throw new ValidationError(field, `must be memory:// or memory://<name> with a name of A-Z a-z 0-9 _ . - (got ${JSON.stringify(url)})`);
    // Shared by every queue and worker of the process that names it; closing them keeps the data.
    return viewOf(ShardedStore.over(MemoryStore.shared(m[1])), false);
  }
  if (url !== undefined && !/^rediss?:\/\//.test(url)) {
    throw new ValidationError(field, `must be a redis://, rediss:// or memory:// URL (got ${JSON.stringify(url)})`);
  }
  return viewOf(new ShardedStore(new RedisStore({ connection: url ?? opts.connection, prefix: opts.prefix, ...timeouts })), true);
}

function viewOf(view: ShardedStore, owned: boolean): { store: Store; shards: ShardAdmin; owned: boolean } {
  return { store: view, shards: view, owned };
}
