/**
 * Sharded queues: one queue spread over N store queues (shards), each with its own hash tag, so
 * a Redis Cluster spreads it over its nodes. This store wraps the Redis or memory store and
 * keeps the Store contract for the queue as a whole: Queue and Worker do not know shards exist.
 * It wires the parts together and routes each Store call; each part is a file of its own:
 *
 * - The layout (layout.ts) as this process last read it: layout-cache.ts; changing it on a live
 *   queue: resharding.ts.
 * - Where a job lives: its shard is FNV-1a of its dedup key (when it has one, so the dedup check
 *   stays atomic with the add) or else of its id, modulo N (layout.ts). Jobs a recurring
 *   schedule adds live in the unsharded keys, beside the schedule guard they are atomic with.
 *   Adds: add-router.ts.
 * - Lookups by id (get, cancel, reschedule, promote) go to the id's shard; only a miss asks the
 *   other shards, then re-reads the layout in case a reshard moved on (lookup-by-id.ts).
 * - Claims visit only shards that may have work (claim-planner.ts), with one call per shard in
 *   parallel (claim-fan-out.ts); lease tokens carry their shard (`<tag>/<token>`) so acks go
 *   back to it (shard-token.ts).
 * - Reads of the whole queue are merged over its shards (merged-reads.ts, merged-list.ts,
 *   merged-events.ts), and so are its wake signals (merged-wake.ts).
 * - An unsharded queue (the default) costs nothing: every call goes straight to the inner store.
 */
import { type ShardError, StoreError } from '../../errors.js';
import type { CancelResult, DueTimeline, JobInfo, ListOrder, ListState, QueueStats, RescheduleResult, WorkerInfo } from '../../types.js';
import type { ShardAdmin, ShardFigures, ShardStatus } from '../shard-admin.js';
import type {
  ClaimResult,
  CompleteRef,
  DeadJob,
  DebounceBurst,
  DedupHolder,
  EventReader,
  FailRequest,
  CancelOptions,
  FailNowRequest,
  FailNowResult,
  WatchAnswer,
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
  StoredHold,
  SignalResult,
  WaitSignalRequest,
  WaitSignalResult,
  StoredPage,
  StoredSchedule,
  UpdateRequest,
  VerifyReport,
  WakeHandlers,
  ConnectionWatcher,
  WakeSubscription,
  WorkerBeat,
  GroupChange,
  GroupsPage,
  LimitsChange,
  QueueLimits,
  RateStatus,
  StoredGroup,
  StoredHistory,
} from '../store.js';
import { mergeHistories } from '../history-minutes.js';
import { NO_EPOCH, outOfTokens, ShardMovedError } from '../store.js';
import { AddRouter } from './add-router.js';
import { ClaimFanOut } from './claim-fan-out.js';
import { sum } from './grouping.js';
import { checkShardCount, everyShardName, shardCount, shardNames } from './layout.js';
import { LayoutCache, type Resolved } from './layout-cache.js';
import { byId } from './lookup-by-id.js';
import { ShardedGroups } from './sharded-groups.js';
import { mergedEventReader } from './merged-events.js';
import { mergedPage, SHARDED_PHASE } from './merged-list.js';
import { mergedCounts, mergedDeadList, mergedScan, mergedStats, mergedTimeline, mergedVerify } from './merged-reads.js';
import { subscribeMerged } from './merged-wake.js';
import { perShard, RESHARD_ATTEMPTS, reshardQueue } from './resharding.js';
import { anyTagged, byLease, memberOfToken, tagOf } from './shard-token.js';

/** The lease a RateLimitSignal's check renews before the release that follows it (sharded release). */
const HOLD_CHECK_LEASE_MS = 30_000;

/** Shards an obliterate removes at once. */
const SWEEP_BATCH = 64;

export class ShardedStore implements Store, ShardAdmin {
  static readonly #wrappers = new WeakMap<Store, ShardedStore>();
  readonly inner: Store;
  readonly #owned: boolean;
  readonly #layouts: LayoutCache;
  readonly #claims: ClaimFanOut;
  readonly #adds: AddRouter;
  readonly #groups: ShardedGroups;
  /** Who hears of each ShardError this store reports (metrics). */
  readonly #shardErrorListeners = new Set<(queue: string, error: ShardError) => void>();

  constructor(inner: Store, owned = true) {
    this.inner = inner;
    this.#owned = owned;
    const report = (queue: string, error: ShardError) => this.#reportShardError(queue, error);
    this.#layouts = new LayoutCache(inner);
    this.#claims = new ClaimFanOut(inner, report);
    this.#adds = new AddRouter(inner, this.#layouts, this.#claims, report);
    this.#groups = new ShardedGroups(inner, this.#layouts);
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

  // ---- shard admin ----

  /** The shard count a Queue or Worker was given: used when the queue has no layout yet. */
  declare(queue: string, shards: number | undefined): void {
    this.#layouts.declare(queue, shards);
  }

  /** Moves the queue to `count` shards: new adds go to the new shards at once; workers drain the old ones. */
  async reshard(queue: string, count: number): Promise<{ from: number; to: number; changed: boolean }> {
    checkShardCount(count);
    const before = await this.#layouts.load(queue);
    if (shardCount(before.layout) === count) return { from: count, to: count, changed: false };
    const { raw } = await reshardQueue(this.inner, queue, count);
    const after = await this.#layouts.load(queue);
    return { from: shardCount(before.layout), to: shardCount(after.layout), changed: raw !== before.raw };
  }

  /** The queue's shards now, and the old ones still draining. */
  async shards(queue: string): Promise<ShardStatus> {
    const r = await this.#layouts.load(queue);
    const names = r.layout.current ? shardNames(queue, r.layout.current) : [queue];
    const draining: { name: string; jobs: number }[] = [];
    for (const set of r.retired) for (const name of shardNames(queue, set)) draining.push({ name, jobs: (await this.#layouts.contents(name)).jobs });
    return { shards: shardCount(r.layout), names, draining };
  }

  /** Every store queue of the queue with its figures: how the jobs spread, what still drains, a shard that lags. */
  async shardStats(queue: string): Promise<ShardFigures[]> {
    const r = await this.#layouts.load(queue);
    const current = new Set(r.layout.current ? shardNames(queue, r.layout.current) : [queue]);
    const draining = new Set(r.retired.flatMap((set) => shardNames(queue, set)));
    return Promise.all(
      r.members.map(async (name): Promise<ShardFigures> => {
        const [s, node, rate, limits] = await Promise.all([
          this.inner.stats(name, 0),
          this.inner.nodeOf?.(name),
          this.inner.rateStatus(name),
          this.inner.limits(name),
        ]);
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
          rateHeld: outOfTokens(rate.queue, limits.rateLimit),
        };
      }),
    );
  }

  // ---- adds ----

  add(queue: string, jobs: NewJob[], guard?: undefined, epoch?: string): Promise<StoredAddResult[]>;
  add(queue: string, jobs: NewJob[], guard: ScheduleGuard): Promise<StoredAddResult[] | null>;
  add(queue: string, jobs: NewJob[], guard?: ScheduleGuard): Promise<StoredAddResult[] | null> {
    return this.#adds.add(queue, jobs, guard);
  }

  // ---- claims and leases ----

  // The worker's claim and ack of an unsharded queue (the common case) go straight to the inner
  // store, without an async step of their own (each was a promise and an await more per call).
  // What throws on the way rejects, as it did from an async method.

  claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number, workerId = ''): Promise<ClaimResult> {
    try {
      const cached = this.#layouts.resolveCached(queue);
      if (cached?.unsharded) return this.inner.claim(queue, count, leaseMs, defaultMaxAttempts, workerId);
      return this.#claimSharded(queue, count, leaseMs, defaultMaxAttempts, workerId, cached);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async #claimSharded(
    queue: string,
    count: number,
    leaseMs: number,
    defaultMaxAttempts: number,
    workerId: string,
    cached: Resolved | undefined,
  ): Promise<ClaimResult> {
    const r = cached ?? (await this.#layouts.load(queue));
    if (r.unsharded) return this.inner.claim(queue, count, leaseMs, defaultMaxAttempts, workerId);
    return this.#claims.claim(queue, r.members, count, leaseMs, defaultMaxAttempts, workerId);
  }

  complete(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]> {
    // Leases routed by their tokens, as byLease routes them: none carries a shard, so all go to
    // the unsharded keys. A miss is fenced as on any queue (#fenceMisses reads nothing otherwise).
    try {
      if (!anyTagged(leases)) return this.inner.complete(queue, leases).then((out) => this.#fenceMisses(queue, leases, out));
      return this.#completeSharded(queue, leases);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async #completeSharded(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]> {
    const out = await byLease(
      queue,
      leases,
      (m, l) => this.inner.complete(m, l),
      (l, token) => ({ id: l.id, token, result: l.result }),
    );
    return this.#fenceMisses(queue, leases, out);
  }

  /**
   * A lease its token's shard answered 'not_found' for is stale when a job of that id lives on
   * another shard of the queue now (added again after a reshard, or in the queue's next life,
   * whose shards are numbered afresh): an unsharded queue, where an id is one key, answers
   * 'lease_lost' there, and so does this (a worker would otherwise take 'not_found' for its own
   * re-sent ack and report the job completed). Read only on a miss, never on an unsharded queue.
   */
  #fenceMisses<R extends string>(queue: string, leases: LeaseRef[], out: R[]): R[] | Promise<R[]> {
    // Every ack passes here: nothing is made, nor awaited, unless one missed.
    if (!out.includes('not_found' as R)) return out;
    return this.#fenceMissed(queue, leases, out);
  }

  async #fenceMissed<R extends string>(queue: string, leases: LeaseRef[], out: R[]): Promise<R[]> {
    if ((await this.#layouts.resolve(queue)).unsharded) return out;
    const missed = out.map((o, i) => (o === 'not_found' ? i : -1)).filter((i) => i >= 0);
    const found = await byId(
      this.#layouts,
      queue,
      missed.map((i) => leases[i]!.id),
      async (m, ids) => (await this.inner.getMany(m, ids, false)).map((j) => (j ? m : null)),
      (m) => m !== null,
    );
    missed.forEach((i, k) => {
      const home = found[k];
      if (home && home !== memberOfToken(queue, leases[i]!.token).member) out[i] = 'lease_lost' as R;
    });
    return out;
  }

  async release(queue: string, leases: LeaseRef[], holdMs = 0): Promise<LeaseOutcome[]> {
    // RateLimitSignal from a job of no group holds the whole queue: every other shard is held
    // before the job is released on its own (which holds that one), so no shard keeps calling
    // what answered 429. Only for a lease still held (a stale holder holds nothing: its lease is
    // renewed as the check, and released just after), and read only on that path.
    if (holdMs > 0 && leases.some((l) => l.token.includes('/'))) {
      const [jobs, live] = await Promise.all([
        byLease(queue, leases, (m, l) =>
          this.inner.getMany(
            m,
            l.map((x) => x.id),
            false,
          ),
        ),
        byLease(queue, leases, (m, l) => this.inner.extend(m, l, HOLD_CHECK_LEASE_MS)),
      ]);
      if (jobs.some((j, i) => j !== null && j.group === undefined && live[i] === 'ok')) {
        await this.#layouts.everywhere(queue, (m) => this.inner.release(m, [], holdMs));
      }
    }
    const out = await byLease(queue, leases, async (m, l) => {
      const res = await this.inner.release(m, l, holdMs);
      if (res.includes('ok')) this.#claims.putBack(queue, m, 0);
      return res;
    });
    return this.#fenceMisses(queue, leases, out);
  }

  async extend(queue: string, leases: LeaseRef[], leaseMs: number, beat?: WorkerBeat): Promise<LeaseOutcome[]> {
    const routed = leases.map((l) => memberOfToken(queue, l.token).member);
    // The heartbeat rides along when every lease is in the unsharded keys (where the worker registry is).
    if (routed.every((m) => m === queue))
      return this.#fenceMisses(queue, leases, await byLease(queue, leases, (m, l) => this.inner.extend(m, l, leaseMs, beat)));
    const [out] = await Promise.all([byLease(queue, leases, (m, l) => this.inner.extend(m, l, leaseMs)), beat ? this.inner.beat(queue, beat) : undefined]);
    return this.#fenceMisses(queue, leases, out);
  }

  async fail(queue: string, req: FailRequest): Promise<FailResult> {
    const { member, token } = memberOfToken(queue, req.token);
    const res = await this.inner.fail(member, { ...req, token });
    if (res.outcome === 'retried') this.#claims.putBack(queue, member, res.dueAtMs);
    const [outcome] = await this.#fenceMisses(queue, [req], [res.outcome]);
    return { ...res, outcome: outcome! };
  }

  async snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult> {
    const { member, token } = memberOfToken(queue, req.token);
    const res = await this.inner.snooze(member, { ...req, token });
    if (res.outcome === 'snoozed') this.#claims.putBack(queue, member, res.dueAtMs);
    const [outcome] = await this.#fenceMisses(queue, [req], [res.outcome]);
    return { ...res, outcome: outcome! };
  }

  async waitSignal(queue: string, req: WaitSignalRequest): Promise<WaitSignalResult> {
    const { member, token } = memberOfToken(queue, req.token);
    const res = await this.inner.waitSignal(member, { ...req, token });
    if (res.outcome === 'signalled') this.#claims.putBack(queue, member, res.dueAtMs);
    // A wait with a timeout: that shard's workers look again when it passes.
    if (res.outcome === 'waiting' && req.timeoutMs !== undefined) this.#claims.putBack(queue, member, Date.now() + req.timeoutMs);
    const [outcome] = await this.#fenceMisses(queue, [req], [res.outcome]);
    return { ...res, outcome: outcome! };
  }

  async signal(queue: string, id: string, name: string, data: string): Promise<SignalResult> {
    let at = '';
    const [res] = await byId(
      this.#layouts,
      queue,
      [id],
      async (m, x) => {
        const r = await this.inner.signal(m, x[0]!, name, data);
        if (r.outcome === 'released') at = m;
        return [r];
      },
      (r) => r.outcome !== 'not_found',
    );
    if (at !== '') this.#claims.putBack(queue, at, 0);
    return res!;
  }

  async update(queue: string, req: UpdateRequest): Promise<LeaseOutcome> {
    const { member, token } = memberOfToken(queue, req.token);
    const [outcome] = await this.#fenceMisses(queue, [req], [await this.inner.update(member, { ...req, token })]);
    return outcome!;
  }

  beat(queue: string, beat: WorkerBeat, gone?: boolean): Promise<void> {
    return this.inner.beat(queue, beat, gone);
  }

  workers(queue: string): Promise<WorkerInfo[]> {
    return this.inner.workers(queue);
  }

  // ---- lookups by id ----

  cancel(queue: string, ids: string[], opts?: CancelOptions): Promise<CancelResult[]> {
    return byId(
      this.#layouts,
      queue,
      ids,
      (m, x) => this.inner.cancel(m, x, opts),
      (c) => c.state !== undefined,
    );
  }

  async failNow(queue: string, req: FailNowRequest): Promise<FailNowResult> {
    const [res] = await byId(
      this.#layouts,
      queue,
      [req.id],
      async (m) => {
        const x = await this.inner.failNow(m, req);
        if (x.outcome === 'retried') this.#claims.putBack(queue, m, x.dueAtMs);
        return [x];
      },
      (x) => x.state !== undefined,
    );
    return res!;
  }

  /**
   * Registers the waiters on every shard that holds the job, or with `expect` on every shard (a
   * job not added yet, addAndWait's, may land on any; the others' entries run out unused), and
   * answers from the shard that knows the job.
   */
  async watch(queue: string, ids: string[], waitMs: number, expect = false): Promise<WatchAnswer[]> {
    const answers = await this.#layouts.everywhere(queue, (m) => this.inner.watch(m, ids, waitMs, expect));
    return ids.map((_, i) => {
      const known = answers.map((a) => a[i]!);
      return known.find((a) => a.state === 'completed' || a.state === 'dead') ?? known.find((a) => a.state === 'waiting') ?? { state: 'unknown' };
    });
  }

  async reschedule(queue: string, id: string, delayMs: number | undefined, runAtMs: number | undefined): Promise<RescheduleResult> {
    const [res] = await byId(
      this.#layouts,
      queue,
      [id],
      async (m) => {
        const x = await this.inner.reschedule(m, id, delayMs, runAtMs);
        if (x.rescheduled) this.#claims.putBack(queue, m, x.dueAtMs);
        return [x];
      },
      (x) => x.state !== undefined,
    );
    return res!;
  }

  async get(queue: string, id: string): Promise<JobInfo<string> | null> {
    return (await this.getMany(queue, [id], true))[0] ?? null;
  }

  async holdOf(queue: string, id: string): Promise<StoredHold | undefined> {
    const [found] = await byId(
      this.#layouts,
      queue,
      [id],
      async (m, x) => [await this.inner.holdOf(m, x[0]!)],
      (r) => r !== undefined,
    );
    return found;
  }

  getMany(queue: string, ids: string[], withLogs: boolean): Promise<(JobInfo<string> | null)[]> {
    return byId(
      this.#layouts,
      queue,
      ids,
      (m, x) => this.inner.getMany(m, x, withLogs),
      (j) => j !== null,
    );
  }

  // ---- the queue as a whole ----

  async list(queue: string, state: ListState, cursor: ListCursor | undefined, limit: number, order: ListOrder = 'asc'): Promise<StoredPage> {
    const r = await this.#layouts.resolve(queue);
    if (r.unsharded && cursor?.phase !== SHARDED_PHASE) return this.inner.list(queue, state, cursor, limit, order);
    return mergedPage(this.inner, r.members, state, cursor, limit, order);
  }

  async scan(queue: string, cursor: string, count: number, until?: string): Promise<ScanStep> {
    return mergedScan(this.inner, queue, await this.#layouts.resolve(queue), cursor, count, until);
  }

  async drain(queue: string, dueBeforeMs: number | undefined): Promise<number> {
    return sum(await this.#layouts.everywhere(queue, (m) => this.inner.drain(m, dueBeforeMs)));
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
      const r = await this.#layouts.load(queue);
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
        const counts = await mergedCounts(this.inner, r.members);
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
    this.#layouts.forget(queue);
    const counts = { scheduled: 0, active: 0, dead: 0, completed: 0, jobs: 0 };
    for (const res of results) for (const k of Object.keys(counts) as (keyof typeof counts)[]) counts[k] += res.counts[k];
    return { removed: true, counts };
  }

  register(queue: string): Promise<void> {
    return this.inner.register(queue);
  }

  queues(): Promise<string[]> {
    return this.inner.queues();
  }

  async stats(queue: string, windowMs: number): Promise<QueueStats> {
    return mergedStats(this.inner, queue, await this.#layouts.resolve(queue), windowMs);
  }

  async timeline(queue: string, fromMs: number | undefined, bucketMs: number, buckets: number): Promise<DueTimeline> {
    return mergedTimeline(this.inner, queue, await this.#layouts.resolve(queue), fromMs, bucketMs, buckets);
  }

  async deadList(queue: string, offset: number, limit: number): Promise<{ total: number; jobs: DeadJob[] }> {
    return mergedDeadList(this.inner, queue, await this.#layouts.resolve(queue), offset, limit);
  }

  async deadRetry(queue: string, ids: string[] | 'all'): Promise<number> {
    const n = sum(await this.#layouts.everywhere(queue, (m) => this.inner.deadRetry(m, ids)));
    this.#claims.wakeAll(queue);
    return n;
  }

  async purge(queue: string, set: RetainedSet, target: PurgeTarget): Promise<number> {
    return sum(await this.#layouts.everywhere(queue, (m) => this.inner.purge(m, set, target)));
  }

  async migrate(queue: string): Promise<number> {
    return sum(await this.#layouts.everywhere(queue, (m) => this.inner.migrate(m)));
  }

  async verify(queue: string): Promise<VerifyReport> {
    return mergedVerify(this.inner, queue, await this.#layouts.load(queue));
  }

  watchConnection(watcher: ConnectionWatcher): () => void {
    return this.inner.watchConnection(watcher);
  }

  subscribe(queues: readonly string[], handlers: WakeHandlers): Promise<WakeSubscription> {
    return subscribeMerged(this.inner, this.#layouts, this.#claims, queues, handlers);
  }

  // ---- settings ----

  async setPaused(queue: string, paused: boolean): Promise<boolean> {
    const changed = (await this.#layouts.everywhere(queue, (m) => this.inner.setPaused(m, paused))).some(Boolean);
    if (!paused) this.#claims.wakeAll(queue);
    return changed;
  }

  // A limit changed may give room on any shard: this process's next claim asks them all (the
  // shards' wake signals tell the others).
  async setLimits(queue: string, change: LimitsChange): Promise<boolean> {
    const changed = await this.#groups.setLimits(queue, change);
    this.#claims.wakeAll(queue);
    return changed;
  }

  limits(queue: string): Promise<QueueLimits> {
    return this.#groups.limits(queue);
  }

  rateStatus(queue: string): Promise<RateStatus> {
    return this.#groups.rateStatus(queue);
  }

  /** Every store queue's history (the unsharded keys' too: schedule jobs), merged minute by minute. */
  async history(queue: string, minutes: number): Promise<StoredHistory> {
    const r = await this.#layouts.resolve(queue);
    return mergeHistories(await Promise.all(r.members.map((m) => this.inner.history(m, minutes))));
  }

  async setGroup(queue: string, group: string, change: GroupChange): Promise<boolean> {
    const changed = await this.#groups.setGroup(queue, group, change);
    this.#claims.wakeAll(queue);
    return changed;
  }

  groups(queue: string, ids: string[]): Promise<StoredGroup[]> {
    return this.#groups.groups(queue, ids);
  }

  groupPage(queue: string, cursor: string | undefined, count: number): Promise<GroupsPage> {
    return this.#groups.groupPage(queue, cursor, count);
  }

  async setEventStream(queue: string, maxLen: number): Promise<boolean> {
    return (await this.#layouts.everywhere(queue, (m) => this.inner.setEventStream(m, maxLen))).some(Boolean);
  }

  /**
   * A count cap is split evenly over the shards (each keeps ceil(count / N)), so the queue keeps
   * about `count` jobs, not N times it; trimming stays one shard's own atomic step. The unsharded
   * keys hold the rule as given (what retention() answers).
   */
  async setRetention(queue: string, set: RetainedSet, maxCount: number, maxAgeMs: number): Promise<void> {
    await this.#layouts.everywhere(queue, (m, r) =>
      this.inner.setRetention(m, set, m === queue ? maxCount : perShard(maxCount, shardCount(r.layout)), maxAgeMs),
    );
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
      reader ??= this.#layouts.resolve(queue).then((r) => {
        if (r.unsharded) return this.inner.eventReader(queue);
        // Shards of this epoch that left the layout (retired, then found empty) still hold the
        // events of what ran there: read to their end, never waited on (nothing enters them).
        const listed = new Set(r.members);
        const left = everyShardName(queue, r.layout).filter((m) => !listed.has(m));
        return mergedEventReader([
          ...r.members.map((m) => ({ tag: tagOf(queue, m), reader: this.inner.eventReader(m) })),
          ...left.map((m) => ({ tag: tagOf(queue, m), reader: this.inner.eventReader(m), closed: true })),
        ]);
      });
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

  bursts(queue: string, keys: string[]): Promise<(DebounceBurst | null)[]> {
    return this.inner.bursts(queue, keys);
  }

  waitUntilReady(timeoutMs?: number): Promise<void> {
    return this.inner.waitUntilReady(timeoutMs);
  }

  async close(): Promise<void> {
    // Late-answered jobs no claim took go back now, not when their lease runs out.
    await this.#claims.releaseLate((queue, leases) => this.release(queue, leases));
    if (this.#owned) await this.inner.close();
  }
}
