/**
 * The conformance suite on sharded queues (3 shards): the memory store and a standalone
 * redis-server. A sharded queue must behave as one queue; test/redis/cluster-sharded.test.ts
 * runs the same suite on a real Redis Cluster.
 */
import { MemoryStore } from '../../src/index.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { serverTimeMs } from '../helpers/wait.js';
import { conformance } from './suite.js';

let store: MemoryStore;
conformance({
  name: 'memory, 3 shards',
  async start() {
    store = new MemoryStore();
  },
  async stop() {},
  options: () => ({ store, shards: 3 }),
  now: async () => Date.now(),
});

let redis: RedisServer;
let client: ReturnType<RedisServer['client']>;
conformance({
  name: 'redis, 3 shards',
  async start() {
    redis = await startRedis();
    client = redis.client();
  },
  stop: () => redis.stop(),
  options: () => ({ connection: redis.url, shards: 3 }),
  now: () => serverTimeMs(client),
});
