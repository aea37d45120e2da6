/**
 * Writes a job's PACKED_TAIL (wire.ts): its body from the priority on, which a packed add
 * (add.lua `item_fields` 'packed', _add_packed.lua) writes after the seq and created time. The
 * producer packs each body once, and the script reads one header instead of thirteen arguments.
 */
import type { NewJob } from '../store.js';
import { asciiOnly } from './packed.js';

/** Whether a job can go in a packed add: none of the fields only the general path takes. */
export function packable(j: NewJob): boolean {
  return !j.replace && j.dedup === undefined && j.group === undefined && j.cost === 1 && j.debounce === undefined && !j.attemptsMade && j.hold === undefined;
}

/** The tail's head for a job of priority 0 with no limits, backoff, trace or name: most jobs. */
const PLAIN_HEAD = '0::0:0:';

export function packedTail(j: NewJob): string {
  // One concatenation, not the template's five small strings on the way (~0.1 KB an add).
  if (j.priority === 0 && j.maxAttempts === undefined && j.timeoutMs === undefined && j.backoff === undefined && j.traceContext === undefined && !j.name)
    return PLAIN_HEAD + j.data;
  const limits = j.timeoutMs === undefined ? `${j.maxAttempts ?? ''}` : `${j.maxAttempts ?? ''}/${j.timeoutMs}`;
  // Backoff and trace are ASCII (asciiOnly), so their lengths in characters are their bytes.
  const backoff = j.backoff === undefined ? '' : asciiOnly(j.backoff);
  const trace = j.traceContext === undefined ? '' : asciiOnly(j.traceContext);
  if (j.name === undefined || j.name === '') return `${j.priority}:${limits}:${backoff.length}:${trace.length}:${backoff}${trace}${j.data}`;
  return `${j.priority}:${limits}:${backoff.length}:${trace.length}/${Buffer.byteLength(j.name)}:${backoff}${trace}${j.name}${j.data}`;
}
