/**
 * Turns the user's `connection` option into ioredis clients. A client the user passed in stays
 * theirs: delayq duplicates it for extra connections and never closes the original.
 *
 * Why ioredis, and not node-redis or a RESP codec of our own on the claim/ack connection (issue
 * 35 item 6: a swap had to pay 1.5 µs a job): the worker's hot calls carry 50-100 jobs each, as
 * one packed command (packed-command.ts) and one MessagePack reply string (msgpack-reply.ts), so
 * the client's own work is per call, not per job. `npm run bench:worker -- --profile` puts
 * ioredis at 16 % of a dispatching worker's CPU (~0.8 µs a job of ~4.9), half of it the socket
 * writes any client makes: a client that cost nothing would save ~0.4 µs a job
 * (docs/benchmarks.md, "the client question"). ioredis also brings the Cluster, Sentinel and
 * re-send-after-reconnect behaviour every test here holds.
 */
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';

/** A Redis Cluster: its seed nodes, and ioredis cluster options (`redisOptions` reach every node). */
export interface ClusterConnection {
  cluster: ClusterNode[];
  options?: ClusterOptions;
}

export type RedisConnection = string | Redis | Cluster | RedisOptions | ClusterConnection;

/** A connection delayq talks through: one server (standalone or behind Sentinel) or a cluster. */
export type Client = Redis | Cluster;

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface OwnedClient {
  client: Client;
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
function quiet<C extends Client>(client: C): C {
  client.on('error', () => {});
  return client;
}

function isClusterConnection(c: unknown): c is ClusterConnection {
  return typeof c === 'object' && c !== null && Array.isArray((c as ClusterConnection).cluster);
}

export function openClient(connection: RedisConnection | undefined, extra: RedisOptions = {}): OwnedClient {
  if (connection instanceof Redis || connection instanceof Cluster) return { client: connection, owned: false };
  if (isClusterConnection(connection)) {
    const o = connection.options ?? {};
    // Blocking and pub/sub connections must survive outages the same way on every node.
    const cluster = new Cluster(connection.cluster, {
      // Through a failover a command retries every retryDelayOnFailover ms, up to
      // maxRedirections times, before it fails; ioredis's 100 ms × 16 runs out before a replica
      // is promoted (node timeout + ~1 s), so a worker would see errors instead of a pause.
      // 300 ms × 64 (~19 s) rides through one (measured in test/redis/cluster-harness.test.ts).
      retryDelayOnFailover: 300,
      maxRedirections: 64,
      ...o,
      enableAutoPipelining: extra.enableAutoPipelining ?? o.enableAutoPipelining ?? true,
      redisOptions: { maxRetriesPerRequest: null, ...o.redisOptions },
    });
    return { client: quiet(cluster), owned: true };
  }
  if (connection === undefined || typeof connection === 'string') {
    const url = connection ?? (process.env.REDIS_URL || DEFAULT_REDIS_URL);
    return { client: quiet(new Redis(url, ownOptions(extra))), owned: true };
  }
  return { client: quiet(new Redis(ownOptions({ ...(connection as RedisOptions), ...extra }))), owned: true };
}

/** A second connection to the same server or cluster, e.g. for pub/sub. Always owned by delayq. */
export function duplicateClient(client: Client, extra: RedisOptions = {}): Client {
  if (client instanceof Cluster) {
    return quiet(client.duplicate(undefined, { enableAutoPipelining: extra.enableAutoPipelining ?? true }));
  }
  return quiet(client.duplicate(ownOptions(extra)));
}
