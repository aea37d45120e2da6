/**
 * An ack batcher gathers the acks of handlers that finish in the same turn of the event loop
 * and sends them in one script run: with a fast handler, acking one job per round trip would
 * make the Node process, not Redis, the limit.
 */
import type { CompleteRef, LeaseOutcome } from '../store/store.js';

/** Told the ack's outcome, or the error that kept it from being written. */
export type AckDone = (outcome: LeaseOutcome | undefined, err?: unknown) => void;

interface Pending extends CompleteRef {
  done: AckDone;
}

export class AckBatcher {
  #pending: Pending[] = [];
  #scheduled = false;
  #inFlight = new Set<Promise<void>>();
  readonly #send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>;
  readonly #onError: (err: unknown) => void;

  /** `onError` is told of a callback that threw; the other acks of its batch are told theirs all the same. */
  constructor(send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>, onError: (err: unknown) => void) {
    this.#send = send;
    this.#onError = onError;
  }

  /**
   * `result`: the handler's result as JSON text, kept when the queue's retention keeps the job.
   * A callback, not a promise: at tens of thousands of acks a second, a promise and its closures
   * per ack were a measurable share of the worker's garbage.
   */
  ack(id: string, token: string, result: string | undefined, done: AckDone): void {
    this.#pending.push({ id, token, result, done });
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0) return;
    // The pending entries are CompleteRefs: the store reads id, token and result from them.
    const p = this.#send(batch).then(
      (outcomes) => {
        for (let i = 0; i < batch.length; i++) this.#report(batch[i]!, outcomes[i], undefined);
      },
      (err) => {
        for (const b of batch) this.#report(b, undefined, err);
      },
    );
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  #report(p: Pending, outcome: LeaseOutcome | undefined, err: unknown): void {
    try {
      p.done(outcome, err);
    } catch (e) {
      this.#onError(e);
    }
  }

  /** Sends what is pending now and waits for every batch under way. */
  async drain(): Promise<void> {
    this.#flush();
    await Promise.allSettled([...this.#inFlight]);
  }
}
