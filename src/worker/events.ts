/**
 * What a Worker tells its listeners: every event, past tense, with its arguments. The log
 * (event-log.ts) writes one line per event by these names.
 */
import type { Job } from '../job.js';

/** Events, past tense. Listeners that throw are reported as 'error' and never break a job's release. */
export interface WorkerEvents<T> {
  claimed: [job: Job<T>];
  completed: [job: Job<T>, result: unknown];
  failed: [job: Job<T>, error: unknown];
  retried: [job: Job<T>, error: unknown, dueAtMs: number];
  snoozed: [job: Job<T>, dueAtMs: number];
  dead: [job: Job<T> | { id: string; token: string }, reason: string];
  leaseLost: [job: Job<T>];
  /**
   * The job was ended from outside while it ran (`queue.cancel(id, { running: true })`,
   * `queue.fail(id)`): its lease is gone, `job.signal` aborted with `why` ('cancelled' or
   * 'failed'), its slot is free, and whatever the handler does next changes nothing.
   */
  revoked: [job: Job<T>, why: 'cancelled' | 'failed'];
  released: [job: Job<T>];
  /** The handler threw RateLimitSignal: the job went back (attempt unspent), its group or the queue held for `holdMs`. */
  rateLimited: [job: Job<T>, holdMs: number];
  /**
   * The handler ended but its outcome (ack, retry, snooze or hand-back) could not be written,
   * e.g. Redis was unreachable. The job stays active until its lease runs out and then runs
   * again; it may also have been written after all (the error is also reported as 'error').
   */
  settleFailed: [job: Job<T>, error: Error];
  /**
   * Redis is reachable again after an outage, which was reported once, as a ConnectionError on
   * 'error', when it began. `downMs`: how long it lasted, as this worker saw it.
   */
  reconnected: [downMs: number];
  error: [error: Error];
  closed: [];
}
