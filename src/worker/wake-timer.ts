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
 * A wake for a server moment is aimed this much before the earliest local moment at which the
 * server's clock can have reached it (the offset's lower bound, #observe). Node's timers fire up
 * to a ms after the moment they are set for (#arm), so a wake aimed at that moment starts its job
 * a ms late at the median; aimed a little before it, on time, and now and then a claim finds
 * nothing. Measured (`npm run bench -- --only load,low`, 2-3 runs each) at 400 jobs/s: aimed at
 * the lower bound, lateness p50 1 ms, 1.98 script calls a job; 0.25 ms before it, p50 1, 1.99;
 * 0.5 ms before it, p50 0, 1.99-2.00 (before the bounds, aimed 0.5 ms before the middle of a
 * single answer's ms: p50 0, 2.09-2.14 calls a job).
 */
export const WAKE_LEAD_MS = 0.5;

export class WakeTimer {
  /**
   * What the server's clock can be, as bounds of its offset (server epoch ms minus local
   * monotonic ms) every round trip so far allows; undefined until the first claim answered.
   */
  #lo: number | undefined;
  #hi = 0;
  /** When the bounds were last narrowed (local ms): they widen by the clocks' drift since. */
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
   * `receivedAt` (performance.now()). The server read its clock at some moment of the round trip,
   * and gives it floored to the ms, so the offset lies in [serverNowMs - receivedAt, serverNowMs +
   * 1 - sentAt] whatever the trip waited for (behind a batch of acks in Redis, or a busy event loop
   * here: a midpoint would be off by half the wait). Each answer is such an interval and the
   * offset lies in all of them, so the bounds kept are their intersection, NTP's way: answers read
   * at different points of the server's ms narrow it from the ms a single answer allows to about
   * a round trip (a claim aimed at the earliest moment then finds its job: at 400 jobs/s, ~0.15
   * claims a job found nothing with the offset known to half a ms). The kept bounds widen by
   * OFFSET_DRIFT_MS_PER_S since they were last narrowed; an answer outside them (the server's clock
   * stepped, a failover to another server) starts them afresh.
   */
  observe(serverNowMs: number, sentAt: number, receivedAt: number): void {
    const lo = serverNowMs - receivedAt;
    const hi = serverNowMs + 1 - sentAt;
    const drift = ((receivedAt - this.#observedAt) / 1000) * OFFSET_DRIFT_MS_PER_S;
    const keptLo = this.#lo === undefined ? undefined : this.#lo - drift;
    const keptHi = this.#hi + drift;
    if (keptLo === undefined || lo > keptHi || hi < keptLo) {
      this.#lo = lo;
      this.#hi = hi;
    } else {
      this.#lo = Math.max(lo, keptLo);
      this.#hi = Math.min(hi, keptHi);
    }
    this.#observedAt = receivedAt;
  }

  /** The server's clock as best known; before the first observation, a guess no decision may rest on. */
  serverNow(): number {
    return performance.now() + (this.#lo === undefined ? 0 : (this.#lo + this.#hi) / 2);
  }

  /** Whether the server's clock has been observed, so that server times can be told apart. */
  get synced(): boolean {
    return this.#lo !== undefined;
  }

  /**
   * Fires at `serverMs` (or after the longest sleep when undefined), unless already set to
   * fire earlier: a signal that arrived during a claim must not be overwritten by that claim's
   * older view of the queue. An early fire only costs one claim that finds nothing.
   */
  wakeAt(serverMs: number | undefined): void {
    const now = performance.now();
    // Unsynced, a server time cannot be placed on the local clock: fire at once and let the
    // claim that follows measure the offset. Synced, the earliest local moment the server's clock
    // can be at serverMs is at the offset's lower bound.
    const local = serverMs === undefined ? Infinity : this.#lo === undefined ? now : serverMs - this.#lo - WAKE_LEAD_MS;
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
