/**
 * A wake timer sleeps until a moment on the Redis server's clock. Redis 7.0 resolves blocking
 * command timeouts only at its `hz` rate (0-100 ms late at the default), so due-time wake-ups use
 * a local timer instead. It runs on the local monotonic clock, translated by the offset measured
 * at each claim, so a wrong or jumping host clock cannot make a worker early or late. Waking a
 * little early is harmless (the claim script checks due times by the server's clock) but costs
 * Redis a claim that finds nothing: the timer fires no earlier than WAKE_LEAD_MS before its moment.
 */
import { performance } from 'node:perf_hooks';
import { timerDelay } from '../timers.js';

/**
 * How fast two clocks may drift apart, as ms per second: 0.5 ms/s (500 ppm) is far beyond any
 * working quartz clock, so a kept offset is replaced well before it could be off by its drift.
 */
const OFFSET_DRIFT_MS_PER_S = 0.5;

/**
 * A wake for a server moment is aimed this much before the local moment the offset gives. The
 * server's clock is read in whole ms, so the offset is known to half a ms at best and a job due at
 * D may be claimable up to that much before the estimate; Node's timers then fire up to a ms after
 * the moment they are set for (#arm). Measured (`npm run bench -- --only load,low`, 3 runs each):
 * aimed at the estimate, lateness p50 1 ms at 10k and at 400 jobs/s, 2.00 script calls a job at 400/s,
 * Redis 217 µs a job there; 0.5 ms before it, p50 0 / 0, p99 4 / 2, 2.13 calls, 204 µs. (Before
 * #arm rounded delays up, timers fired up to 2 ms early: p50 0 / 0, but 2.58 calls and 250 µs.)
 */
export const WAKE_LEAD_MS = 0.5;

export class WakeTimer {
  /** Server epoch ms minus local monotonic ms; undefined until the first claim answered. */
  #offset: number | undefined;
  /** How far #offset may be off (half its round trip), and when it was measured (local ms). */
  #uncertainty = Infinity;
  #observedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  /**
   * When the pending timer fires, in local monotonic ms. Kept in the local frame so a later
   * change of the offset cannot make a pending timer look earlier or later than it is.
   */
  #target = Infinity;
  readonly #onFire: () => void;
  readonly #maxSleepMs: number;

  constructor(onFire: () => void, maxSleepMs: number) {
    this.#onFire = onFire;
    // A longer sleep would overflow Node's timer and fire at once, over and over.
    this.#maxSleepMs = timerDelay(maxSleepMs);
  }

  /**
   * Records the server's clock read during a round trip sent at `sentAt` and answered at
   * `receivedAt` (performance.now()). The offset is known to within half the round trip, and a
   * round trip that waited (behind a batch of acks in Redis, or a busy event loop here) gives a
   * wrong one by up to half the wait: each wake-up set from it was late by as much (measured: the
   * 6-13 ms stalls behind lateness p99 at 10k jobs/s). So the offset kept is that of the tightest
   * recent round trip, NTP's way: a sample replaces it when its uncertainty is no larger than the
   * kept one's plus an allowance for drift since (OFFSET_DRIFT_MS_PER_S), or when it cannot be
   * true together with the kept one (the server's clock stepped).
   */
  observe(serverNowMs: number, sentAt: number, receivedAt: number): void {
    // The server's ms is floored from its µs: its true time is within [serverNowMs, serverNowMs + 1).
    const lo = serverNowMs - receivedAt;
    const hi = serverNowMs + 1 - sentAt;
    const uncertainty = (hi - lo) / 2;
    const kept = this.#offset;
    const keptUncertainty = this.#uncertainty + ((receivedAt - this.#observedAt) / 1000) * OFFSET_DRIFT_MS_PER_S;
    if (kept === undefined || kept < lo || kept > hi || uncertainty <= keptUncertainty) {
      this.#offset = (lo + hi) / 2;
      this.#uncertainty = uncertainty;
      this.#observedAt = receivedAt;
    }
  }

  /** The server's clock as best known; before the first observation, a guess no decision may rest on. */
  serverNow(): number {
    return performance.now() + (this.#offset ?? 0);
  }

  /** Whether the server's clock has been observed, so that server times can be told apart. */
  get synced(): boolean {
    return this.#offset !== undefined;
  }

  /**
   * Fires at `serverMs` (or after the longest sleep when undefined), unless already set to
   * fire earlier: a signal that arrived during a claim must not be overwritten by that claim's
   * older view of the queue. An early fire only costs one claim that finds nothing.
   */
  wakeAt(serverMs: number | undefined): void {
    const now = performance.now();
    // Unsynced, a server time cannot be placed on the local clock: fire at once and let the
    // claim that follows measure the offset.
    const local = serverMs === undefined ? Infinity : this.#offset === undefined ? now : serverMs - this.#offset - WAKE_LEAD_MS;
    this.#setLocal(local, now);
  }

  /** Fires after `ms` of local time (a retry back-off, which needs no server clock). */
  wakeIn(ms: number): void {
    const now = performance.now();
    this.#setLocal(now + ms, now);
  }

  #setLocal(local: number, now: number): void {
    const target = Math.min(local, now + this.#maxSleepMs);
    if (this.#timer !== undefined && this.#target <= target) return;
    this.stop();
    this.#target = target;
    this.#arm(now);
  }

  /**
   * Sets Node's timer for #target. Node truncates a delay to whole ms and counts it from the
   * event loop's cached time, so a timer of a fractional delay fires up to 2 ms early (measured:
   * three in four early, by 0.27 ms at the median), and a worker woken early sends a claim that
   * finds nothing (at 400 jobs/s, half a claim a job). So the delay is rounded up, and a timer
   * that still fires before #target (the loop's time lagged) is set again for the rest.
   */
  #arm(now: number): void {
    // timerDelay: `now + max - now` is a hair over the max in floating point now and then.
    this.#timer = setTimeout(this.#fire, timerDelay(Math.ceil(this.#target - now)));
  }

  readonly #fire = () => {
    const now = performance.now();
    if (now < this.#target) {
      this.#arm(now);
      return;
    }
    this.#timer = undefined;
    this.#target = Infinity;
    this.#onFire();
  };

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#target = Infinity;
  }
}
