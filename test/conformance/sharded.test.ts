/**
 * The conformance suite on sharded queues (3 shards): the memory store and a standalone
 * redis-server. A sharded queue must behave as one queue; test/redis/cluster-sharded.test.ts
 * runs the same suite on a real Redis Cluster.
 */
import { MemoryStore } from '../../src/index.js';
import { useRedis } from '../helpers/redis-fixture.js';
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

const fx = useRedis();
conformance({
  name: 'redis, 3 shards',
  // The file's server (useRedis) is up before the suite and stopped after it.
  async start() {},
  async stop() {},
  options: () => ({ connection: fx.redis.url, shards: 3 }),
  now: () => serverTimeMs(fx.client),
});
