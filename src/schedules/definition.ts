/**
 * A recurring schedule's definition: when (a cron pattern in a time zone, or a fixed interval),
 * what to enqueue, and what to do about occurrences missed while no scheduler ran. Validated
 * here, stored as JSON, and read back by every scheduler process.
 */
import { Cron } from 'croner';
import * as z from 'zod';
import type { BackoffOptions } from '../backoff.js';
import { ValidationError } from '../errors.js';
import { attemptsSchema, backoffSchema, idSchema, parseOptions, prioritySchema, timeoutMsSchema } from '../options.js';

export type MissedPolicy = 'latest' | 'skip';

export interface ScheduleSpec<T = unknown> {
  /** A cron pattern (5 fields, or 6 with seconds first), read in `tz`. Exclusive with `every`. */
  cron?: string;
  /** A fixed interval in ms (at least 100), counted from when the schedule was first stored. Exclusive with `cron`. */
  every?: number;
  /** IANA time zone for `cron`. @default 'UTC' */
  tz?: string;
  /** The data of every occurrence's job. */
  data?: T;
  /** Options of every occurrence's job; `name` is its job name (add({ name })). */
  opts?: { priority?: number; attempts?: number; backoff?: BackoffOptions; name?: string; timeoutMs?: number };
  /**
   * Occurrences missed while no scheduler was running (more than `missedAfterMs` late):
   * 'latest' runs the latest of them once, 'skip' runs none.
   * @default 'latest'
   */
  missed?: MissedPolicy;
}

/** What is stored: the spec, normalised, plus the interval's anchor. */
export interface StoredDefinition {
  cron?: string;
  every?: number;
  tz: string;
  data: unknown;
  opts: { priority?: number; attempts?: number; backoff?: BackoffOptions; name?: string; timeoutMs?: number };
  missed: MissedPolicy;
  /** For `every`: occurrences fall on anchor + k × every. */
  anchorMs: number;
}

const MIN_EVERY_MS = 100;

export const specSchema = z.strictObject({
  cron: z.string().min(1).max(200).optional(),
  every: z
    .number()
    .int()
    .min(MIN_EVERY_MS)
    .max(366 * 24 * 3600 * 1000)
    .optional(),
  tz: z.string().min(1).max(100).optional(),
  data: z.unknown().optional(),
  opts: z
    .strictObject({
      priority: prioritySchema.optional(),
      attempts: attemptsSchema.optional(),
      backoff: backoffSchema.optional(),
      name: idSchema.optional(),
      timeoutMs: timeoutMsSchema.optional(),
    })
    .optional(),
  missed: z.enum(['latest', 'skip']).optional(),
});

export function parseScheduleName(name: unknown): string {
  return parseOptions(idSchema, name, 'name') as string;
}

export function validTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Validates a spec; throws ValidationError naming the field. `nowMs` anchors an interval. */
export function parseSpec(spec: unknown, nowMs: number, previous?: StoredDefinition): StoredDefinition {
  const o = parseOptions(specSchema, spec) as z.output<typeof specSchema>;
  if ((o.cron === undefined) === (o.every === undefined)) throw new ValidationError('cron', 'give exactly one of cron and every');
  const tz = o.tz ?? 'UTC';
  if (!validTimeZone(tz)) throw new ValidationError('tz', `is not a known IANA time zone (got ${JSON.stringify(tz)})`);
  if (o.cron !== undefined) {
    try {
      new Cron(o.cron, { timezone: tz, paused: true }).nextRun();
    } catch (err) {
      throw new ValidationError('cron', `is not a valid cron pattern (${(err as Error).message})`);
    }
  }
  const def: StoredDefinition = {
    tz,
    data: o.data ?? null,
    opts: o.opts ?? {},
    missed: o.missed ?? 'latest',
    // Keep an interval's rhythm when only its data or options change.
    anchorMs: previous && previous.every === o.every ? previous.anchorMs : nowMs,
  };
  if (o.cron !== undefined) def.cron = o.cron;
  if (o.every !== undefined) def.every = o.every;
  return def;
}

export function decodeDefinition(text: string): StoredDefinition | undefined {
  try {
    return JSON.parse(text) as StoredDefinition;
  } catch {
    return undefined;
  }
}
