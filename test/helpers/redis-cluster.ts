/**
 * Starts a real local Redis Cluster for tests: N masters (no replicas) on free loopback ports,
 * each a redis-server from startRedis() with cluster mode on, joined by `redis-cli --cluster
 * create`. Stopped (and the directories removed) by stop().
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { startRedis, type RedisServer } from './redis-server.js';

const run = promisify(execFile);

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** Seed nodes for ioredis. */
  readonly seeds: { host: string; port: number }[];
  /** A cluster client of the test's own; closed by stop(). */
  client(): Cluster;
  /** The node that owns `key`'s slot. */
  nodeFor(key: string): Promise<RedisServer>;
  stop(): Promise<void>;
}

export async function startCluster(masters = 3): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  for (let i = 0; i < masters; i++) {
    nodes.push(await startRedis({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'] }));
  }
  const seeds = nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  await run('redis-cli', ['--cluster', 'create', ...seeds.map((s) => `${s.host}:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
  // Every node must agree the cluster is up before clients route by slot.
  const deadline = Date.now() + 20_000;
  for (const n of nodes) {
    const c = new Redis({ port: n.port, host: '127.0.0.1' });
    try {
      for (;;) {
        const info = String(await c.call('CLUSTER', 'INFO'));
        if (info.includes('cluster_state:ok')) break;
        if (Date.now() > deadline) throw new Error(`cluster node ${n.port} not ok: ${info}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      c.disconnect();
    }
  }
  const clients: Cluster[] = [];
  return {
    nodes,
    seeds,
    client() {
      const c = new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: null } });
      clients.push(c);
      return c;
    },
    async nodeFor(key) {
      const probe = new Redis({ port: nodes[0]!.port, host: '127.0.0.1' });
      try {
        const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', key));
        const ranges = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
        const owner = ranges.find(([from, to]) => slot >= from && slot <= to)!;
        return nodes.find((n) => n.port === Number(owner[2][1]))!;
      } finally {
        probe.disconnect();
      }
    },
    async stop() {
      for (const c of clients) c.disconnect();
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
