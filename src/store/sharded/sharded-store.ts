/**
 * Sharded queues: one queue spread over N store queues (shards), each with its own hash tag, so
 * a Redis Cluster spreads it over its nodes. This store wraps the Redis or memory store and
 * keeps the Store contract for the queue as a whole: Queue and Worker do not know shards exist.
 *
 * - Where a job lives: its shard is FNV-1a of its dedup key (when it has one, so the dedup check
 *   stays atomic with the add) or else of its id, modulo N (layout.ts). Jobs a recurring
 *   schedule adds live in the unsharded keys, beside the schedule guard they are atomic with.
 * - Lookups by id (get, cancel, reschedule, promote) go to the id's shard; only a miss asks the
 *   other shards, then re-reads the layout in case a reshard moved on.
 * - Claims visit only shards that may have work (claim-planner.ts), with one call per shard in
 *   parallel; lease tokens carry their shard (`<tag>/<token>`) so acks go back to it.
 * - An unsharded queue (the default) costs nothing: every call goes straight to the inner store.
 */
import { ConnectionError, ShardError, StoreError, ValidationError } from '../../errors.js';
import { settlesWithin } from '../../settles-within.js';
import type { CancelResult, DueTimeline, JobInfo, ListOrder, ListState, QueueStats, RescheduleResult, WorkerInfo } from '../../types.js';
import type {
  ClaimedJob,
  ClaimResult,
  CompleteRef,
  DeadJob,
  DedupHolder,
  EventReader,
  FailRequest,
  FailResult,
  LeaseOutcome,
  LeaseRef,
  ListCursor,
  NewJob,
  ObliterateResult,
  PurgeTarget,
  QueueSettings,
  RetainedSet,
  ScanStep,
  ScheduleGuard,
  SnoozeRequest,
  SnoozeResult,
  Store,
  StoredAddResult,
  StoredPage,
  StoredSchedule,
  UnreadableJob,
  UpdateRequest,
  VerifyReport,
  WakeHandlers,
  ConnectionWatcher,
  WakeSubscription,
  WorkerBeat,
} from '../store.js';
import { NO_EPOCH, ShardMovedError } from '../store.js';
import { byteOrder } from '../zset-order.js';
import { ClaimPlanner, type ClaimPlan } from './claim-planner.js';
import {
  checkShardCount,
  everyShardName,
  formatLayout,
  isUnsharded,
  type Layout,
  memberNames,
  newEpoch,
  parseLayout,
  reshardedLayout,
  shardCount,
  shardFor,
  shardNames,
  type ShardSet,
} from './layout.js';
import { mergedEventReader } from './merged-events.js';
import { mergedPage, SHARDED_PHASE } from './merged-list.js';
import { timerDelay } from '../../timers.js';

/** How long a process trusts the layout it read; a stale one is also caught by a refused add or a miss. */
const LAYOUT_TTL_MS = 10_000;
/** Tries of a reshard (or an obliterate) whose compare-and-set of the layout lost to another process. */
const RESHARD_ATTEMPTS = 5;
/**
 * How long an add routed to a shard that refuses it, while the stored layout still names that
 * shard, waits for the layout to change (an obliterate under way removes the layout last, within
 * milliseconds of its shards) before it fails with a ShardError; it reads the layout again after each pause, doubling from
 * the min to the max.
 */
const REROUTE_DEADLINE_MS = 5_000;
const REROUTE_PAUSE_MIN_MS = 5;
const REROUTE_PAUSE_MAX_MS = 200;
/** Shards an obliterate removes at once. */
const SWEEP_BATCH = 64;
/** A shard whose claim failed is tried again after this, doubling up to the max. */
const SHARD_RETRY_MIN_MS = 100;
const SHARD_RETRY_MAX_MS = 2_000;

interface Resolved {
  raw: string | undefined;
  layout: Layout;
  /** The layout's epoch; '' for a queue never sharded. */
  epoch: string;
  unsharded: boolean;
  /** Every store queue of the queue: the unsharded keys, then current shards, then retired ones. */
  members: string[];
  /** Where each retired shard set's jobs may be (for the idempotent add and lookups). */
  retired: ShardSet[];
  at: number;
}

export interface ShardStatus {
  /** Shards new jobs are spread over. */
  shards: number;
  /** The store queues of the current shard set, in shard order. */
  names: string[];
  /** Shards left by a reshard that still hold jobs, and how many. */
  draining: { name: string; jobs: number }[];
}

/** One store queue of a queue, and its figures now: what `queue.shardStats()` lists. */
export interface ShardFigures {
  /** Its store name: `<queue>#<i>` for a shard, the queue's own name for its unsharded keys. */
  name: string;
  /**
   * 'current': new jobs are spread over it. 'draining': an earlier reshard left it; it holds
   * jobs still and takes no new ones (the queue's own keys, after the first reshard of an
   * unsharded queue, until its jobs are gone). 'home': the queue's own keys of a sharded queue
   * (its layout, worker registry, schedules and their jobs), not a shard of the spread.
   */
  role: 'current' | 'draining' | 'home';
  /** The Redis node that holds it (`host:port`: on a cluster, the master of its slot), when known. */
  node: string | undefined;
  scheduled: number;
  ready: number;
  active: number;
  dead: number;
  completed: number;
  /** How long its longest-waiting due job has waited; undefined when none is due. */
  oldestDueAgeMs: number | undefined;
  /** Milliseconds until its earliest scheduled job is due (0: one is ready); undefined when none. */
  nextDueInMs: number | undefined;
}

/** `<tag>/<token>`: 'p' for the unsharded keys, else the shard number. */
function tagOf(queue: string, member: string): string {
  return member === queue ? 'p' : member.slice(queue.length + 1);
}

/** Moves a shard's claim answer into `into`, each token tagged with its shard (see memberOfToken). */
function takeTagged(queue: string, member: string, res: ClaimResult, into: { jobs: ClaimedJob[]; unreadable: UnreadableJob[] }): void {
  const tag = tagOf(queue, member);
  for (const j of res.jobs) into.jobs.push({ ...j, token: `${tag}/${j.token}` });
  for (const u of res.unreadable) into.unreadable.push({ ...u, token: `${tag}/${u.token}` });
}

function memberOfToken(queue: string, token: string): { member: string; token: string } {
  const slash = token.indexOf('/');
  // A token without a tag was handed out while the queue was unsharded.
  if (slash < 0) return { member: queue, token };
  const tag = token.slice(0, slash);
  return { member: tag === 'p' ? queue : `${queue}#${tag}`, token: token.slice(slash + 1) };
}

function routeKey(job: NewJob): string {
  return job.dedup?.key ?? job.id;
}

/** Items grouped by a key, each with its index in the input. */
function groupBy<T>(items: readonly T[], key: (item: T, i: number) => string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  items.forEach((item, i) => {
    const k = key(item, i);
    const list = out.get(k);
    if (list) list.push(i);
    else out.set(k, [i]);
  });
  return out;
}

/**
 * How long a claim round waits for its shards. A healthy shard answers in a few ms; one whose
 * master is down or failing over may not for seconds, and the other shards' jobs (and the
 * worker's next claim) must not wait for it. A claim that answers later is not lost: its jobs
 * are handed out by the next claim.
 */
const SLOW_SHARD_MS = 200;
/** Failures of late claims kept per queue until the next claim reports them. */
const MAX_LATE_ERRORS = 16;
/** How long close() waits to hand back late-answered jobs no claim took. */
const CLOSE_RELEASE_MS = 1_000;

type Settled<T> = PromiseSettledResult<T> | { status: 'late'; promise: Promise<T> };

/** Waits for every call, at most SLOW_SHARD_MS: those still under way come back as 'late', with their promise. */
async function settleOrLeave<T>(calls: Promise<T>[]): Promise<Settled<T>[]> {
  const out: (PromiseSettledResult<T> | undefined)[] = new Array(calls.length);
  const tracked = calls.map((c, i) =>
    c.then(
      (value) => {
        out[i] = { status: 'fulfilled', value };
      },
      (reason: unknown) => {
        out[i] = { status: 'rejected', reason };
      },
    ),
  );
  if (!(await settlesWithin(Promise.all(tracked), SLOW_SHARD_MS))) {
    // A busy event loop runs the timer before it reads replies that came meanwhile: read them
    // first (setImmediate runs after the poll phase), so a shard is late only when it is.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return calls.map((promise, i) => out[i] ?? { status: 'late', promise });
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The settings a reshard copies to new shards are the same in both. */
const sameSettings = (a: QueueSettings, b: QueueSettings) =>
  a.paused === b.paused && a.eventsMaxLen === b.eventsMaxLen && JSON.stringify(a.retention) === JSON.stringify(b.retention);

/** A retention count cap's share per shard (0 stays 0: no bound, or for completed jobs, none kept). */
const perShard = (maxCount: number, shards: number) => (maxCount === 0 ? 0 : Math.ceil(maxCount / shards));

export class ShardedStore implements Store {
  static readonly #wrappers = new WeakMap<Store, ShardedStore>();
  readonly inner: Store;
  readonly #owned: boolean;
  readonly #layouts = new Map<string, Resolved>();
  readonly #loading = new Map<string, Promise<Resolved>>();
  readonly #declared = new Map<string, number>();
  readonly #planners = new Map<string, ClaimPlanner>();
  readonly #shardRetryMs = new Map<string, number>();
  /** Per queue: subscriptions to move over to a new layout's shards. */
  readonly #followers = new Map<string, Set<() => void>>();
  /** Jobs of claims that answered after their round went on, per queue (tokens tagged): the next claim hands them out. */
  readonly #late = new Map<string, { jobs: ClaimedJob[]; unreadable: UnreadableJob[] }>();
  /** Per queue: failures of claims that gave up after their round went on, for the next claim to report. */
  readonly #lateErrors = new Map<string, ShardError[]>();
  /** Per queue, a way to wake each subscriber to claim (late jobs are waiting). */
  readonly #wakers = new Map<string, Set<() => void>>();
  /** Who hears of each ShardError this store reports (metrics). */
  readonly #shardErrorListeners = new Set<(queue: string, error: ShardError) => void>();

  constructor(inner: Store, owned = true) {
    this.inner = inner;
    this.#owned = owned;
  }

  /** The sharding view of a store given by the caller: one per store, shared, never closing it. */
  static over(store: Store): ShardedStore {
    if (store instanceof ShardedStore) return store;
    let s = ShardedStore.#wrappers.get(store);
    if (!s) {
      s = new ShardedStore(store, false);
      ShardedStore.#wrappers.set(store, s);
    }
    return s;
  }

  /**
   * Calls `listener` with each ShardError this store reports: a claim's (one per failing shard,
   * each time it is asked; the worker reports it on 'error') and an add's that gave up waiting
   * for a shard to take it. Returns a function that stops it. For metrics.
   */
  onShardError(listener: (queue: string, error: ShardError) => void): () => void {
    this.#shardErrorListeners.add(listener);
    return () => this.#shardErrorListeners.delete(listener);
  }

  #reportShardError(queue: string, error: ShardError): void {
    for (const listener of this.#shardErrorListeners) {
      try {
        listener(queue, error);
      } catch {
        // A listener's failure is its own; the error still goes to the caller.
      }
    }
  }

  /** The shard count a Queue or Worker was given: used when the queue has no layout yet. */
  declare(queue: string, shards: number | undefined): void {
    if (shards !== undefined && !this.#declared.has(queue)) this.#declared.set(queue, shards);
  }

  // ---- layout ----

  async #resolve(queue: string, fresh = false): Promise<Resolved> {
    const cached = this.#layouts.get(queue);
    if (cached && !fresh) {
      // A stale layout is still safe to use (a shard that is not live for it refuses adds, a
      // miss re-reads), so it is refreshed in the background instead of holding up the call.
      if (performance.now() - cached.at > LAYOUT_TTL_MS) this.#load(queue).catch(() => {});
      return cached;
    }
    return this.#load(queue);
  }

  #load(queue: string): Promise<Resolved> {
    let p = this.#loading.get(queue);
    if (!p) {
      p = this.#read(queue).finally(() => this.#loading.delete(queue));
      this.#loading.set(queue, p);
    }
    return p;
  }

  async #read(queue: string): Promise<Resolved> {
    let raw = await this.inner.layout(queue);
    const wanted = this.#declared.get(queue);
    if (wanted !== undefined && wanted > 1 && isUnsharded(parseLayout(raw))) raw = (await this.#reshard(queue, wanted, true)).raw;
    return this.#keep(queue, await this.#finishDraining(queue, this.#resolved(queue, raw)));
  }

  /** Caches a layout read, and moves subscriptions over to its shards when they changed. */
  #keep(queue: string, r: Resolved): Resolved {
    const before = this.#layouts.get(queue);
    this.#layouts.set(queue, r);
    if (before && before.members.join('\n') !== r.members.join('\n')) for (const follow of this.#followers.get(queue) ?? []) follow();
    return r;
  }

  #resolved(queue: string, raw: string | undefined): Resolved {
    const layout = parseLayout(raw);
    return {
      raw,
      layout,
      epoch: layout.epoch ?? '',
      unsharded: isUnsharded(layout),
      members: memberNames(queue, layout),
      retired: layout.retired,
      at: performance.now(),
    };
  }

  /** How many jobs a store queue holds, and whether a dedup window taken there is still open. */
  async #contents(member: string): Promise<{ jobs: number; windowOpen: boolean }> {
    const [s, settings] = await Promise.all([this.inner.stats(member, 0), this.inner.settings(member)]);
    return { jobs: s.scheduled + s.active + s.dead + s.completed, windowOpen: settings.dedupUntilMs > s.nowMs };
  }

  /**
   * Marks every retired shard retired (again: a reshard marks them after it stores the layout,
   * and may have stopped before), so a process never adds by a layout whose old shards still take
   * adds. Then drops retired sets that hold no job and no open dedup window any more (an add
   * checks a retired set for its dedup key, so the window holds across the reshard until it
   * ends): once found empty, nothing can enter them.
   */
  async #finishDraining(queue: string, r: Resolved): Promise<Resolved> {
    if (r.retired.length === 0) return r;
    const empty: ShardSet[] = [];
    for (const set of r.retired) {
      const names = shardNames(queue, set);
      await Promise.all(names.map((n) => this.inner.retire(n, r.epoch)));
      // The unsharded keys also hold schedule jobs: only their jobs from before count, which
      // cannot be told apart, so they drain like any shard (and keep holding its jobs).
      const held = await Promise.all(names.map((n) => this.#contents(n)));
      if (held.every((h) => h.jobs === 0 && !h.windowOpen)) empty.push(set);
    }
    if (empty.length === 0) return r;
    const next = formatLayout({ ...r.layout, retired: r.layout.retired.filter((s) => !empty.includes(s)) });
    if (await this.inner.setLayout(queue, r.raw, next, r.layout.epoch)) return this.#resolved(queue, next);
    return this.#resolved(queue, await this.inner.layout(queue));
  }

  /** Moves the queue to `count` shards: new adds go to the new shards at once; workers drain the old ones. */
  async reshard(queue: string, count: number): Promise<{ from: number; to: number; changed: boolean }> {
    checkShardCount(count);
    const before = await this.#load(queue);
    if (shardCount(before.layout) === count) return { from: count, to: count, changed: false };
    const { raw } = await this.#reshard(queue, count);
    const after = await this.#load(queue);
    return { from: shardCount(before.layout), to: shardCount(after.layout), changed: raw !== before.raw };
  }

  /**
   * With `creating`, only a queue that was never sharded is sharded: two processes that start at
   * once make one layout. Steps, each safe to run twice and to stop after:
   * 1. A queue never sharded gets its epoch stored first (a compare and set of the layout, still
   *    unsharded), so every process that shards it at once marks its shards for the same one.
   * 2. The new shards are marked live shards of the epoch (before anything else is written to
   *    them: a late obliterate of another life of the queue leaves them alone) and get the
   *    queue's settings, before any job can reach them.
   * 3. The layout names them (a compare and set), then the old set is marked retired. A process
   *    that reads the new layout marks it retired too before it uses it (#finishDraining), so no
   *    moment has two shards taking adds for one routing key: ids and dedup windows stay one per
   *    key across a reshard. Nothing is moved between shards, so nothing can be lost.
   */
  async #reshard(queue: string, count: number, creating = false): Promise<{ raw: string | undefined }> {
    for (let attempt = 0; attempt < RESHARD_ATTEMPTS; attempt++) {
      let raw = await this.inner.layout(queue);
      let layout = parseLayout(raw);
      // Another process got there first (a lost compare-and-set, then this read): its layout stands.
      if (creating ? !isUnsharded(layout) : attempt > 0 && layout.current !== null && shardCount(layout) === count) return { raw };
      if (layout.epoch === undefined) {
        const epoch = newEpoch();
        const reserved = formatLayout({ ...layout, epoch });
        if (!(await this.inner.setLayout(queue, raw, reserved, epoch))) continue;
        [raw, layout] = [reserved, { ...layout, epoch }];
      }
      const epoch = layout.epoch!;
      const next = reshardedLayout(layout, count);
      const settings = await this.inner.settings(queue);
      await Promise.all(
        shardNames(queue, next.current!).map(async (n) => {
          await this.inner.markShard(n, epoch);
          await this.#applySettings(n, settings, count);
        }),
      );
      const text = formatLayout(next);
      if (await this.inner.setLayout(queue, raw, text, epoch)) {
        // From here no add reaches the old shards; workers and lookups still find their jobs.
        await Promise.all(memberNames(queue, { epoch, current: layout.current, retired: [] }).map((n) => this.inner.retire(n, epoch)));
        // A setting written meanwhile by a process that read the old layout: the new shards get it too.
        const now = await this.inner.settings(queue);
        if (!sameSettings(now, settings)) await Promise.all(shardNames(queue, next.current!).map((n) => this.#applySettings(n, now, count)));
        return { raw: text };
      }
    }
    throw new ValidationError('shards', 'the layout kept changing while resharding (another reshard at the same time?): try again');
  }

  async #applySettings(member: string, s: QueueSettings, shards: number): Promise<void> {
    const { dead, completed } = s.retention;
    await Promise.all([
      this.inner.setPaused(member, s.paused),
      this.inner.setEventStream(member, s.eventsMaxLen),
      this.inner.setRetention(member, 'dead', perShard(dead.maxCount, shards), dead.maxAgeMs),
      this.inner.setRetention(member, 'completed', perShard(completed.maxCount, shards), completed.maxAgeMs),
    ]);
  }

  /** The queue's shards now, and the old ones still draining. */
  async shards(queue: string): Promise<ShardStatus> {
    const r = await this.#load(queue);
    const names = r.layout.current ? shardNames(queue, r.layout.current) : [queue];
    const draining: { name: string; jobs: number }[] = [];
    for (const set of r.retired) for (const name of shardNames(queue, set)) draining.push({ name, jobs: (await this.#contents(name)).jobs });
    return { shards: shardCount(r.layout), names, draining };
  }

  /** Every store queue of the queue with its figures: how the jobs spread, what still drains, a shard that lags. */
  async shardStats(queue: string): Promise<ShardFigures[]> {
    const r = await this.#load(queue);
    const current = new Set(r.layout.current ? shardNames(queue, r.layout.current) : [queue]);
    const draining = new Set(r.retired.flatMap((set) => shardNames(queue, set)));
    return Promise.all(
      r.members.map(async (name): Promise<ShardFigures> => {
        const [s, node] = await Promise.all([this.inner.stats(name, 0), this.inner.nodeOf?.(name)]);
        return {
          name,
          role: current.has(name) ? 'current' : draining.has(name) ? 'draining' : 'home',
          node,
          scheduled: s.scheduled,
          ready: s.ready,
          active: s.active,
          dead: s.dead,
          completed: s.completed,
          oldestDueAgeMs: s.oldestDueAgeMs,
          nextDueInMs: s.nextDueInMs,
        };
      }),
    );
  }

  #planner(queue: string): ClaimPlanner {
    let p = this.#planners.get(queue);
    if (!p) {
      p = new ClaimPlanner();
      this.#planners.set(queue, p);
    }
    return p;
  }

  /**
   * Runs `op` once on every member of the stored layout (read now: a reshard this process has
   * not seen must not be left out) and of any layout stored while it ran, so a write that
   * changes the whole queue (a setting, a drain, a purge) reaches every shard. A reshard reads
   * the settings again after it stores its layout (#reshard), so of a setting written and a
   * reshard at the same moment, one always brings it to the new shards. Answers in no order.
   */
  async #everywhere<R>(queue: string, op: (member: string, r: Resolved) => Promise<R>): Promise<R[]> {
    let r = await this.#load(queue);
    const done = new Map<string, R>();
    for (let round = 0; round < RESHARD_ATTEMPTS; round++) {
      const todo = r.members.filter((m) => !done.has(m));
      if (todo.length === 0) break;
      const at = r;
      const answers = await Promise.all(todo.map((m) => op(m, at)));
      todo.forEach((m, k) => done.set(m, answers[k]!));
      r = await this.#load(queue);
    }
    return [...done.values()];
  }

  // ---- adds ----

  add(queue: string, jobs: NewJob[], guard?: undefined, epoch?: string): Promise<StoredAddResult[]>;
  add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  async add(queue: string, jobs: NewJob[], guard?: ScheduleGuard): Promise<StoredAddResult[] | null> {
    // A schedule's jobs go to the unsharded keys, where its guard lives (atomic with the add).
    if (guard) return this.inner.add(queue, jobs, guard);
    let r = await this.#resolve(queue);
    if (r.unsharded) {
      try {
        return await this.inner.add(queue, jobs);
      } catch (err) {
        if (!(err instanceof ShardMovedError)) throw err;
        r = await this.#load(queue);
      }
    }
    return this.#addSharded(queue, jobs, r);
  }

  /**
   * Adds by the layout: each job to its shard of the current set, with the layout's epoch. A
   * shard that refuses (retired, or not a live shard of that epoch) makes the layout be read
   * again: a new one routes again at once; the same one means an obliterate is under way, and
   * the add waits for it to take the layout away, at most REROUTE_DEADLINE_MS, then fails with a
   * ShardError naming the shard. Before each routing by a new layout, the retired sets are asked
   * for the jobs' ids and dedup keys.
   */
  async #addSharded(queue: string, jobs: NewJob[], r: Resolved): Promise<StoredAddResult[]> {
    const out: StoredAddResult[] = new Array(jobs.length);
    const replacing = new Map<number, { member: string; state: string }>();
    let left = jobs.map((_, i) => i);
    // The layout the retired sets were last asked by (null: none yet).
    let checked: string | undefined | null = null;
    const started = performance.now();
    let pause = REROUTE_PAUSE_MIN_MS;
    for (;;) {
      if (checked !== r.raw) {
        left = await this.#answerFromRetired(queue, jobs, left, r, out, replacing);
        checked = r.raw;
      }
      const routed = r;
      const groups = groupBy(left, (i) => shardFor(queue, routed.layout.current, routeKey(jobs[i]!)));
      const refused: number[] = [];
      let refusedBy = '';
      await Promise.all(
        [...groups].map(async ([member, at]) => {
          try {
            const res = await this.inner.add(
              member,
              at.map((i) => jobs[i]!),
              undefined,
              member === queue ? '' : routed.epoch,
            );
            at.forEach((i, k) => {
              out[i] = res[k]!;
            });
            this.#putBack(queue, member, Math.min(...res.filter((x) => x.code === 'added' || x.code === 'replaced').map((x) => x.dueAtMs)));
          } catch (err) {
            if (!(err instanceof ShardMovedError)) throw err;
            refused.push(...at);
            refusedBy = member;
          }
        }),
      );
      left = refused;
      if (left.length === 0) break;
      r = await this.#load(queue);
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
    // A replaced job from before the reshard is taken out of its old shard once the new one is in.
    await Promise.all(
      [...replacing].map(async ([i, { member, state }]) => {
        if (out[i]!.code !== 'added') return;
        out[i] = { ...out[i]!, code: 'replaced' };
        const id = jobs[i]!.id;
        if (state === 'scheduled') await this.inner.cancel(member, [id]);
        else await this.inner.purge(member, state === 'dead' ? 'dead' : 'completed', { ids: [id] });
      }),
    );
    return out;
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
      const groups = groupBy(todo, (i) => shardFor(queue, set, routeKey(jobs[i]!)));
      await Promise.all(
        [...groups].map(async ([member, at]) => {
          const keyed = at.filter((i) => jobs[i]!.dedup !== undefined && !held.has(i));
          const [got, holders] = await Promise.all([
            this.inner.getMany(
              member,
              at.map((i) => jobs[i]!.id),
              false,
            ),
            this.inner.dedupHolders(
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
        const got = await this.inner.getMany(member, ids, false);
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

  // ---- claims and leases ----

  /**
   * Claims from the shards that may have work, splitting `count` between them; shards that had
   * more than their share are asked again for what the others lacked, so a claim hands out as
   * many due jobs as one on an unsharded queue would. What it got is handed on in priority,
   * then due-time order (each shard's own order kept among equals).
   */
  async claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number, workerId = ''): Promise<ClaimResult> {
    const r = await this.#resolve(queue);
    if (r.unsharded) return this.inner.claim(queue, count, leaseMs, defaultMaxAttempts, workerId);
    const planner = this.#planner(queue);
    const jobs: ClaimedJob[] = [];
    const unreadable: UnreadableJob[] = [];
    this.#takeLate(queue, count, jobs, unreadable);
    let candidates = r.members;
    let answered = 0;
    const errors = this.#takeLateErrors(queue);
    // When no shard looked due (a timer or an idle check), every shard is asked, to the end.
    let fallback = true;
    for (let round = 0; jobs.length + unreadable.length < count && round <= r.members.length; round++) {
      const wasDue = planner.anyDue(candidates);
      const { plans } = planner.plan(candidates, count - jobs.length - unreadable.length, fallback);
      if (plans.length === 0) break;
      fallback &&= !wasDue;
      const settled = await settleOrLeave(plans.map((p) => this.inner.claim(p.shard, p.count, leaseMs, defaultMaxAttempts, workerId)));
      const answeredAt = performance.now();
      const drained = new Set<string>();
      settled.forEach((s, i) => {
        const plan = plans[i] as ClaimPlan;
        if (s.status === 'late') {
          // Its node is slow or failing over: the others' jobs go out now, and this shard backs
          // off; what the late claim leased goes out with a later claim (#lateAnswer).
          drained.add(plan.shard);
          this.#shardFailed(planner, plan.shard);
          s.promise.then(
            (res) => this.#lateAnswer(queue, planner, plan, res),
            (err: unknown) => this.#lateFailure(queue, plan.shard, err),
          );
          return;
        }
        if (s.status === 'rejected') {
          errors.push(new ShardError(plan.shard, { cause: s.reason }));
          drained.add(plan.shard);
          this.#shardFailed(planner, plan.shard);
          return;
        }
        answered++;
        this.#shardRetryMs.delete(plan.shard);
        planner.observe(plan, s.value, answeredAt);
        takeTagged(queue, plan.shard, s.value, { jobs, unreadable });
        if (!s.value.more) drained.add(plan.shard);
      });
      // Shards that gave all they had are done; the loop ends when no candidate looks due.
      candidates = candidates.filter((m) => !drained.has(m));
    }
    // One shard failing costs the others nothing: its error goes out with the claim's answer
    // (the worker reports it) and the shard is asked again after its back-off. Only when Redis
    // itself is unreachable (every shard asked failed to connect) does the claim fail, so the
    // worker reports one outage rather than an error per shard.
    if (answered === 0 && errors.length > 0 && errors.every((e) => e.cause instanceof ConnectionError)) throw errors[0]!.cause;
    for (const e of errors) this.#reportShardError(queue, e);
    // Stable: among equals, each shard's own order (its add order) is kept.
    jobs.sort((a, b) => b.priority - a.priority || a.dueAtMs - b.dueAtMs);
    return {
      nowMs: planner.now() ?? Date.now(),
      jobs,
      unreadable,
      more: this.#late.has(queue) || planner.anyDue(r.members, 0),
      nextWakeMs: planner.nextWake(r.members),
      ...(errors.length > 0 ? { errors } : {}),
    };
  }

  /**
   * A claim that answered after its round went on: its jobs are leased to this process, so they
   * wait for its next claim, which the queue's subscribers are woken for. (Handing them back
   * instead would undo every claim of a node that is merely slow.)
   */
  #lateAnswer(queue: string, planner: ClaimPlanner, plan: ClaimPlan, res: ClaimResult): void {
    this.#shardRetryMs.delete(plan.shard);
    planner.observe(plan, res, performance.now());
    if (res.jobs.length + res.unreadable.length === 0) return;
    const late = this.#late.get(queue) ?? { jobs: [], unreadable: [] };
    takeTagged(queue, plan.shard, res, late);
    this.#late.set(queue, late);
    for (const wake of this.#wakers.get(queue) ?? []) wake();
  }

  /** A claim that failed after its round went on (ioredis gave up on a node): the next claim reports it. */
  #lateFailure(queue: string, shard: string, err: unknown): void {
    const pending = this.#lateErrors.get(queue) ?? [];
    // Bounded: a shard is asked at most every 2 s once it keeps failing, and one error per
    // shard says what there is to say.
    if (pending.length < MAX_LATE_ERRORS) pending.push(new ShardError(shard, { cause: err }));
    this.#lateErrors.set(queue, pending);
  }

  #takeLateErrors(queue: string): ShardError[] {
    const pending = this.#lateErrors.get(queue) ?? [];
    this.#lateErrors.delete(queue);
    return pending;
  }

  /** Moves up to `count` late-answered jobs into a claim's answer. */
  #takeLate(queue: string, count: number, jobs: ClaimedJob[], unreadable: UnreadableJob[]): void {
    const late = this.#late.get(queue);
    if (!late) return;
    unreadable.push(...late.unreadable.splice(0, count));
    jobs.push(...late.jobs.splice(0, count - unreadable.length));
    if (late.jobs.length + late.unreadable.length === 0) this.#late.delete(queue);
  }

  #shardFailed(planner: ClaimPlanner, shard: string): void {
    const ms = Math.min(SHARD_RETRY_MAX_MS, (this.#shardRetryMs.get(shard) ?? SHARD_RETRY_MIN_MS / 2) * 2);
    this.#shardRetryMs.set(shard, ms);
    planner.failed(shard, ms);
  }

  /** Runs a lease call per shard for the leases it handed out; answers in the leases' order. */
  async #byLease<L extends LeaseRef, R>(queue: string, leases: L[], op: (member: string, leases: L[]) => Promise<R[]>): Promise<R[]> {
    // Tokens of an unsharded queue carry no shard: the common case goes straight through.
    if (leases.every((l) => !l.token.includes('/'))) return op(queue, leases);
    const routed = leases.map((l) => ({ l, ...memberOfToken(queue, l.token) }));
    const groups = groupBy(routed, (x) => x.member);
    const out: R[] = new Array(leases.length);
    await Promise.all(
      [...groups].map(async ([member, at]) => {
        const res = await op(
          member,
          at.map((i) => ({ ...routed[i]!.l, token: routed[i]!.token })),
        );
        at.forEach((i, k) => {
          out[i] = res[k]!;
        });
      }),
    );
    return out;
  }

  complete(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]> {
    return this.#byLease(queue, leases, (m, l) => this.inner.complete(m, l));
  }

  release(queue: string, leases: LeaseRef[]): Promise<LeaseOutcome[]> {
    return this.#byLease(queue, leases, async (m, l) => {
      const res = await this.inner.release(m, l);
      if (res.includes('ok')) this.#putBack(queue, m, 0);
      return res;
    });
  }

  async extend(queue: string, leases: LeaseRef[], leaseMs: number, beat?: WorkerBeat): Promise<LeaseOutcome[]> {
    const routed = leases.map((l) => memberOfToken(queue, l.token).member);
    // The heartbeat rides along when every lease is in the unsharded keys (where the worker registry is).
    if (routed.every((m) => m === queue)) return this.#byLease(queue, leases, (m, l) => this.inner.extend(m, l, leaseMs, beat));
    const [out] = await Promise.all([
      this.#byLease(queue, leases, (m, l) => this.inner.extend(m, l, leaseMs)),
      beat ? this.inner.beat(queue, beat) : undefined,
    ]);
    return out;
  }

  /**
   * A job this process put back into a shard: the claim planner learns of it at once, without
   * waiting for the signal (which tells every other process).
   */
  #putBack(queue: string, member: string, dueAtMs: number | undefined): void {
    if (dueAtMs !== undefined && Number.isFinite(dueAtMs)) this.#planners.get(queue)?.signal(member, dueAtMs);
  }

  async fail(queue: string, req: FailRequest): Promise<FailResult> {
    const { member, token } = memberOfToken(queue, req.token);
    const res = await this.inner.fail(member, { ...req, token });
    if (res.outcome === 'retried') this.#putBack(queue, member, res.dueAtMs);
    return res;
  }

  async snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult> {
    const { member, token } = memberOfToken(queue, req.token);
    const res = await this.inner.snooze(member, { ...req, token });
    if (res.outcome === 'snoozed') this.#putBack(queue, member, res.dueAtMs);
    return res;
  }

  update(queue: string, req: UpdateRequest): Promise<LeaseOutcome> {
    const { member, token } = memberOfToken(queue, req.token);
    return this.inner.update(member, { ...req, token });
  }

  beat(queue: string, beat: WorkerBeat, gone?: boolean): Promise<void> {
    return this.inner.beat(queue, beat, gone);
  }

  workers(queue: string): Promise<WorkerInfo[]> {
    return this.inner.workers(queue);
  }

  // ---- lookups by id ----

  /**
   * Runs `op` for each id on its shard; the ids it did not find, on every other shard; those
   * still not found, once more on shards a fresh read of the layout adds (a reshard since).
   */
  async #byId<R>(queue: string, ids: string[], op: (member: string, ids: string[]) => Promise<R[]>, found: (r: R) => boolean): Promise<R[]> {
    let r = await this.#resolve(queue);
    const out: R[] = new Array(ids.length);
    const run = async (groups: Map<string, number[]>) => {
      await Promise.all(
        [...groups].map(async ([member, at]) => {
          const res = await op(
            member,
            at.map((i) => ids[i]!),
          );
          at.forEach((i, k) => {
            if (out[i] === undefined || (!found(out[i]!) && found(res[k]!))) out[i] = res[k]!;
          });
        }),
      );
    };
    const home = (id: string) => shardFor(queue, r.layout.current, id);
    await run(groupBy(ids, home));
    const missed = () => ids.map((_, i) => i).filter((i) => !found(out[i]!));
    let miss = missed();
    if (miss.length > 0 && !r.unsharded) {
      const others = new Map<string, number[]>();
      for (const m of r.members) {
        const at = miss.filter((i) => home(ids[i]!) !== m);
        if (at.length > 0) others.set(m, at);
      }
      await run(others);
      miss = missed();
    }
    if (miss.length > 0) {
      const tried = new Set(r.members);
      r = await this.#load(queue);
      const fresh = r.members.filter((m) => !tried.has(m));
      if (fresh.length > 0) await run(new Map(fresh.map((m) => [m, miss])));
    }
    return out;
  }

  cancel(queue: string, ids: string[]): Promise<CancelResult[]> {
    return this.#byId(
      queue,
      ids,
      (m, x) => this.inner.cancel(m, x),
      (c) => c.state !== undefined,
    );
  }

  async reschedule(queue: string, id: string, delayMs: number | undefined, runAtMs: number | undefined): Promise<RescheduleResult> {
    const [res] = await this.#byId(
      queue,
      [id],
      async (m) => {
        const x = await this.inner.reschedule(m, id, delayMs, runAtMs);
        if (x.rescheduled) this.#putBack(queue, m, x.dueAtMs);
        return [x];
      },
      (x) => x.state !== undefined,
    );
    return res!;
  }

  async get(queue: string, id: string): Promise<JobInfo<string> | null> {
    return (await this.getMany(queue, [id], true))[0] ?? null;
  }

  getMany(queue: string, ids: string[], withLogs: boolean): Promise<(JobInfo<string> | null)[]> {
    return this.#byId(
      queue,
      ids,
      (m, x) => this.inner.getMany(m, x, withLogs),
      (j) => j !== null,
    );
  }

  // ---- the queue as a whole ----

  async list(queue: string, state: ListState, cursor: ListCursor | undefined, limit: number, order: ListOrder = 'asc'): Promise<StoredPage> {
    const r = await this.#resolve(queue);
    if (r.unsharded && cursor?.phase !== SHARDED_PHASE) return this.inner.list(queue, state, cursor, limit, order);
    return mergedPage(this.inner, r.members, state, cursor, limit, order);
  }

  /** Cursor: `<inner cursor>.<member index>` past the first member; '0' starts and ends. */
  async scan(queue: string, cursor: string, count: number): Promise<ScanStep> {
    const r = await this.#resolve(queue);
    if (r.unsharded && !cursor.includes('.')) return this.inner.scan(queue, cursor, count);
    const [inner = '0', at = '0'] = cursor.split('.');
    const index = Number(at);
    if (!Number.isInteger(index) || index < 0 || index >= r.members.length)
      throw new ValidationError('cursor', 'must be the cursor a previous search returned');
    const step = await this.inner.scan(r.members[index]!, inner, count);
    const totals = await Promise.all(r.members.map((m, i) => (i === index ? step.total : this.inner.scan(m, '0', 1).then((s) => s.total))));
    const next = step.cursor !== '0' ? `${step.cursor}.${index}` : index + 1 < r.members.length ? `0.${index + 1}` : '0';
    return { cursor: next, total: sum(totals), entries: step.entries };
  }

  async drain(queue: string, dueBeforeMs: number | undefined): Promise<number> {
    return sum(await this.#everywhere(queue, (m) => this.inner.drain(m, dueBeforeMs)));
  }

  /**
   * Removes the queue: every shard its epoch ever used (numbers 0 to the next free one, retired
   * sets that left the layout included), then its own keys, which hold the layout, last: an
   * obliterate that stops half way leaves the layout readable, and run again it finishes. A
   * shard obliterated refuses adds from then on (it is no live shard of the epoch), so an add
   * routed by the old layout waits for the layout to go and lands in the queue made afresh.
   */
  async obliterate(queue: string, force: boolean): Promise<ObliterateResult> {
    for (let attempt = 0; ; attempt++) {
      const r = await this.#load(queue);
      try {
        return await this.#obliterate(queue, force, r);
      } catch (err) {
        // The queue was sharded, or obliterated and made again, since its layout was read.
        if (!(err instanceof ShardMovedError)) throw err;
        if (attempt >= RESHARD_ATTEMPTS)
          throw new StoreError(`obliterate ${queue}: the layout kept changing meanwhile (another process resharding it?): try again`);
      }
    }
  }

  async #obliterate(queue: string, force: boolean, r: Resolved): Promise<ObliterateResult> {
    if (r.unsharded && r.epoch === '') return this.inner.obliterate(queue, force, NO_EPOCH);
    if (!force) {
      const active = await Promise.all(r.members.map((m) => this.inner.stats(m, 0).then((s) => s.active)));
      if (sum(active) > 0) {
        const counts = await this.#counts(r.members);
        return { removed: false, counts };
      }
    }
    const results: ObliterateResult[] = [];
    const shards = everyShardName(queue, r.layout);
    for (let at = 0; at < shards.length; at += SWEEP_BATCH) {
      const swept = await Promise.all(
        shards.slice(at, at + SWEEP_BATCH).map((m) =>
          // A shard of another epoch (a name made again since) is not this queue's to remove.
          this.inner.obliterate(m, true, r.epoch).catch((err: unknown) => {
            if (err instanceof ShardMovedError) return undefined;
            throw err;
          }),
        ),
      );
      for (const res of swept) if (res) results.push(res);
    }
    results.push(await this.inner.obliterate(queue, true, r.epoch));
    this.#layouts.delete(queue);
    const counts = { scheduled: 0, active: 0, dead: 0, completed: 0, jobs: 0 };
    for (const res of results) for (const k of Object.keys(counts) as (keyof typeof counts)[]) counts[k] += res.counts[k];
    return { removed: true, counts };
  }

  async #counts(members: string[]): Promise<ObliterateResult['counts']> {
    const stats = await Promise.all(members.map((m) => this.inner.stats(m, 0)));
    return {
      scheduled: sum(stats.map((s) => s.scheduled)),
      active: sum(stats.map((s) => s.active)),
      dead: sum(stats.map((s) => s.dead)),
      completed: sum(stats.map((s) => s.completed)),
      jobs: sum(stats.map((s) => s.scheduled + s.active + s.dead + s.completed)),
    };
  }

  register(queue: string): Promise<void> {
    return this.inner.register(queue);
  }

  queues(): Promise<string[]> {
    return this.inner.queues();
  }

  async stats(queue: string, windowMs: number): Promise<QueueStats> {
    const r = await this.#resolve(queue);
    if (r.unsharded) return this.inner.stats(queue, windowMs);
    const all = await Promise.all(r.members.map((m) => this.inner.stats(m, windowMs)));
    const defined = (xs: (number | undefined)[]) => xs.filter((x): x is number => x !== undefined);
    const next = defined(all.map((s) => s.nextDueInMs));
    const lag = defined(all.map((s) => s.oldestDueAgeMs));
    const streams = defined(all.map((s) => s.eventStreamLength));
    const total = (k: 'scheduled' | 'ready' | 'active' | 'dead' | 'dueWithinWindow' | 'completedTotal' | 'completed' | 'workers') => sum(all.map((s) => s[k]));
    return {
      scheduled: total('scheduled'),
      ready: total('ready'),
      active: total('active'),
      dead: total('dead'),
      nextDueInMs: next.length > 0 ? Math.min(...next) : undefined,
      dueWithinWindow: total('dueWithinWindow'),
      windowMs,
      nowMs: all[0]!.nowMs,
      paused: all.some((s) => s.paused),
      eventStreamLength: streams.length > 0 ? sum(streams) : undefined,
      completedTotal: total('completedTotal'),
      oldestDueAgeMs: lag.length > 0 ? Math.max(...lag) : undefined,
      completed: total('completed'),
      // The worker registry is in the unsharded keys only.
      workers: all[0]!.workers,
    };
  }

  async timeline(queue: string, fromMs: number | undefined, bucketMs: number, buckets: number): Promise<DueTimeline> {
    const r = await this.#resolve(queue);
    const first = await this.inner.timeline(queue, fromMs, bucketMs, buckets);
    if (r.unsharded) return first;
    // The same windows on every shard: those the unsharded keys' clock chose.
    const rest = await Promise.all(r.members.slice(1).map((m) => this.inner.timeline(m, first.fromMs, bucketMs, buckets)));
    return { ...first, counts: first.counts.map((c, i) => c + sum(rest.map((t) => t.counts[i] ?? 0))) };
  }

  async deadList(queue: string, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }> {
    const r = await this.#resolve(queue);
    if (r.unsharded) return this.inner.deadList(queue, offset, limit);
    const pages = await Promise.all(r.members.map((m) => this.inner.deadList(m, 0, offset + limit)));
    const jobs = pages
      .flatMap((p) => p.jobs)
      .sort((a, b) => a.diedAtMs - b.diedAtMs || byteOrder(a.id, b.id))
      .slice(offset, offset + limit);
    return { total: sum(pages.map((p) => p.total)), jobs };
  }

  async deadRetry(queue: string, ids: string[] | 'all'): Promise<number> {
    const n = sum(await this.#everywhere(queue, (m) => this.inner.deadRetry(m, ids)));
    this.#planners.get(queue)?.wakeAll();
    return n;
  }

  async purge(queue: string, set: RetainedSet, target: PurgeTarget): Promise<number> {
    return sum(await this.#everywhere(queue, (m) => this.inner.purge(m, set, target)));
  }

  async verify(queue: string): Promise<VerifyReport> {
    const r = await this.#load(queue);
    if (r.unsharded) return this.inner.verify(queue);
    const reports = await Promise.all(r.members.map((m) => this.inner.verify(m)));
    const counts = { scheduled: 0, ready: 0, active: 0, dead: 0, completed: 0, bodies: 0 };
    const problems: string[] = [];
    reports.forEach((rep, i) => {
      for (const k of Object.keys(counts) as (keyof typeof counts)[]) counts[k] += rep.counts[k];
      for (const p of rep.problems) problems.push(`${r.members[i]}: ${p}`);
    });
    return { ok: problems.length === 0, counts, problems };
  }

  watchConnection(watcher: ConnectionWatcher): () => void {
    return this.inner.watchConnection(watcher);
  }

  async subscribe(queues: readonly string[], handlers: WakeHandlers): Promise<WakeSubscription> {
    const subs = await Promise.all(queues.map((q) => this.#subscribeOne(q, handlers)));
    return { close: async () => void (await Promise.all(subs.map((s) => s.close()))) };
  }

  /** One queue's signals from every shard, on one connection, following the layout as it changes. */
  async #subscribeOne(queue: string, handlers: WakeHandlers): Promise<WakeSubscription> {
    const planner = this.#planner(queue);
    let members = (await this.#resolve(queue)).members;
    let closed = false;
    const wrapped: WakeHandlers = {
      onWake: (dueAtMs, member) => {
        const unsharded = this.#layouts.get(queue)?.unsharded ?? true;
        handlers.onWake(unsharded ? dueAtMs : planner.signal(member, dueAtMs), queue);
      },
      onSchedulesChanged: () => handlers.onSchedulesChanged?.(queue),
      onLayoutChanged: () => void this.#load(queue).catch((err) => handlers.onError(err as Error)),
      onResubscribed: () => {
        planner.wakeAll();
        // A layout change may have been among the signals missed.
        this.#load(queue).catch(() => {});
        handlers.onResubscribed();
      },
      onError: (err) => handlers.onError(err),
    };
    let sub = await this.inner.subscribe(members, wrapped);
    let moving = Promise.resolve();
    const follow = () => {
      moving = moving
        .then(async () => {
          const next = this.#layouts.get(queue)?.members ?? members;
          if (closed || next.join('\n') === members.join('\n')) return;
          // The new subscription is live before the old one closes, so no signal falls between.
          const fresh = await this.inner.subscribe(next, wrapped);
          const old = sub;
          [sub, members] = [fresh, next];
          await old.close();
          planner.forget(next);
          planner.wakeAll();
          handlers.onResubscribed();
        })
        .catch((err) => handlers.onError(err as Error));
    };
    const followers = this.#followers.get(queue) ?? new Set();
    this.#followers.set(queue, followers.add(follow));
    const wake = () => handlers.onWake(0, queue);
    const wakers = this.#wakers.get(queue) ?? new Set();
    this.#wakers.set(queue, wakers.add(wake));
    // Signals sent before the subscription was live reached no one, and the layout may have
    // changed meanwhile (its 'L' lost too): read it again, and let the next claim ask every shard.
    await this.#load(queue).catch(() => {});
    follow();
    planner.wakeAll();
    return {
      close: async () => {
        closed = true;
        followers.delete(follow);
        wakers.delete(wake);
        await moving;
        await sub.close();
      },
    };
  }

  // ---- settings ----

  async setPaused(queue: string, paused: boolean): Promise<boolean> {
    const changed = (await this.#everywhere(queue, (m) => this.inner.setPaused(m, paused))).some(Boolean);
    if (!paused) this.#planners.get(queue)?.wakeAll();
    return changed;
  }

  async setEventStream(queue: string, maxLen: number): Promise<boolean> {
    return (await this.#everywhere(queue, (m) => this.inner.setEventStream(m, maxLen))).some(Boolean);
  }

  /**
   * A count cap is split evenly over the shards (each keeps ceil(count / N)), so the queue keeps
   * about `count` jobs, not N times it; trimming stays one shard's own atomic step. The unsharded
   * keys hold the rule as given (what retention() answers).
   */
  async setRetention(queue: string, set: RetainedSet, maxCount: number, maxAgeMs: number): Promise<void> {
    await this.#everywhere(queue, (m, r) => this.inner.setRetention(m, set, m === queue ? maxCount : perShard(maxCount, shardCount(r.layout)), maxAgeMs));
  }

  retention(queue: string): Promise<Record<RetainedSet, { maxCount: number; maxAgeMs: number }>> {
    return this.inner.retention(queue);
  }

  settings(queue: string): Promise<QueueSettings> {
    return this.inner.settings(queue);
  }

  scheduleSet(queue: string, name: string, definition: string | null): Promise<boolean> {
    return this.inner.scheduleSet(queue, name, definition);
  }

  scheduleList(queue: string): Promise<StoredSchedule[]> {
    return this.inner.scheduleList(queue);
  }

  eventReader(queue: string): EventReader {
    let reader: Promise<EventReader> | undefined;
    const open = () => {
      reader ??= this.#resolve(queue).then((r) =>
        r.unsharded ? this.inner.eventReader(queue) : mergedEventReader(r.members.map((m) => ({ tag: tagOf(queue, m), reader: this.inner.eventReader(m) }))),
      );
      return reader;
    };
    return {
      lastCursor: async () => (await open()).lastCursor(),
      read: async (cursor, count, blockMs) => (await open()).read(cursor, count, blockMs),
      close: async () => {
        if (reader) await (await reader).close();
      },
    };
  }

  serverTimeMs(queue: string): Promise<number> {
    return this.inner.serverTimeMs(queue);
  }

  layout(queue: string): Promise<string | undefined> {
    return this.inner.layout(queue);
  }

  setLayout(queue: string, expected: string | undefined, next: string, epoch: string | undefined): Promise<boolean> {
    return this.inner.setLayout(queue, expected, next, epoch);
  }

  retire(queue: string, epoch: string): Promise<void> {
    return this.inner.retire(queue, epoch);
  }

  markShard(queue: string, epoch: string): Promise<void> {
    return this.inner.markShard(queue, epoch);
  }

  dedupHolders(queue: string, keys: string[]): Promise<(DedupHolder | null)[]> {
    return this.inner.dedupHolders(queue, keys);
  }

  waitUntilReady(timeoutMs?: number): Promise<void> {
    return this.inner.waitUntilReady(timeoutMs);
  }

  async close(): Promise<void> {
    // Late-answered jobs no claim took go back now, not when their lease runs out.
    const late = [...this.#late].map(([queue, l]) =>
      this.release(
        queue,
        [...l.jobs, ...l.unreadable].map((j) => ({ id: j.id, token: j.token })),
      ).catch(() => {}),
    );
    this.#late.clear();
    await settlesWithin(Promise.all(late), CLOSE_RELEASE_MS);
    if (this.#owned) await this.inner.close();
  }
}
