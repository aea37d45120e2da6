/**
 * What every route group of the JSON API is given and shares: the context (the sampler, the bulk
 * cap, the host app's redaction hook), the redaction of a job's payload on its way out, and the
 * answer to an action on a job in a state it does not fit.
 */
import type { Queue } from '../../queue.js';
import type { JobInfo, JobState } from '../../types.js';
import type { Sampler } from '../history.js';
import { HttpError } from '../route.js';

export interface ApiContext {
  sampler: Sampler;
  /** Most jobs one bulk action may touch. */
  maxBulk: number;
  /** Hides payload fields (the host app's hook); undefined shows payloads as they are. */
  redact: ((data: unknown, job: { queue: string; id: string }) => unknown) | undefined;
  /** Seals what the API hands out and must get back unchanged (groups cursors); security.ts. */
  sealer: Sealer;
}

export interface Sealer {
  seal(purpose: string, text: string): string;
  /** Undefined for a value not sealed by this dashboard for `purpose`. */
  unseal(purpose: string, value: string): string | undefined;
}

export function show(q: Queue<unknown>, ctx: ApiContext, job: JobInfo<unknown>): JobInfo<unknown> {
  return ctx.redact ? { ...job, data: ctx.redact(job.data, { queue: q.name, id: job.id }) } : job;
}

/** 404 for no job, 409 for a job in a state the action does not fit. */
export function refuseState(id: string, state: JobState | undefined, action: string): never {
  if (state === undefined) throw new HttpError(404, 'not_found', `no job ${id}`);
  throw new HttpError(409, 'state', `job ${id} is ${state}: only scheduled jobs can be ${action}`);
}

/** The errors of an action on one job that only fits some states. */
export const STATE_ERRORS = [400, 404, 409];
