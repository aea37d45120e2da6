/**
 * A lease keeper renews the leases of the jobs in flight, all of a worker's jobs in one call,
 * every third of the lease, so a lease only runs out when the process stalls for two thirds of
 * it (or dies). A job it cannot renew is reported lost.
 */
import type { LeaseOutcome, LeaseRef } from '../store/store.js';
import { timerDelay } from '../timers.js';

export interface LeaseKeeperParams {
  intervalMs: number;
  running: () => LeaseRef[];
  extend: (leases: LeaseRef[]) => Promise<LeaseOutcome[]>;
  onLost: (lease: LeaseRef) => void;
  onError: (err: unknown) => void;
}

export class LeaseKeeper {
  #interval: NodeJS.Timeout | undefined;
  #busy = false;
  #stopped = false;
  readonly #p: LeaseKeeperParams;

  constructor(params: LeaseKeeperParams) {
    this.#p = params;
  }

  start(): void {
    this.#stopped = false;
    this.#interval ??= setInterval(() => void this.renew(), timerDelay(this.#p.intervalMs));
  }

  async renew(): Promise<void> {
    // One renewal at a time: a slow one must not pile up behind itself during an outage.
    if (this.#busy) return;
    const leases = this.#p.running();
    if (leases.length === 0) return;
    this.#busy = true;
    try {
      const outcomes = await this.#p.extend(leases);
      // A renewal answered after stop() (the worker closing handed these jobs back, and may have
      // closed its store since) has nothing left to report.
      if (this.#stopped) return;
      leases.forEach((l, i) => {
        if (outcomes[i] !== 'ok') this.#p.onLost(l);
      });
    } catch (err) {
      if (!this.#stopped) this.#p.onError(err);
    } finally {
      this.#busy = false;
    }
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#interval);
    this.#interval = undefined;
  }
}
