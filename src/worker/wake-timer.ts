/**
 * A wake timer sleeps until a moment on the Redis server's clock. Redis 7.0 resolves blocking
 * command timeouts only at its `hz` rate (0-100 ms late at the default), so due-time wake-ups use
 * a local timer instead. It runs on the local monotonic clock, translated by the offset measured
 * at each claim, so a wrong or jumping host clock cannot make a worker early or late. Waking a
 * little early is harmless: the claim script checks due times by the server's clock.
 */
import { performance } from 'node:perf_hooks';

export class WakeTimer {
  /** Server epoch ms minus local monotonic ms. */
  #offset = 0;
  #timer: NodeJS.Timeout | undefined;
  #target = Infinity;
  readonly #onFire: () => void;
  readonly #maxSleepMs: number;

  constructor(onFire: () => void, maxSleepMs: number) {
    this.#onFire = onFire;
    this.#maxSleepMs = maxSleepMs;
  }

  /** Records the server's clock read during a round trip sent at `sentAt` and answered at `receivedAt` (performance.now()). */
  observe(serverNowMs: number, sentAt: number, receivedAt: number): void {
    this.#offset = serverNowMs - (sentAt + receivedAt) / 2;
  }

  serverNow(): number {
    return performance.now() + this.#offset;
  }

  /**
   * Fires at `serverMs` (or after the longest sleep when undefined), unless already set to
   * fire earlier: a signal that arrived during a claim must not be overwritten by that claim's
   * older view of the queue. An early fire only costs one claim that finds nothing.
   */
  wakeAt(serverMs: number | undefined): void {
    const now = this.serverNow();
    const target = Math.min(serverMs ?? Infinity, now + this.#maxSleepMs);
    if (this.#timer !== undefined && this.#target <= target) return;
    this.stop();
    this.#target = target;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#target = Infinity;
      this.#onFire();
    }, Math.max(0, target - now));
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#target = Infinity;
  }
}
