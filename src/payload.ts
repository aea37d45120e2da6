/** Job data <-> the JSON text kept in the store, with the size limit checked on the way in. */
import { ValidationError } from './errors.js';
import type { JobInfo } from './types.js';

export function encodePayload(data: unknown, maxBytes: number, field = 'data'): string {
  const text = payloadText(data, maxBytes);
  if (typeof text === 'string') return text;
  throw new ValidationError(field, text.problem);
}

/**
 * encodePayload without naming the field: the JSON text, or what is wrong with the data (the
 * message a ValidationError would carry). A bulk add names a job's field (`jobs[17].data`) only
 * when it has a problem, not for each of thousands of jobs on the way.
 */
export function payloadText(data: unknown, maxBytes: number): string | { problem: string } {
  let text: string | undefined;
  try {
    text = JSON.stringify(data);
  } catch (err) {
    return { problem: `must be JSON-serialisable (${(err as Error).message})` };
  }
  if (text === undefined) {
    if (data === undefined) return 'null';
    return { problem: `must be JSON-serialisable (got ${typeof data})` };
  }
  // Byte length only matters near the limit; a UTF-16 length under a quarter of it cannot exceed it.
  if (text.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(text);
    if (bytes > maxBytes) return { problem: `is ${bytes} bytes of JSON, over the limit of ${maxBytes} (maxPayloadBytes)` };
  }
  return text;
}

/** Stored JSON text back to a value; text that is not JSON (a corrupt body) stays visible as text. */
export function decodePayload<T>(text: string | undefined): T | string | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    // Corrupt bodies stay visible as text.
    return text;
  }
}

/** A job as stored (raw JSON text) with its data, result and progress decoded; text that is not JSON stays text. */
export function decodeJob<T>(info: JobInfo<string>): JobInfo<T> {
  return {
    ...info,
    data: decodePayload<T>(info.data) as T,
    result: decodePayload(info.result as string | undefined),
    progress: decodePayload(info.progress as string | undefined),
  };
}
