/**
 * Tools for tests of sharded queues on a real Redis Cluster (see redis-cluster.ts): pick a
 * queue name whose shards sit on different masters, read every node's error counters, and
 * talk to one node directly.
 */
import { Redis } from 'ioredis';
import { uniqueName } from './names.js';
import type { RedisCluster } from './redis-cluster.js';

/** The hash tag of shard `i` of a queue spread by a fresh layout (shard numbers 0..n-1). */
export function shardTag(queue: string, i: number): string {
  return `${queue}#${i}`;
}

/** A plain (non-cluster) connection to one node, failing fast: for reading what that node holds. */
export function nodeClient(port: number): Redis {
  const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000, commandTimeout: 5000 });
  c.on('error', () => {});
  return c;
}

/**
 * A queue name whose `shards` shards (`dq:{name#i}:…`) each sit on a different master, and
 * (unless `baseApart` is false) whose unsharded keys `dq:{name}:…` sit on none of `avoid`.
 * Returns the name and, per shard, the port of its master.
 */
export async function spreadQueueName(
  cluster: RedisCluster,
  shards: number,
  opts: { label?: string; avoidBaseOn?: (shardPorts: number[]) => number[]; prefix?: string } = {},
): Promise<{ name: string; ports: number[]; basePort: number }> {
  const prefix = opts.prefix ?? 'dq';
  const masters = (await cluster.masters()).length;
  if (shards > masters) throw new Error(`spreadQueueName: ${shards} shards cannot sit on ${masters} masters apart`);
  for (let tries = 0; tries < 500; tries++) {
    const name = uniqueName(opts.label ?? 'sq');
    const ports: number[] = [];
    for (let i = 0; i < shards; i++) ports.push((await cluster.nodeFor(`${prefix}:{${shardTag(name, i)}}:scheduled`)).port);
    if (new Set(ports).size !== shards) continue;
    const basePort = (await cluster.nodeFor(`${prefix}:{${name}}:scheduled`)).port;
    if (opts.avoidBaseOn?.(ports).includes(basePort)) continue;
    return { name, ports, basePort };
  }
  throw new Error(`spreadQueueName: found no name with ${shards} shards on different masters in 500 tries`);
}

/** `INFO errorstats` of one node: error prefix → count (e.g. { CROSSSLOT: 2, NOSCRIPT: 5 }). */
export async function errorStats(port: number): Promise<Record<string, number>> {
  const c = nodeClient(port);
  try {
    const text = await c.info('errorstats');
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^errorstat_([^:]+):count=(\d+)/gm)) out[m[1]!] = Number(m[2]);
    return out;
  } finally {
    c.disconnect();
  }
}

/** errorStats of every live node, by port. */
export async function clusterErrorStats(cluster: RedisCluster): Promise<Map<number, Record<string, number>>> {
  const out = new Map<number, Record<string, number>>();
  for (const n of cluster.live()) out.set(n.port, await errorStats(n.port));
  return out;
}

/** What grew between two clusterErrorStats readings: `port: PREFIX +n` lines (empty when nothing did). */
export function newErrors(before: Map<number, Record<string, number>>, after: Map<number, Record<string, number>>, only?: RegExp): string[] {
  const out: string[] = [];
  for (const [port, now] of after) {
    const was = before.get(port) ?? {};
    for (const [k, v] of Object.entries(now)) {
      const grew = v - (was[k] ?? 0);
      if (grew > 0 && (!only || only.test(k))) out.push(`:${port} ${k} +${grew}`);
    }
  }
  return out;
}
