/**
 * An ack batcher gathers the acks of handlers that finish in the same turn of the event loop
 * and sends them in one script run: with a fast handler, acking one job per round trip would
 * make the Node process, not Redis, the limit.
 */
import type { CompleteRef, LeaseOutcome, LeaseRef } from '../store/store.js';

/**
 * Told an ack's outcome, or the error that kept it from being written, with what ack() was
 * given: one handler for every ack, not a callback per ack (at tens of thousands of acks a
 * second, a promise or a closure per ack was a measurable share of the worker's garbage).
 */
export type AckDone<J> = (job: J, value: unknown, sentAtMs: number, outcome: LeaseOutcome | undefined, err?: unknown) => void;

export class AckBatcher<J extends LeaseRef> {
  // One batch in parallel arrays: the acks as the store reads them, and what `done` is told.
  #refs: CompleteRef[] = [];
  #jobs: J[] = [];
  #values: unknown[] = [];
  #sentAt: number[] = [];
  #scheduled = false;
  #inFlight = new Set<Promise<void>>();
  readonly #send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>;
  readonly #done: AckDone<J>;
  readonly #onError: (err: unknown) => void;
  readonly #flushNow = () => this.#flush();

  /** `onError` is told of a `done` that threw; the other acks of its batch are told theirs all the same. */
  constructor(send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>, done: AckDone<J>, onError: (err: unknown) => void) {
    this.#send = send;
    this.#done = done;
    this.#onError = onError;
  }

  /**
   * `result`: the handler's result as JSON text, kept when the queue's retention keeps the job
   * ('' for none: the job itself is then the store's ack, with no object made for it). `value`
   * and `sentAtMs` are handed back to `done` as they are.
   */
  ack(job: J, result: string, value: unknown, sentAtMs: number): void {
    this.#refs.push(result === '' ? job : { id: job.id, token: job.token, result });
    this.#jobs.push(job);
    this.#values.push(value);
    this.#sentAt.push(sentAtMs);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flushNow);
    }
  }

  #flush(): void {
    this.#scheduled = false;
    const refs = this.#refs;
    if (refs.length === 0) return;
    const jobs = this.#jobs;
    const values = this.#values;
    const sentAt = this.#sentAt;
    this.#refs = [];
    this.#jobs = [];
    this.#values = [];
    this.#sentAt = [];
    const p = this.#send(refs).then(
      (outcomes) => {
        for (let i = 0; i < jobs.length; i++) this.#report(jobs[i]!, values[i], sentAt[i]!, outcomes[i], undefined);
      },
      (err) => {
        for (let i = 0; i < jobs.length; i++) this.#report(jobs[i]!, values[i], sentAt[i]!, undefined, err);
      },
    );
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  #report(job: J, value: unknown, sentAtMs: number, outcome: LeaseOutcome | undefined, err: unknown): void {
    try {
      this.#done(job, value, sentAtMs, outcome, err);
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
