/**
 * A real local Sentinel set-up for failover tests: a master, one replica and one sentinel
 * (quorum 1), each a process of its own on a free loopback port. stop() ends them all.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, startRedis, type RedisServer } from './redis-server.js';

export const MASTER_NAME = 'delayq-test';

export interface SentinelSetup {
  master: RedisServer;
  replica: RedisServer;
  sentinelPort: number;
  /** ioredis options that reach the current master through the sentinel. */
  connection: { sentinels: { host: string; port: number }[]; name: string };
  /** The address the sentinel reports as master now. */
  currentMasterPort(): Promise<number>;
  stop(): Promise<void>;
}

export async function startSentinel(masterArgs: string[] = []): Promise<SentinelSetup> {
  const master = await startRedis({ args: masterArgs });
  const replica = await startRedis({ args: [...masterArgs, '--replicaof', '127.0.0.1', String(master.port)] });
  const dir = mkdtempSync(join(tmpdir(), 'delayq-sentinel-'));
  const sentinelPort = await freePort();
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 1`,
      `sentinel down-after-milliseconds ${MASTER_NAME} 1000`,
      `sentinel failover-timeout ${MASTER_NAME} 10000`,
      `sentinel parallel-syncs ${MASTER_NAME} 1`,
      '',
    ].join('\n'),
  );
  const sentinel: ChildProcess = spawn('redis-server', [conf, '--sentinel', '--loglevel', 'warning'], { stdio: 'ignore' });
  const probe = new Redis({ port: sentinelPort, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
  // Refused until the sentinel listens; the loop below retries.
  probe.on('error', () => {});
  const currentMasterPort = async () => {
    const [, port] = (await probe.call('SENTINEL', 'get-master-addr-by-name', MASTER_NAME)) as [string, string];
    return Number(port);
  };
  // The sentinel must know the replica before a failover can promote it.
  const deadline = Date.now() + 20_000;
  const replicaClient = replica.client();
  for (;;) {
    try {
      const replicas = (await probe.call('SENTINEL', 'replicas', MASTER_NAME)) as string[][];
      if (replicas.length > 0 && (await replicaClient.info('replication')).includes('master_link_status:up')) break;
    } catch {
      // Not up yet.
    }
    if (Date.now() > deadline) throw new Error('sentinel did not discover the replica within 20 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    master,
    replica,
    sentinelPort,
    connection: { sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: MASTER_NAME },
    currentMasterPort,
    async stop() {
      probe.disconnect();
      sentinel.kill('SIGKILL');
      await Promise.all([master.stop(), replica.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
