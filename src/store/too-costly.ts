/** The error of an add whose job's cost is above a rate limit's max (both stores; nothing was written). */
import { ValidationError } from '../errors.js';
import type { NewJob } from './store.js';

export function tooCostly(jobs: readonly NewJob[]): ValidationError {
  const i = jobs.reduce((best, j, k) => (j.cost > jobs[best]!.cost ? k : best), 0);
  const field = jobs.length === 1 ? 'opts.cost' : `jobs[${i}].opts.cost`;
  return new ValidationError(field, `is above the max of a rate limit that applies to the job (queue.limits(), or its group's own) (got ${jobs[i]!.cost})`);
}
