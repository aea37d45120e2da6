/** The error of an add whose job's cost is above a rate limit's max (both stores; nothing was written). */
import { ValidationError } from '../errors.js';
import type { NewJob } from './store.js';

/** Names the job of the call with the highest cost (a sharded add sends each shard part of the call: Queue names it again over the whole call). */
export class TooCostlyError extends ValidationError {}

export function tooCostly(jobs: readonly NewJob[]): TooCostlyError {
  const i = jobs.reduce((best, j, k) => (j.cost > jobs[best]!.cost ? k : best), 0);
  const field = jobs.length === 1 ? 'cost' : `jobs[${i}].opts.cost`;
  return new TooCostlyError(field, `is above the max of a rate limit that applies to the job (queue.limits(), or its group's own) (got ${jobs[i]!.cost})`);
}
