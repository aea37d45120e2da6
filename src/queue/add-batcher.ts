/**
 * An add batcher gathers the single adds (Queue.add) made in the same turn of the event loop and
 * writes them in one script run, as addBulk does. add.lua decides each job of a call as if it
 * were added on its own, in order, so a batch answers every add as it would have alone; what
 * changes is the cost: a producer with many adds in flight (a web server adding the job of each
 * request) pays a script run's fixed cost (~31 µs of Redis CPU: the call, the prologue that names
 * every key and argument, the request memo, the sequence number, the wake) once a batch, not
 * once a job (bench: single adds, 200 in flight, 4× the jobs/s). A run goes out as soon as it
 * holds `max` adds, before the turn ends, so Redis starts on it while the rest are made. An add
 * made alone goes out alone, one turn later.
 *
 * A call is refused as a whole when a job's cost is above a rate limit's max: an add with a cost
 * above 1 goes alone (after those pending), so that refusal is its own. An error of the call (the
 * connection) fails the adds of the batch, as it would have failed each; on a sharded queue each
 * shard's part settles on its own (a failed shard fails only the adds routed to it).
 */
import { type NewJob, PartialAddError, type StoredAddResult } from '../store/store.js';

/** A batch's adds: the jobs as sent, and each add's settling functions, by index. */
interface Batch<R> {
  jobs: NewJob[];
  resolves: ((r: R) => void)[];
  rejects: ((err: unknown) => void)[];
}

const newBatch = <R>(): Batch<R> => ({ jobs: [], resolves: [], rejects: [] });

/**
 * The settling functions of the promise being made: one executor for every add, which leaves them
 * here for the add to take at once (`new Promise` calls it before it returns), instead of a
 * closure over the add made for each (~0.1 KB an add with its context, bench/producer-alloc.ts).
 */
let madeResolve: ((r: never) => void) | undefined;
let madeReject: ((err: unknown) => void) | undefined;
function takeSettlers(resolve: (r: never) => void, reject: (err: unknown) => void): void {
  madeResolve = resolve;
  madeReject = reject;
}

/** A batch goes out once its payloads reach this many bytes (UTF-8, as sent), so a run of large jobs is not one huge call. */
const BATCH_BYTES = 1 << 20;

export class AddBatcher<R = StoredAddResult> {
  /** The adds pending, as parallel lists (no object an add): the jobs are sent as they are. */
  #pending: Batch<R> = newBatch();
  /** The pending payloads' UTF-8 bytes: a bound (three a UTF-16 unit) until `#exact`. */
  #bytes = 0;
  #exact = false;
  #scheduled = false;
  readonly #send: (jobs: NewJob[]) => Promise<StoredAddResult[]>;
  readonly #max: number;
  readonly #answer: (job: NewJob, r: StoredAddResult) => R;

  /**
   * `send` writes jobs in one script run and answers each in order; at most `max` a run. Each
   * add resolves with `answer` of its job and stored result: the caller's own answer, so an add
   * is one promise, not a second one awaiting this one (~0.45 KB an add, bench/producer-alloc.ts).
   */
  constructor(send: (jobs: NewJob[]) => Promise<StoredAddResult[]>, max: number, answer?: (job: NewJob, r: StoredAddResult) => R) {
    this.#send = send;
    this.#max = max;
    this.#answer = answer ?? ((_job, r) => r as R);
  }

  add(job: NewJob): Promise<R> {
    if (job.cost > 1) {
      this.flush();
      return this.#send([job]).then((r) => this.#answer(job, r[0]!));
    }
    const promise = new Promise<R>(takeSettlers);
    const p = this.#pending;
    p.jobs.push(job);
    p.resolves.push(madeResolve as (r: R) => void);
    p.rejects.push(madeReject!);
    madeResolve = madeReject = undefined;
    if (p.jobs.length >= this.#max || this.#full(job.data)) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        this.flush();
      });
    }
    return promise;
  }

  /**
   * Whether the pending payloads, `data` the last, reach BATCH_BYTES of UTF-8. Counted exactly
   * only once a bound of three bytes a UTF-16 unit could reach it: measuring a payload flattens
   * its JSON text (a copy, ~0.15 KB an add of a small payload), which its packed tail, measured
   * when the call is written, copies again anyway.
   */
  #full(data: string): boolean {
    if (this.#exact) this.#bytes += Buffer.byteLength(data);
    else {
      this.#bytes += data.length * 3;
      if (this.#bytes < BATCH_BYTES) return false;
      this.#exact = true;
      this.#bytes = 0;
      for (const j of this.#pending.jobs) this.#bytes += Buffer.byteLength(j.data);
    }
    return this.#bytes >= BATCH_BYTES;
  }

  /** Sends what is pending now (a call that must come after those adds calls this first). */
  flush(): void {
    if (this.#pending.jobs.length === 0) return;
    const batch = this.#pending;
    this.#pending = newBatch();
    this.#bytes = 0;
    this.#exact = false;
    this.#write(batch);
  }

  #write(batch: Batch<R>): void {
    const { jobs, rejects } = batch;
    this.#send(jobs).then(
      (results) => {
        for (let i = 0; i < jobs.length; i++) this.#settle(batch, i, results[i]!);
      },
      (err: unknown) => {
        // Jobs of the batch that went to other shards than a failed one were written: they
        // resolve (rejected, a producer would add them again under a new id, and they would run twice).
        if (err instanceof PartialAddError) {
          for (let i = 0; i < jobs.length; i++) {
            const r = err.results[i];
            if (r) this.#settle(batch, i, r);
            else rejects[i]!(err.errors.get(i) ?? err.cause);
          }
        } else for (const reject of rejects) reject(err);
      },
    );
  }

  /** Resolves add `i` of a batch with its answer; an answer that throws rejects that add alone. */
  #settle(batch: Batch<R>, i: number, r: StoredAddResult): void {
    try {
      batch.resolves[i]!(this.#answer(batch.jobs[i]!, r));
    } catch (err) {
      batch.rejects[i]!(err);
    }
  }
}

/**
 * `target` (a store, or a shard admin) whose every call first sends the adds pending in
 * `batcher`: a call made after an add (a cancel of the job it adds, not waiting for it) reaches
 * the store after it, as it did when each add went out at once.
 */
export function afterPendingAdds<S extends object>(target: S, batcher: { flush(): void }): S {
  return new Proxy(target, {
    get(t, prop) {
      const v: unknown = Reflect.get(t, prop, t);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        batcher.flush();
        return (v as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}
