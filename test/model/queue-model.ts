/**
 * The reference model of one queue: the contract of the Store interface written as plainly as
 * possible (arrays and loops, no heaps, no Lua), for the differential test to hold both stores
 * against. Its clock is the test's frozen clock. Hand-outs are named by their index in the
 * order they were made, since each store mints tokens of its own.
 */

export type ModelState = 'scheduled' | 'held' | 'active' | 'dead' | 'completed';

/**
 * A job's hold (docs/flows.md), kept on the job for as long as it lives: what it waits for and
 * how each ended. `waitsOn` are the dependencies that had not ended when it was added and have
 * not ended since (the only ones whose end it hears of).
 */
export interface ModelHold {
  deps: string[];
  waitsOn: Set<string>;
  /** Dependency id -> how it ended: 'c' + result, 'd' + reason, 'x' + reason. */
  ended: Map<string, string>;
  policy: 'fail' | 'ignore';
  /** The time it was added to run at. */
  addDue: number;
  deadline: number | undefined;
  /** held, released (its dependencies ended), timedOut (its deadline passed), buried (a dependency failed under 'fail'). */
  phase: 'held' | 'released' | 'timedOut' | 'buried';
  /** Add order of holds: dependents hear of an end in the order they were added. */
  order: number;
}

/** How a job ends (lifecycle.ts FINISHES): each end settles the holds waiting for it. */
type ModelEnd = 'completed' | 'dead' | 'cancelled';

/** The stores' refusal of a bad dependency (ValidationError('dependsOn', ...)), as a value. */
export class ModelRefusal {
  constructor(readonly message: string) {}
}

export interface ModelJob {
  id: string;
  due: number;
  seq: number;
  priority: number;
  maxAttempts: number | undefined;
  attempts: number;
  /** The max attempts it ran out of (its own or the default), once it went dead so; the reads show it. */
  spentMax: number | undefined;
  state: ModelState;
  /** The hand-out holding it while active; the last one after. */
  handout: number;
  /** How the last hand-out ended: 'live', 'gaveUp' (fail/snooze/release), 'recovered' (lease ran out) or 'revoked' (failNow). */
  mark: 'live' | 'gaveUp' | 'recovered' | 'revoked' | 'none';
  leaseDeadline: number;
  lastError: string | undefined;
  /** Time of death or of completion. */
  finishedAt: number;
  result: string | undefined;
  /** Failed attempts (fail calls that took), oldest first, the last ERROR_HISTORY_LENGTH. */
  errors: { attempt: number; atMs: number; error: string }[];
  /** Its group, if any. */
  group: string | undefined;
  /** Its name, if any (kept as added, shown by get and claims). */
  name: string | undefined;
  /** Its own timeout per attempt, if any (kept as added, handed out with it). */
  timeoutMs: number | undefined;
  /** Tokens of the rate limits it takes when handed out. */
  cost: number;
  /** Its debounce key, if any. */
  debounceKey: string | undefined;
  /**
   * Scheduled, due, and moved on by a claim (to the ready set, or its group's line): what a
   * claim counts as waiting. Cleared whenever the job is scheduled again.
   */
  promoted: boolean;
  /** Its hold, when it was added with dependencies. */
  hold: ModelHold | undefined;
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
  name?: string | undefined;
  timeoutMs?: number | undefined;
  cost?: number;
  debounce?: { key: string; delayMs: number; maxWaitMs: number | undefined } | undefined;
  hold?: { dependsOn: string[]; waitMs: number | undefined; policy: 'fail' | 'ignore' } | undefined;
}

export interface ModelRate {
  max: number;
  perMs: number;
}

/** A limiter: the tokens taken (each back at its expiry) and a hold. */
interface ModelLimiter {
  log: { expiry: number; tokens: number }[];
  held: number | undefined;
}

export const DEDUP_WINDOW_MS = 36_000_000;

/** Due time, then add order: the order lanes join the rotation in (a sort comparator). */
const dueOrder = (a: { due: number; seq: number }, b: { due: number; seq: number }): number => a.due - b.due || a.seq - b.seq;

/** The lane of the jobs of no group in the rotation (lifecycle.ts UNGROUPED_LANE, written down again). */
const UNGROUPED = '';

function sameRate(a: ModelRate | undefined, b: ModelRate | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.max === b.max && a.perMs === b.perMs;
}

/** A rate limit change gives room: removed, more tokens, or a shorter window. */
function rateRaised(old: ModelRate | undefined, next: ModelRate | undefined): boolean {
  if (!old) return false;
  if (!next) return true;
  return next.max > old.max || next.perMs < old.perMs;
}

/** Byte order of ids, as ZSETs order members of equal score. */
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export class QueueModel {
  now: number;
  readonly jobs = new Map<string, ModelJob>();
  /** Jobs cancelled as they ran: id -> until when their holders' calls answer lease lost. */
  readonly revoked = new Map<string, number>();
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
  readonly groupSettings = new Map<string, { limit: number | undefined; paused: boolean; rate?: ModelRate | undefined }>();
  /** Rate limits (docs/rate-limits.md): the queue's, and each group's default. */
  rateLimit: ModelRate | undefined;
  groupRateLimit: ModelRate | undefined;
  /** Once a rate limit was set or a hold put: claims look at the limiters. */
  rated = false;
  /** '' (the queue) or a group id -> its limiter. */
  readonly limiters = new Map<string, ModelLimiter>();
  /** rate-wake: group -> when a claim looks at it again. */
  readonly rateWake = new Map<string, number>();
  /** Debounce key -> its pending burst's job and first add. */
  readonly bursts = new Map<string, { id: string; first: number }>();
  /** The rotation: lanes in turn order (a group id, or UNGROUPED). */
  lanes: string[] = [];
  /** Completed-job retention: most kept, longest kept (0 = no bound; both 0 = not kept). */
  keepCount = 0;
  keepAgeMs = 0;
  #seq = 0;
  #holdOrder = 0;

  constructor(
    now: number,
    readonly defaultMaxAttempts: number,
  ) {
    this.now = now;
  }

  add(adds: ModelAdd[]) {
    // Bad dependencies refuse the whole call, then a cost above a rate limit's max (the stores throw; nothing written).
    const refused = this.#checkHolds(adds);
    if (refused) return refused;
    for (const a of adds) {
      const cost = a.cost ?? 1;
      const g = a.group === undefined ? undefined : this.#groupRate(a.group);
      if (cost > 1 && ((this.rateLimit && cost > this.rateLimit.max) || (g && cost > g.max))) return 'too_costly';
    }
    // A dependency on an earlier item of the call that was not written refuses the whole call
    // once the answers are worked out: what the call changed is put back.
    const saved = {
      jobs: new Map(this.jobs),
      deadOrder: [...this.deadOrder],
      dedup: new Map(this.dedup),
      bursts: new Map(this.bursts),
      seq: this.#seq,
      holdOrder: this.#holdOrder,
    };
    try {
      return this.#add(adds);
    } catch (err) {
      if (!(err instanceof ModelRefusal)) throw err;
      this.jobs.clear();
      for (const [k, v] of saved.jobs) this.jobs.set(k, v);
      this.deadOrder.splice(0, this.deadOrder.length, ...saved.deadOrder);
      this.dedup.clear();
      for (const [k, v] of saved.dedup) this.dedup.set(k, v);
      this.bursts.clear();
      for (const [k, v] of saved.bursts) this.bursts.set(k, v);
      this.#seq = saved.seq;
      this.#holdOrder = saved.holdOrder;
      return err;
    }
  }

  /** docs/flows.md: each dependency an earlier item of the call, or a job that exists and is not dead; never the job itself, twice, or with replace, dedup or debounce. */
  #checkHolds(adds: ModelAdd[]): ModelRefusal | undefined {
    const firstAt = new Map<string, number>();
    adds.forEach((a, k) => {
      if (!firstAt.has(a.id)) firstAt.set(a.id, k + 1);
    });
    // Dependencies with replace, dedup or debounce, in any item, first (add.lua reads its items before it checks any).
    for (const [k, a] of adds.entries()) {
      if (a.hold && (a.replace || a.dedupKey !== undefined || a.debounce))
        return new ModelRefusal(`dependsOn of item ${k + 1}: not with replace, dedup_key or debounce_key`);
    }
    for (const [k, a] of adds.entries()) {
      const i = k + 1;
      if (!a.hold) continue;
      const no = (why: string, v: string) => new ModelRefusal(`dependsOn of item ${i} ${why}, got ${v}`);
      const seen = new Set<string>();
      for (const dep of a.hold.dependsOn) {
        if (dep === a.id) return no('must not name the job itself', dep);
        if (seen.has(dep)) return no('names a job twice', dep);
        seen.add(dep);
      }
      for (const dep of seen) {
        const at = firstAt.get(dep);
        if (at !== undefined && at < i) continue;
        const job = this.jobs.get(dep);
        if (job?.state === 'dead') return no('names a dead job', dep);
        if (!job)
          return no(
            at !== undefined ? 'names a job that comes later in the call (list dependencies first)' : 'names no job (not added, or ended and not kept)',
            dep,
          );
      }
    }
    return undefined;
  }

  #add(adds: ModelAdd[]) {
    const written = new Set<string>();
    const answers = adds.map((a) => {
      let id = a.id;
      let replace = a.replace;
      let due = this.now + a.delayMs;
      let folded = false;
      let burst: { id: string; first: number } | undefined;
      if (a.debounce) {
        // The burst's job while it still waits (scheduled): folded into it unless maxWaitMs passed.
        const b = this.bursts.get(a.debounce.key);
        const job = b && this.jobs.get(b.id);
        const pending = job && job.state === 'scheduled' && job.debounceKey === a.debounce.key ? b : undefined;
        const maxWait = a.debounce.maxWaitMs;
        if (pending && (maxWait === undefined || this.now < pending.first + maxWait)) [id, replace, folded, burst] = [pending.id, true, true, pending];
        else burst = { id, first: this.now };
        due = this.now + a.debounce.delayMs;
        if (maxWait !== undefined) due = Math.min(due, burst.first + maxWait);
      }
      const existing = this.jobs.get(id);
      if (a.dedupKey !== undefined) {
        const held = this.dedup.get(a.dedupKey);
        if (held && held.expiresAt > this.now && (held.id !== id || !existing)) {
          const holder = this.jobs.get(held.id);
          return { code: 'deduplicated', state: holder ? holder.state : 'finished', dueAtMs: holder ? holder.due : held.due, duplicateOf: held.id };
        }
      }
      let code = 'added';
      if (existing) {
        if (!replace || existing.state === 'active') return { code: 'exists', state: existing.state, dueAtMs: existing.due, duplicateOf: undefined };
        code = 'replaced';
        this.#remove(existing);
      }
      if (a.dedupKey !== undefined) {
        const held = this.dedup.get(a.dedupKey);
        if (!held || held.expiresAt <= this.now) this.dedup.set(a.dedupKey, { id, due, expiresAt: this.now + DEDUP_WINDOW_MS });
      }
      if (a.debounce && !folded) this.bursts.set(a.debounce.key, burst!);
      this.jobs.set(id, {
        id,
        due,
        seq: ++this.#seq,
        priority: a.priority,
        maxAttempts: a.maxAttempts,
        attempts: 0,
        spentMax: undefined,
        state: 'scheduled',
        handout: -1,
        mark: 'none',
        leaseDeadline: 0,
        lastError: undefined,
        finishedAt: 0,
        result: undefined,
        errors: [],
        group: a.group,
        name: a.name,
        timeoutMs: a.timeoutMs,
        cost: a.cost ?? 1,
        debounceKey: a.debounce?.key,
        promoted: false,
        hold: undefined,
      });
      const job = this.jobs.get(id)!;
      if (a.hold) this.#hold(job, a.hold, new Set([...written].filter((w) => w !== id)));
      written.add(id);
      if (folded) return { code: 'debounced', state: 'scheduled', dueAtMs: due, duplicateOf: id };
      return { code, state: job.state, dueAtMs: due, duplicateOf: undefined };
    });
    // Only a job written (not one a later add of the call replaced) makes the queue grouped.
    if ([...written].some((id) => this.jobs.get(id)?.group !== undefined)) this.grouped = true;
    return answers;
  }

  // ---- holds (docs/flows.md): a job waits for others, settled as each of them ends ----

  /** A new job's hold: dependencies written earlier in the call or not ended yet hold it; a completed or dead one is recorded as ended. */
  #hold(job: ModelJob, hold: NonNullable<ModelAdd['hold']>, writtenBefore: Set<string>): void {
    const h: ModelHold = {
      deps: [...hold.dependsOn],
      waitsOn: new Set(),
      ended: new Map(),
      policy: hold.policy,
      addDue: job.due,
      deadline: hold.waitMs === undefined ? undefined : this.now + hold.waitMs,
      phase: 'held',
      order: ++this.#holdOrder,
    };
    for (const dep of h.deps) {
      const other = writtenBefore.has(dep) ? undefined : this.jobs.get(dep);
      if (!writtenBefore.has(dep) && !other) throw new ModelRefusal(`dependsOn of job ${job.id} names a job this call did not add (deduplicated), got ${dep}`);
      if (other?.state === 'completed') h.ended.set(dep, `c${other.result ?? ''}`);
      else if (other?.state === 'dead') h.ended.set(dep, `d${other.lastError ?? ''}`);
      else h.waitsOn.add(dep);
    }
    job.hold = h;
    if (h.waitsOn.size === 0) h.phase = 'released';
    else job.state = 'held';
  }

  /** Jobs whose hold still hears of `dep`'s end, in the order their holds were added. */
  #waitingFor(dep: string): ModelJob[] {
    return [...this.jobs.values()].filter((j) => j.hold?.waitsOn.has(dep)).sort((a, b) => a.hold!.order - b.hold!.order);
  }

  /**
   * Every end of a job: the holds waiting for it hear how it ended, before the job's own end is
   * written; `end` writes that, then held jobs a failure buried go dead, and a cancelled held
   * job's dependencies that no held job waits for any more and that have not started are cancelled.
   */
  #finish(job: ModelJob, outcome: ModelEnd, told: string, end: () => void, ending?: ReadonlySet<string>): void {
    this.#finishMany([{ job, told, end }], outcome, ending);
  }

  /**
   * Ends of several jobs in one call, as _lifecycle.lua's `finish` takes them: every job's holds
   * hear of it first, in order, then what that decided follows as calls of its own — every held
   * job buried, together (and what they bury, in turn), then the dependencies left to no one.
   * So in a drain a held job waiting for two drained jobs hears of the first drained, not of a
   * held job the first one's end buried.
   */
  #finishMany(items: readonly { job: ModelJob; told: string; end: () => void }[], outcome: ModelEnd, ending?: ReadonlySet<string>): void {
    const orphans: string[] = [];
    for (const { job } of items) {
      if (outcome === 'cancelled' && job.hold?.phase === 'held') orphans.push(...job.hold.deps);
      // A held job buried from outside (failNow with dead) hears of its dependencies' ends and does nothing.
      if (outcome === 'dead' && job.hold?.phase === 'held') job.hold.phase = 'buried';
    }
    const bury: ModelJob[] = [];
    for (const { job, told, end } of items) {
      const reason = outcome === 'dead' ? (job.lastError ?? '') : told;
      const text = (outcome === 'completed' ? 'c' : outcome === 'dead' ? 'd' : 'x') + reason;
      for (const parent of this.#waitingFor(job.id)) {
        // A held job ending in the same call (a drain) is not told: it ends too.
        if (ending?.has(parent.id)) continue;
        const h = parent.hold!;
        h.waitsOn.delete(job.id);
        h.ended.set(job.id, text);
        if (h.phase !== 'held') continue;
        if (outcome !== 'completed' && h.policy === 'fail') {
          h.phase = 'buried';
          parent.lastError = `dependency ${job.id} ${outcome === 'dead' ? 'died' : 'was cancelled'}${reason !== '' ? `: ${reason}` : ''}`;
          bury.push(parent);
        } else if (h.waitsOn.size === 0) {
          h.phase = 'released';
          this.#schedule(parent, Math.max(this.now, h.addDue));
        }
      }
      end();
    }
    if (bury.length > 0)
      this.#finishMany(
        bury.map((parent) => ({ job: parent, told: '', end: this.#buryEnd(parent) })),
        'dead',
      );
    const cancel: ModelJob[] = [];
    for (const dep of new Set(orphans)) {
      if (ending?.has(dep)) continue;
      if (this.#waitingFor(dep).some((j) => j.hold!.phase === 'held')) continue;
      const d = this.jobs.get(dep);
      if (d && (d.state === 'scheduled' || d.state === 'held')) cancel.push(d);
    }
    if (cancel.length > 0)
      this.#finishMany(
        cancel.map((d) => ({ job: d, told: 'the job waiting for it was cancelled', end: () => this.#remove(d) })),
        'cancelled',
        new Set(cancel.map((d) => d.id)),
      );
  }

  /** claim: held jobs whose deadline passed run anyway, due at the later of now and their own due time. */
  #releaseExpired(): void {
    const expired = [...this.jobs.values()]
      .filter((j) => j.state === 'held' && j.hold!.deadline !== undefined && j.hold!.deadline <= this.now)
      .sort((a, b) => a.hold!.deadline! - b.hold!.deadline! || bytes(a.id, b.id));
    for (const job of expired) {
      job.hold!.phase = 'timedOut';
      this.#schedule(job, Math.max(this.now, job.hold!.addDue));
    }
  }

  /**
   * A claimed job's view of its hold (job.hold). `pending` as both stores give it: the
   * dependencies not ended at the claim (store.ts and docs/flows.md say at the release; a
   * dependency that ends between a deadline's release and a claim is left out).
   */
  #holdView(job: ModelJob) {
    const h = job.hold;
    if (!h) return undefined;
    if (h.phase !== 'timedOut') return { timedOut: false, pending: [] };
    return { timedOut: true, pending: h.deps.filter((d) => !h.ended.has(d)) };
  }

  /** Store.childResults: how each dependency ended, in the order given; undefined without a hold. */
  childResults(id: string) {
    const h = this.jobs.get(id)?.hold;
    if (!h) return undefined;
    return h.deps.map((dep) => {
      const text = h.ended.get(dep);
      if (text === undefined) return { id: dep, outcome: undefined, value: '' };
      const outcome = text[0] === 'c' ? 'completed' : text[0] === 'd' ? 'dead' : 'cancelled';
      return { id: dep, outcome, value: text.slice(1) };
    });
  }

  heldJobs(): number {
    return [...this.jobs.values()].filter((j) => j.state === 'held').length;
  }

  // ---- rate limits: sliding windows, a log of tokens each back at its expiry ----

  #groupRate(g: string): ModelRate | undefined {
    return this.groupSettings.get(g)?.rate ?? this.groupRateLimit;
  }

  #limiter(id: string): ModelLimiter {
    let l = this.limiters.get(id);
    if (!l) {
      l = { log: [], held: undefined };
      this.limiters.set(id, l);
    }
    return l;
  }

  #used(id: string): number {
    return (this.limiters.get(id)?.log ?? []).filter((e) => e.expiry > this.now).reduce((n, e) => n + e.tokens, 0);
  }

  #heldUntil(id: string): number | undefined {
    const h = this.limiters.get(id)?.held;
    return h !== undefined && h > this.now ? h : undefined;
  }

  /** Tokens a limiter may still give: 0 while held, Infinity without a limit. */
  #tokens(id: string, limit: ModelRate | undefined): number {
    if (this.#heldUntil(id) !== undefined) return 0;
    return limit ? limit.max - this.#used(id) : Infinity;
  }

  /** When a limiter may give a token again: its hold's end, else its oldest token's return. */
  #freeAt(id: string): number | undefined {
    const held = this.#heldUntil(id);
    if (held !== undefined) return held;
    const live = (this.limiters.get(id)?.log ?? []).filter((e) => e.expiry > this.now).map((e) => e.expiry);
    return live.length > 0 ? Math.min(...live) : undefined;
  }

  #book(g: string, at: number, mode: 'NX' | 'LT' | 'set'): void {
    const had = this.rateWake.get(g);
    if (had === undefined || mode === 'set' || (mode === 'LT' && at < had)) this.rateWake.set(g, at);
  }

  rateUse(id: string) {
    const used = this.#used(id);
    return { used, heldUntilMs: this.#heldUntil(id), nextRefillMs: used > 0 ? this.#freeAtLog(id) : undefined };
  }

  #freeAtLog(id: string): number | undefined {
    const live = (this.limiters.get(id)?.log ?? []).filter((e) => e.expiry > this.now).map((e) => e.expiry);
    return live.length > 0 ? Math.min(...live) : undefined;
  }

  #remove(job: ModelJob): void {
    this.jobs.delete(job.id);
    const i = this.deadOrder.indexOf(job.id);
    if (i >= 0) this.deadOrder.splice(i, 1);
  }

  #bury(job: ModelJob): void {
    this.#finish(job, 'dead', '', this.#buryEnd(job));
  }

  /** A burial's own writes: into the dead set. */
  #buryEnd(job: ModelJob): () => void {
    return () => {
      // A job's end ends its debounce burst (finish); only one buried before it ran still had one.
      if (job.debounceKey !== undefined && this.bursts.get(job.debounceKey)?.id === job.id) this.bursts.delete(job.debounceKey);
      job.state = 'dead';
      job.finishedAt = this.now;
      this.deadOrder.push(job.id);
    };
  }

  /** Jobs in a state in ZSET order: by `score`, then id by bytes. */
  /** A state's jobs by score, then by id bytes (as a ZSET of ids), or by add order for the scheduled set (its members keep it). */
  inOrder(state: ModelState, score: (j: ModelJob) => number): ModelJob[] {
    const tie =
      state === 'scheduled' ? (a: ModelJob, b: ModelJob) => a.seq - b.seq : (a: ModelJob, b: ModelJob) => Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
    return [...this.jobs.values()].filter((j) => j.state === state).sort((a, b) => score(a) - score(b) || tie(a, b));
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
    return {
      id: job.id,
      attempt: job.attempts,
      dueAtMs: job.due,
      priority: job.priority,
      leaseExpiresAtMs: job.leaseDeadline,
      name: job.name,
      timeoutMs: job.timeoutMs,
      hold: this.#holdView(job),
    };
  }

  claim(count: number, leaseMs: number) {
    const expired = [...this.jobs.values()]
      .filter((j) => j.state === 'active' && j.leaseDeadline <= this.now)
      .sort((a, b) => a.leaseDeadline - b.leaseDeadline || bytes(a.id, b.id));
    // As claim.lua: every expired lease ends first, then those out of attempts are buried as one
    // call's ends (a held job waiting for two of them hears of the second, not of a held job the
    // first one's end buried).
    const buried: ModelJob[] = [];
    for (const job of expired) {
      this.#endLease(job, () => {
        job.mark = 'recovered';
        job.lastError = `lease expired during attempt ${job.attempts} of ${this.#maxOf(job)}`;
        if (job.attempts >= this.#maxOf(job)) {
          job.spentMax = this.#maxOf(job);
          // Out of active now (its group's slot is free); its end is written with the others'.
          job.state = 'dead';
          buried.push(job);
        } else this.#schedule(job, this.now);
      });
    }
    if (buried.length > 0)
      this.#finishMany(
        buried.map((job) => ({ job, told: '', end: this.#buryEnd(job) })),
        'dead',
      );
    this.#releaseExpired();
    if (this.paused) return { jobs: [], more: false };
    // At its concurrency limit the queue hands out nothing, and no more than the room left.
    let want = count;
    let atLimit = false;
    if (this.concurrency !== undefined) {
      const room = this.concurrency - [...this.jobs.values()].filter((j) => j.state === 'active').length;
      if (room <= want) [want, atLimit] = [Math.max(0, room), true];
    }
    if (want === 0) return { jobs: [], more: false };
    // The queue's rate limit: no more jobs than tokens; none left, nothing (and nothing moves on).
    let qLeft = Infinity;
    if (this.rated) {
      qLeft = this.#tokens('', this.rateLimit);
      if (qLeft <= 0) return { jobs: [], more: false };
      if (qLeft < want) [want, atLimit] = [qLeft, false];
    }
    const due = [...this.jobs.values()].filter((j) => j.state === 'scheduled' && j.due <= this.now);
    // Turns while a job of a group has not ended, or on a rated queue (_groups.lua LIVE):
    // a queue whose jobs of a group all ended claims as one that never had groups.
    const takesTurns =
      this.grouped && (this.rated || [...this.jobs.values()].some((j) => j.group !== undefined && j.state !== 'dead' && j.state !== 'completed'));
    if (!takesTurns) {
      // One order over every due job: priority, then due time, then add order.
      due.sort((a, b) => b.priority - a.priority || a.due - b.due || a.seq - b.seq);
      for (const j of due) j.promoted = true;
      const charged = this.#charge(due.slice(0, want), qLeft, new Set());
      const picked = charged.kept.map((job) => this.#activate(job, leaseMs));
      this.#takeTokens(charged.kept);
      if (charged.exhausted) return { jobs: picked, more: false };
      const left = [...this.jobs.values()].filter((j) => j.state === 'scheduled' && j.due <= this.now).length;
      return { jobs: picked, more: atLimit && picked.length >= want ? false : left > 0 };
    }
    // Turns. Due jobs move on; lanes that got some join in the order of their earliest job (the
    // lane of no group: or of its first job waiting from before, if earlier).
    const waited = this.#line(UNGROUPED)[0];
    const fresh = due.filter((j) => !j.promoted).sort(dueOrder);
    for (const j of fresh) j.promoted = true;
    // Groups booked in rate-wake for now (at most 100, by time then id): their next look booked,
    // and those with due jobs and room join after the lanes that got jobs here.
    const visited = this.rated
      ? [...this.rateWake]
          .filter(([, at]) => at <= this.now)
          .sort((a, b) => a[1] - b[1] || bytes(a[0], b[0]))
          .slice(0, 100)
          .map(([g]) => g)
      : [];
    for (const g of visited) {
      this.rateWake.delete(g);
      const at = this.#freeAt(g);
      if (at !== undefined) this.#book(g, at, 'set');
    }
    const got: string[] = [];
    const firsts = new Map<string, ModelJob>();
    for (const j of fresh) {
      const lane = j.group ?? UNGROUPED;
      if (!got.includes(lane)) got.push(lane);
      if (!firsts.has(lane)) firsts.set(lane, j);
    }
    const ordered = [...got];
    if (waited) {
      const mine = firsts.get(UNGROUPED);
      if (!mine || dueOrder(waited, mine) < 0) firsts.set(UNGROUPED, waited);
      if (!mine) ordered.push(UNGROUPED);
      ordered.sort((a, b) => dueOrder(firsts.get(a)!, firsts.get(b)!));
    }
    const joining: string[] = [];
    for (const l of ordered) if (l === UNGROUPED || this.#room(l) > 0) joining.push(l);
    for (const g of visited) if (!got.includes(g) && this.#eligible(g)) joining.push(g);
    this.#join(joining);
    // The lanes at the head of the rotation, each giving up to its room (and tokens), one a round.
    const lanes: { id: string; avail: number; take: number }[] = [];
    const gone: string[] = [];
    const blocked = new Set<string>();
    for (const id of this.lanes.slice(0, want)) {
      const waiting = this.#line(id).length;
      let avail = id === UNGROUPED ? waiting : Math.min(Math.max(0, this.#room(id)), waiting);
      if (this.rated && id !== UNGROUPED && avail > 0) {
        const tokens = this.#tokens(id, this.#groupRate(id));
        if (tokens < avail) avail = Math.max(0, tokens);
        if (avail === 0) blocked.add(id);
      }
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
    const charged = this.#charge(
      turns.map((i) => taken[i]![next[i]!++]!),
      qLeft,
      blocked,
    );
    const picked = charged.kept.map((job) => this.#activate(job, leaseMs));
    this.#takeTokens(charged.kept);
    // Lanes served go to the tail; one whose picks were all put back for want of the queue's
    // tokens was not served and keeps its place.
    const tail: string[] = [];
    const served = new Set(charged.kept.map((j) => j.group ?? UNGROUPED));
    for (const l of lanes) {
      const more = this.#line(l.id).length > 0 && !blocked.has(l.id) && (l.id === UNGROUPED || this.#room(l.id) > 0);
      if (!more) gone.push(l.id);
      else if (!this.rated || served.has(l.id)) tail.push(l.id);
    }
    this.lanes = [...this.lanes.filter((l) => !gone.includes(l) && !tail.includes(l)), ...tail];
    for (const g of gone) if (blocked.has(g)) this.#book(g, this.#freeAt(g) ?? this.now + 1000, 'LT');
    if (charged.exhausted) return { jobs: picked, more: false };
    return { jobs: picked, more: atLimit && picked.length >= want ? false : this.lanes.length > 0 };
  }

  /**
   * Rate limits in hand-out order: each job takes its cost of the queue's tokens and its group's.
   * The first short of the queue's stops the hand-out; one short of its group's stops that group
   * (`blocked`); a cost above a limit's max goes dead. The others stay where they wait.
   */
  #charge(jobs: ModelJob[], qLeft: number, blocked: Set<string>): { kept: ModelJob[]; exhausted: boolean } {
    if (!this.rated || jobs.length === 0) return { kept: jobs, exhausted: false };
    const kept: ModelJob[] = [];
    const gLeft = new Map<string, number>();
    let stopped = false;
    for (const job of jobs) {
      const g = job.group;
      const gLimit = g === undefined ? undefined : this.#groupRate(g);
      if (g !== undefined && !gLeft.has(g)) gLeft.set(g, this.#tokens(g, gLimit));
      const tooBig = this.rateLimit && job.cost > this.rateLimit.max ? this.rateLimit.max : gLimit && job.cost > gLimit.max ? gLimit.max : undefined;
      if (tooBig !== undefined) {
        job.lastError = `cost ${job.cost} is above the rate limit max ${tooBig}`;
        job.promoted = false;
        this.#bury(job);
      } else if (stopped || job.cost > qLeft || (g !== undefined && (blocked.has(g) || job.cost > gLeft.get(g)!))) {
        if (!stopped && job.cost > qLeft) stopped = true;
        if (g !== undefined && !stopped) blocked.add(g);
      } else {
        qLeft -= job.cost;
        if (g !== undefined) gLeft.set(g, gLeft.get(g)! - job.cost);
        kept.push(job);
      }
    }
    return { kept, exhausted: qLeft <= 0 || stopped };
  }

  /** The tokens the jobs handed out took, back one window from now; a group that took some is booked then. */
  #takeTokens(jobs: ModelJob[]): void {
    if (this.rated && jobs.length > 0) {
      const q = jobs.reduce((n, j) => n + j.cost, 0);
      if (this.rateLimit) this.#limiter('').log.push({ expiry: this.now + this.rateLimit.perMs, tokens: q });
      const seen = new Set<string>();
      for (const job of jobs) {
        const g = job.group;
        const limit = g === undefined ? undefined : this.#groupRate(g);
        if (g === undefined || !limit || seen.has(g)) continue;
        seen.add(g);
        const tokens = jobs.filter((j) => j.group === g).reduce((n, j) => n + j.cost, 0);
        this.#limiter(g).log.push({ expiry: this.now + limit.perMs, tokens });
        this.#book(g, this.now + limit.perMs, 'NX');
      }
    }
    // A debounced job that starts ends its burst.
    for (const job of jobs) if (job.debounceKey !== undefined && this.bursts.get(job.debounceKey)?.id === job.id) this.bursts.delete(job.debounceKey);
  }

  setLimits(
    concurrency: number | null | undefined,
    groupConcurrency: number | null | undefined,
    rateLimit?: ModelRate | null,
    groupRateLimit?: ModelRate | null,
  ): boolean {
    let changed = this.#setRates(rateLimit, groupRateLimit);
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

  /** The queue's rate limits: one raised or removed (more tokens, a shorter window) wakes; the groups' default raised has every booked group looked at now. */
  #setRates(rateLimit: ModelRate | null | undefined, groupRateLimit: ModelRate | null | undefined): boolean {
    let changed = false;
    if (rateLimit !== undefined && !sameRate(rateLimit ?? undefined, this.rateLimit)) {
      this.rateLimit = rateLimit ?? undefined;
      if (this.rateLimit) this.rated = true;
      changed = true;
    }
    if (groupRateLimit !== undefined && !sameRate(groupRateLimit ?? undefined, this.groupRateLimit)) {
      const raised = rateRaised(this.groupRateLimit, groupRateLimit ?? undefined);
      this.groupRateLimit = groupRateLimit ?? undefined;
      if (this.groupRateLimit) this.rated = true;
      changed = true;
      if (raised) for (const g of this.rateWake.keys()) this.rateWake.set(g, 0);
    }
    return changed;
  }

  setGroup(g: string, concurrency: number | null | undefined, paused: boolean | undefined, rate?: ModelRate | null): boolean {
    const s = this.groupSettings.get(g) ?? { limit: undefined, paused: false };
    let changed = false;
    if (concurrency !== undefined && (concurrency ?? undefined) !== s.limit) {
      s.limit = concurrency ?? undefined;
      changed = true;
    }
    let rateFreed = false;
    if (rate !== undefined && !sameRate(rate ?? undefined, s.rate)) {
      rateFreed = rateRaised(s.rate ?? this.groupRateLimit, rate ?? this.groupRateLimit);
      s.rate = rate ?? undefined;
      if (s.rate) this.rated = true;
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
      if (rateFreed && this.rated && this.rateWake.has(g)) this.rateWake.set(g, 0);
    }
    return changed;
  }

  group(g: string) {
    const s = this.groupSettings.get(g);
    return {
      id: g,
      running: this.#running(g),
      waiting: this.#line(g).length,
      concurrency: s?.limit,
      rateLimit: s?.rate,
      rate: this.rateUse(g),
      paused: s?.paused ?? false,
    };
  }

  /** The job a hand-out is about, and whether the hand-out still holds it. */
  #held(handout: number): { job: ModelJob | undefined; live: boolean } {
    const job = this.jobs.get(this.handouts[handout]!);
    return { job, live: job !== undefined && job.handout === handout && job.mark === 'live' };
  }

  complete(handout: number, result: string): string {
    const { job, live } = this.#held(handout);
    if (!job) return this.#missing(handout);
    if (job.state === 'completed' && job.handout === handout) return 'ok';
    if (!live) return 'lease_lost';
    this.#endLease(job, () =>
      this.#finish(job, 'completed', result, () => {
        if (this.keepCount || this.keepAgeMs) {
          job.state = 'completed';
          job.mark = 'none';
          job.finishedAt = this.now;
          job.result = result;
          this.#trimCompleted();
        } else this.#remove(job);
      }),
    );
    return 'ok';
  }

  drain(before: number | undefined): number {
    // In drain.lua's order (a held job left waiting for several hears of the first): jobs not yet
    // moved on by a claim by due time, then (without a bound) the held jobs by deadline, then the
    // ready set, then the groups' lines, in ZSET order; ended in one go, so a held job drained
    // with its dependencies is not told of them.
    const place = (j: ModelJob) => (j.state === 'held' ? 1 : !j.promoted ? 0 : j.group === undefined ? 2 : 3);
    const victims = [...this.jobs.values()]
      .filter((j) => (j.state === 'held' ? before === undefined : j.state === 'scheduled' && (before === undefined || j.due < before)))
      .sort(
        (a, b) =>
          place(a) - place(b) ||
          // The scheduled set's members keep add order within a due time (SCHEDULED_MEMBER).
          (place(a) === 0 ? a.due - b.due || a.seq - b.seq : 0) ||
          (place(a) === 1 ? (a.hold!.deadline ?? Infinity) - (b.hold!.deadline ?? Infinity) || bytes(a.id, b.id) : 0) ||
          (place(a) === 2 ? b.priority - a.priority || a.due - b.due || a.seq - b.seq : 0) ||
          (place(a) === 3 ? bytes(a.group!, b.group!) || b.priority - a.priority || a.due - b.due || a.seq - b.seq : 0),
      );
    const ending = new Set(victims.map((j) => j.id));
    this.#finishMany(
      victims.map((j) => ({ job: j, told: '', end: () => this.#remove(j) })),
      'cancelled',
      ending,
    );
    return victims.length;
  }

  /** Removes every job and setting; dedup windows stay (they expire by themselves on Redis). */
  obliterate(force: boolean) {
    const counts = { scheduled: 0, active: 0, dead: 0, completed: 0, jobs: this.jobs.size };
    for (const j of this.jobs.values()) counts[j.state === 'held' ? 'scheduled' : j.state]++;
    if (counts.active > 0 && !force) return { removed: false, counts };
    this.jobs.clear();
    this.revoked.clear();
    this.deadOrder.length = 0;
    this.paused = false;
    this.keepCount = 0;
    this.keepAgeMs = 0;
    this.#seq = 0;
    this.#holdOrder = 0;
    this.grouped = false;
    this.concurrency = undefined;
    this.groupConcurrency = undefined;
    this.groupSettings.clear();
    this.lanes = [];
    this.rateLimit = undefined;
    this.groupRateLimit = undefined;
    this.rated = false;
    this.limiters.clear();
    this.rateWake.clear();
    this.bursts.clear();
    return { removed: true, counts };
  }

  extend(handout: number, ms: number): string {
    const { job, live } = this.#held(handout);
    if (!job) return this.#missing(handout);
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
    if (!job) return { outcome: this.#missing(handout), dueAtMs: undefined };
    if (!live) return { outcome: 'lease_lost', dueAtMs: undefined };
    job.mark = 'gaveUp';
    job.lastError = error;
    job.errors = [...job.errors, { attempt: job.attempts, atMs: this.now, error }].slice(-MODEL_ERROR_HISTORY);
    if (dead || job.attempts >= this.#maxOf(job)) {
      if (job.attempts >= this.#maxOf(job)) job.spentMax = this.#maxOf(job);
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
    if (!job) return { outcome: this.#missing(handout), dueAtMs: undefined };
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

  /** The job keeps its due time (its place in line); with `holdMs` (RateLimitSignal) its group, or the queue, gets no hand-outs until then. */
  release(handout: number, holdMs = 0): string {
    if (this.#ownGiveUp(handout)) return 'ok';
    const { job, live } = this.#held(handout);
    if (!job) return this.#missing(handout);
    if (!live) return 'lease_lost';
    job.mark = 'gaveUp';
    job.attempts = Math.max(0, job.attempts - 1);
    if (holdMs > 0) {
      this.rated = true;
      const l = this.#limiter(job.group ?? '');
      if (l.held === undefined || l.held < this.now + holdMs) l.held = this.now + holdMs;
      if (job.group !== undefined) {
        this.#book(job.group, this.now + holdMs, 'LT');
        this.lanes = this.lanes.filter((x) => x !== job.group);
      }
    }
    this.#endLease(job, () => this.#schedule(job, job.due < this.now ? job.due : this.now));
    return 'ok';
  }

  /** A lease call for a job that is gone: lease lost while it is remembered as cancelled as it ran (until 10 min past its lease), else not found. */
  #missing(handout: number): 'lease_lost' | 'not_found' {
    const until = this.revoked.get(this.handouts[handout]!);
    return until !== undefined && until > this.now ? 'lease_lost' : 'not_found';
  }

  cancel(id: string, running = false, reason = '') {
    const job = this.jobs.get(id);
    if (!job) return { cancelled: false, state: undefined };
    if (job.state === 'active' && running) {
      for (const [k, until] of this.revoked) if (until <= this.now) this.revoked.delete(k);
      this.revoked.set(id, Math.max(job.leaseDeadline, this.now) + 600_000);
      this.#endLease(job, () => this.#finish(job, 'cancelled', reason, () => this.#remove(job)));
      return { cancelled: true, state: 'active' };
    }
    if (job.state !== 'scheduled' && job.state !== 'held') return { cancelled: false, state: job.state };
    this.#finish(job, 'cancelled', reason, () => this.#remove(job));
    return { cancelled: true, state: 'scheduled' };
  }

  /** Queue.fail: a running attempt fails from outside its holder (retried, or dead), or with `dead` a waiting job is buried too. */
  failNow(id: string, reason: string, dead: boolean, retryDelayMs: number) {
    const job = this.jobs.get(id);
    if (!job) return { outcome: 'not_found', state: undefined, dueAtMs: undefined };
    const state = job.state;
    if (state === 'dead' || state === 'completed' || ((state === 'scheduled' || state === 'held') && !dead))
      return { outcome: 'refused', state, dueAtMs: undefined };
    job.lastError = reason;
    job.errors = [...job.errors, { attempt: job.attempts, atMs: this.now, error: reason }].slice(-MODEL_ERROR_HISTORY);
    const end = (then: () => void) => (state === 'active' ? this.#endLease(job, then) : then());
    if (state === 'active') job.mark = 'revoked';
    if (dead || job.attempts >= this.#maxOf(job)) {
      if (job.attempts >= this.#maxOf(job)) job.spentMax = this.#maxOf(job);
      end(() => this.#bury(job));
      return { outcome: 'dead', state, dueAtMs: undefined };
    }
    end(() => this.#schedule(job, this.now + retryDelayMs));
    return { outcome: 'retried', state, dueAtMs: job.due };
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
      job.spentMax = undefined;
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
      maxAttempts: job.spentMax ?? job.maxAttempts,
      leaseExpiresAtMs: job.state === 'active' ? job.leaseDeadline : undefined,
      lastError: job.lastError,
      finishedAtMs: job.state === 'dead' || job.state === 'completed' ? job.finishedAt : undefined,
      result: job.state === 'completed' ? job.result : undefined,
      errors: job.errors.length > 0 ? job.errors : undefined,
      group: job.group,
      name: job.name,
      timeoutMs: job.timeoutMs,
    };
  }
}
