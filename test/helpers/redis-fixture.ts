/**
 * The set-up every Redis test file shares: one redis-server for the file, a client to read the
 * documented layout, and whatever the tests open closed before the server stops. A file whose
 * tests stop, kill or freeze Redis does it through here too, so nothing outlives the file.
 */
import { after, before } from 'node:test';
import type { Redis } from 'ioredis';
import { startRedis, type RedisServer, type RedisServerOptions } from './redis-server.js';

export interface RedisFixtureOptions {
  /** Extra redis-server arguments for the file's server, e.g. ['--appendonly', 'yes']. */
  args?: string[];
}

export interface RedisFixture {
  /** The file's server (a new one after start()). */
  readonly redis: RedisServer;
  /** A client of the file's server (a new one after start()). */
  readonly client: Redis;
  /** Closes `x` after the file's tests, before the server stops. */
  track<T extends { close(): Promise<void> }>(x: T): T;
  /**
   * A set-up step of the file that needs the server: runs once it is up. (Node 20 runs a file's
   * top-level before() hooks side by side, so a plain before() could run before the server exists.)
   */
  before(fn: () => void | Promise<void>): void;
  /** A clean-up step of the file that needs the server: runs after the file's tests, before the server stops. */
  after(fn: () => void | Promise<void>): void;
  /**
   * Another server for this file (a replica, a server a test freezes or stops), stopped after
   * the file's tests if the test did not stop it.
   */
  another(opts?: RedisServerOptions): Promise<RedisServer>;
  /** Takes the file's server down, keeping its data directory: SIGKILL with `kill9`, else a graceful stop. */
  stop(opts?: { kill9?: boolean }): Promise<void>;
  /** Starts the file's server again on the same port, data directory and arguments (after stop()). */
  start(): Promise<void>;
}

export function useRedis(opts: RedisFixtureOptions = {}): RedisFixture {
  const args = opts.args ?? [];
  let redis: RedisServer | undefined;
  let client: Redis | undefined;
  const open: { close(): Promise<void> }[] = [];
  const others: RedisServer[] = [];
  const cleanups: (() => void | Promise<void>)[] = [];
  let up!: () => void;
  let failed!: (err: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    up = resolve;
    failed = reject;
  });
  // Awaited by fx.before() steps only; a failed start fails the file through the hook below.
  ready.catch(() => {});
  before(async () => {
    try {
      redis = await startRedis({ args });
      client = redis.client();
      up();
    } catch (err) {
      failed(err);
      throw err;
    }
  });
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
    await Promise.all(open.map((o) => o.close().catch(() => {})));
    await Promise.all(
      others.map((s) => {
        s.process.kill('SIGCONT');
        return s.stop();
      }),
    );
    await redis?.stop();
  });
  return {
    get redis() {
      return redis!;
    },
    get client() {
      return client!;
    },
    track(x) {
      open.push(x);
      return x;
    },
    before(fn) {
      before(async () => {
        await ready;
        await fn();
      });
    },
    after(fn) {
      cleanups.push(fn);
    },
    async another(o = {}) {
      const s = await startRedis(o);
      others.push(s);
      return s;
    },
    async stop(o = {}) {
      if (o.kill9) {
        client?.disconnect();
        await redis!.kill9();
      } else {
        await redis!.stop({ keepDir: true });
      }
    },
    async start() {
      const was = redis!;
      // A server killed with SIGKILL still has its clients: stop() disconnects them (and the
      // process is gone), keeping the data for the new one.
      await was.stop({ keepDir: true });
      redis = await startRedis({ args, dir: was.dir, port: was.port });
      client = redis.client();
    },
  };
}
