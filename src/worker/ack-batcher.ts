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
  // One batch in parallel arrays. The jobs are the store's acks as they are (a job has the id
  // and token an ack sends); result texts and values are kept only once one is not empty (a
  // handler that returns nothing, the common case, costs them nothing).
  #jobs: J[] = [];
  /** Acks in the batch: the arrays are made as long as the last batch, and filled up to this. */
  #count = 0;
  /** An answered batch's array, kept for the next batch. */
  #spare: J[] | undefined;
  #texts: string[] | undefined;
  #values: unknown[] | undefined;
  #scheduled = false;
  #inFlight = new Set<Promise<void>>();
  readonly #send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>;
  readonly #done: AckDone<J>;
  readonly #onError: (err: unknown) => void;
  readonly #now: () => number;
  readonly #flushNow = () => this.#flush();

  /**
   * `onError` is told of a `done` that threw; the other acks of its batch are told theirs all the
   * same. `now`: the server clock, read once per batch as it is sent (`done`'s `sentAtMs`).
   */
  constructor(send: (leases: CompleteRef[]) => Promise<LeaseOutcome[]>, done: AckDone<J>, onError: (err: unknown) => void, now: () => number) {
    this.#send = send;
    this.#done = done;
    this.#onError = onError;
    this.#now = now;
  }

  /**
   * `result`: the handler's result as JSON text, kept when the queue's retention keeps the job
   * ('' for none). `value` is handed back to `done` as it is.
   */
  ack(job: J, result: string, value: unknown): void {
    const n = this.#count++;
    if (n < this.#jobs.length) this.#jobs[n] = job;
    else this.#jobs.push(job);
    if (result !== '' && !this.#texts) this.#texts = new Array<string>(n).fill('');
    this.#texts?.push(result);
    if (value !== undefined && !this.#values) this.#values = new Array<unknown>(n).fill(undefined);
    this.#values?.push(value);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flushNow);
    }
  }

  #flush(): void {
    this.#scheduled = false;
    const n = this.#count;
    if (n === 0) return;
    const jobs = this.#jobs;
    // When the batch goes out, the time its acks can reach Redis at the earliest: a lease that
    // ran out before it was not this batch's to end. One clock reading a batch, not one an ack
    // (a call, a heap number and a slot of an array per job).
    const sentAtMs = this.#now();
    const texts = this.#texts;
    const values = this.#values;
    jobs.length = n;
    // The next batch is likely of this one's size: its array is one that long, not grown ack by
    // ack (a hundred acks a batch grew it through four sizes): an answered batch's, else a new one.
    this.#jobs = this.#spare ?? new Array<J>(n);
    this.#spare = undefined;
    this.#count = 0;
    this.#texts = undefined;
    this.#values = undefined;
    const acks: CompleteRef[] = texts ? jobs.map((j, i) => (texts[i] === '' ? j : { id: j.id, token: j.token, result: texts[i] })) : jobs;
    const p = this.#send(acks).then(
      (outcomes) => {
        for (let i = 0; i < jobs.length; i++) this.#report(jobs[i]!, values?.[i], sentAtMs, outcomes[i], undefined);
        this.#reuse(jobs);
      },
      (err) => {
        for (let i = 0; i < jobs.length; i++) this.#report(jobs[i]!, values?.[i], sentAtMs, undefined, err);
        this.#reuse(jobs);
      },
    );
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p));
  }

  /**
   * Keeps an answered batch's array for the next batch (a new array per batch was 8 bytes of
   * every ack). The store is done with it: its call has answered. Emptied, so that it keeps no
   * finished job alive.
   */
  #reuse(jobs: J[]): void {
    for (let i = 0; i < jobs.length; i++) jobs[i] = undefined as unknown as J;
    this.#spare = jobs;
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
