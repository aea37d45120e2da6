/** Picks the store for a connection option: the one passed in, or a Redis store of our own. */
import { ValidationError } from '../errors.js';
import type { ConnectionOptions } from '../options.js';
import { RedisStore } from './redis/redis-store.js';
import type { Store } from './store.js';

export function openStore(opts: ConnectionOptions): { store: Store; owned: boolean } {
  if (opts.store) return { store: opts.store, owned: false };
  const url = typeof opts.connection === 'string' ? opts.connection : undefined;
  if (url !== undefined && !/^rediss?:\/\//.test(url)) {
    throw new ValidationError('connection', `must be a redis:// or rediss:// URL (got ${JSON.stringify(url)})`);
  }
  return { store: new RedisStore({ connection: opts.connection, prefix: opts.prefix }), owned: true };
}
