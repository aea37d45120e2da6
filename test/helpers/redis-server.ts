/**
 * Starts real redis-server processes for tests and benchmarks: a free loopback port, a
 * temporary directory, stopped (and the directory removed) by stop().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export interface RedisServerOptions {
  /** Extra `--name value` arguments, e.g. ['--appendonly', 'yes']. */
  args?: string[];
  /** Reuse a data directory (e.g. to restart on the same AOF). */
  dir?: string;
  /** Reuse a port (e.g. to restart in place). */
  port?: number;
  /** A command the server runs under, e.g. ['valgrind', '--tool=callgrind'] (bench/script-cost.ts). */
  wrapper?: string[];
  /** How long it may take to answer PING (ms; 10 s unless given). */
  startMs?: number;
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  readonly process: ChildProcess;
  /** A new ioredis client to this server; closed by stop(). */
  client(): Redis;
  /** SIGKILL, no shutdown save. Keeps the directory. */
  kill9(): Promise<void>;
  /** Graceful stop; removes the directory unless keepDir. */
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

async function spawnOnce(port: number, dir: string, args: string[], wrapper: string[], startMs: number): Promise<ChildProcess | undefined> {
  const serverArgs = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
    ...args,
  ];
  const [command, ...prefix] = [...wrapper, 'redis-server'];
  const child = spawn(command!, [...prefix, ...serverArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const deadline = Date.now() + startMs;
  while (Date.now() < deadline) {
    if (exited) return undefined;
    if (await canConnect(port)) {
      // Redis accepts connections while still loading an AOF; wait until it answers PING.
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        await probe.connect();
        for (;;) {
          try {
            await probe.ping();
            break;
          } catch (err) {
            if (!String(err).includes('LOADING')) throw err;
            await new Promise((r) => setTimeout(r, 20));
          }
        }
        return child;
      } catch {
        // Not ready yet.
      } finally {
        probe.disconnect();
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server on port ${port} did not start within ${startMs / 1000} s`);
}

export async function startRedis(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'delayq-redis-'));
  let child: ChildProcess | undefined;
  let port = opts.port ?? 0;
  for (let tries = 0; !child && tries < 5; tries++) {
    if (!opts.port) port = await freePort();
    child = await spawnOnce(port, dir, opts.args ?? [], opts.wrapper ?? [], opts.startMs ?? 10_000);
  }
  if (!child) throw new Error('redis-server did not start (is the redis-server package installed?)');
  const clients: Redis[] = [];
  const proc = child;
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    process: proc,
    client() {
      const c = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: null });
      clients.push(c);
      return c;
    },
    async kill9() {
      proc.kill('SIGKILL');
      await exited;
    },
    async stop(o = {}) {
      for (const c of clients) c.disconnect();
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      if (!o.keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
