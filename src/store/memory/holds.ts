/**
 * Holds on the memory store (docs/flows.md): the twin of redis/scripts/_holds.lua. A job added
 * with dependencies waits in place 'held' until each has ended, its deadline passes, or a
 * dependency fails under onChildFailure 'fail' (then it is buried); MemoryQueue.finish calls
 * settle for every end of a job, as `finish` does in _lifecycle.lua.
 */
import { ValidationError } from '../../errors.js';
import { LIMIT, type Finish } from '../lifecycle.js';
import { childOutcome, HOLD_PHASE } from '../holds.js';
import type { HoldRelease, NewJob, SignalIn, StoredHold } from '../store.js';
import { Heap } from './heap.js';
import type { MemJob } from './memory-queue.js';

/** A job's hold (Redis: its HOLD_STATE, hold-deps and child-results fields). */
interface MemHold {
  pending: number;
  failed: number;
  policy: 'f' | 'i';
  /** The time it was added to run at. */
  due: number;
  /** h held, r released, t released by its deadline, d buried for a failed dependency. */
  phase: 'h' | 'r' | 't' | 'd';
  /** The signal it waits for (job.waitForSignal), or undefined: a hold for dependencies. */
  signal?: string | undefined;
  deps: string[];
  /** Each ended dependency's CHILD_OUTCOME text. */
  ended: Map<string, string>;
}

/** What MemoryQueue needs of the queue to settle holds. */
export interface HoldsHost {
  jobs: Map<string, MemJob>;
  hold(job: MemJob): void;
  schedule(job: MemJob, due: number): void;
  emit(now: number, event: 'dead' | 'cancelled', id: string, fields: Record<string, string>): void;
}

/** The store's refusal, worded as add.lua's (redis-store maps the script's to the same error). */
function refuse(item: number | undefined, why: string, v: string | number): never {
  let text = String(v);
  if (text.length > 40) text = `${text.slice(0, 40)}...`;
  throw new ValidationError('dependsOn', `${item === undefined ? '' : `of item ${item} `}${why}, got ${text}`);
}

export class MemHolds {
  readonly #holds = new Map<string, MemHold>();
  /** Signals sent to a job that was not waiting for them: id -> name -> data (Redis: `signals`). */
  readonly #kept = new Map<string, Map<string, string>>();
  /** The signal that ended a job's last wait (Redis: `signal-in`). */
  readonly #delivered = new Map<string, SignalIn>();
  /** Job id -> the held jobs waiting for it (Redis: `dependents`). */
  readonly #dependents = new Map<string, string[]>();
  /** Each held job's deadline, for holdOf (Redis: its score in `held`). */
  readonly #deadlineOf = new Map<string, number>();
  /** Held jobs by deadline; an entry is stale once the job's hold left phase 'h' (Redis: `held`). */
  readonly #deadlines = new Heap<{ id: string; at: number; hold: MemHold }>(
    (a, b) => a.at < b.at,
    (e) => this.#holds.get(e.id) === e.hold && e.hold.phase === 'h',
  );

  /** True once a job was added with dependencies or waited for a signal (Redis: meta `holds`). */
  get used(): boolean {
    return this.#holds.size > 0 || this.#dependents.size > 0;
  }

  /**
   * wait-signal.lua: the job (its attempt just ended, not counted) waits for a signal of `name`:
   * one kept for it ends the wait at once (true: the caller schedules it now); else it is held,
   * until `deadline` at most (Infinity: none).
   */
  waitSignal(host: HoldsHost, job: MemJob, name: string, now: number, deadline: number): boolean {
    const kept = this.#kept.get(job.id);
    const data = kept?.get(name);
    if (data !== undefined) {
      kept!.delete(name);
      if (kept!.size === 0) this.#kept.delete(job.id);
      this.#delivered.set(job.id, { name, timedOut: false, data });
      this.#holds.set(job.id, {
        pending: 0,
        failed: 0,
        policy: 'f',
        due: now,
        phase: 'r',
        signal: name,
        deps: this.#holds.get(job.id)?.deps ?? [],
        ended: this.#holds.get(job.id)?.ended ?? new Map(),
      });
      return true;
    }
    const before = this.#holds.get(job.id);
    const h: MemHold = { pending: 1, failed: 0, policy: 'f', due: now, phase: 'h', signal: name, deps: before?.deps ?? [], ended: before?.ended ?? new Map() };
    this.#holds.set(job.id, h);
    this.#delivered.delete(job.id);
    if (deadline < Infinity) {
      this.#deadlines.push({ id: job.id, at: deadline, hold: h });
      this.#deadlineOf.set(job.id, deadline);
    } else this.#deadlineOf.delete(job.id);
    host.hold(job);
    return false;
  }

  /**
   * signal.lua: a job waiting for `name` is released (scheduled now by the caller: 'released');
   * another that has not ended keeps the signal for its wait ('kept'), a second of one name taking
   * the first's place, unless its kept signals would pass LIMIT.signals_kept_bytes ('refused').
   */
  signal(host: HoldsHost, job: MemJob, name: string, data: string, now: number): 'released' | 'kept' | 'refused' {
    const h = this.#holds.get(job.id);
    if (job.where === 'held' && h?.phase === 'h' && h.signal === name) {
      h.phase = 'r';
      this.#delivered.set(job.id, { name, timedOut: false, data });
      host.schedule(job, now);
      return 'released';
    }
    const kept = new Map(this.#kept.get(job.id));
    kept.set(name, data);
    if (Buffer.byteLength(JSON.stringify(Object.fromEntries(kept))) > LIMIT.signals_kept_bytes) return 'refused';
    this.#kept.set(job.id, kept);
    return 'kept';
  }

  /** The signal that ended a job's last wait, or undefined (CLAIM_HOLDS `signal`). */
  delivered(id: string): SignalIn | undefined {
    return this.#holds.get(id)?.signal === undefined ? undefined : this.#delivered.get(id);
  }

  /** add.lua HOLDS.check: every item's dependencies, before anything is written. */
  check(jobs: readonly NewJob[], state: (id: string) => MemJob['where'] | undefined): void {
    const firstAt = new Map<string, number>();
    jobs.forEach((j, i) => {
      if (!firstAt.has(j.id)) firstAt.set(j.id, i + 1);
    });
    // As add.lua, which refuses these as it reads its items, before it checks any dependency.
    jobs.forEach((j, k) => {
      if (j.hold && (j.replace || j.dedup || j.debounce))
        throw new ValidationError('dependsOn', `of item ${k + 1}: not with replace, dedup_key or debounce_key`);
    });
    jobs.forEach((j, k) => {
      const i = k + 1;
      if (!j.hold) return;
      const seen = new Set<string>();
      for (const dep of j.hold.dependsOn) {
        if (dep === j.id) refuse(i, 'must not name the job itself', dep);
        if (seen.has(dep)) refuse(i, 'names a job twice', dep);
        seen.add(dep);
      }
      if (seen.size === 0) refuse(i, "must name at least one job (or be '')", '');
      if (seen.size > LIMIT.ids_per_run) refuse(i, `must name at most ${LIMIT.ids_per_run} jobs`, seen.size);
      for (const dep of seen) {
        const at = firstAt.get(dep);
        if (at !== undefined && at < i) continue;
        const where = state(dep);
        if (where === 'dead') refuse(i, 'names a dead job', dep);
        if (where === undefined) {
          if (at !== undefined) refuse(i, 'names a job that comes later in the call (list dependencies first)', dep);
          refuse(i, 'names no job (not added, or ended and not kept)', dep);
        }
      }
    });
  }

  /**
   * Writes a new job's hold (add.lua HOLDS.plan and HOLDS.write): its dependencies not ended yet
   * hold it (`written`: the jobs this call wrote, which have not); a completed one counts as
   * done. Returns true when the job is held (the caller does not schedule it).
   */
  write(host: HoldsHost, job: MemJob, hold: NonNullable<NewJob['hold']>, due: number, now: number, written: ReadonlySet<string>): boolean {
    const h: MemHold = {
      pending: 0,
      failed: 0,
      policy: hold.onChildFailure === 'ignore' ? 'i' : 'f',
      due,
      phase: 'h',
      deps: [...hold.dependsOn],
      ended: new Map(),
    };
    const pending: string[] = [];
    for (const dep of h.deps) {
      const other = written.has(dep) ? undefined : host.jobs.get(dep);
      if (!written.has(dep) && other === undefined) refuse(undefined, `of job ${job.id} names a job this call did not add (deduplicated)`, dep);
      if (other?.where === 'completed') h.ended.set(dep, `c${other.result ?? ''}`);
      else if (other?.where === 'dead') h.ended.set(dep, `d${other.lastError ?? ''}`);
      else pending.push(dep);
    }
    h.pending = pending.length;
    this.#holds.set(job.id, h);
    if (pending.length === 0) {
      h.phase = 'r';
      return false;
    }
    for (const dep of pending) {
      const waiting = this.#dependents.get(dep);
      if (waiting) waiting.push(job.id);
      else this.#dependents.set(dep, [job.id]);
    }
    const deadline = hold.deadlineAtMs ?? (hold.deadlineMs === undefined ? Infinity : now + hold.deadlineMs);
    if (deadline < Infinity) {
      this.#deadlines.push({ id: job.id, at: deadline, hold: h });
      this.#deadlineOf.set(job.id, deadline);
    } else this.#deadlineOf.delete(job.id);
    host.hold(job);
    return true;
  }

  /**
   * Every end of a job (MemoryQueue.finish, before its own writes): the held jobs waiting for it
   * are told, as _holds.lua HOLDS.settle. Returns the held jobs to bury (their reason set here)
   * and the dependencies a cancelled held job leaves to no one.
   */
  settle(host: HoldsHost, outcome: Finish, job: MemJob, told: string, now: number, ending?: ReadonlySet<string>): { bury: MemJob[]; orphans: string[] } {
    const after = { bury: [] as MemJob[], orphans: [] as string[] };
    const own = this.#holds.get(job.id);
    // A held job buried itself (Queue.fail with dead): its hold ends, so no later end of a
    // dependency releases it; those still record how they ended.
    if (outcome === 'dead' && own?.phase === 'h') own.phase = 'd';
    if (outcome === 'cancelled') {
      if (own?.phase === 'h') after.orphans.push(...own.deps);
    }
    const waiting = this.#dependents.get(job.id);
    if (!waiting) return after;
    this.#dependents.delete(job.id);
    const reason = outcome === 'dead' ? (job.lastError ?? '') : told;
    const text = (outcome === 'completed' ? 'c' : outcome === 'dead' ? 'd' : 'x') + reason;
    for (const id of waiting) {
      // A held job ending in the same call (a drain) is not told: it ends too.
      if (ending?.has(id)) continue;
      const h = this.#holds.get(id);
      if (!h) continue;
      h.ended.set(job.id, text);
      // A job waiting for a signal now (it ran after its deadline) is not released by a late dependency.
      if (h.phase !== 'h' || h.signal !== undefined) continue;
      h.pending = Math.max(0, h.pending - 1);
      const parent = host.jobs.get(id);
      if (outcome !== 'completed') {
        if (h.policy === 'f') {
          h.phase = 'd';
          if (parent) {
            const why = `dependency ${job.id} ${outcome === 'dead' ? 'died' : 'was cancelled'}${reason !== '' ? `: ${reason}` : ''}`;
            parent.lastError = why;
            host.emit(now, 'dead', id, { error: why });
            after.bury.push(parent);
          }
          continue;
        }
        h.failed++;
      }
      if (h.pending === 0) {
        h.phase = 'r';
        if (parent) host.schedule(parent, Math.max(now, h.due));
      }
    }
    return after;
  }

  /** The dependencies of cancelled held jobs that no held job waits for and that have not started (HOLDS.take_orphans). */
  takeOrphans(host: HoldsHost, deps: readonly string[], now: number, ending?: ReadonlySet<string>): MemJob[] {
    const out: MemJob[] = [];
    for (const dep of new Set(deps)) {
      if (ending?.has(dep)) continue;
      if ((this.#dependents.get(dep) ?? []).some((id) => this.#holds.get(id)?.phase === 'h')) continue;
      const job = host.jobs.get(dep);
      if (!job || !(job.where === 'scheduled' || job.where === 'ready' || job.where === 'waiting' || job.where === 'held')) continue;
      host.emit(now, 'cancelled', dep, { reason: 'the job waiting for it was cancelled' });
      out.push(job);
    }
    return out;
  }

  /** Held jobs whose deadline passed, scheduled (at most `limit`, from the claim): HOLDS.release_expired. */
  releaseExpired(host: HoldsHost, now: number, limit: number): void {
    for (let n = 0; n < limit; n++) {
      const e = this.#deadlines.peek();
      if (!e || e.at > now) return;
      this.#deadlines.pop();
      e.hold.phase = 't';
      if (e.hold.signal !== undefined) this.#delivered.set(e.id, { name: e.hold.signal, timedOut: true, data: '' });
      const job = host.jobs.get(e.id);
      if (job?.where === 'held') host.schedule(job, Math.max(now, e.hold.due));
    }
  }

  /** A held job's deadline (its score in Redis's `held`), or undefined for none. */
  deadlineOf(id: string): number | undefined {
    return this.#deadlineOf.get(id);
  }

  /** The earliest deadline of a held job, or undefined. */
  nextDeadline(): number | undefined {
    return this.#deadlines.peek()?.at;
  }

  /** How a job handed out was released (CLAIM_HOLDS), or undefined when it was added without dependencies. */
  release(id: string): HoldRelease | undefined {
    const h = this.#holds.get(id);
    if (!h) return undefined;
    if (h.signal !== undefined) return undefined;
    if (h.phase !== 't') return { timedOut: false, pending: [] };
    return { timedOut: true, pending: h.deps.filter((d) => !h.ended.has(d)) };
  }

  /** child-results.lua: how the job's hold stands and how each dependency ended, in order; undefined when it has none. */
  holdOf(id: string): StoredHold | undefined {
    const h = this.#holds.get(id);
    if (!h) return undefined;
    const deadline = h.phase === 'h' ? this.#deadlineOf.get(id) : undefined;
    return {
      phase: HOLD_PHASE[h.phase],
      pending: h.pending,
      failed: h.failed,
      onChildFailure: h.policy === 'i' ? 'ignore' : 'fail',
      dueAtMs: h.due,
      signal: h.signal,
      deadlineAtMs: deadline,
      children: h.deps.map((dep) => childOutcome(dep, h.ended.get(dep) ?? '')),
    };
  }

  /**
   * A job deleted for good: its hold goes with it, and the dependencies that have not ended stop
   * naming it, so a job added later under the same id hears only of its own (forget_extras).
   */
  forget(id: string): void {
    // Signals kept for a job that never waited go with it too.
    this.#kept.delete(id);
    this.#delivered.delete(id);
    const h = this.#holds.get(id);
    if (!h) return;
    this.#holds.delete(id);
    this.#deadlineOf.delete(id);
    for (const dep of h.deps) {
      const waiting = this.#dependents.get(dep)?.filter((w) => w !== id);
      if (waiting === undefined) continue;
      if (waiting.length > 0) this.#dependents.set(dep, waiting);
      else this.#dependents.delete(dep);
    }
  }

  /**
   * verify: as redis/verify.ts, a held job's hold is in phase h and counts as pending exactly its
   * dependencies with no outcome, each of which exists and names it among its dependents.
   */
  problems(jobs: ReadonlyMap<string, MemJob>): string[] {
    const out: string[] = [];
    for (const job of jobs.values()) {
      if (job.where !== 'held') continue;
      const h = this.#holds.get(job.id);
      if (!h || h.phase !== 'h') {
        out.push(`job ${job.id} is held without a hold in phase h`);
        continue;
      }
      if (h.signal !== undefined) continue;
      const open = h.deps.filter((d) => !h.ended.has(d));
      if (h.pending !== open.length) out.push(`held job ${job.id} counts ${h.pending} pending, but ${open.length} of its dependencies have not ended`);
      for (const d of open) {
        if (!jobs.has(d)) out.push(`held job ${job.id} waits for ${d}, which has no body`);
        else if (!(this.#dependents.get(d) ?? []).includes(job.id)) out.push(`held job ${job.id} waits for ${d}, which does not name it among its dependents`);
      }
    }
    for (const id of this.#holds.keys()) if (!jobs.has(id)) out.push(`job ${id} has a hold but no body`);
    return out;
  }

  /** drain / obliterate: everything goes. */
  clear(): void {
    this.#holds.clear();
    this.#deadlineOf.clear();
    this.#dependents.clear();
    this.#kept.clear();
    this.#delivered.clear();
    while (this.#deadlines.pop());
  }
}
