/**
 * A server clock reads the store's clock (the Redis server's TIME) once and carries it forward
 * on the local monotonic clock, so that one round trip serves a whole scheduler pass. The host's
 * wall clock is never read: a host that is minutes fast must not decide when an occurrence is due.
 */
import { performance } from 'node:perf_hooks';
import type { Store } from '../store/store.js';

export class ServerClock {
  /** Server epoch ms minus local monotonic ms, as last measured. */
  #offset = 0;

  /** Reads the store's clock; the reading is placed at the middle of the round trip. */
  async sync(store: Store, queue: string): Promise<void> {
    const sentAt = performance.now();
    const serverMs = await store.serverTimeMs(queue);
    this.#offset = serverMs - (sentAt + performance.now()) / 2;
  }

  now(): number {
    return performance.now() + this.#offset;
  }
}
