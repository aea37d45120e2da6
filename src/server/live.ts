/**
 * The live stream (Server-Sent Events): `stats` with every queue's counts at each sample, and,
 * for one queue whose event feed is on, its `events` batched every 250 ms. A burst of
 * thousands of events per second reaches a page as at most 100 per batch plus how many were
 * left out, so an open tab never falls behind or swamps the browser.
 */
import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Queue } from '../queue.js';
import type { StreamEvent } from '../store/store.js';
import type { Sampler, Snapshot } from './history.js';
import { HttpError } from './route.js';

const FLUSH_MS = 250;
const MAX_PER_FLUSH = 100;
/** Live pages one dashboard serves at once (each may hold a blocking Redis connection). */
const MAX_CLIENTS = 200;

/** One dashboard's live stream: `(c, queue?)` answers a request with it. */
export function liveStreams(sampler: Sampler, allowed: string[] | undefined): (c: Context, queue: Queue<unknown> | undefined) => Response {
  let clients = 0;
  // One 'sample' listener per open page, and never more than MAX_CLIENTS pages: Node's leak
  // warning (at 11 by default) then fires only for listeners that were not taken off.
  sampler.setMaxListeners(MAX_CLIENTS);
  return (c, queue) => {
    if (clients >= MAX_CLIENTS) throw new HttpError(503, 'busy', `too many live pages open (${MAX_CLIENTS})`);
    return streamSSE(c, async (stream) => {
      clients++;
      const stop = new AbortController();
      stream.onAbort(() => stop.abort());
      const send = (event: string, data: unknown) => stream.writeSSE({ event, data: JSON.stringify(data) }).catch(() => stop.abort());
      const onSample = (snap: Snapshot) => {
        const queues = allowed ? snap.queues.filter((q) => allowed.includes(q.name)) : snap.queues;
        void send('stats', { takenAt: snap.takenAt, error: snap.error, queues });
      };
      sampler.on('sample', onSample);
      try {
        await sampler.start();
        onSample(sampler.snapshot);
        const pending: StreamEvent[] = [];
        let dropped = 0;
        const flush = setInterval(() => {
          if (pending.length === 0 && dropped === 0) return;
          void send('events', { events: pending.splice(0), dropped });
          dropped = 0;
        }, FLUSH_MS);
        try {
          const stats = queue && (await queue.stats().catch(() => undefined));
          if (queue && stats?.eventStreamLength !== undefined) {
            for await (const e of queue.events.follow({ signal: stop.signal })) {
              if (pending.length < MAX_PER_FLUSH) pending.push(e);
              else dropped++;
            }
          }
          // Without a feed the stream stays open for the counts until the page goes.
          if (!stop.signal.aborted) await new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
        } finally {
          clearInterval(flush);
        }
      } catch {
        // Redis went away mid-follow: the page reconnects by itself (EventSource retries).
      } finally {
        sampler.off('sample', onSample);
        clients--;
      }
    });
  };
}
