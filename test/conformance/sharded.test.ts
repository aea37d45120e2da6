/**
 * The conformance suite on sharded queues (3 shards): the memory store and a standalone
 * redis-server. A sharded queue must behave as one queue; test/redis/cluster-sharded.test.ts
 * runs the same suite on a real Redis Cluster.
 */
import { MemoryStore } from '../../src/index.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';
import { attemptsConformance } from './attempts.js';
import { groupConformance } from './groups.js';
import { jobControlConformance } from './job-control.js';
import { nameConformance } from './names.js';
import { flowConformance } from './flows.js';
import { historyConformance } from './history.js';
import { rateConformance } from './rates.js';
import { conformance, type StoreKind } from './suite.js';

let store: MemoryStore;
const kind1: StoreKind = {
  name: 'memory, 3 shards',
  async start() {
    store = new MemoryStore();
  },
  async stop() {},
  options: () => ({ store, shards: 3 }),
  now: async () => Date.now(),
};
conformance(kind1);
groupConformance(kind1);
rateConformance(kind1);
nameConformance(kind1);
flowConformance(kind1);
historyConformance(kind1);
jobControlConformance(kind1);
attemptsConformance(kind1);

const fx = useRedis();
const kind2: StoreKind = {
  name: 'redis, 3 shards',
  // The file's server (useRedis) is up before the suite and stopped after it.
  async start() {},
  async stop() {},
  options: () => ({ connection: fx.redis.url, shards: 3 }),
  now: () => serverTimeMs(fx.client),
};
conformance(kind2);
groupConformance(kind2);
rateConformance(kind2);
nameConformance(kind2);
flowConformance(kind2);
historyConformance(kind2);
jobControlConformance(kind2);
attemptsConformance(kind2);
