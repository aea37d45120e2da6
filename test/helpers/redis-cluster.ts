/**
 * Starts a real local Redis Cluster for tests and benchmarks: N masters, each with R replicas
 * (default 0), on free loopback ports, each a redis-server from startRedis() with cluster mode
 * on, joined by `redis-cli --cluster create … --cluster-replicas R`. Optional AOF (always,
 * everysec). Helpers kill a master (kill -9), wait for its replica to take over, restart a killed
 * node in its own directory and port (it rejoins as a replica), and run a manual CLUSTER FAILOVER.
 * Every wait has a deadline and fails with what the cluster looked like; stop() ends every
 * process and removes the directories.
 *
 * What an ioredis Cluster client needs to ride through a failover (measured in
 * test/redis/cluster-harness.test.ts, ioredis 6): after a master dies, a command for its slots
 * fails with "Connection is closed", waits `retryDelayOnFailover` (100 ms), refreshes the slots
 * and tries again, up to `maxRedirections` (16) times. Until the replica is promoted (about
 * node-timeout + 1 s) every cluster view still names the dead master, so the retries run out in
 * ~2 s and the command rejects with "Too many Cluster redirections". A client that must resume
 * without errors needs `retryDelayOnFailover × maxRedirections` above the failover time (e.g.
 * 300 ms × 32 ≈ 10 s for a 2 s node timeout), and `redisOptions.maxRetriesPerRequest: null` is
 * not enough on its own (cluster node connections never reconnect; the pool drops them).
 * `slotsRefreshTimeout` (1 s) bounds each CLUSTER SLOTS probe of a node that hangs rather than
 * refuses; `slotsRefreshInterval` (5 s) is the background refresh that eventually finds the
 * promoted node for a client that sends nothing. `clusterRetryStrategy` only matters when every
 * node is unreachable at once (the whole client reconnects from its seeds). `scaleReads` must
 * stay 'master' for a queue: a replica lags, and delayq's scripts write.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type ClusterOptions, Redis } from 'ioredis';
import { type RedisServer, startRedis } from './redis-server.js';

const run = promisify(execFile);

export interface ClusterStartOptions {
  /** Replicas per master (default 0). */
  replicas?: number;
  /** AOF: 'always' is `--appendonly yes --appendfsync always`; default 'no' (no AOF). */
  aof?: 'always' | 'everysec' | 'no';
  /** cluster-node-timeout (default 2000 ms): how long a node may be silent before it is failed. */
  nodeTimeoutMs?: number;
  /**
   * cluster-require-full-coverage (default true, Redis's default): with false, the masters that
   * are up keep serving their slots while another master's slots have no owner.
   */
  fullCoverage?: boolean;
}

/** One line of CLUSTER NODES. */
export interface ClusterNodeLine {
  id: string;
  port: number;
  flags: string[];
  /** The master's id, for a replica. */
  masterId?: string;
  /** Owned slot ranges, inclusive (importing/migrating markers left out). */
  slots: [number, number][];
  linkState: string;
}

export interface RedisCluster {
  /** Every node, the current process for each port (a killed one stays until restarted). */
  readonly nodes: readonly RedisServer[];
  /** Seed nodes for ioredis: every node that is running now. */
  readonly seeds: { host: string; port: number }[];
  /** The nodes that are running now. */
  live(): RedisServer[];
  /** A cluster client of the test's own, seeded from every live node; closed by stop(). */
  client(options?: ClusterOptions): Cluster;
  /** The node that owns `key`'s slot, as the live nodes see it now. */
  nodeFor(key: string): Promise<RedisServer>;
  /** The masters that own slots now, ordered by their first slot. */
  masters(): Promise<RedisServer[]>;
  /** A live replica of `master` (the first, if there are several). */
  replicaOf(master: RedisServer): Promise<RedisServer>;
  /** kill -9 a master (it must be one). Its slots are remembered for waitForFailover. */
  killMaster(node: RedisServer): Promise<void>;
  /**
   * Resolves with the promoted node once another live master owns every slot the killed master
   * had and every live node says cluster_state:ok and agrees on the new owner.
   */
  waitForFailover(oldMasterPort: number, timeoutMs?: number): Promise<RedisServer>;
  /** CLUSTER FAILOVER on `replica` (attached first), then waits until it is master and the cluster is ok. */
  manualFailover(replica: RedisServer, timeoutMs?: number): Promise<void>;
  /** Starts a killed node again in its directory and port; resolves once it has rejoined (a replica: linked up). */
  restart(node: RedisServer, timeoutMs?: number): Promise<RedisServer>;
  /** The raw CLUSTER NODES of a live node (for messages). */
  describe(): Promise<string>;
  stop(): Promise<void>;
}

/** Parses CLUSTER NODES (`<id> <ip:port@cport[,host]> <flags> <master|-> <ping> <pong> <epoch> <link> <slot>…`). */
export function parseClusterNodes(text: string): ClusterNodeLine[] {
  const out: ClusterNodeLine[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(' ');
    if (f.length < 8) continue;
    const addr = f[1]!.split('@')[0]!;
    const slots: [number, number][] = [];
    for (const s of f.slice(8)) {
      if (s.startsWith('[')) continue;
      const [a, b] = s.split('-');
      slots.push([Number(a), Number(b ?? a)]);
    }
    const node: ClusterNodeLine = { id: f[0]!, port: Number(addr.slice(addr.lastIndexOf(':') + 1)), flags: f[2]!.split(','), slots, linkState: f[7]! };
    if (f[3] !== '-') node.masterId = f[3]!;
    out.push(node);
  }
  return out;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const failed = (n: ClusterNodeLine) => n.flags.includes('fail') || n.flags.includes('fail?');
const owns = (n: ClusterNodeLine, slot: number) => n.slots.some(([a, b]) => slot >= a && slot <= b);
const infoField = (text: string, field: string) => new RegExp(`^${field}:(.*?)\\r?$`, 'm').exec(text)?.[1];

export async function startCluster(masters = 3, opts: ClusterStartOptions = {}): Promise<RedisCluster> {
  const replicas = opts.replicas ?? 0;
  const nodeTimeout = opts.nodeTimeoutMs ?? 2000;
  const aof = opts.aof ?? 'no';
  const args = [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    'nodes.conf',
    '--cluster-node-timeout',
    String(nodeTimeout),
    // A replica may always take over, however long its link was down (tests kill and restart freely).
    '--cluster-replica-validity-factor',
    '0',
    // A replica's full sync starts at once, not after the default 5 s wait for more replicas.
    '--repl-diskless-sync-delay',
    '0',
    ...(aof === 'no' ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', aof]),
    ...(opts.fullCoverage === false ? ['--cluster-require-full-coverage', 'no'] : []),
  ];
  const total = masters * (1 + replicas);
  // Current process per port, in creation order; `dead` holds the ports killed and not restarted.
  const byPort = new Map<number, RedisServer>();
  const dead = new Set<number>();
  // Every process ever started (a restarted node has two), for stop().
  const all: RedisServer[] = [];
  const admins = new Map<number, Redis>();
  const clients: Cluster[] = [];
  // What a killed master owned, for waitForFailover.
  const killed = new Map<number, { id: string; slots: [number, number][] }>();

  const live = () => [...byPort.values()].filter((n) => !dead.has(n.port));
  const admin = (port: number): Redis => {
    let c = admins.get(port);
    if (!c || c.status === 'end') {
      c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000, commandTimeout: 2000 });
      c.on('error', () => {});
      admins.set(port, c);
    }
    return c;
  };
  const dropAdmin = (port: number) => {
    admins.get(port)?.disconnect();
    admins.delete(port);
  };
  const clusterNodes = async (port: number) => parseClusterNodes(String(await admin(port).call('CLUSTER', 'NODES')));
  const clusterState = async (port: number) => infoField(String(await admin(port).call('CLUSTER', 'INFO')), 'cluster_state');
  /** CLUSTER NODES from the first live node that answers. */
  const view = async () => {
    let last: unknown;
    for (const n of live()) {
      try {
        return { port: n.port, text: String(await admin(n.port).call('CLUSTER', 'NODES')) };
      } catch (err) {
        last = err;
      }
    }
    throw new Error(`no live cluster node answers CLUSTER NODES (last error: ${String(last)})`);
  };
  const describe = async () => {
    try {
      const v = await view();
      return `CLUSTER NODES from :${v.port}:\n${v.text}`;
    } catch (err) {
      return String(err);
    }
  };
  const server = (port: number, what: string) => {
    const s = byPort.get(port);
    if (!s || dead.has(port)) throw new Error(`${what}: 127.0.0.1:${port} is not a live node of this cluster`);
    return s;
  };
  /** Polls `check` (errors count as "not yet") until it returns a value; on the deadline throws with the cluster's view. */
  const waitFor = async <T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    let lastError: unknown;
    for (;;) {
      try {
        const v = await check();
        if (v !== undefined) return v;
      } catch (err) {
        lastError = err;
      }
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}\n${await describe()}`);
      }
      await pause(50);
    }
  };
  /** Every live node says cluster_state:ok, and a replica (by its own view) is linked to its master. */
  const settled = async () => {
    for (const n of live()) {
      if ((await clusterState(n.port)) !== 'ok') return false;
      const repl = await admin(n.port).info('replication');
      if (infoField(repl, 'role') === 'slave' && infoField(repl, 'master_link_status') !== 'up') return false;
    }
    return true;
  };

  try {
    for (let i = 0; i < total; i++) {
      const s = await startRedis({ args });
      byPort.set(s.port, s);
      all.push(s);
    }
    const addrs = [...byPort.keys()].map((p) => `127.0.0.1:${p}`);
    try {
      await run('redis-cli', ['--cluster', 'create', ...addrs, '--cluster-replicas', String(replicas), '--cluster-yes'], { timeout: 30_000 });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      throw new Error(`redis-cli --cluster create failed: ${String(err)}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
    // Every node must know every other, agree the cluster is up, and every replica must be linked.
    await waitFor(`a cluster of ${masters} masters and ${masters * replicas} replicas to be up`, 30_000, async () => {
      for (const n of live()) {
        const info = String(await admin(n.port).call('CLUSTER', 'INFO'));
        if (infoField(info, 'cluster_state') !== 'ok' || Number(infoField(info, 'cluster_known_nodes')) !== total) return undefined;
      }
      const lines = await clusterNodes(live()[0]!.port);
      if (lines.filter((l) => l.flags.includes('master') && l.slots.length > 0).length !== masters) return undefined;
      if (lines.filter((l) => l.flags.includes('slave')).length !== masters * replicas) return undefined;
      return (await settled()) || undefined;
    });
  } catch (err) {
    for (const c of admins.values()) c.disconnect();
    await Promise.all(all.map((n) => n.stop()));
    throw err;
  }

  const cluster: RedisCluster = {
    get nodes() {
      return [...byPort.values()];
    },
    get seeds() {
      return live().map((n) => ({ host: '127.0.0.1', port: n.port }));
    },
    live,
    describe,
    client(options = {}) {
      const c = new Cluster(cluster.seeds, { ...options, redisOptions: { maxRetriesPerRequest: null, ...options.redisOptions } });
      clients.push(c);
      return c;
    },
    async nodeFor(key) {
      const { port } = await view();
      const slot = Number(await admin(port).call('CLUSTER', 'KEYSLOT', key));
      const owner = (await clusterNodes(port)).find((l) => l.flags.includes('master') && !failed(l) && owns(l, slot));
      if (!owner) throw new Error(`no live master owns slot ${slot} (key ${key})\n${await describe()}`);
      return server(owner.port, `the owner of ${key}`);
    },
    async masters() {
      const lines = parseClusterNodes((await view()).text).filter((l) => l.flags.includes('master') && !failed(l) && l.slots.length > 0);
      lines.sort((a, b) => a.slots[0]![0] - b.slots[0]![0]);
      return lines.map((l) => server(l.port, 'a master'));
    },
    async replicaOf(master) {
      const lines = parseClusterNodes((await view()).text);
      const m = lines.find((l) => l.port === master.port);
      const r = m && lines.find((l) => l.masterId === m.id && l.flags.includes('slave') && !failed(l) && !dead.has(l.port));
      if (!r) throw new Error(`127.0.0.1:${master.port} has no live replica\n${await describe()}`);
      return server(r.port, 'a replica');
    },
    async killMaster(node) {
      server(node.port, 'killMaster');
      const me = (await clusterNodes(node.port)).find((l) => l.flags.includes('myself'))!;
      if (!me.flags.includes('master')) throw new Error(`killMaster: 127.0.0.1:${node.port} is not a master (flags ${me.flags.join(',')})`);
      killed.set(node.port, { id: me.id, slots: me.slots });
      dropAdmin(node.port);
      dead.add(node.port);
      await node.kill9();
    },
    async waitForFailover(oldMasterPort, timeoutMs = 15_000) {
      const old = killed.get(oldMasterPort);
      if (!old) throw new Error(`waitForFailover: 127.0.0.1:${oldMasterPort} was not killed with killMaster()`);
      if (old.slots.length === 0) throw new Error(`waitForFailover: 127.0.0.1:${oldMasterPort} owned no slots`);
      const port = await waitFor(`a replica to take over the slots of 127.0.0.1:${oldMasterPort}`, timeoutMs, async () => {
        let owner: number | undefined;
        // Every live node must agree on one live master other than the old one for each old range.
        for (const n of live()) {
          if ((await clusterState(n.port)) !== 'ok') return undefined;
          const lines = await clusterNodes(n.port);
          for (const [from, to] of old.slots) {
            const o = lines.find((l) => owns(l, from) && owns(l, to));
            if (!o || o.id === old.id || failed(o) || !o.flags.includes('master') || dead.has(o.port)) return undefined;
            if (owner !== undefined && owner !== o.port) return undefined;
            owner = o.port;
          }
        }
        if (owner === undefined) return undefined;
        return infoField(await admin(owner).info('replication'), 'role') === 'master' ? owner : undefined;
      });
      killed.delete(oldMasterPort);
      return server(port, 'the promoted node');
    },
    async manualFailover(replica, timeoutMs = 15_000) {
      server(replica.port, 'manualFailover');
      // A manual failover waits for the replica to catch up with its master, so it must be linked first.
      await waitFor(`127.0.0.1:${replica.port} to be a replica linked to its master`, timeoutMs, async () => {
        const repl = await admin(replica.port).info('replication');
        return infoField(repl, 'role') === 'slave' && infoField(repl, 'master_link_status') === 'up' ? true : undefined;
      });
      const self = (await clusterNodes(replica.port)).find((l) => l.flags.includes('myself'))!;
      await admin(replica.port).call('CLUSTER', 'FAILOVER');
      // Done when every node sees the replica as a master with slots and its old master (if
      // running) as its replica: the old master turns replica a moment after it hands over.
      await waitFor(`CLUSTER FAILOVER to make 127.0.0.1:${replica.port} a master`, timeoutMs, async () => {
        if (infoField(await admin(replica.port).info('replication'), 'role') !== 'master') return undefined;
        for (const n of live()) {
          const lines = await clusterNodes(n.port);
          const me = lines.find((l) => l.id === self.id);
          if (!me || !me.flags.includes('master') || me.slots.length === 0) return undefined;
          const old = lines.find((l) => l.id === self.masterId);
          if (old && !dead.has(old.port) && (!old.flags.includes('slave') || old.masterId !== self.id)) return undefined;
        }
        return (await settled()) || undefined;
      });
    },
    async restart(node, timeoutMs = 20_000) {
      if (!dead.has(node.port)) throw new Error(`restart: 127.0.0.1:${node.port} is running (only a killed node restarts)`);
      const s = await startRedis({ args, dir: node.dir, port: node.port });
      all.push(s);
      byPort.set(s.port, s);
      dead.delete(s.port);
      killed.delete(s.port);
      // Rejoined: nobody marks it failed any more, every node (itself too) agrees on its role,
      // every node is ok, and (a replica now, when its slots were taken over) it is linked up.
      await waitFor(`127.0.0.1:${s.port} to rejoin the cluster`, timeoutMs, async () => {
        const roles = new Set<string>();
        for (const n of live()) {
          const me = (await clusterNodes(n.port)).find((l) => l.port === s.port);
          if (!me || failed(me) || me.flags.includes('handshake')) return undefined;
          roles.add(me.flags.includes('slave') ? 'slave' : 'master');
        }
        roles.add(infoField(await admin(s.port).info('replication'), 'role')!);
        return (roles.size === 1 && (await settled())) || undefined;
      });
      return s;
    },
    async stop() {
      for (const c of clients) c.disconnect();
      for (const c of admins.values()) c.disconnect();
      admins.clear();
      // Running processes first; then the killed ones, whose stop() only removes the directory.
      const running = all.filter((n) => n.process.exitCode === null && n.process.signalCode === null);
      await Promise.all(running.map((n) => n.stop()));
      await Promise.all(all.filter((n) => !running.includes(n)).map((n) => n.stop()));
    },
  };
  return cluster;
}
