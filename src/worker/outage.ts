/**
 * Outage tracking: while Redis is unreachable every call and reconnect attempt fails, and a
 * worker must report the outage once, when it begins (a ConnectionError on 'error'), and its end
 * once (`reconnected`, with how long it lasted as this worker saw it), not an error per call.
 */
import { performance } from 'node:perf_hooks';

export class OutageTracker {
  /** When the current outage began (performance.now()); undefined while Redis answers. */
  #since: number | undefined;

  /** Whether an outage is under way. */
  get down(): boolean {
    return this.#since !== undefined;
  }

  /** A connection failed: true when this begins an outage (to report), false during one. */
  begin(): boolean {
    if (this.#since !== undefined) return false;
    this.#since = performance.now();
    return true;
  }

  /** Redis answered: how long the outage it ends lasted (ms), or undefined when there was none. */
  end(): number | undefined {
    if (this.#since === undefined) return undefined;
    const downMs = Math.round(performance.now() - this.#since);
    this.#since = undefined;
    return downMs;
  }
}
