/**
 * A connection guard stands between the store's calls and its ioredis client: it bounds how long
 * a call waits for a connection and for an answer (when the store was given timeouts: producers),
 * and turns every way of not reaching Redis into one ConnectionError that names the address.
 *
 * Why not ioredis's own options: `commandTimeout` fails the promise but leaves the command queued,
 * so during an outage every failed call would still run whenever Redis came back, hours later;
 * `enableOfflineQueue: false` fails calls made while the first connection is being opened. A call
 * here is written only once the connection is ready, so a call that failed for want of a
 * connection never runs later. (One sent on a live connection that then stalls may still run.)
 */
import { Cluster, ReplyError } from 'ioredis';
import { ConnectionError, DelayqError } from '../../errors.js';
import type { ConnectionWatcher } from '../store.js';
import type { Client } from './connection.js';
import { timerDelay } from '../../timers.js';

/** Replies that say "not now" (loading, failing over) rather than "wrong": the server is unavailable. */
const UNAVAILABLE = /^(LOADING|READONLY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN)\b/;

export interface GuardTimeouts {
  /** Longest wait for a connection before a call fails; undefined = wait through outages. */
  connectTimeoutMs?: number | undefined;
  /** Longest wait for an answer once sent; undefined = wait through outages. */
  commandTimeoutMs?: number | undefined;
  /** A call waiting for a connection fails at the first failed attempt (for one-shot commands). */
  failFast?: boolean | undefined;
}

/**
 * What a connection error means, in words: ioredis reports a server that answers something other
 * than RESP (an HTTP server on that port, say) as an internal parser error asking to be reported.
 */
function describe(err: Error): string {
  if (/Unknown RESP type|Protocol error/i.test(err.message))
    return `the server there does not speak the Redis protocol (${err.message.replace(/\s*Please report this\.?/, '')}): is the port right?`;
  // A server that is not Redis often answers its own error and hangs up before the handshake.
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EPIPE' || code === 'ECONNRESET') return `the server closed the connection (${err.message}): is it Redis, and the port right?`;
  return err.message;
}

function nodeText(n: unknown): string {
  if (typeof n === 'string' || typeof n === 'number') return String(n);
  const o = n as { host?: string; port?: number };
  return `${o.host ?? '127.0.0.1'}:${o.port ?? 6379}`;
}

/** Where a client connects, for messages: host:port, a socket path, a Sentinel master, or cluster seeds. */
export function addressOf(client: Client): string {
  if (client instanceof Cluster) {
    const seeds = (client as unknown as { startupNodes?: unknown[] }).startupNodes ?? [];
    return `cluster ${seeds.map(nodeText).join(',')}`;
  }
  const o = client.options;
  if (o.sentinels && o.sentinels.length > 0) return `sentinel master ${o.name ?? 'mymaster'} (${o.sentinels.map(nodeText).join(',')})`;
  if (o.path) return o.path;
  return `${o.host ?? '127.0.0.1'}:${o.port ?? 6379}`;
}

export class ConnectionGuard {
  readonly address: string;
  readonly #client: Client;
  readonly #timeouts: GuardTimeouts;
  /** The latest reason a connection attempt failed, for messages; cleared on ready. */
  #lastError: Error | undefined;
  readonly #waiters = new Set<{ ready: () => void; closed: (err: Error) => void }>();
  #closed = false;
  /** Told once when the connection fails (or cannot be made at all), and once when it is ready again. */
  readonly #watchers = new Set<ConnectionWatcher>();
  /** True from a failure until the connection is ready again. */
  #down = false;
  readonly #onReady = () => {
    this.#lastError = undefined;
    for (const w of this.#waiters) w.ready();
    if (!this.#down) return;
    this.#down = false;
    for (const w of this.#watchers) w.onUp();
  };
  readonly #onError = (err: Error) => {
    this.#lastError = err;
    if (this.#timeouts.failFast) for (const w of this.#waiters) w.closed(this.#unreachable());
    if (this.#down) return;
    this.#down = true;
    for (const w of this.#watchers) w.onDown(this.#unreachable());
  };
  readonly #onEnd = () => {
    for (const w of this.#waiters) w.closed(new ConnectionError(this.address, 'the connection was closed'));
  };

  constructor(client: Client, timeouts: GuardTimeouts = {}) {
    this.#client = client;
    this.#timeouts = timeouts;
    this.address = addressOf(client);
    client.on('ready', this.#onReady);
    client.on('error', this.#onError);
    client.on('end', this.#onEnd);
  }

  /** Runs one call: waits for a connection (bounded), bounds the answer, and names connection failures. */
  async run<R>(call: () => Promise<R>): Promise<R> {
    if (this.#closed) throw new ConnectionError(this.address, 'the store is closed');
    const { connectTimeoutMs, commandTimeoutMs } = this.#timeouts;
    if (connectTimeoutMs !== undefined) await this.waitUntilReady(connectTimeoutMs);
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = call();
      if (commandTimeoutMs === undefined) return await answer;
      return await Promise.race([
        answer,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new ConnectionError(this.address, `no answer within ${commandTimeoutMs} ms`)), timerDelay(commandTimeoutMs));
        }),
      ]);
    } catch (err) {
      throw this.wrap(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves once the client is connected and ready; rejects with a ConnectionError after `timeoutMs`. */
  waitUntilReady(timeoutMs: number | undefined = this.#timeouts.connectTimeoutMs): Promise<void> {
    if (this.#closed) return Promise.reject(new ConnectionError(this.address, 'the store is closed'));
    const c = this.#client;
    if (c.status === 'ready') return Promise.resolve();
    if (c.status === 'end') return Promise.reject(new ConnectionError(this.address, 'the connection was closed'));
    if (c.status === 'wait') void c.connect().catch(() => {});
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = {
        ready: () => {
          this.#waiters.delete(waiter);
          clearTimeout(timer);
          resolve();
        },
        closed: (err: Error) => {
          this.#waiters.delete(waiter);
          clearTimeout(timer);
          reject(err);
        },
      };
      this.#waiters.add(waiter);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          const why = this.#lastError ? ` (${describe(this.#lastError)})` : '';
          waiter.closed(new ConnectionError(this.address, `no connection within ${timeoutMs} ms${why}`, { cause: this.#lastError }));
        }, timerDelay(timeoutMs));
      }
    });
  }

  /**
   * Watches the connection: `onDown` once when it fails, whether it had been up or was never
   * made (ioredis keeps trying and queues calls meanwhile, so a caller waiting through outages
   * would otherwise never hear of a wrong address), and `onUp` once it is ready again.
   */
  watch(watcher: ConnectionWatcher): () => void {
    this.#watchers.add(watcher);
    if (this.#down) {
      const err = this.#unreachable();
      queueMicrotask(() => this.#watchers.has(watcher) && this.#down && watcher.onDown(err));
    }
    return () => void this.#watchers.delete(watcher);
  }

  #unreachable(): ConnectionError {
    return new ConnectionError(this.address, this.#lastError ? describe(this.#lastError) : 'unreachable', { cause: this.#lastError });
  }

  /** A failure to reach Redis as a ConnectionError; anything else (a script's error reply, our own errors) as it is. */
  wrap(err: unknown): unknown {
    if (!(err instanceof Error) || err instanceof DelayqError) return err;
    if (err instanceof (ReplyError as new () => Error) && !UNAVAILABLE.test(err.message)) return err;
    return new ConnectionError(this.address, describe(err), { cause: err });
  }

  /** Fails the calls still waiting for a connection, and lets go of the client. */
  close(): void {
    this.#closed = true;
    for (const w of this.#waiters) w.closed(new ConnectionError(this.address, 'the store was closed'));
    this.#watchers.clear();
    this.#client.off('ready', this.#onReady);
    this.#client.off('error', this.#onError);
    this.#client.off('end', this.#onEnd);
  }
}
