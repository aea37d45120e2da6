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
  /** Its group, if any. */
  group: string | undefined;
  /**
   * Scheduled, due, and moved on by a claim (to the ready set, or its group's line): what a
   * claim counts as waiting. Cleared whenever the job is scheduled again.
   */
  promoted: boolean;
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

/** The lane of the jobs of no group in the rotation (lifecycle.ts UNGROUPED_LANE, written down again). */
const UNGROUPED = '';

/** Byte order of ids, as ZSETs order members of equal score. */
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export class QueueModel {
  now: number;
  readonly jobs = new Map<string, ModelJob>();
  /** Dead jobs in order of death. */
  readonly deadOrder: string[] = [];
  readonly dedup = new Map<string, { id: string; due: number; expiresAt: number }>();
  /** Hand-out index -> job id. */
  readonly handouts: string[] = [];
  paused = false;
  /** Once a job of a group was added: claims take turns between lanes (docs/groups.md). */
  grouped = false;
  concurrency: number | undefined;
  groupConcurrency: number | undefined;
  /** Groups' own limits and pauses. */
  readonly groupSettings = new Map<string, { limit: number | undefined; paused: boolean }>();
  /** The rotation: lanes in turn order (a group id, or UNGROUPED). */
  lanes: string[] = [];
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
        group: a.group,
        promoted: false,
      });
      if (a.group !== undefined) this.grouped = true;
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

  // ---- groups and limits: the rules of docs/groups.md, step by step as a claim takes them ----

  #running(g: string): number {
    let n = 0;
    for (const j of this.jobs.values()) if (j.group === g && j.state === 'active') n++;
    return n;
  }

  /** Due jobs moved on by a claim and waiting in a lane (a group's line, or the ready set for UNGROUPED). */
  #line(lane: string): ModelJob[] {
    return [...this.jobs.values()]
      .filter((j) => j.state === 'scheduled' && j.promoted && (j.group ?? UNGROUPED) === lane)
      .sort((a, b) => b.priority - a.priority || a.due - b.due || a.seq - b.seq);
  }

  #room(g: string): number {
    const s = this.groupSettings.get(g);
    if (s?.paused) return 0;
    const limit = s?.limit ?? this.groupConcurrency;
    return limit === undefined ? Infinity : limit - this.#running(g);
  }

  #eligible(g: string): boolean {
    return this.#line(g).length > 0 && this.#room(g) > 0;
  }

  /** Lanes join the rotation's tail; those in it keep their place. */
  #join(lanes: string[]): void {
    for (const l of lanes) if (!this.lanes.includes(l)) this.lanes.push(l);
  }

  /** A lease ends (`end` moves the job on): a group that gets room for the due jobs it has waiting joins the rotation. */
  #endLease(job: ModelJob, end: () => void): void {
    const g = job.group;
    const hadRoom = g === undefined || this.#room(g) > 0;
    end();
    if (g !== undefined && !hadRoom && this.#room(g) > 0 && this.#line(g).length > 0) this.#join([g]);
  }

  /** Scheduled again (a retry, a release, a recovered lease, a reschedule, a dead-set retry). */
  #schedule(job: ModelJob, due: number): void {
    job.state = 'scheduled';
    job.due = due;
    job.promoted = false;
  }

  #activate(job: ModelJob, leaseMs: number) {
    job.state = 'active';
    job.promoted = false;
    job.attempts += 1;
    job.handout = this.handouts.push(job.id) - 1;
    job.mark = 'live';
    job.leaseDeadline = this.now + leaseMs;
    return { id: job.id, attempt: job.attempts, dueAtMs: job.due, priority: job.priority, leaseExpiresAtMs: job.leaseDeadline };
  }

  claim(count: number, leaseMs: number) {
    const expired = [...this.jobs.values()]
      .filter((j) => j.state === 'active' && j.leaseDeadline <= this.now)
      .sort((a, b) => a.leaseDeadline - b.leaseDeadline || bytes(a.id, b.id));
    for (const job of expired) {
      this.#endLease(job, () => {
        job.mark = 'recovered';
        job.lastError = `lease expired during attempt ${job.attempts} of ${this.#maxOf(job)}`;
        if (job.attempts >= this.#maxOf(job)) this.#bury(job);
        else this.#schedule(job, this.now);
      });
    }
    if (this.paused) return { jobs: [], more: false };
    // At its concurrency limit the queue hands out nothing, and no more than the room left.
    let want = count;
    let atLimit = false;
    if (this.concurrency !== undefined) {
      const room = this.concurrency - [...this.jobs.values()].filter((j) => j.state === 'active').length;
      if (room <= want) [want, atLimit] = [Math.max(0, room), true];
    }
    if (want === 0) return { jobs: [], more: false };
    const due = [...this.jobs.values()].filter((j) => j.state === 'scheduled' && j.due <= this.now);
    if (!this.grouped) {
      // One order over every due job: priority, then due time, then add order.
      due.sort((a, b) => b.priority - a.priority || a.due - b.due || a.seq - b.seq);
      const picked = due.slice(0, want).map((job) => this.#activate(job, leaseMs));
      for (const j of due.slice(want)) j.promoted = true;
      return { jobs: picked, more: atLimit && picked.length >= want ? false : due.length > want };
    }
    // Turns. Due jobs move on; lanes that got some join in the order of their earliest job (the
    // lane of no group first when it has jobs waiting, none of which came due now).
    const fresh = due.filter((j) => !j.promoted).sort((a, b) => a.due - b.due || a.seq - b.seq);
    for (const j of fresh) j.promoted = true;
    const got: string[] = [];
    for (const j of fresh) if (!got.includes(j.group ?? UNGROUPED)) got.push(j.group ?? UNGROUPED);
    const joining: string[] = [];
    if (this.#line(UNGROUPED).length > 0 && !got.includes(UNGROUPED)) joining.push(UNGROUPED);
    for (const l of got) if (l === UNGROUPED || this.#room(l) > 0) joining.push(l);
    this.#join(joining);
    // The lanes at the head of the rotation, each giving up to its room, one a round.
    const lanes: { id: string; avail: number; take: number }[] = [];
    const gone: string[] = [];
    for (const id of this.lanes.slice(0, want)) {
      const waiting = this.#line(id).length;
      const avail = id === UNGROUPED ? waiting : Math.min(Math.max(0, this.#room(id)), waiting);
      if (avail > 0) lanes.push({ id, avail, take: 0 });
      else gone.push(id);
    }
    const turns: number[] = [];
    for (let round = 1; turns.length < want; round++) {
      let any = false;
      lanes.forEach((l, i) => {
        if (turns.length < want && l.avail >= round) {
          l.take++;
          turns.push(i);
          any = true;
        }
      });
      if (!any) break;
    }
    const taken = lanes.map((l) => this.#line(l.id).slice(0, l.take));
    const next = lanes.map(() => 0);
    const picked = turns.map((i) => this.#activate(taken[i]![next[i]!++]!, leaseMs));
    const tail: string[] = [];
    for (const l of lanes) (this.#line(l.id).length > 0 && (l.id === UNGROUPED || this.#room(l.id) > 0) ? tail : gone).push(l.id);
    this.lanes = [...this.lanes.filter((l) => !gone.includes(l) && !tail.includes(l)), ...tail];
    return { jobs: picked, more: atLimit && picked.length >= want ? false : this.lanes.length > 0 };
  }

  setLimits(concurrency: number | null | undefined, groupConcurrency: number | null | undefined): boolean {
    let changed = false;
    if (concurrency !== undefined && (concurrency ?? undefined) !== this.concurrency) {
      this.concurrency = concurrency ?? undefined;
      changed = true;
    }
    if (groupConcurrency !== undefined && (groupConcurrency ?? undefined) !== this.groupConcurrency) {
      const raised = groupConcurrency === null || (this.groupConcurrency !== undefined && groupConcurrency > this.groupConcurrency);
      this.groupConcurrency = groupConcurrency ?? undefined;
      changed = true;
      // Groups given room with due jobs waiting join, in id byte order.
      if (raised && this.grouped) {
        const groups = [...new Set([...this.jobs.values()].map((j) => j.group).filter((g) => g !== undefined))];
        this.#join(groups.filter((g) => this.#eligible(g)).sort(bytes));
      }
    }
    return changed;
  }

  setGroup(g: string, concurrency: number | null | undefined, paused: boolean | undefined): boolean {
    const s = this.groupSettings.get(g) ?? { limit: undefined, paused: false };
    let changed = false;
    if (concurrency !== undefined && (concurrency ?? undefined) !== s.limit) {
      s.limit = concurrency ?? undefined;
      changed = true;
    }
    if (paused !== undefined && paused !== s.paused) {
      s.paused = paused;
      changed = true;
    }
    this.groupSettings.set(g, s);
    if (changed) {
      if (s.paused) this.lanes = this.lanes.filter((l) => l !== g);
      else if (this.#eligible(g)) this.#join([g]);
    }
    return changed;
  }

  group(g: string) {
    const s = this.groupSettings.get(g);
    return { id: g, running: this.#running(g), waiting: this.#line(g).length, concurrency: s?.limit, paused: s?.paused ?? false };
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
    this.#endLease(job, () => {
      if (this.keepCount || this.keepAgeMs) {
        job.state = 'completed';
        job.mark = 'none';
        job.finishedAt = this.now;
        job.result = result;
        this.#trimCompleted();
      } else this.#remove(job);
    });
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
    this.grouped = false;
    this.concurrency = undefined;
    this.groupConcurrency = undefined;
    this.groupSettings.clear();
    this.lanes = [];
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
      this.#endLease(job, () => this.#bury(job));
      return { outcome: 'dead', dueAtMs: undefined };
    }
    this.#endLease(job, () => this.#schedule(job, this.now + retryDelayMs));
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
      this.#endLease(job, () => this.#bury(job));
      return { outcome: 'dead', dueAtMs: undefined };
    }
    job.attempts = Math.max(0, job.attempts - 1);
    this.#endLease(job, () => this.#schedule(job, due));
    return { outcome: 'snoozed', dueAtMs: due };
  }

  release(handout: number): string {
    if (this.#ownGiveUp(handout)) return 'ok';
    const { job, live } = this.#held(handout);
    if (!job) return 'not_found';
    if (!live) return 'lease_lost';
    job.mark = 'gaveUp';
    job.attempts = Math.max(0, job.attempts - 1);
    this.#endLease(job, () => this.#schedule(job, this.now));
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
    this.#schedule(job, this.now + delayMs);
    return { rescheduled: true, state: 'scheduled', dueAtMs: job.due };
  }

  deadRetry(ids: string[] | 'all'): number {
    const targets = ids === 'all' ? [...this.deadOrder] : [...new Set(ids)].filter((id) => this.jobs.get(id)?.state === 'dead');
    for (const id of targets) {
      const job = this.jobs.get(id)!;
      this.deadOrder.splice(this.deadOrder.indexOf(id), 1);
      job.attempts = 0;
      this.#schedule(job, this.now);
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
      group: job.group,
    };
  }
}
