/**
 * The checks of a Queue call's arguments that are not options (options.ts has those schemas):
 * id lists, purge targets, retention rules and dead-set caps, listing, timeline and dead-page
 * bounds, dead-set filters. Each throws a ValidationError naming the field before anything is
 * written (DESIGN.md, guarantee 9). The messages are part of the contract and tests assert them
 * word for word: a number's message ends with the value as given (`(got 1.5)`). Unknown keys are
 * checked before values, each with a message that lists what is known, so shapes are checked by
 * hand; numbers go through zod, one message for every way a number can be wrong.
 */
import * as z from 'zod';
import { ValidationError } from '../errors.js';
import { LIMIT } from '../store/lifecycle.js';
import type { DeadFilter } from './dead-set.js';
import {
  DEAD_PAGE_MAX,
  MAX_CONCURRENCY,
  MAX_DELAY_MS,
  MAX_EPOCH_MS,
  MAX_RATE_TOKENS,
  MAX_RATE_WINDOW_MS,
  MAX_RETAINED_COUNT,
  PAGE_LIMIT_MAX,
  SEARCH_BUDGET_MAX,
  TIMELINE_BUCKET_MS,
  TIMELINE_BUCKETS,
} from '../limits.js';
import { parseId, parseValue } from '../options.js';
import type { GroupChange, LimitsChange, PurgeTarget, RateLimit, RetainedSet } from '../store/store.js';
import { LIST_ORDERS, LIST_STATES, type ListOrder, type ListState } from '../types.js';

/** A number that `text` describes, from min to max; the message ends with the value as given. */
function numberIn(min: number, max: number, text: string, whole: boolean) {
  const error = (iss: { input?: unknown }) => `${text} (got ${String(iss.input)})`;
  const n = z.number({ error });
  return (whole ? n.int({ error }) : n).min(min, { error }).max(max, { error });
}

const whole = (min: number, max: number, text = `must be a whole number from ${min} to ${max}`) => numberIn(min, max, text, true);

/** A whole number from min to max, as given in `field` (defaults are put in before). */
function wholeIn(v: unknown, field: string, min: number, max: number, text?: string): number {
  return parseValue(whole(min, max, text), v, field) as number;
}

/** Epoch milliseconds, from 0 to max (floored by the caller). */
function epochMs(v: unknown, field: string, max = Number.MAX_VALUE): number {
  return parseValue(numberIn(0, max, 'must be epoch milliseconds', false), v, field) as number;
}

/** One id, or a list of them (`field[i]` names a bad one). */
export function idList(target: string | readonly string[], field: string): string[] {
  const ids = typeof target === 'string' ? [target] : target;
  if (!Array.isArray(ids)) throw new ValidationError(field, 'must be an id, a list of ids, or { all: true }');
  return ids.map((id, i) => parseId(id, Array.isArray(target) ? `${field}[${i}]` : field));
}

/** The ids to cancel: an array, each a valid id. */
export function cancelIds(ids: readonly string[]): string[] {
  if (!Array.isArray(ids)) throw new ValidationError('ids', 'must be an array of job ids');
  return ids.map((id, i) => parseId(id, `ids[${i}]`));
}

/** What a purge of a retained set takes: an id, ids, all, or those older than an age. */
export function purgeTarget(target: string | readonly string[] | { all: true } | { olderThanMs: number }): PurgeTarget {
  if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
    if ('all' in target && target.all === true) return { all: true };
    if ('olderThanMs' in target && typeof target.olderThanMs === 'number' && Number.isFinite(target.olderThanMs) && target.olderThanMs >= 0) {
      return { olderThanMs: Math.floor(target.olderThanMs) };
    }
    throw new ValidationError('target', 'must be an id, a list of ids, { all: true } or { olderThanMs }');
  }
  return { ids: idList(target as string | string[], 'id') };
}

/** The array of addBulk, checked as a whole before its jobs. */
export function bulkArray(jobs: unknown): void {
  if (!Array.isArray(jobs)) throw new ValidationError('jobs', `must be an array of { data, opts? } (got ${jobs === null ? 'null' : typeof jobs})`);
}

/** One entry of addBulk: an object { data, opts? } (its options are checked by their schema). */
export function bulkEntry(j: unknown, i: number): { data: unknown; opts?: unknown } {
  if (typeof j !== 'object' || j === null || Array.isArray(j)) {
    throw new ValidationError(`jobs[${i}]`, `must be an object { data, opts? } (got ${j === null ? 'null' : Array.isArray(j) ? 'an array' : typeof j})`);
  }
  return j as { data: unknown; opts?: unknown };
}

function retentionRule(v: unknown, field: string): { maxCount: number; maxAgeMs: number } {
  if (v === null || v === undefined) return { maxCount: 0, maxAgeMs: 0 };
  if (typeof v !== 'object' || Array.isArray(v)) throw new ValidationError(field, 'must be { count?, ageMs? }, or null to keep none (completed) / all (dead)');
  for (const k of Object.keys(v)) if (k !== 'count' && k !== 'ageMs') throw new ValidationError(`${field}.${k}`, 'is not a retention setting (count, ageMs)');
  const r = v as { count?: unknown; ageMs?: unknown };
  const check = (x: unknown, name: string, max: number): number => (x === undefined || x === null ? 0 : wholeIn(x, `${field}.${name}`, 1, max));
  const out = { maxCount: check(r.count, 'count', MAX_RETAINED_COUNT), maxAgeMs: check(r.ageMs, 'ageMs', MAX_DELAY_MS) };
  if (out.maxCount === 0 && out.maxAgeMs === 0) throw new ValidationError(field, 'needs count or ageMs (or null)');
  return out;
}

/** The rules of setRetention, each set given (and only those) with its bounds. */
export function retentionRules(rules: unknown): [RetainedSet, { maxCount: number; maxAgeMs: number }][] {
  if (typeof rules !== 'object' || rules === null) throw new ValidationError('rules', 'must be { completed?, dead? }');
  for (const k of Object.keys(rules)) if (k !== 'completed' && k !== 'dead') throw new ValidationError(k, 'is not a retained set (completed, dead)');
  const writes: [RetainedSet, { maxCount: number; maxAgeMs: number }][] = [];
  for (const set of ['completed', 'dead'] as const) if (set in rules) writes.push([set, retentionRule((rules as Record<string, unknown>)[set], set)]);
  return writes;
}

/** The dead set's caps; a cap left out or null is none (0). */
export function deadCaps(caps: unknown): { maxCount: number; maxAgeMs: number } {
  const check = (v: unknown, field: string, max: number): number =>
    v === null || v === undefined ? 0 : wholeIn(v, field, 1, max, `must be a whole number from 1 to ${max}, or null for no cap`);
  if (typeof caps !== 'object' || caps === null) throw new ValidationError('caps', 'must be { maxCount?, maxAgeMs? }');
  for (const k of Object.keys(caps)) if (k !== 'maxCount' && k !== 'maxAgeMs') throw new ValidationError(k, 'is not a dead-set cap (maxCount, maxAgeMs)');
  const c = caps as { maxCount?: unknown; maxAgeMs?: unknown };
  return { maxCount: check(c.maxCount, 'maxCount', MAX_RETAINED_COUNT), maxAgeMs: check(c.maxAgeMs, 'maxAgeMs', MAX_DELAY_MS) };
}

/** A filter of dead jobs: errorContains and/or dataContains, each a non-empty string. */
export function deadFilter(filter: DeadFilter): DeadFilter {
  const keys = Object.keys(filter);
  for (const k of keys)
    if (k !== 'errorContains' && k !== 'dataContains') throw new ValidationError(k, 'is not a dead-set filter (errorContains, dataContains)');
  for (const k of keys) {
    const v = (filter as Record<string, unknown>)[k];
    if (typeof v !== 'string' || v === '') throw new ValidationError(k, 'must be a non-empty string');
  }
  if (keys.length === 0) throw new ValidationError('filter', 'needs errorContains or dataContains (or use { all: true })');
  return filter;
}

/** One page of dead jobs: where it starts, and how many. */
export function deadPage(opts: { offset?: number; limit?: number } | null): { offset: number; limit: number } {
  const offset = opts?.offset ?? 0;
  const limit = opts?.limit ?? 100;
  if (!Number.isInteger(offset) || offset < 0) throw new ValidationError('offset', `must be a whole number from 0 (got ${String(offset)})`);
  return { offset, limit: wholeIn(limit, 'limit', 0, DEAD_PAGE_MAX) };
}

/** A listing page's state, size and order. */
export function listArgs(opts: { state: ListState; limit?: number; order?: ListOrder }): { state: ListState; limit: number; order: ListOrder } {
  if (typeof opts !== 'object' || opts === null) throw new ValidationError('opts', 'must be { state, limit?, cursor? }');
  const state = opts.state;
  if (!LIST_STATES.includes(state)) throw new ValidationError('state', `must be one of ${LIST_STATES.join(', ')} (got ${String(state)})`);
  const limit = wholeIn(opts.limit ?? 50, 'limit', 1, PAGE_LIMIT_MAX);
  const order = opts.order ?? 'asc';
  if (!LIST_ORDERS.includes(order)) throw new ValidationError('order', `must be asc or desc (got ${String(order)})`);
  return { state, limit, order };
}

/** A search call's most matches and most jobs read. */
export function searchBounds(limit: unknown, budget: unknown): { limit: number; budget: number } {
  return { limit: wholeIn(limit, 'limit', 1, PAGE_LIMIT_MAX), budget: wholeIn(budget, 'budget', 1, SEARCH_BUDGET_MAX) };
}

/** The window of stats().dueWithinWindow. */
export function statsWindow(opts: { windowMs?: number } | null): number {
  const windowMs = opts?.windowMs ?? 60_000;
  return parseValue(numberIn(0, Number.MAX_VALUE, 'must be a non-negative number of milliseconds', false), windowMs, 'windowMs') as number;
}

/** How many minutes of history to read: a whole number from 1 to LIMIT.history_minutes (24 h), 60 by default. */
export function historyMinutes(opts: unknown): number {
  opts ??= {};
  if (typeof opts !== 'object' || Array.isArray(opts)) throw new ValidationError('opts', 'must be { minutes? }');
  for (const k of Object.keys(opts as object)) if (k !== 'minutes') throw new ValidationError(k, 'is not a history option (minutes)');
  const minutes = (opts as { minutes?: unknown }).minutes ?? 60;
  if (typeof minutes !== 'number' || !Number.isInteger(minutes) || minutes < 1 || minutes > LIMIT.history_minutes)
    throw new ValidationError('minutes', `must be a whole number from 1 to ${LIMIT.history_minutes} (the history keeps 24 hours; got ${String(minutes)})`);
  return minutes;
}

/** A timeline's buckets and start (floored to whole ms). */
export function timelineArgs(opts: unknown): { fromMs: number | undefined; bucketMs: number; buckets: number } {
  opts ??= {};
  if (typeof opts !== 'object' || Array.isArray(opts)) throw new ValidationError('opts', 'must be { bucketMs?, buckets?, fromMs? }');
  for (const k of Object.keys(opts as object))
    if (k !== 'bucketMs' && k !== 'buckets' && k !== 'fromMs') throw new ValidationError(k, 'is not a timeline option (bucketMs, buckets, fromMs)');
  const o = opts as { bucketMs?: unknown; buckets?: unknown; fromMs?: unknown };
  const bounded = (v: unknown, field: string, b: { min: number; max: number; default: number }): number =>
    v === undefined ? b.default : wholeIn(v, field, b.min, b.max);
  const bucketMs = bounded(o.bucketMs, 'bucketMs', TIMELINE_BUCKET_MS);
  const buckets = bounded(o.buckets, 'buckets', TIMELINE_BUCKETS);
  const from = o.fromMs === undefined ? undefined : epochMs(o.fromMs, 'fromMs', MAX_EPOCH_MS);
  return { fromMs: from === undefined ? undefined : Math.floor(from), bucketMs, buckets };
}

/** A drain's `dueBefore` (floored to whole ms), or undefined for every scheduled job. */
export function drainBefore(opts: { dueBefore?: number } | null): number | undefined {
  const before = opts?.dueBefore;
  return before === undefined ? undefined : Math.floor(epochMs(before, 'dueBefore'));
}

/** An obliterate's `force`. */
export function obliterateForce(opts: { force?: boolean } | null): boolean {
  const force = opts?.force ?? false;
  if (typeof force !== 'boolean') throw new ValidationError('force', 'must be true or false');
  return force;
}

/** A concurrency limit: a whole number from 1 to MAX_CONCURRENCY, or null (none). */
function limitValue(v: unknown, field: string): number | null | undefined {
  if (v === undefined || v === null) return v;
  return wholeIn(v, field, 1, MAX_CONCURRENCY, `must be a whole number from 1 to ${MAX_CONCURRENCY}, or null for no limit`);
}

/** Only these keys, each checked by `check`; an object is required. */
function limitKeys(v: unknown, field: string, keys: readonly string[]): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ValidationError(field, `must be an object with ${keys.join(', ')}`);
  for (const k of Object.keys(v)) if (!keys.includes(k)) throw new ValidationError(`${field}.${k}`, `is not a limit (known: ${keys.join(', ')})`);
  return v as Record<string, unknown>;
}

/** A rate limit `{ max, perMs }` (max tokens in any window of perMs), or null (none). */
export function rateValue(v: unknown, field: string): RateLimit | null | undefined {
  if (v === undefined || v === null) return v;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ValidationError(field, 'must be { max, perMs }, or null for no limit');
  for (const k of Object.keys(v))
    if (k !== 'max' && k !== 'perMs') throw new ValidationError(`${field}.${k}`, 'is not part of a rate limit (known: max, perMs)');
  const r = v as Record<string, unknown>;
  if (r.max === undefined || r.perMs === undefined) throw new ValidationError(field, 'must give both max and perMs');
  return {
    max: wholeIn(r.max, `${field}.max`, 1, MAX_RATE_TOKENS, `must be a whole number of tokens from 1 to ${MAX_RATE_TOKENS}`),
    perMs: wholeIn(r.perMs, `${field}.perMs`, 1, MAX_RATE_WINDOW_MS, `must be a whole number of milliseconds from 1 to ${MAX_RATE_WINDOW_MS} (a week)`),
  };
}

/** `queue.setLimits({ concurrency, groupConcurrency, rateLimit, groupRateLimit })`: each a limit, null to remove it, omitted to leave it. */
export function limitsChange(v: unknown): LimitsChange {
  const o = limitKeys(v, 'limits', ['concurrency', 'groupConcurrency', 'rateLimit', 'groupRateLimit']);
  return {
    concurrency: limitValue(o.concurrency, 'limits.concurrency'),
    groupConcurrency: limitValue(o.groupConcurrency, 'limits.groupConcurrency'),
    rateLimit: rateValue(o.rateLimit, 'limits.rateLimit'),
    groupRateLimit: rateValue(o.groupRateLimit, 'limits.groupRateLimit'),
  };
}

/** `queue.groups.setLimits(id, { concurrency?, rateLimit? })`: each a limit, or null to remove it; at least one. */
export function groupChange(v: unknown): GroupChange {
  const o = limitKeys(v, 'limits', ['concurrency', 'rateLimit']);
  if (o.concurrency === undefined && o.rateLimit === undefined)
    throw new ValidationError('limits', 'must give concurrency or rateLimit (a value, or null to remove the limit)');
  return { concurrency: limitValue(o.concurrency, 'limits.concurrency'), rateLimit: rateValue(o.rateLimit, 'limits.rateLimit') };
}

/** A page of `queue.groups.list`: an opaque cursor from the last answer, and 1..1000 groups. */
export function groupsPage(v: { cursor?: unknown; limit?: unknown } | undefined | null): { cursor: string | undefined; limit: number } {
  const o = limitKeys(v ?? {}, 'opts', ['cursor', 'limit']);
  if (o.cursor !== undefined && (typeof o.cursor !== 'string' || o.cursor.length === 0 || o.cursor.length > 1024))
    throw new ValidationError('opts.cursor', 'must be the cursor of a previous answer');
  return { cursor: o.cursor as string | undefined, limit: o.limit === undefined ? 100 : wholeIn(o.limit, 'opts.limit', 1, PAGE_LIMIT_MAX) };
}
