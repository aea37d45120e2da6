/**
 * The log line of each worker event, when the app gave a logger: how loud it is, and which of
 * the event's arguments become fields (`jobId`, `attempt`, `err`, `reason`, `dueAtMs`,
 * `holdMs`, `downMs`). One line per event, `delayq: <event>`, so a log search finds every kind by name.
 */
import { logSafely, type Logger, type LogLevel } from '../logger.js';
import type { WorkerEvents } from './events.js';

/** The events a worker logs. */
export type WorkerEventName = keyof WorkerEvents<unknown>;

/** How loud each event is in the log (when a logger is given). */
const LOG_LEVELS: Record<WorkerEventName, LogLevel> = {
  claimed: 'debug',
  completed: 'debug',
  failed: 'info',
  retried: 'info',
  snoozed: 'debug',
  dead: 'warn',
  leaseLost: 'warn',
  revoked: 'info',
  released: 'debug',
  rateLimited: 'info',
  settleFailed: 'warn',
  reconnected: 'info',
  error: 'error',
  closed: 'info',
};

/** Writes one event of the worker on `queue` to the logger, with its arguments as fields. */
export function logWorkerEvent(logger: Logger | undefined, queue: string, event: WorkerEventName, args: unknown[]): void {
  const obj: Record<string, unknown> = { queue, event };
  const [first, second, third] = args as [{ id?: string; attempt?: number } | Error | undefined, unknown, unknown];
  if (event === 'error') obj.err = first;
  else if (first && typeof first === 'object' && !(first instanceof Error)) {
    obj.jobId = first.id;
    if (first.attempt !== undefined) obj.attempt = first.attempt;
  }
  if (event === 'failed' || event === 'retried' || event === 'settleFailed') obj.err = second;
  if (event === 'dead') obj.reason = second;
  if (event === 'retried') obj.dueAtMs = third;
  if (event === 'snoozed') obj.dueAtMs = second;
  if (event === 'rateLimited') obj.holdMs = second;
  if (event === 'reconnected') obj.downMs = first;
  logSafely(logger, LOG_LEVELS[event], obj, `delayq: ${event}`);
}
