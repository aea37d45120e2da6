/**
 * Add routing: each new job goes to one shard, the one its routing key (its dedup key when it
 * has one, so the dedup check stays atomic with the add, else its id) hashes to in the current
 * shard set, with the layout's epoch. While a reshard's old shards may still hold jobs or dedup
 * windows, they are asked first, so adds stay idempotent and dedup windows hold across a
 * reshard. A shard that refuses the add (retired, or not a live shard of that epoch) makes the
 * layout be read again; a job is never written where no layout looks.
 */
import { ShardError } from '../../errors.js';
import { timerDelay } from '../../timers.js';
import { tooCostly } from '../too-costly.js';
import type { JobInfo } from '../../types.js';
import {
  type DebounceBurst,
  type DedupHolder,
  type NewJob,
  PartialAddError,
  type ScheduleGuard,
  type Store,
  type StoredAddResult,
  ShardMovedError,
} from '../store.js';
import type { ClaimFanOut } from './claim-fan-out.js';
import { groupBy, groupIndices } from './grouping.js';
import { shardFor } from './layout.js';
import { holdRoutes } from './hold-routing.js';
import type { LayoutCache, Resolved } from './layout-cache.js';

/**
 * How long an add routed to a shard that refuses it, while the stored layout still names that
 * shard, waits for the layout to change (an obliterate under way removes the layout last, within
 * milliseconds of its shards) before it fails with a ShardError; it reads the layout again after each pause, doubling from
 * the min to the max.
 */
const REROUTE_DEADLINE_MS = 5_000;
const REROUTE_PAUSE_MIN_MS = 5;
const REROUTE_PAUSE_MAX_MS = 200;

/**
 * The key a job is routed by: its group (a group's counts, line and rate limiter live on one
 * shard), else its dedup or debounce key (a window or a burst holds on one shard), else its id. A
 * dedup or debounce key given with a group holds among the jobs routed to that group's shard.
 */
function routeKey(job: NewJob): string {
  return job.group ?? job.dedup?.key ?? job.debounce?.key ?? job.id;
}

export class AddRouter {
  readonly #inner: Store;
  readonly #layouts: LayoutCache;
  readonly #claims: ClaimFanOut;
  readonly #reportShardError: (queue: string, error: ShardError) => void;

  constructor(inner: Store, layouts: LayoutCache, claims: ClaimFanOut, reportShardError: (queue: string, error: ShardError) => void) {
    this.#inner = inner;
    this.#layouts = layouts;
    this.#claims = claims;
    this.#reportShardError = reportShardError;
  }

  async add(queue: string, jobs: NewJob[], guard?: ScheduleGuard): Promise<StoredAddResult[] | null> {
    // A schedule's jobs go to the unsharded keys, where its guard lives (atomic with the add).
    if (guard) return this.#inner.add(queue, jobs, guard);
    let r = await this.#layouts.resolve(queue);
    if (r.unsharded) {
      try {
        return await this.#inner.add(queue, jobs);
      } catch (err) {
        if (!(err instanceof ShardMovedError)) throw err;
        r = await this.#layouts.load(queue);
      }
    }
    return this.#addSharded(queue, jobs, r);
  }

  /**
   * A cost above its shard's rate limits refuses the whole call before any shard writes (each
   * shard's add.lua would refuse only its own part): the limits of each shard a costly job goes
   * to, and of its group there, read first. Calls without a cost above 1 read nothing.
   */
  async #checkCosts(groups: Map<string, number[]>, jobs: NewJob[]): Promise<void> {
    await Promise.all(
      [...groups].map(async ([member, at]) => {
        const costly = at.map((i) => jobs[i]!).filter((j) => j.cost > 1);
        if (costly.length === 0) return;
        const ids = [...new Set(costly.map((j) => j.group).filter((g): g is string => g !== undefined))];
        const [limits, groupStates] = await Promise.all([this.#inner.limits(member), this.#inner.groups(member, ids)]);
        const own = new Map(groupStates.map((g) => [g.id, g.rateLimit]));
        for (const j of costly) {
          const groupMax = j.group === undefined ? undefined : (own.get(j.group) ?? limits.groupRateLimit)?.max;
          if ((limits.rateLimit && j.cost > limits.rateLimit.max) || (groupMax !== undefined && j.cost > groupMax)) throw tooCostly(jobs);
        }
      }),
    );
  }

  /**
   * Adds by the layout: each job to its shard of the current set, with the layout's epoch. A
   * shard that refuses (retired, or not a live shard of that epoch) makes the layout be read
   * again: a new one routes again at once; the same one means an obliterate is under way, and
   * the add waits for it to take the layout away, at most REROUTE_DEADLINE_MS, then fails with a
   * ShardError naming the shard. Before each routing by a new layout, the retired sets are asked
   * for the jobs' ids and dedup keys.
   */
  async #addSharded(queue: string, given: NewJob[], r: Resolved): Promise<StoredAddResult[]> {
    // The call's jobs as routed: a debounced add that moves a burst takes its job's id (#moveBursts).
    const jobs = given.slice();
    const out: StoredAddResult[] = new Array(jobs.length);
    const replacing = new Map<number, { member: string; state: string }>();
    const moving = new Map<number, { member: string; id: string }>();
    const errors = new Map<number, unknown>();
    let left = jobs.map((_, i) => i);
    // The layout the retired sets were last asked by (null: none yet).
    let checked: string | undefined | null = null;
    const started = performance.now();
    let pause = REROUTE_PAUSE_MIN_MS;
    for (;;) {
      if (checked !== r.raw) {
        left = await this.#answerFromRetired(queue, jobs, left, r, out, replacing);
        left = await this.#takeOutReplaced(jobs, left, out, replacing);
        await this.#moveBursts(queue, jobs, left, r, moving);
        checked = r.raw;
      }
      const routed = r;
      // Jobs joined by dependencies go to one shard (hold-routing.ts).
      const held = await holdRoutes(this.#inner, queue, routed, jobs, left, routeKey);
      const groups = groupIndices(left, (i) => held.get(i) ?? shardFor(queue, routed.layout.current, routeKey(jobs[i]!)));
      await this.#checkCosts(groups, jobs);
      const refused: number[] = [];
      let refusedBy = '';
      let failed = false;
      await Promise.all(
        [...groups].map(async ([member, at]) => {
          try {
            const res = await this.#inner.add(
              member,
              at.map((i) => jobs[i]!),
              undefined,
              member === queue ? '' : routed.epoch,
            );
            at.forEach((i, k) => {
              out[i] = res[k]!;
            });
            this.#claims.putBack(queue, member, Math.min(...res.filter((x) => x.code === 'added' || x.code === 'replaced').map((x) => x.dueAtMs)));
          } catch (err) {
            if (err instanceof ShardMovedError) {
              refused.push(...at);
              refusedBy = member;
              return;
            }
            // Settled per shard: the other shards' jobs are written, and answered as such.
            for (const i of at) errors.set(i, err);
            failed = true;
          }
        }),
      );
      if (failed) {
        await this.#movedBursts(out, moving);
        throw new PartialAddError(this.#markReplaced(out, replacing), errors);
      }
      left = refused;
      if (left.length === 0) break;
      r = await this.#layouts.load(queue);
      const waited = performance.now() - started;
      if (waited >= REROUTE_DEADLINE_MS) {
        const error = new ShardError(refusedBy, {
          cause: new Error(
            `it takes no add for the stored layout, which names it (an obliterate under way for ${Math.round(waited)} ms, or one that stopped half way: run it again)`,
          ),
        });
        this.#reportShardError(queue, error);
        throw error;
      }
      if (r.raw !== routed.raw) {
        pause = REROUTE_PAUSE_MIN_MS;
        continue;
      }
      // The stored layout still names a shard that takes no add for it: an obliterate under way.
      await new Promise((resolve) => setTimeout(resolve, timerDelay(pause)));
      pause = Math.min(REROUTE_PAUSE_MAX_MS, pause * 2);
    }
    await this.#movedBursts(out, moving);
    return this.#markReplaced(out, replacing);
  }

  /**
   * A debounced add whose key has a burst still waiting on a retired shard moves that burst to
   * the key's shard now (a retired shard takes no add, and a second burst would run the job
   * twice): the add is written with the burst job's id and its first add's time (so maxWaitMs
   * still bounds it from there), then the old job is cancelled (#movedBursts). Written first, so
   * a failure between the two loses nothing; a burst job claimed in between runs, and this add
   * runs after it, as an add while a burst's job runs starts a new burst. A burst whose
   * maxWaitMs has passed is not moved: this add starts a new burst, as add.lua decides.
   */
  async #moveBursts(queue: string, jobs: NewJob[], todo: number[], r: Resolved, moving: Map<number, { member: string; id: string }>): Promise<void> {
    const keyed = todo.filter((i) => jobs[i]!.debounce !== undefined && !moving.has(i));
    if (r.retired.length === 0 || keyed.length === 0) return;
    const found = new Map<number, { member: string; burst: DebounceBurst }>();
    for (const set of r.retired) {
      const groups = groupIndices(keyed, (i) => shardFor(queue, set, routeKey(jobs[i]!)));
      await Promise.all(
        [...groups].map(async ([member, at]) => {
          const bursts = await this.#inner.bursts(
            member,
            at.map((i) => jobs[i]!.debounce!.key),
          );
          at.forEach((i, k) => {
            const burst = bursts[k];
            if (burst && !found.has(i)) found.set(i, { member, burst });
          });
        }),
      );
    }
    // The first add of the call with a key moves its burst; the later ones fold into it there.
    const seen = new Set<string>();
    for (const [i, { member, burst }] of found) {
      const job = jobs[i]!;
      const debounce = job.debounce!;
      if (seen.has(`${member}\n${debounce.key}`)) continue;
      seen.add(`${member}\n${debounce.key}`);
      const [info] = await this.#inner.getMany(member, [burst.id], false);
      if (info?.state !== 'scheduled') continue;
      if (debounce.maxWaitMs !== undefined && (await this.#inner.rateStatus(member)).nowMs >= burst.firstMs + debounce.maxWaitMs) continue;
      jobs[i] = { ...job, id: burst.id, debounce: { ...debounce, firstMs: burst.firstMs } };
      moving.set(i, { member, id: burst.id });
    }
  }

  /** The bursts #moveBursts wrote anew: the old jobs cancelled, and each add answered as folded into its burst. */
  async #movedBursts(out: StoredAddResult[], moving: Map<number, { member: string; id: string }>): Promise<void> {
    await Promise.all(
      [...moving].map(async ([i, { member, id }]) => {
        if (out[i]?.code !== 'added') return;
        await this.#inner.cancel(member, [id]);
        out[i] = { ...out[i]!, code: 'debounced', duplicateOf: id };
      }),
    );
  }

  /** A job that replaced one from a retired shard answers 'replaced'. */
  #markReplaced(out: StoredAddResult[], replacing: Map<number, unknown>): StoredAddResult[] {
    for (const i of replacing.keys()) if (out[i]?.code === 'added') out[i] = { ...out[i]!, code: 'replaced' };
    return out;
  }

  /**
   * A job replaced from a retired shard is taken out of it before the new one is written, so
   * two jobs never share an id: one claimed in between is active and answers 'exists' (an
   * active job is not replaced), as add.lua answers. Returns the jobs left to add.
   */
  async #takeOutReplaced(jobs: NewJob[], todo: number[], out: StoredAddResult[], replacing: Map<number, { member: string; state: string }>): Promise<number[]> {
    const taken = new Set<number>();
    await Promise.all(
      todo.map(async (i) => {
        const old = replacing.get(i);
        if (!old || old.state === 'done') return;
        const id = jobs[i]!.id;
        if (old.state !== 'scheduled') {
          await this.#inner.purge(old.member, old.state === 'dead' ? 'dead' : 'completed', { ids: [id] });
        } else {
          const [res] = await this.#inner.cancel(old.member, [id]);
          if (res && !res.cancelled && res.state !== undefined) {
            const [now] = await this.#inner.getMany(old.member, [id], false);
            out[i] = { code: 'exists', state: res.state, dueAtMs: now?.dueAtMs ?? 0, duplicateOf: undefined };
            replacing.delete(i);
            taken.add(i);
            return;
          }
        }
        old.state = 'done';
      }),
    );
    return taken.size === 0 ? todo : todo.filter((i) => !taken.has(i));
  }

  /**
   * While retired shards may hold jobs or dedup windows, an add first looks there, at the shard
   * its routing key had in each retired set: for its id (adds stay idempotent across a reshard)
   * and for its dedup key (a window taken before a reshard holds after it). Decided as add.lua
   * decides: a dedup key held by another job (or by this id, whose job is gone) answers
   * 'deduplicated'; else a job found answers 'exists', or, with `replace` and not active, is
   * replaced by the new one. Answers those in `out` and returns the jobs left to add.
   */
  async #answerFromRetired(
    queue: string,
    jobs: NewJob[],
    todo: number[],
    r: Resolved,
    out: StoredAddResult[],
    replacing: Map<number, { member: string; state: string }>,
  ): Promise<number[]> {
    if (r.retired.length === 0 || todo.length === 0) return todo;
    const found = new Map<number, { member: string; job: JobInfo<string> }>();
    const held = new Map<number, { member: string; holder: DedupHolder }>();
    for (const set of r.retired) {
      const groups = groupIndices(todo, (i) => shardFor(queue, set, routeKey(jobs[i]!)));
      await Promise.all(
        [...groups].map(async ([member, at]) => {
          const keyed = at.filter((i) => jobs[i]!.dedup !== undefined && !held.has(i));
          const [got, holders] = await Promise.all([
            this.#inner.getMany(
              member,
              at.map((i) => jobs[i]!.id),
              false,
            ),
            this.#inner.dedupHolders(
              member,
              keyed.map((i) => jobs[i]!.dedup!.key),
            ),
          ]);
          at.forEach((i, k) => {
            const job = got[k];
            if (job && !found.has(i)) found.set(i, { member, job });
          });
          keyed.forEach((i, k) => {
            const holder = holders[k];
            if (holder) held.set(i, { member, holder });
          });
        }),
      );
    }
    // The state of each job holding a key, where it was added with it (the key's shard).
    const holderJobs = new Map<string, JobInfo<string> | null>();
    const holds = [...held.values()];
    await Promise.all(
      [...groupBy(holds, (h) => h.member)].map(async ([member, at]) => {
        const ids = [...new Set(at.map((k) => holds[k]!.holder.id))];
        const got = await this.#inner.getMany(member, ids, false);
        ids.forEach((id, k) => holderJobs.set(`${member}\n${id}`, got[k] ?? null));
      }),
    );
    const left: number[] = [];
    for (const i of todo) {
      const job = jobs[i]!;
      const f = found.get(i);
      const h = held.get(i);
      if (h && (h.holder.id !== job.id || !f)) {
        const holderJob = holderJobs.get(`${h.member}\n${h.holder.id}`) ?? null;
        out[i] = {
          code: 'deduplicated',
          state: holderJob ? holderJob.state : 'finished',
          dueAtMs: holderJob ? holderJob.dueAtMs : h.holder.dueAtMs,
          duplicateOf: h.holder.id,
        };
      } else if (!f) left.push(i);
      else if (job.replace && f.job.state !== 'active') {
        left.push(i);
        replacing.set(i, { member: f.member, state: f.job.state });
      } else out[i] = { code: 'exists', state: f.job.state, dueAtMs: f.job.dueAtMs, duplicateOf: undefined };
    }
    return left;
  }
}
