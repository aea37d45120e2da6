/**
 * The reference model of one queue: the contract of the Store interface written as plainly as
 * possible (arrays and loops, no heaps, no Lua), for the differential test to hold both stores
 * against. Its clock is the test's frozen clock. Hand-outs are named by their index in the
 * order they were made, since each store mints tokens of its own.
 */

export type ModelState = 'scheduled' | 'active' | 'dead' | 'completed';

export interface ModelJob {
  id: string;
  due: number;
  seq: number;
  priority: number;
  maxAttempts: number | undefined;
  attempts: number;
  state: ModelState;
  /** The hand-out holding it while active; the last one after. */
  handout: number;
  /** How the last hand-out ended: 'live', 'gaveUp' (fail/snooze/release) or 'recovered' (lease ran out). */
  mark: 'live' | 'gaveUp' | 'recovered' | 'none';
  leaseDeadline: number;
  lastError: string | undefined;
  /** Time of death or of completion. */
  finishedAt: number;
  result: string | undefined;
  /** Failed attempts (fail calls that took), oldest first, the last ERROR_HISTORY_LENGTH. */
  errors: { attempt: number; atMs: number; error: string }[];
}

/** As store.ts ERROR_HISTORY_LENGTH, written down again: the model states the contract on its own. */
export const MODEL_ERROR_HISTORY = 10;

export interface ModelAdd {
  id: string;
  delayMs: number;
  priority: number;
  maxAttempts: number | undefined;
  replace: boolean;
  dedupKey: string | undefined;
  group?: string | undefined;
}

export const DEDUP_WINDOW_MS = 36_000_000;

export class QueueModel {
  now: number;
  readonly jobs = new Map<string, ModelJob>();
  /** Dead jobs in order of death. */
  readonly deadOrder: string[] = [];
  readonly dedup = new Map<string, { id: string; due: number; expiresAt: number }>();
  /** Hand-out index -> job id. */
  readonly handouts: string[] = [];
  paused = false;
  /** Completed-job retention: most kept, longest kept (0 = no bound; both 0 = not kept). */
  keepCount = 0;
  keepAgeMs = 0;
  #seq = 0;

  constructor(
    now: number,
    readonly defaultMaxAttempts: number,
  ) {
    this.now = now;
  }

  add(adds: ModelAdd[]) {
    return adds.map((a) => {
      const due = this.now + a.delayMs;
      const existing = this.jobs.get(a.id);
      if (a.dedupKey !== undefined) {
        const held = this.dedup.get(a.dedupKey);
        if (held && held.expiresAt > this.now && (held.id !== a.id || !existing)) {
          const holder = this.jobs.get(held.id);
          return { code: 'deduplicated', state: holder ? holder.state : 'finished', dueAtMs: holder ? holder.due : held.due, duplicateOf: held.id };
        }
      }
      let code = 'added';
      if (existing) {
        if (!a.replace || existing.state === 'active') return { code: 'exists', state: existing.state, dueAtMs: existing.due, duplicateOf: undefined };
        code = 'replaced';
        this.#remove(existing);
      }
      if (a.dedupKey !== undefined) {
        const held = this.dedup.get(a.dedupKey);
        if (!held || held.expiresAt <= this.now) this.dedup.set(a.dedupKey, { id: a.id, due, expiresAt: this.now + DEDUP_WINDOW_MS });
      }
      this.jobs.set(a.id, {
        id: a.id,
        due,
        seq: ++this.#seq,
        priority: a.priority,
        maxAttempts: a.maxAttempts,
        attempts: 0,
        state: 'scheduled',
        handout: -1,
        mark: 'none',
        leaseDeadline: 0,
        lastError: undefined,
        finishedAt: 0,
        result: undefined,
        errors: [],
      });
      return { code, state: 'scheduled', dueAtMs: due, duplicateOf: undefined };
    });
  }

  #remove(job: ModelJob): void {
    this.jobs.delete(job.id);
    const i = this.deadOrder.indexOf(job.id);
    if (i >= 0) this.deadOrder.splice(i, 1);
  }

  #bury(job: ModelJob): void {
    job.state = 'dead';
    job.finishedAt = this.now;
    this.deadOrder.push(job.id);
  }

  /** Jobs in a state in ZSET order: by `score`, then id by bytes. */
  inOrder(state: ModelState, score: (j: ModelJob) => number): ModelJob[] {
    return [...this.jobs.values()].filter((j) => j.state === state).sort((a, b) => score(a) - score(b) || Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)));
  }

  /** The retention rule of completed jobs, applied as the stores do: the oldest beyond it go. */
  #trimCompleted(): void {
    if (!this.keepCount && !this.keepAgeMs) return;
    const kept = this.inOrder('completed', (j) => j.finishedAt);
    const victims = new Set<ModelJob>();
    if (this.keepAgeMs) for (const j of kept) if (j.finishedAt <= this.now - this.keepAgeMs) victims.add(j);
    if (this.keepCount) {
      const left = kept.filter((j) => !victims.has(j));
      for (const j of left.slice(0, Math.max(0, left.length - this.keepCount))) victims.add(j);
    }
    for (const j of victims) this.#remove(j);
  }

  setRetention(count: number, ageMs: number): void {
    this.keepCount = count;
    this.keepAgeMs = ageMs;
    this.#trimCompleted();
  }

  #maxOf(job: ModelJob): number {
    return job.maxAttempts ?? this.defaultMaxAttempts;
  }

  claim(count: number, leaseMs: number) {
    for (const job of [...this.jobs.values()]) {
      if (job.state !== 'active' || job.leaseDeadline > this.now) continue;
      job.mark = 'recovered';
      job.lastError = `lease expired during attempt ${job.attempts} of ${this.#maxOf(job)}`;
      if (job.attempts >= this.#maxOf(job)) this.#bury(job);
      else {
        job.state = 'scheduled';
        job.due = this.now;
      }
    }
    if (this.paused) return { jobs: [], more: false };
    const due = [...this.jobs.values()]
      .filter((j) => j.state === 'scheduled' && j.due <= this.now)
      .sort((a, b) => b.priority - a.priority || a.due - b.due || a.seq - b.seq);
    const picked = due.slice(0, count).map((job) => {
      job.state = 'active';
      job.attempts += 1;
      job.handout = this.handouts.push(job.id) - 1;
      job.mark = 'live';
      job.leaseDeadline = this.now + leaseMs;
      return { id: job.id, attempt: job.attempts, dueAtMs: job.due, priority: job.priority, leaseExpiresAtMs: job.leaseDeadline };
    });
    return { jobs: picked, more: due.length > count };
  }

  /** The job a hand-out is about, and whether the hand-out still holds it. */
  #held(handout: number): { job: ModelJob | undefined; live: boolean } {
    const job = this.jobs.get(this.handouts[handout]!);
    return { job, live: job !== undefined && job.handout === handout && job.mark === 'live' };
  }

  complete(handout: number, result: string): string {
    const { job, live } = this.#held(handout);
    if (!job) return 'not_found';
    if (job.state === 'completed' && job.handout === handout) return 'ok';
    if (!live) return 'lease_lost';
    if (this.keepCount || this.keepAgeMs) {
      job.state = 'completed';
      job.mark = 'none';
      job.finishedAt = this.now;
      job.result = result;
      this.#trimCompleted();
    } else this.#remove(job);
    return 'ok';
  }

  drain(before: number | undefined): number {
    const victims = [...this.jobs.values()].filter((j) => j.state === 'scheduled' && (before === undefined || j.due < before));
    for (const j of victims) this.#remove(j);
    return victims.length;
  }

  /** Removes every job and setting; dedup windows stay (they expire by themselves on Redis). */
  obliterate(force: boolean) {
    const counts = { scheduled: 0, active: 0, dead: 0, completed: 0, jobs: this.jobs.size };
    for (const j of this.jobs.values()) counts[j.state]++;
    if (counts.active > 0 && !force) return { removed: false, counts };
    this.jobs.clear();
    this.deadOrder.length = 0;
    this.paused = false;
    this.keepCount = 0;
    this.keepAgeMs = 0;
    this.#seq = 0;
    return { removed: true, counts };
  }

  extend(handout: number, ms: number): string {
    const { job, live } = this.#held(handout);
    if (!job) return 'not_found';
    if (!live) return 'lease_lost';
    job.leaseDeadline = this.now + ms;
    return 'ok';
  }

  /** A re-send of the call that gave this hand-out up: the job still carries its give-up mark. */
  #ownGiveUp(handout: number): ModelJob | undefined {
    const job = this.jobs.get(this.handouts[handout]!);
    return job && job.handout === handout && job.mark === 'gaveUp' ? job : undefined;
  }

  fail(handout: number, retryDelayMs: number, dead: boolean, error: string) {
    const own = this.#ownGiveUp(handout);
    if (own) return own.state === 'dead' ? { outcome: 'dead', dueAtMs: undefined } : { outcome: 'retried', dueAtMs: own.due };
    const { job, live } = this.#held(handout);
    if (!job) return { outcome: 'not_found', dueAtMs: undefined };
    if (!live) return { outcome: 'lease_lost', dueAtMs: undefined };
    job.mark = 'gaveUp';
    job.lastError = error;
    job.errors = [...job.errors, { attempt: job.attempts, atMs: this.now, error }].slice(-MODEL_ERROR_HISTORY);
    if (dead || job.attempts >= this.#maxOf(job)) {
      this.#bury(job);
      return { outcome: 'dead', dueAtMs: undefined };
    }
    job.state = 'scheduled';
    job.due = this.now + retryDelayMs;
    return { outcome: 'retried', dueAtMs: job.due };
  }

  snooze(handout: number, delayMs: number, deadlineAtMs: number | undefined) {
    const own = this.#ownGiveUp(handout);
    if (own) return own.state === 'dead' ? { outcome: 'dead', dueAtMs: undefined } : { outcome: 'snoozed', dueAtMs: own.due };
    const { job, live } = this.#held(handout);
    if (!job) return { outcome: 'not_found', dueAtMs: undefined };
    if (!live) return { outcome: 'lease_lost', dueAtMs: undefined };
    job.mark = 'gaveUp';
    const due = this.now + delayMs;
    if (deadlineAtMs !== undefined && due > deadlineAtMs) {
      job.lastError = `snooze deadline passed: next look at ${due} is after ${deadlineAtMs}`;
      this.#bury(job);
      return { outcome: 'dead', dueAtMs: undefined };
    }
    job.attempts = Math.max(0, job.attempts - 1);
    job.state = 'scheduled';
    job.due = due;
    return { outcome: 'snoozed', dueAtMs: due };
  }

  release(handout: number): string {
    if (this.#ownGiveUp(handout)) return 'ok';
    const { job, live } = this.#held(handout);
    if (!job) return 'not_found';
    if (!live) return 'lease_lost';
    job.mark = 'gaveUp';
    job.attempts = Math.max(0, job.attempts - 1);
    job.state = 'scheduled';
    job.due = this.now;
    return 'ok';
  }

  cancel(id: string) {
    const job = this.jobs.get(id);
    if (!job) return { cancelled: false, state: undefined };
    if (job.state !== 'scheduled') return { cancelled: false, state: job.state };
    this.#remove(job);
    return { cancelled: true, state: 'scheduled' };
  }

  reschedule(id: string, delayMs: number) {
    const job = this.jobs.get(id);
    if (!job) return { rescheduled: false, state: undefined, dueAtMs: undefined };
    if (job.state !== 'scheduled') return { rescheduled: false, state: job.state, dueAtMs: job.due };
    job.due = this.now + delayMs;
    return { rescheduled: true, state: 'scheduled', dueAtMs: job.due };
  }

  deadRetry(ids: string[] | 'all'): number {
    const targets = ids === 'all' ? [...this.deadOrder] : [...new Set(ids)].filter((id) => this.jobs.get(id)?.state === 'dead');
    for (const id of targets) {
      const job = this.jobs.get(id)!;
      this.deadOrder.splice(this.deadOrder.indexOf(id), 1);
      job.attempts = 0;
      job.state = 'scheduled';
      job.due = this.now;
    }
    return targets.length;
  }

  deadPurge(ids: string[] | 'all'): number {
    const targets = ids === 'all' ? [...this.deadOrder] : [...new Set(ids)].filter((id) => this.jobs.get(id)?.state === 'dead');
    for (const id of targets) this.#remove(this.jobs.get(id)!);
    return targets.length;
  }

  /** Scheduled jobs not yet due, per bucket of `bucketMs` from `from`. */
  timeline(from: number, bucketMs: number, buckets: number) {
    const counts = new Array<number>(buckets).fill(0);
    for (const j of this.jobs.values()) {
      if (j.state !== 'scheduled' || j.due <= this.now || j.due < from || j.due >= from + buckets * bucketMs) continue;
      counts[Math.floor((j.due - from) / bucketMs)]!++;
    }
    return { nowMs: this.now, fromMs: from, bucketMs, counts };
  }

  get(id: string) {
    const job = this.jobs.get(id);
    if (!job) return null;
    return {
      state: job.state,
      dueAtMs: job.due,
      ready: job.state === 'scheduled' && job.due <= this.now,
      priority: job.priority,
      attempt: job.attempts,
      maxAttempts: job.maxAttempts,
      leaseExpiresAtMs: job.state === 'active' ? job.leaseDeadline : undefined,
      lastError: job.lastError,
      finishedAtMs: job.state === 'dead' || job.state === 'completed' ? job.finishedAt : undefined,
      result: job.state === 'completed' ? job.result : undefined,
      errors: job.errors.length > 0 ? job.errors : undefined,
    };
  }
}
