/**
 * "Another process did X", as a one-line test: simulated OS processes on one store. Each process
 * has a store of its own (its own connection, its own shard layout cache, its own registry
 * cache), as two processes of an app would; every Queue, Worker and Scheduler a process makes
 * shares that process's store, as the objects of one process sharing a store do.
 *
 *   const world = await startWorld('redis');            // 'memory', 'redis' or 'cluster'
 *   const [a, b] = [world.process(), world.process()];
 *   const q = a.queue<number>(name, { shards: 3 });
 *   await q.add(1);
 *   await b.obliterate(name);                           // the other process
 *   await q.add(2);                                     // a's caches are stale now
 *
 * Kinds: the memory store (one MemoryStore is "the server"; each process views it through a
 * ShardedStore of its own, as its layout cache is the sharding view's), a real redis-server, and
 * a real local Redis Cluster of 3 masters. Everything a world opens is closed by world.stop().
 */
import { after, afterEach, before } from 'node:test';
import { Redis } from 'ioredis';
import {
  listQueues,
  MemoryStore,
  Queue,
  type QueueOptions,
  RedisStore,
  Scheduler,
  ShardedStore,
  type Store,
  Worker,
  type WorkerOptions,
} from '../../src/index.js';
import type { Handler } from '../../src/worker.js';
import { type RedisCluster, startCluster } from './redis-cluster.js';
import { type RedisServer, startRedis } from './redis-server.js';

export type WorldKind = 'memory' | 'redis' | 'cluster';

export interface SimProcess {
  /** This process's store (its caches): every object below shares it. */
  readonly store: ShardedStore;
  queue<T = unknown>(name: string, opts?: Omit<QueueOptions, 'connection' | 'store'>): Queue<T>;
  /** A worker (its 'error' events are collected in `errors`, so none is left unheard). */
  worker<T = unknown>(name: string, handler: Handler<T>, opts?: Omit<WorkerOptions<T>, 'connection' | 'store'>): Worker<T>;
  scheduler(name: string): Scheduler;
  /** What this process's workers reported on 'error'. */
  readonly errors: Error[];
  // One-liners for "this process did X":
  obliterate(name: string): Promise<void>;
  reshard(name: string, shards: number): Promise<void>;
  pause(name: string): Promise<void>;
  resume(name: string): Promise<void>;
  setRetention(name: string, rules: Parameters<Queue['setRetention']>[0]): Promise<void>;
  /** The registry as this process sees it (`listQueues`, `delayq queues`, the dashboard overview). */
  listQueues(): Promise<string[]>;
  close(): Promise<void>;
}

export interface World {
  readonly kind: WorldKind;
  /** A new process on this world's server. */
  process(): SimProcess;
  /** Every key of a queue (its own and every shard's), for checks of what is left; undefined on the memory store. */
  keysOf(queue: string): Promise<string[] | undefined>;
  /** A raw client on the node that holds `key` (for seeding what a crash or an old version left). */
  nodeClient(key: string): Promise<Redis | undefined>;
  stop(): Promise<void>;
}

export async function startWorld(kind: WorldKind): Promise<World> {
  let memory: MemoryStore | undefined;
  let redis: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  if (kind === 'memory') memory = new MemoryStore();
  else if (kind === 'redis') redis = await startRedis();
  else cluster = await startCluster(3);
  const processes = new Set<SimProcess>();
  const raw: Redis[] = [];

  const openInner = (): { store: ShardedStore } => {
    if (memory) return { store: new ShardedStore(memory, false) };
    const connection = redis ? redis.url : { cluster: cluster!.seeds };
    return { store: new ShardedStore(new RedisStore({ connection })) };
  };

  const world: World = {
    kind,
    process() {
      const { store } = openInner();
      const open: { close(): Promise<void> }[] = [];
      const errors: Error[] = [];
      const track = <X extends { close(): Promise<void> }>(x: X): X => {
        open.push(x);
        return x;
      };
      const admin = (name: string) => track(new Queue(name, { store }));
      let closing: Promise<void> | undefined;
      const p: SimProcess = {
        store,
        errors,
        queue: (name, opts = {}) => track(new Queue(name, { ...opts, store })),
        worker<T>(name: string, handler: Handler<T>, opts: Omit<WorkerOptions<T>, 'connection' | 'store'> = {}) {
          const w = new Worker<T>(name, handler, { concurrency: 10, ...opts, store });
          w.on('error', (err) => errors.push(err));
          return track(w);
        },
        scheduler: (name) => track(new Scheduler(name, { store })),
        async obliterate(name) {
          const r = await admin(name).obliterate({ force: true });
          if (!r.removed) throw new Error(`obliterate ${name}: refused`);
        },
        async reshard(name, shards) {
          await admin(name).reshard(shards);
        },
        async pause(name) {
          await admin(name).pause();
        },
        async resume(name) {
          await admin(name).resume();
        },
        async setRetention(name, rules) {
          await admin(name).setRetention(rules);
        },
        async listQueues() {
          return (await listQueues({ store })).map((q) => q.name);
        },
        close() {
          processes.delete(p);
          // Workers and schedulers first (they hand jobs back through the store), then the store.
          closing ??= Promise.all(open.map((o) => o.close().catch(() => {}))).then(() => store.close());
          return closing;
        },
      };
      processes.add(p);
      return p;
    },
    async keysOf(queue) {
      if (memory) return undefined;
      const pattern = `dq:{${queue}*`;
      const found = new Set<string>();
      const nodes = redis ? [redis.port] : (await cluster!.masters()).map((m) => m.port);
      for (const port of nodes) {
        const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
        try {
          let cursor = '0';
          do {
            const [next, keys] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
            cursor = next;
            // `{name*` also matches other queues whose names start with this one.
            for (const k of keys) if (k.startsWith(`dq:{${queue}}`) || k.startsWith(`dq:{${queue}#`)) found.add(k);
          } while (cursor !== '0');
        } finally {
          c.disconnect();
        }
      }
      return [...found].sort();
    },
    async nodeClient(key) {
      if (memory) return undefined;
      const port = redis ? redis.port : (await cluster!.nodeFor(key)).port;
      const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
      raw.push(c);
      return c;
    },
    async stop() {
      await Promise.all([...processes].map((p) => p.close()));
      for (const c of raw) c.disconnect();
      await redis?.stop();
      await cluster?.stop();
    },
  };
  return world;
}

/** The inner store of a process (the Redis or memory store under its sharding view), for a step a crash would leave half done. */
export function innerOf(p: SimProcess): Store {
  return p.store.inner;
}

/**
 * A world for the tests of one describe block: started before them, stopped after; `proc()` opens
 * a process that is closed after each test. `world()` is the world (once started).
 */
export function useWorld(kind: WorldKind): { world: () => World; proc: () => SimProcess } {
  let world: World | undefined;
  let open: SimProcess[] = [];
  before(async () => {
    world = await startWorld(kind);
  });
  after(() => world?.stop());
  afterEach(async () => {
    await Promise.all(open.map((p) => p.close()));
    open = [];
  });
  return {
    world: () => world!,
    proc: () => {
      const p = world!.process();
      open.push(p);
      return p;
    },
  };
}
