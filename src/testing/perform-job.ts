/**
 * performJob runs one handler once, with a real Job handed out by the real Worker on a private
 * test env, and answers what the attempt did: completed with a result, failed and retried (when),
 * failed for good, snoozed (until when), rate-limited. For unit tests of a handler alone.
 */
import { ValidationError } from '../errors.js';
import type { Job } from '../job.js';
import { MAX_ATTEMPTS } from '../limits.js';
import type { AddOptions, WorkerOptions } from '../options.js';
import type { Handler } from '../worker.js';
import { createTestEnv, INTERNALS, type TestEnvOptions } from './test-env.js';

export interface PerformJobOptions extends Pick<AddOptions, 'id' | 'group' | 'priority' | 'backoff'> {
  /** The queue name the job says it is in. @default 'perform-job' */
  queue?: string;
  /** The attempt the handler sees (earlier ones are recorded as failed). @default 1 */
  attempt?: number;
  /** The job's attempt limit: with `attempt` equal to it, a failure is final (dead). @default 3 */
  maxAttempts?: number;
  /** Worker options that shape an attempt: timeoutMs, leaseMs, maxErrorLength, and backoff for jobs without their own. */
  worker?: Pick<WorkerOptions, 'timeoutMs' | 'leaseMs' | 'maxErrorLength' | 'backoff'>;
  /** The virtual clock's start and the real-time limit (TestEnvOptions). */
  startAt?: TestEnvOptions['startAt'];
  stallMs?: number;
}

/** What one attempt did. */
export interface PerformResult<T = unknown, R = unknown> {
  /** How the attempt ended, as the worker settled it with the store. */
  outcome: 'completed' | 'retried' | 'dead' | 'snoozed' | 'rateLimited' | 'leaseLost';
  /** What the handler returned (completed). */
  result: R | undefined;
  /** What the handler threw (retried, dead), as thrown. */
  error: unknown;
  /** When the job would run again (retried, snoozed), epoch ms on the virtual clock. */
  dueAtMs: number | undefined;
  /** How long after the attempt that is (retried, snoozed), or the hold (rateLimited). */
  delayMs: number | undefined;
  /** Why it died (dead): the error text, or 'snooze deadline passed'. */
  reason: string | undefined;
  /** The last job.progress() value and the job.log() lines. */
  progress: unknown;
  logs: string[];
  /** The Job the handler was given. */
  job: Job<T>;
  /** The virtual time of the attempt, epoch ms. */
  atMs: number;
}

const KEYS = new Set(['id', 'group', 'priority', 'backoff', 'queue', 'attempt', 'maxAttempts', 'worker', 'startAt', 'stallMs']);

export async function performJob<T = unknown, R = unknown>(handler: Handler<T, R>, data: T, opts: PerformJobOptions = {}): Promise<PerformResult<T, R>> {
  if (typeof handler !== 'function') throw new ValidationError('handler', `must be a function (got ${typeof handler})`);
  opts ??= {};
  if (typeof opts !== 'object') throw new ValidationError('performJob options', `must be an object (got ${typeof opts})`);
  for (const key of Object.keys(opts)) {
    if (!KEYS.has(key)) throw new ValidationError('performJob options', `has an unknown field ${JSON.stringify(key)} (known: ${[...KEYS].join(', ')})`);
  }
  const maxAttempts = opts.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS) {
    throw new ValidationError('maxAttempts', `must be a whole number from 1 to ${MAX_ATTEMPTS} (got ${String(opts.maxAttempts)})`);
  }
  const attempt = opts.attempt ?? 1;
  if (!Number.isInteger(attempt) || attempt < 1 || attempt > maxAttempts) {
    throw new ValidationError('attempt', `must be a whole number from 1 to maxAttempts (${maxAttempts}) (got ${String(opts.attempt)})`);
  }
  const env = createTestEnv({ startAt: opts.startAt, stallMs: opts.stallMs });
  try {
    const name = opts.queue ?? 'perform-job';
    const queue = env.queue<T>(name);
    const { id } = await queue.add(data, { id: opts.id, group: opts.group, priority: opts.priority, backoff: opts.backoff, attempts: maxAttempts });
    // Earlier attempts: handed out and failed at once, so the handler sees the attempt asked for.
    const internals = INTERNALS.get(env)!;
    const memory = internals.memory;
    for (let n = 1; n < attempt; n++) {
      const { jobs } = await memory.claim(name, 1, 30_000, maxAttempts, 'performJob');
      const c = jobs[0]!;
      await memory.fail(name, {
        id: c.id,
        token: c.token,
        error: `attempt ${n} (failed before performJob)`,
        retryDelayMs: 0,
        dead: false,
        defaultMaxAttempts: maxAttempts,
      });
    }
    let first: Job<T> | undefined;
    let settled: Omit<PerformResult<T, R>, 'progress' | 'logs' | 'job' | 'atMs'> | undefined;
    let thrown: unknown;
    const none = { result: undefined, error: undefined, dueAtMs: undefined, delayMs: undefined, reason: undefined };
    const worker = env.worker<T>(
      name,
      (job) => {
        // Only the first hand-out runs the handler: a retry due at once is not this attempt.
        if (first) return undefined;
        first = job;
        return handler(job);
      },
      { ...opts.worker, concurrency: 1, attempts: maxAttempts },
    );
    const mine = (job: { token: string }) => first !== undefined && job.token === first.token && settled === undefined;
    worker.on('failed', (job, err) => {
      if (job.token === first?.token) thrown = err;
    });
    worker.on('completed', (job, result) => {
      if (mine(job)) settled = { ...none, outcome: 'completed', result: result as R };
    });
    worker.on('retried', (job, err, dueAtMs) => {
      if (mine(job)) settled = { ...none, outcome: 'retried', error: err, dueAtMs, delayMs: dueAtMs - env.now() };
    });
    worker.on('dead', (job, reason) => {
      if (mine(job)) settled = { ...none, outcome: 'dead', error: thrown, reason };
    });
    worker.on('snoozed', (job, dueAtMs) => {
      if (mine(job)) settled = { ...none, outcome: 'snoozed', dueAtMs, delayMs: dueAtMs - env.now() };
    });
    worker.on('rateLimited', (job, holdMs) => {
      if (mine(job)) settled = { ...none, outcome: 'rateLimited', delayMs: holdMs };
    });
    worker.on('leaseLost', (job) => {
      if (mine(job)) settled = { ...none, outcome: 'leaseLost' };
    });
    await env.runUntilIdle();
    if (!first || !settled) throw new ValidationError('performJob', 'the job was not handed out (is the queue paused, or the group over a limit?)');
    const record = internals.journal.job(name, id)!;
    return {
      ...settled,
      progress: record.progress,
      logs: [...record.logs],
      job: first,
      atMs: record.attempts.find((a) => a.token === first!.token)?.startedAtMs ?? env.now(),
    };
  } finally {
    await env.close();
  }
}
