/**
 * Error classes, and the one place where a script's numeric return code becomes an error.
 * Every error delayq throws is a DelayqError, so callers can tell ours from theirs.
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
