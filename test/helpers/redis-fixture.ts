/**
 * The set-up most Redis test files share: one redis-server for the file, a client to read the
 * documented layout, and whatever the tests open closed before the server stops.
 */
import { after, before } from 'node:test';
import type { Redis } from 'ioredis';
import { startRedis, type RedisServer } from './redis-server.js';

export interface RedisFixture {
  readonly redis: RedisServer;
  readonly client: Redis;
  /** Closes `x` after the file's tests, before the server stops. */
  track<T extends { close(): Promise<void> }>(x: T): T;
}

export function useRedis(): RedisFixture {
  let redis: RedisServer | undefined;
  let client: Redis | undefined;
  const open: { close(): Promise<void> }[] = [];
  before(async () => {
    redis = await startRedis();
    client = redis.client();
  });
  after(async () => {
    await Promise.all(open.map((o) => o.close().catch(() => {})));
    await redis?.stop();
  });
  return {
    get redis() {
      return redis!;
    },
    get client() {
      return client!;
    },
    track(x) {
      open.push(x);
      return x;
    },
  };
}
