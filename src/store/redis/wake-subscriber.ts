/**
 * The wake subscription: one pub/sub connection that hears every queue's `wake` channel (a due
 * time moved earlier, schedules changed, the layout changed) and proves itself live. A half-open
 * TCP connection looks alive and delivers nothing, so the connection must answer within the
 * watchdog's time of connecting and at every idle PING, or it is dropped and re-opened.
 */
import { Cluster } from 'ioredis';
import { timerDelay } from '../../timers.js';
import { FINISHES, type Finish } from '../lifecycle.js';
import type { WakeHandlers, WakeSubscription } from '../store.js';
import type { ConnectionGuard } from './connection-guard.js';
import { duplicateClient, type Client } from './connection.js';

/**
 * One message of a queue's wake channel (wire.ts: a due time, 's', 'L', REVOKED_MESSAGE,
 * FINISHED_MESSAGE) to its handler. Anything else is ignored: a later version may say more.
 */
export function hearWake(message: string, queue: string, handlers: WakeHandlers): void {
  const kind = message.charCodeAt(0);
  if (kind >= 48 && kind <= 57) {
    const due = Number(message);
    if (Number.isFinite(due)) handlers.onWake(due, queue);
  } else if (message === 's') handlers.onSchedulesChanged?.(queue);
  else if (message === 'L') handlers.onLayoutChanged?.(queue);
  else if (message.startsWith('r:')) {
    const at = message.indexOf(':', 2);
    const why = message.slice(2, at);
    if (at > 0) handlers.onRevoked?.(message.slice(at + 1), why === 'cancelled' ? 'cancelled' : 'failed', queue);
  } else if (message.startsWith('f:')) {
    const endAt = message.indexOf(':', 2);
    const lenAt = message.indexOf(':', endAt + 1);
    const end = message.slice(2, endAt);
    const idLength = Number(message.slice(endAt + 1, lenAt));
    if (endAt < 0 || lenAt < 0 || !Number.isSafeInteger(idLength) || !(FINISHES as readonly string[]).includes(end)) return;
    // The id's length counts UTF-16 units as Lua counts bytes: ids are read back by bytes.
    const rest = Buffer.from(message.slice(lenAt + 1), 'utf8');
    if (rest.length < idLength) return;
    handlers.onFinished?.(rest.subarray(0, idLength).toString('utf8'), end as Finish, rest.subarray(idLength).toString('utf8'), queue);
  }
}

/** How often an idle subscription proves its connection is alive. */
const SUBSCRIBER_PING_MS = 30_000;

export interface WakeOptions {
  /** The handshake, SUBSCRIBE or a PING must be answered within this long. */
  watchdogMs: number;
  /** The store's open extra connections: the subscription's is in it while open (closed with the store). */
  open: Set<Client>;
}

/** Subscribes to `byChannel`'s channels (channel -> queue) on a connection of its own. */
export async function subscribeWake(
  client: Client,
  guard: ConnectionGuard,
  byChannel: ReadonlyMap<string, string>,
  handlers: WakeHandlers,
  opts: WakeOptions,
): Promise<WakeSubscription> {
  const sub = duplicateClient(client, { enableAutoPipelining: false });
  opts.open.add(sub);
  let connectedOnce = false;
  // ioredis reports every failed reconnect attempt; one report per drop is enough.
  let reported = false;
  sub.on('message', (ch: string, message: string) => {
    const queue = byChannel.get(ch);
    if (queue === undefined) return;
    hearWake(message, queue, handlers);
  });
  sub.on('error', (err: Error) => {
    if (reported) return;
    reported = true;
    handlers.onError(guard.wrap(err) as Error);
  });
  // A half-open TCP connection looks alive and delivers nothing, and it can go half-open at any
  // point: during the handshake or the SUBSCRIBE (ioredis waits for those forever), or later.
  // Each connection must prove itself live within the watchdog's time of connecting (the
  // SUBSCRIBE, or on a reconnect a PING after the re-subscribe, answered) and again at every
  // idle PING; one that does not is dropped, and ioredis reconnects, re-subscribes and re-sends.
  let proving: NodeJS.Timeout | undefined;
  const prove = () => {
    clearTimeout(proving);
    proving = setTimeout(() => {
      proving = undefined;
      if (sub.status !== 'end') sub.disconnect(true);
    }, timerDelay(opts.watchdogMs));
    proving.unref();
  };
  const proven = () => {
    clearTimeout(proving);
    proving = undefined;
  };
  // 'connect' is the TCP connection; the handshake (ready check) and SUBSCRIBE follow it. (A
  // cluster client's 'connect' is the whole cluster's and its subscriber connection is its own,
  // so there only the idle PING below applies.)
  if (!(sub instanceof Cluster)) sub.on('connect', prove);
  sub.on('ready', () => {
    reported = false;
    // ioredis re-subscribes by itself after a reconnect; what was published meanwhile is gone.
    // It emits 'ready' before it writes the SUBSCRIBE, so wait for a PING sent after it: once
    // that is answered the subscription is live and a claim cannot miss a later signal.
    if (connectedOnce) {
      queueMicrotask(() => {
        sub.ping().then(
          () => {
            proven();
            handlers.onResubscribed();
          },
          () => handlers.onResubscribed(),
        );
      });
    }
    connectedOnce = true;
  });
  try {
    await sub.subscribe(...byChannel.keys());
    proven();
  } catch (err) {
    proven();
    opts.open.delete(sub);
    sub.disconnect();
    throw guard.wrap(err);
  }

  const watchdog = setInterval(() => {
    if (sub.status !== 'ready' || proving !== undefined) return;
    prove();
    sub.ping().then(proven, () => {});
  }, SUBSCRIBER_PING_MS);
  watchdog.unref();

  return {
    close: async () => {
      clearInterval(watchdog);
      proven();
      opts.open.delete(sub);
      sub.disconnect();
    },
  };
}
