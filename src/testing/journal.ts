/**
 * A journal records what happened to each job in a test env, attempt by attempt, as the store
 * answered it: who claimed it and when, and how each attempt ended (completed, retried, snoozed,
 * dead, released, rate-limited, lease expired). The assertion helpers of the testing kit read it.
 *
 * It is a log of outcomes, never a second copy of the queue: what is scheduled now is read from
 * the store itself (TestEnv.enqueued). Entries are appended as the store's answers come back, so
 * the order of the log is the order in which the engine decided.
 */

/** How one attempt (one hand-out) ended. */
export type AttemptOutcome = 'completed' | 'retried' | 'snoozed' | 'dead' | 'released' | 'rateLimited' | 'leaseExpired';

/** One hand-out of a job, from its claim to its end. */
export interface AttemptRecord {
  /** The attempt number the store gave the hand-out (1 for the first). */
  attempt: number;
  /** The virtual time of the claim, epoch ms. */
  startedAtMs: number;
  /** The virtual time the attempt ended; undefined while it runs. */
  endedAtMs: number | undefined;
  outcome: AttemptOutcome | undefined;
  /** The error text the worker stored (retried, dead), or why the job died. */
  error: string | undefined;
  /** When the job runs again (retried, snoozed), epoch ms. */
  nextDueAtMs: number | undefined;
  /** The id of the worker that held the lease. */
  workerId: string;
  /** The lease token of the hand-out. */
  token: string;
}

/** One line of the env's log of outcomes, in the order the store decided them. */
export interface OutcomeEntry {
  queue: string;
  id: string;
  outcome: AttemptOutcome | 'cancelled';
  atMs: number;
  attempt: number;
}

export interface JobRecord {
  queue: string;
  id: string;
  /** The job's data as last handed out or cancelled (decoded JSON). */
  data: unknown;
  group: string | undefined;
  attempts: AttemptRecord[];
  /** Set when the job completed: when, and what its handler returned (decoded JSON). */
  completedAtMs: number | undefined;
  result: unknown;
  /** Set when the job went to the dead set. */
  diedAtMs: number | undefined;
  /** Set when the job was cancelled while scheduled. */
  cancelledAtMs: number | undefined;
  /** The last progress value (job.progress) and the log lines (job.log) of its attempts. */
  progress: unknown;
  logs: string[];
}

export function decodeText(text: string | undefined): unknown {
  // '' is how a worker sends "the handler returned nothing".
  if (text === undefined || text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export class Journal {
  readonly #jobs = new Map<string, JobRecord>();
  readonly #log: OutcomeEntry[] = [];

  #key(queue: string, id: string): string {
    return `${queue}\u0000${id}`;
  }

  job(queue: string, id: string): JobRecord | undefined {
    return this.#jobs.get(this.#key(queue, id));
  }

  #record(queue: string, id: string): JobRecord {
    const key = this.#key(queue, id);
    let r = this.#jobs.get(key);
    if (!r) {
      r = {
        queue,
        id,
        data: undefined,
        group: undefined,
        attempts: [],
        completedAtMs: undefined,
        result: undefined,
        diedAtMs: undefined,
        cancelledAtMs: undefined,
        progress: undefined,
        logs: [],
      };
      this.#jobs.set(key, r);
    }
    return r;
  }

  /** Every job of a queue the journal has seen, in the order it first saw them. */
  jobs(queue: string): JobRecord[] {
    return [...this.#jobs.values()].filter((r) => r.queue === queue);
  }

  /** The log of outcomes, oldest first (a copy). */
  log(): OutcomeEntry[] {
    return this.#log.map((e) => ({ ...e }));
  }

  /** Attempts claimed and not ended: handlers running, or leases of a crashed worker. */
  open(): { record: JobRecord; attempt: AttemptRecord }[] {
    const out: { record: JobRecord; attempt: AttemptRecord }[] = [];
    for (const record of this.#jobs.values()) {
      const last = record.attempts.at(-1);
      if (last && last.outcome === undefined) out.push({ record, attempt: last });
    }
    return out;
  }

  claimed(
    queue: string,
    c: { id: string; token: string; attempt: number; data: string | undefined; group: string | undefined },
    atMs: number,
    workerId: string,
  ): void {
    const r = this.#record(queue, c.id);
    // A hand-out while the previous one is still open: that lease ran out and the job was taken back.
    const prev = r.attempts.at(-1);
    if (prev && prev.outcome === undefined) this.#end(r, prev, 'leaseExpired', atMs, 'lease expired', undefined);
    r.data = decodeText(c.data);
    r.group = c.group;
    r.attempts.push({
      attempt: c.attempt,
      startedAtMs: atMs,
      endedAtMs: undefined,
      outcome: undefined,
      error: undefined,
      nextDueAtMs: undefined,
      workerId,
      token: c.token,
    });
  }

  /** Ends the attempt that holds `token`; false when no open attempt holds it (a stale call). */
  ended(queue: string, id: string, token: string, outcome: AttemptOutcome, atMs: number, error?: string, nextDueAtMs?: number): boolean {
    const r = this.job(queue, id);
    const a = r?.attempts.find((x) => x.token === token);
    if (!r || !a || a.outcome !== undefined) return false;
    this.#end(r, a, outcome, atMs, error, nextDueAtMs);
    return true;
  }

  /** Ends an open attempt found ended by the store itself (its lease ran out). */
  expired(record: JobRecord, attempt: AttemptRecord, atMs: number, dead: boolean, error: string | undefined): void {
    this.#end(record, attempt, dead ? 'dead' : 'leaseExpired', atMs, error ?? 'lease expired', undefined);
  }

  #end(r: JobRecord, a: AttemptRecord, outcome: AttemptOutcome, atMs: number, error: string | undefined, nextDueAtMs: number | undefined): void {
    a.outcome = outcome;
    a.endedAtMs = atMs;
    a.error = error;
    a.nextDueAtMs = nextDueAtMs;
    if (outcome === 'dead') r.diedAtMs = atMs;
    this.#log.push({ queue: r.queue, id: r.id, outcome, atMs, attempt: a.attempt });
  }

  completed(queue: string, id: string, token: string, result: string | undefined, atMs: number): void {
    if (!this.ended(queue, id, token, 'completed', atMs)) return;
    const r = this.job(queue, id)!;
    r.completedAtMs = atMs;
    r.result = decodeText(result);
  }

  cancelled(queue: string, id: string, data: string | undefined, atMs: number): void {
    const r = this.#record(queue, id);
    if (data !== undefined) r.data = decodeText(data);
    r.cancelledAtMs = atMs;
    this.#log.push({ queue, id, outcome: 'cancelled', atMs, attempt: r.attempts.at(-1)?.attempt ?? 0 });
  }

  updated(queue: string, id: string, token: string, progress: string | undefined, lines: string[]): void {
    const r = this.job(queue, id);
    if (!r || r.attempts.at(-1)?.token !== token) return;
    if (progress !== undefined) r.progress = decodeText(progress);
    r.logs.push(...lines);
  }
}
