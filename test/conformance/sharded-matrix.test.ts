/**
 * The sharded matrix: every conformance suite (the queue, groups, rate limits and debounce) on
 * sharded queues caught in a live reshard, with a stale second process, on the memory store and a
 * real redis-server. Each queue starts on 3 shards; the first add that writes jobs is followed at
 * once by a reshard to 2, so the jobs of that add (often all of a test's jobs) drain from retired
 * shards for the rest of the test while every later add goes to the new ones. Every Queue and
 * Worker has a sharding view of its own (its own layout cache, as a process of its own has): the
 * worker started before the reshard claims by a stale layout until it follows the change. A
 * queue-level promise (a count, a listing, a limit, verify) is checked over the whole queue.
 */
import type { NewJob, ScheduleGuard, Store, StoredAddResult } from '../../src/store/store.js';
import { MemoryStore, RedisStore, ShardedStore } from '../../src/index.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';
import { groupConformance } from './groups.js';
import { rateConformance } from './rates.js';
import { conformance, type StoreKind } from './suite.js';

/** The queues whose first add was followed by a reshard, over every view of one store. */
type Resharded = Set<string>;

/** A sharding view that reshards a queue to 2 shards right after its first add that wrote jobs. */
class ReshardAfterFirstAdd extends ShardedStore {
  readonly #resharded: Resharded;
  constructor(inner: Store, resharded: Resharded) {
    super(inner, false);
    this.#resharded = resharded;
  }
  override add(queue: string, jobs: NewJob[], guard?: undefined, epoch?: string): Promise<StoredAddResult[]>;
  override add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  override async add(queue: string, jobs: NewJob[], guard?: ScheduleGuard): Promise<StoredAddResult[] | null> {
    const res = await super.add(queue, jobs, guard as never);
    if (!guard && jobs.length > 0 && !this.#resharded.has(queue)) {
      this.#resharded.add(queue);
      await this.reshard(queue, 2);
    }
    return res;
  }
}

function matrixKind(name: string, inner: () => Store, now: () => Promise<number>): StoreKind {
  const resharded: Resharded = new Set();
  return {
    name,
    async start() {},
    async stop() {},
    // A view of its own per Queue and Worker: each keeps its own layout cache.
    options: () => ({ store: new ReshardAfterFirstAdd(inner(), resharded), shards: 3 }),
    now,
    reshardsTo: 2,
  };
}

let memory: MemoryStore;
const memoryKind = matrixKind(
  'memory, 3 shards resharded to 2 while draining, stale views',
  () => memory,
  async () => Date.now(),
);
memoryKind.start = async () => {
  memory = new MemoryStore();
};
conformance(memoryKind);
groupConformance(memoryKind);
rateConformance(memoryKind);

const fx = useRedis();
let redis: RedisStore;
const redisKind = matrixKind(
  'redis, 3 shards resharded to 2 while draining, stale views',
  () => redis,
  () => serverTimeMs(fx.client),
);
redisKind.start = async () => {
  redis ??= new RedisStore({ connection: fx.redis.url });
};
redisKind.stop = async () => {};
conformance(redisKind);
groupConformance(redisKind);
rateConformance(redisKind);
