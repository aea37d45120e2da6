/**
 * Error classes. Every error delayq throws is a DelayqError, so callers can tell ours from
 * theirs. (A script's numeric return code becomes a name in wire.ts codeName, and the store turns
 * names into results or these errors; replies.ts refuses a reply that does not fit its shape.)
 */

export class DelayqError extends Error {
  override name = 'DelayqError';
}

/** Bad input at the call: `field` names the offending option, and nothing was written. */
export class ValidationError extends DelayqError {
  override name = 'ValidationError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field} ${message}`);
  }
}

/**
 * An ack, nack or lease extension carried a token that is no longer the job's:
 * the lease ran out and the job was handed to someone else (or reaped).
 */
export class LeaseLostError extends DelayqError {
  override name = 'LeaseLostError';
  constructor(
    readonly jobId: string,
    readonly token: string,
  ) {
    super(`lease lost for job ${jobId}: token ${token} is no longer the job's`);
  }
}

/** Thrown by a handler to send the job straight to the dead set, skipping any attempts left. */
export class UnrecoverableError extends DelayqError {
  override name = 'UnrecoverableError';
}

/** The store answered with something that breaks the contract; a bug or a foreign write. */
export class StoreError extends DelayqError {
  override name = 'StoreError';
}

/**
 * Redis could not be reached, or did not answer in time; `address` names the server (or the
 * Sentinel master, or the cluster's seed nodes) and the message says what happened.
 *
 * For a write it means "not known": the command may or may not have run, and a command that was
 * on its way may still run when the connection comes back (ioredis re-sends what was in
 * flight). Adding the same id again is safe: an id that exists changes nothing. (An add without
 * an id of its own gets a fresh one each time, so its retry may add a second job.)
 */
export class ConnectionError extends DelayqError {
  override name = 'ConnectionError';
  constructor(
    readonly address: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Redis at ${address}: ${detail}`, options);
  }
}

/**
 * One shard of a sharded queue failed (its node is down, or a key of its is broken) while the
 * others went on: their jobs still run, and this shard is asked again after a back-off (100 ms
 * doubling to 2 s). A worker reports it as 'error' each time, so a shard that never recovers is
 * seen rather than silently left with its jobs.
 */
export class ShardError extends DelayqError {
  override name = 'ShardError';
  constructor(
    /** The shard's queue name (`<queue>#<i>`). */
    readonly shard: string,
    options: { cause: unknown },
  ) {
    const cause = options.cause;
    super(`shard ${shard}: ${cause instanceof Error ? cause.message : String(cause)}`, options);
  }
}

/** A handler ran past the worker's `timeoutMs`; the attempt fails (and is retried if attempts are left). */
export class HandlerTimeoutError extends DelayqError {
  override name = 'HandlerTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`handler did not finish within ${timeoutMs} ms`);
  }
}

/**
 * Thrown by `job.snooze()`: ends the attempt without failing it. Not an error a handler should
 * catch; if one does and returns normally, the job is snoozed all the same.
 */
export class SnoozeSignal extends DelayqError {
  override name = 'SnoozeSignal';
  constructor(
    readonly delayMs: number,
    readonly deadlineAtMs: number | undefined,
  ) {
    super(`snoozed for ${delayMs} ms`);
  }
}

/**
 * Thrown by `job.waitForSignal(name, { timeoutMs })` (docs/flows.md): the attempt ends without
 * failing, and the job waits until `queue.signal(id, name, data)` or the timeout; its next run
 * reads `job.signalled`. `timeoutMs` is a whole number of ms from 1 to 10 years, or undefined.
 */
export class WaitForSignal extends DelayqError {
  override name = 'WaitForSignal';
  constructor(
    readonly signalName: string,
    readonly timeoutMs: number | undefined,
  ) {
    super(`waiting for signal ${JSON.stringify(signalName)}${timeoutMs === undefined ? '' : ` at most ${timeoutMs} ms`}`);
  }
}

/**
 * Thrown by a handler when an upstream said "slow down" (an HTTP 429 with Retry-After): the job
 * goes back without using an attempt, and its group (the whole queue, for a job of no group) gets
 * no hand-outs for `retryAfterMs`, on every worker. `retryAfterMs` is a whole number of
 * milliseconds from 1 to a week; a bad one fails the attempt as an ordinary error would.
 * @example if (res.status === 429) throw new RateLimitSignal(Number(res.headers.get('retry-after')) * 1000)
 */
export class RateLimitSignal extends DelayqError {
  override name = 'RateLimitSignal';
  constructor(readonly retryAfterMs: number) {
    super(`rate limited: hold back for ${retryAfterMs} ms`);
  }
}

/** `queue.waitFor`: the job went to the dead set (out of attempts, failed for good, or buried by `queue.fail`). */
export class JobFailedError extends DelayqError {
  override name = 'JobFailedError';
  constructor(
    readonly jobId: string,
    readonly reason: string,
  ) {
    super(`job ${jobId} failed: ${reason || '(no reason given)'}`);
  }
}

/** `queue.waitFor`: the job was cancelled (`queue.cancel`), before or while it ran. */
export class JobCancelledError extends DelayqError {
  override name = 'JobCancelledError';
  constructor(
    readonly jobId: string,
    readonly reason: string,
  ) {
    super(`job ${jobId} was cancelled${reason ? `: ${reason}` : ''}`);
  }
}

/**
 * `queue.waitFor`: there is no such job. It was never added, or it ended before the wait began
 * and was not kept (a completed job is kept only under a retention rule; a cancelled one never).
 */
export class JobNotFoundError extends DelayqError {
  override name = 'JobNotFoundError';
  constructor(readonly jobId: string) {
    super(`no job ${jobId}: never added, or it ended before the wait began and was not kept`);
  }
}

/** `queue.waitFor`: the job did not end within the wait. It goes on; nothing of the wait is left behind. */
export class WaitTimeoutError extends DelayqError {
  override name = 'WaitTimeoutError';
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
  ) {
    super(`job ${jobId} did not end within ${timeoutMs} ms`);
  }
}

/**
 * An isolated handler's thread or child process ended before its job did (it crashed, called
 * process.exit, or ran out of memory): the attempt fails (and is retried while attempts are left),
 * and the pool starts a fresh thread or process for the next job.
 */
export class IsolatedHandlerError extends DelayqError {
  override name = 'IsolatedHandlerError';
}
