/**
 * A wake timer sleeps until a moment on the Redis server's clock. Redis 7.0 resolves blocking
 * command timeouts only at its `hz` rate (0-100 ms late at the default), so due-time wake-ups use
 * a local timer instead. It runs on the local monotonic clock, translated by the offset measured
 * at each claim, so a wrong or jumping host clock cannot make a worker early or late. Waking a
 * little early is harmless: the claim script checks due times by the server's clock.
 */
import { performance } from 'node:perf_hooks';
import { timerDelay } from '../timers.js';

export class WakeTimer {
  /** Server epoch ms minus local monotonic ms; undefined until the first claim answered. */
  #offset: number | undefined;
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

  /** Records the server's clock read during a round trip sent at `sentAt` and answered at `receivedAt` (performance.now()). */
  observe(serverNowMs: number, sentAt: number, receivedAt: number): void {
    this.#offset = serverNowMs - (sentAt + receivedAt) / 2;
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
    const local = serverMs === undefined ? Infinity : this.#offset === undefined ? now : serverMs - this.#offset;
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
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#target = Infinity;
        this.#onFire();
      },
      // timerDelay: `now + max - now` is a hair over the max in floating point now and then.
      timerDelay(target - now),
    );
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#target = Infinity;
  }
}
