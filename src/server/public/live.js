/**
 * The live stream: one EventSource on api/live (with ?queue=<q> on a queue's pages, for its
 * event feed). Pages subscribe to 'stats' and 'events'; the header subscribes to 'status'.
 *
 * EventSource retries by itself after a dropped connection, but gives up for good when an
 * answer is not a stream (a 503 while the server restarts, say): then we reopen it ourselves,
 * backing off, so a tab left open recovers without a reload.
 */
import { noteServerNow } from './format.js';

const listeners = { stats: new Set(), events: new Set(), status: new Set() };
let source;
let queueName;
let retryTimer;
let retryMs = 1000;
let status = { state: 'connecting', error: undefined };
let lastStats;

function setStatus(state, error) {
  if (status.state === state && status.error === error) return;
  status = { state, error };
  for (const fn of listeners.status) fn(status);
}

function open() {
  clearTimeout(retryTimer);
  source?.close();
  const url = queueName === undefined ? 'api/live' : `api/live?queue=${encodeURIComponent(queueName)}`;
  const es = new EventSource(url);
  source = es;
  es.addEventListener('open', () => {
    retryMs = 1000;
  });
  es.addEventListener('stats', (e) => {
    const data = JSON.parse(e.data);
    lastStats = data;
    // The sample's Redis clock keeps the relative times honest (a sample is sent as it is taken).
    if (data.queues[0] && !data.error) noteServerNow(data.queues[0].stats.nowMs);
    setStatus(data.error ? 'redis-down' : 'live', data.error);
    for (const fn of listeners.stats) fn(data);
  });
  es.addEventListener('events', (e) => {
    const data = JSON.parse(e.data);
    for (const fn of listeners.events) fn(data);
  });
  es.addEventListener('error', () => {
    if (es !== source) return;
    setStatus('reconnecting');
    if (es.readyState === EventSource.CLOSED) {
      retryTimer = setTimeout(open, retryMs);
      retryMs = Math.min(retryMs * 2, 30_000);
    }
  });
}

/** Follows `queue`'s event feed too (undefined: counts only). Reopens only when it changes. */
export function followQueue(queue) {
  if (source && queue === queueName) return;
  queueName = queue;
  open();
}

/** Subscribes; returns the unsubscribe function (pages call it when they are left). */
export function on(kind, fn) {
  listeners[kind].add(fn);
  if (kind === 'status') fn(status);
  return () => listeners[kind].delete(fn);
}

/** The last stats sample, for a page that opens between two samples. */
export function latestStats() {
  return lastStats;
}
