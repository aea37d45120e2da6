/**
 * The text a worker writes to the store about an attempt and itself: the handler's result as
 * JSON (or a note when it cannot or should not be kept: results live in Redis memory), the
 * error text of a failure, and the worker's id. Capped here, so nothing a handler returns or
 * throws can grow a job's body without bound.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { MAX_RESULT_BYTES } from '../limits.js';

/** The handler's result as JSON for a kept job: '' for none, a note when it cannot or should not be kept. */
export function resultText(result: unknown): string {
  if (result === undefined) return '';
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (err) {
    return JSON.stringify(`[result not kept: not JSON (${(err as Error).message})]`);
  }
  if (text === undefined) return '';
  if (text.length > MAX_RESULT_BYTES / 4 && Buffer.byteLength(text) > MAX_RESULT_BYTES) {
    return JSON.stringify(`[result not kept: ${Buffer.byteLength(text)} bytes, over the ${MAX_RESULT_BYTES}-byte limit]`);
  }
  return text;
}

/** `<host>-<pid>-<random>`, in characters that are safe in the run state and in a URL. */
export function newWorkerId(): string {
  const host =
    hostname()
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 64) || 'host';
  return `${host}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/**
 * What a handler threw, safe to inspect: a value whose reading throws (a trapping Proxy) is
 * replaced by an Error saying so, so the attempt fails like any other instead of the check
 * throwing inside the worker.
 */
export function readableThrown(err: unknown): unknown {
  try {
    void (err instanceof Error);
    return err;
  } catch (readErr) {
    return new Error(`thrown value not readable (${readErr instanceof Error ? readErr.message : typeof readErr})`);
  }
}

/** The error a failed attempt keeps: the stack (or what was thrown, as text), cut at `max` characters. */
export function errorText(err: unknown, max: number): string {
  let text: string;
  try {
    if (err instanceof Error) text = err.stack && err.stack.includes(err.message) ? err.stack : `${err.name}: ${err.message}\n${err.stack ?? ''}`;
    else text = `non-Error thrown: ${typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err))}`;
  } catch (readErr) {
    // A trapping Proxy (or a getter that throws) thrown as the error: the attempt still fails, with a note.
    text = `thrown value not readable (${readErr instanceof Error ? readErr.message : typeof readErr})`;
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
