/**
 * A Job is what a handler receives: the data and its identity, bound to one hand-out's lease.
 * `id` + `token` name this hand-out uniquely, so they can serve as an idempotency key downstream.
 */

/** How a held job was released (Job.hold). */
export interface JobHold {
  /** Its deadline came before every dependency had ended. */
  timedOut: boolean;
  /** The dependencies that had not ended when it was released. */
  pending: string[];
}

/** How one dependency ended (Job.childResults). */
export type ChildResult<R = unknown> =
  | { outcome: 'completed'; result: R | undefined }
  | { outcome: 'dead' | 'cancelled'; reason: string }
  | { outcome: 'pending' };

/** The signal that ended a job's wait (Job.signalled). */
export type JobSignal<D = unknown> = { name: string; timedOut: false; data: D | undefined } | { name: string; timedOut: true };

/** Each dependency's end, by id. */
export type ChildResults<R = unknown> = Record<string, ChildResult<R>>;

export interface Job<T = unknown> {
  readonly queue: string;
  readonly id: string;
  readonly data: T;
  /** 1 on the first hand-out, 2 on the first retry, and so on. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** When the job was due, server clock, epoch ms. */
  readonly dueAtMs: number;
  readonly priority: number;
  /** Its group (`add({ group })`), if any. */
  readonly group: string | undefined;
  /** Its name (`add({ name })`), if any: a Worker given handlers by name runs the one of this name. */
  readonly name: string | undefined;
  /** How long this attempt may run, in ms: the job's own `timeoutMs`, else the worker's; undefined for no limit. */
  readonly timeoutMs: number | undefined;
  readonly createdAtMs: number;
  /** This hand-out's lease token. */
  readonly token: string;
  /**
   * How its hold ended, for a job added with `dependsOn` (or a flow's parent): `timedOut` when
   * its deadline (waitAtMostMs, waitUntil) came first, with the dependencies that had not ended
   * in `pending`. Undefined for a job added without dependencies.
   */
  readonly hold: JobHold | undefined;
  /**
   * How each of its dependencies ended (a flow's children, `dependsOn`), by id in the order
   * given: `{ outcome: 'completed', result }`, `{ outcome: 'dead' | 'cancelled', reason }` (under
   * onChildFailure 'ignore'), or `{ outcome: 'pending' }` (its deadline came first). Empty for a
   * job added without dependencies.
   */
  childResults<R = unknown>(): Promise<ChildResults<R>>;
  /**
   * The signal that ended this job's last wait (`waitForSignal`): its name and data, or
   * `timedOut: true` when the wait's timeout came first. Undefined for a job that never waited.
   */
  readonly signalled: JobSignal | undefined;
  /**
   * Ends this attempt without failing it (the attempt is not counted) and holds the job until
   * `queue.signal(job.id, name, data)` — or `timeoutMs` passes. Its next run reads
   * `job.signalled`. A signal sent before the job waits for it is kept and ends the wait at once.
   * Throws a WaitForSignal that ends the handler, as snooze() does.
   * @example if (!job.signalled) job.waitForSignal('payment', { timeoutMs: 30 * 60_000 });
   */
  waitForSignal(name: string, opts?: { timeoutMs?: number }): never;
  /**
   * Aborted when the worker starts closing ('worker closing'), the attempt times out
   * ('timeout'), the job is cancelled or failed from outside as it runs ('cancelled',
   * 'failed'), or this hand-out's lease is lost ('lease lost'); the reason is `signal.reason`.
   */
  readonly signal: AbortSignal;
  /**
   * Not yet: run this job again in `delayMs` without spending an attempt. Throws a SnoozeSignal
   * that ends the handler. With `deadlineAtMs` (epoch ms, server clock), a snooze that would
   * run past it sends the job to the dead set instead ("give up after 30 minutes").
   * @example if (order.payment === 'pending') job.snooze(30_000, { deadlineAtMs: job.createdAtMs + 30 * 60_000 });
   */
  snooze(delayMs: number, opts?: { deadlineAtMs?: number }): never;
  /** Pushes the lease deadline to `ms` from now (default: the worker's leaseMs). Throws LeaseLostError. */
  extendLease(ms?: number): Promise<void>;
  /**
   * Records how far the job has got: a number (e.g. percent) or a small JSON value (at most
   * 4 KiB as JSON), shown by `get`, listings, the CLI and the dashboard, and kept with the job
   * when retention keeps it. Fenced by this hand-out's lease: throws LeaseLostError when the
   * job is no longer this worker's.
   */
  progress(value: unknown): Promise<void>;
  /**
   * Adds a line to the job's log (the last 100 lines are kept, each cut at 2,000 characters),
   * shown by `get`. Fenced like progress().
   */
  log(line: string): Promise<void>;
}
