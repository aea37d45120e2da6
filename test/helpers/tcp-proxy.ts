/**
 * A loopback TCP proxy that can freeze: while frozen, the connections it already carries stay
 * open but pass no bytes — a half-open connection as a dead NAT or switch leaves behind.
 * Connections opened after freeze() pass normally once thaw() is called, or at once with
 * `freezeOnlyExisting`.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  readonly url: string;
  /** Stops traffic on every connection open now; new connections pass. */
  freezeExisting(): void;
  /**
   * The next `n` connections opened are half-open from birth: TCP connects, and no byte ever
   * passes either way (a handshake or SUBSCRIBE that never gets its answer). Later ones pass.
   */
  deadOnArrival(n: number): void;
  /**
   * Swallows the next reply from the server and cuts that connection, as a network that drops
   * a reply and then the link does; ioredis reconnects and re-sends the unanswered command.
   * New connections then wait (connected, passing nothing) until `release()`; resolves once
   * the cut happened.
   */
  cutOnNextReply(): Promise<void>;
  release(): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<{ a: Socket; b: Socket; frozen: boolean }>();
  let cut: (() => void) | undefined;
  let held = false;
  let dead = 0;
  const waiting = new Set<{ frozen: boolean; queued: Buffer[]; b: Socket }>();
  const server: Server = createServer((a) => {
    const b = connect(targetPort, '127.0.0.1');
    const pair = { a, b, frozen: false, queued: [] as Buffer[] };
    pairs.add(pair);
    if (dead > 0) {
      dead--;
      pair.frozen = true;
    } else if (held) {
      pair.frozen = true;
      waiting.add(pair);
    }
    a.on('data', (d) => {
      if (!pair.frozen) b.write(d);
      else if (waiting.has(pair)) pair.queued.push(d);
    });
    b.on('data', (d) => {
      if (cut) {
        const done = cut;
        cut = undefined;
        held = true;
        a.destroy();
        b.destroy();
        done();
        return;
      }
      if (!pair.frozen) a.write(d);
    });
    const end = () => {
      pairs.delete(pair);
      a.destroy();
      b.destroy();
    };
    a.on('close', end);
    b.on('close', end);
    a.on('error', end);
    b.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    freezeExisting() {
      for (const p of pairs) p.frozen = true;
    },
    deadOnArrival(n) {
      dead = n;
    },
    cutOnNextReply() {
      return new Promise<void>((resolve) => {
        cut = resolve;
      });
    },
    release() {
      held = false;
      for (const p of waiting) {
        p.frozen = false;
        for (const d of p.queued.splice(0)) p.b.write(d);
      }
      waiting.clear();
    },
    async close() {
      for (const p of pairs) {
        p.a.destroy();
        p.b.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
