/**
 * An ack batcher gathers the acks of handlers that finish in the same turn of the event loop
 * and sends them in one script run: with a fast handler, acking one job per round trip would
 * make the Node process, not Redis, the limit.
 */
import type { CompleteRef, LeaseOutcome } from '../store/store.js';

interface Pending extends CompleteRef {
  resolve(outcome: LeaseOutcome): void;
  reject(err: unknown): void;
}

export class AckBatcher {
  #pending: Pending[] = [];
  #scheduled = false;
  #inFlight = new Set<Promise<void>>();
  readonly #send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>;

  constructor(send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>) {
    this.#send = send;
  }

  /** `result`: the handler's result as JSON text, kept when the queue's retention keeps the job. */
  ack(id: string, token: string, result?: string): Promise<LeaseOutcome> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ id, token, result, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    const p = this.#send(batch.map(({ id, token, result }) => ({ id, token, result }))).then(
      (outcomes) => batch.forEach((b, i) => b.resolve(outcomes[i]!)),
      (err) => batch.forEach((b) => b.reject(err)),
    );
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /** Sends what is pending now and waits for every batch under way. */
  async drain(): Promise<void> {
    this.#flush();
    await Promise.allSettled([...this.#inFlight]);
  }
}
