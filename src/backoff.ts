/**
 * Pure: attempt number -> delay before the next attempt. Kept free of I/O so it can be tested
 * exhaustively and shared by every store.
 */
import { ValidationError } from './errors.js';

export type BackoffOptions =
  | { type: 'fixed'; delay: number }
  | {
      type: 'exponential';
      /** Delay after the first failed attempt; doubles with each attempt. */
      delay: number;
      /** Ceiling of the delay. @default 3_600_000 (one hour) */
      maxDelay?: number;
      /**
       * Full jitter: a uniform random delay between 0 and the exponential value, which spreads
       * out retries of jobs that failed together (e.g. during an outage of a downstream service).
       * @default true
       */
      jitter?: boolean;
    };

export const DEFAULT_BACKOFF: BackoffOptions = { type: 'exponential', delay: 1000, maxDelay: 3_600_000, jitter: true };

/** Compact form kept in the job body (`b` field): `f:<delay>` or `e:<delay>:<max>:<jitter 0|1>`. */
export function encodeBackoff(b: BackoffOptions): string {
  if (b.type === 'fixed') return `f:${b.delay}`;
  return `e:${b.delay}:${b.maxDelay ?? 3_600_000}:${b.jitter === false ? 0 : 1}`;
}

/** Undefined when the stored text is not a backoff spec (then the worker's default applies). */
export function decodeBackoff(s: string | undefined): BackoffOptions | undefined {
  if (!s) return undefined;
  const parts = s.split(':');
  const n = parts.slice(1).map(Number);
  if (n.some((x) => !Number.isFinite(x) || x < 0)) return undefined;
  if (parts[0] === 'f' && n.length === 1) return { type: 'fixed', delay: n[0]! };
  if (parts[0] === 'e' && n.length === 3) return { type: 'exponential', delay: n[0]!, maxDelay: n[1]!, jitter: n[2] === 1 };
  return undefined;
}

/** A custom policy: given the attempt that just failed (1-based) and its error, the delay in ms. */
export type BackoffFunction = (attempt: number, error: unknown) => number;

export function backoffDelay(b: BackoffOptions, attempt: number, random: () => number = Math.random): number {
  if (b.type === 'fixed') return b.delay;
  const max = b.maxDelay ?? 3_600_000;
  // 2 ** 60 overflows nothing in floating point, and min() caps it long before it matters.
  const exp = Math.min(max, b.delay * 2 ** Math.max(0, attempt - 1));
  return Math.round(b.jitter === false ? exp : random() * exp);
}

export function checkBackoffResult(ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) throw new ValidationError('backoff', `function must return a non-negative number of ms (got ${ms})`);
  return Math.ceil(ms);
}
