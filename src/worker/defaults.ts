/**
 * A worker's defaults, written once: the library's Worker and the CLI's `delayq worker` (whose
 * --help shows them) read this object, so the two never disagree. options.ts documents each
 * with its @default; a change here changes both, and those docs must follow.
 */
import { type BackoffOptions, DEFAULT_BACKOFF } from '../backoff.js';

export const WORKER_DEFAULTS: {
  readonly concurrency: number;
  /** `batch` defaults to the concurrency, at most this. */
  readonly batchMax: number;
  readonly leaseMs: number;
  readonly attempts: number;
  readonly backoff: BackoffOptions;
  readonly closeTimeoutMs: number;
  readonly idleCheckMs: number;
  readonly maxErrorLength: number;
} = {
  concurrency: 10,
  batchMax: 50,
  leaseMs: 30_000,
  attempts: 3,
  backoff: DEFAULT_BACKOFF,
  closeTimeoutMs: 30_000,
  idleCheckMs: 30_000,
  maxErrorLength: 8192,
};
