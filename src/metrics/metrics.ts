/**
 * Prometheus metrics through prom-client, an optional peer dependency: it is imported only
 * when metrics are asked for, so the library works without it. Labels are queue names only —
 * never a job id, which would make one series per job — and a group id only on the top
 * `topGroups` groups of a queue (group-figures.ts), never one series per tenant.
 *
 *   const metrics = await DelayqMetrics.create();          // prom-client's default registry
 *   metrics.observeQueue(queue); metrics.observeWorker(worker);
 *   http.createServer(async (_, res) => res.end(await metrics.registry.metrics()));
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { HandlerTimeoutError, ValidationError } from '../errors.js';
import type { Queue } from '../queue.js';
import type { ShardFigures } from '../store/shard-admin.js';
import { ShardedStore } from '../store/sharded/sharded-store.js';
import type { Store } from '../store/store.js';
import type { DueTimeline, QueueStats } from '../types.js';
import type { Worker } from '../worker.js';
import { GROUP_PAGE_SIZE, type GroupFigures, readGroupFigures } from './group-figures.js';

type PromClient = typeof import('prom-client');

/**
 * What delayq needs of a prom-client `Registry` (any prom-client Registry fits). The public
 * types name only this, so a TypeScript user without prom-client compiles too.
 */
export interface MetricsRegistry {
  metrics(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsOptions {
  /** Where the series are registered: a prom-client `Registry`. @default prom-client's global register */
  registry?: MetricsRegistry;
  /** How long queue stats are reused between scrapes. @default 1000 */
  statsCacheMs?: number;
  /**
   * Also per shard, for sharded queues: `delayq_shard_jobs{queue,shard,state}` and
   * `delayq_shard_oldest_ready_age_seconds{queue,shard}`, from `queue.shardStats()` (one stats
   * call per shard per scrape, cached like the rest). A shard label is bounded by the shard
   * count (at most 256), never a job's. @default false
   */
  perShard?: boolean;
  /**
   * How many groups of each queue (`add({ group })`) get series of their own: those with the most
   * jobs waiting, as `delayq_top_group_jobs{queue,group,state}`. The only series with a group
   * label, so at most this many groups a queue at a time; 0 for none. From 0 to 100.
   * @default 10
   */
  topGroups?: number;
  /**
   * The most pages of `queue.groups.list` (1000 groups each) a scrape reads per queue for the
   * group series; past that they cover the groups read (`delayq_groups_walk_complete` is 0).
   * From 1 to 1000. @default 10
   */
  groupPages?: number;
}

/** A whole-number option from min to max, or its default; a ValidationError names it. */
function wholeOption(v: unknown, field: string, min: number, max: number, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
    throw new ValidationError(field, `must be a whole number from ${min} to ${max} (got ${String(v)})`);
  return v;
}

/** The windows of the forecast gauge, in minutes. */
const FORECAST_MINUTES = [1, 5, 15] as const;
const sumFirst = (xs: readonly number[], n: number) => xs.slice(0, n).reduce((a, b) => a + b, 0);

/** Seconds; from 1 ms (a delay queue's lag is measured in ms) to a minute. */
const LAG_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export class DelayqMetrics {
  /** The registry given, or prom-client's global one; `await registry.metrics()` is the scrape. */
  readonly registry: MetricsRegistry;
  readonly #jobs: Gauge<'queue' | 'state'>;
  readonly #oldestDue: Gauge<'queue'>;
  readonly #enqueued: Counter<'queue'>;
  readonly #completed: Counter<'queue'>;
  readonly #failed: Counter<'queue'>;
  readonly #retried: Counter<'queue'>;
  readonly #dead: Counter<'queue'>;
  readonly #leaseLost: Counter<'queue'>;
  readonly #revoked: Counter<'queue' | 'why'>;
  readonly #timedOut: Counter<'queue'>;
  readonly #shardErrors: Counter<'queue' | 'shard'>;
  /** Per sharding store watched: the observed queues whose ShardErrors are counted (each error once). */
  readonly #shardQueues = new WeakMap<ShardedStore, Set<string>>();
  readonly #duration: Histogram<'queue'>;
  readonly #lag: Histogram<'queue'>;
  readonly #queues = new Map<string, Queue<unknown>>();
  readonly #statsCache = new Map<string, { at: number; value: Promise<QueueStats> }>();
  readonly #shardCache = new Map<string, { at: number; value: Promise<ShardFigures[]> }>();
  readonly #groupCache = new Map<string, { at: number; value: Promise<GroupFigures> }>();
  readonly #forecastCache = new Map<string, { at: number; value: Promise<DueTimeline> }>();
  readonly #statsCacheMs: number;
  readonly #topGroups: number;
  readonly #groupPages: number;
  /** Start of each hand-out in flight (performance.now()), per observed worker, for the duration histogram. */
  readonly #started = new Set<Map<string, number>>();

  private constructor(prom: PromClient, opts: MetricsOptions) {
    this.registry = opts.registry ?? prom.register;
    this.#statsCacheMs = opts.statsCacheMs ?? 1000;
    this.#topGroups = wholeOption(opts.topGroups, 'topGroups', 0, 100, 10);
    this.#groupPages = wholeOption(opts.groupPages, 'groupPages', 1, 1000, 10);
    const registers = [this.registry as Registry];
    const self = this;
    if (opts.perShard) {
      new prom.Gauge({
        name: 'delayq_shard_jobs',
        help: 'Jobs by state in each shard of a sharded queue (scheduled = ready + upcoming)',
        labelNames: ['queue', 'shard', 'state'],
        registers,
        async collect() {
          this.reset();
          await self.#collectShards((queue, f) => {
            for (const state of ['scheduled', 'ready', 'active', 'dead'] as const) this.set({ queue, shard: f.name, state }, f[state]);
            this.set({ queue, shard: f.name, state: 'upcoming' }, f.scheduled - f.ready);
          });
        },
      });
      new prom.Gauge({
        name: 'delayq_shard_oldest_ready_age_seconds',
        help: "How long each shard's longest-waiting due job has waited (0 when none is due): one shard lagging alone is one whose claims fail",
        labelNames: ['queue', 'shard'],
        registers,
        async collect() {
          this.reset();
          await self.#collectShards((queue, f) => this.set({ queue, shard: f.name }, (f.oldestDueAgeMs ?? 0) / 1000));
        },
      });
    }
    this.#jobs = new prom.Gauge({
      name: 'delayq_jobs',
      help: 'Jobs by state: scheduled = every job waiting to run (ready + upcoming); ready = due (its time passed), not running yet; upcoming = not due yet; active; dead',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        await self.#collect((q, s) => {
          this.set({ queue: q, state: 'scheduled' }, s.scheduled);
          this.set({ queue: q, state: 'ready' }, s.ready);
          this.set({ queue: q, state: 'upcoming' }, s.scheduled - s.ready);
          this.set({ queue: q, state: 'active' }, s.active);
          this.set({ queue: q, state: 'dead' }, s.dead);
        });
      },
    });
    // The forecast only a delay queue has: what falls due soon, so workers can scale before the
    // backlog builds. One timeline read (a ZCOUNT of the scheduled set per minute, 15 of them; no
    // job read) per queue per statsCacheMs.
    new prom.Gauge({
      name: 'delayq_upcoming_due_jobs',
      help: 'Upcoming jobs (scheduled, not due yet) that fall due within the next within_seconds (60, 300, 900), by the server clock; due jobs are delayq_jobs{state="ready"}',
      labelNames: ['queue', 'within_seconds'],
      registers,
      async collect() {
        await self.#eachQueue(
          self.#forecastCache,
          (q) => q.timeline({ bucketMs: 60_000, buckets: 15 }),
          (queue, t) => {
            for (const minutes of FORECAST_MINUTES) this.set({ queue, within_seconds: String(minutes * 60) }, sumFirst(t.counts, minutes));
          },
        );
      },
    });
    this.#oldestDue = new prom.Gauge({
      name: 'delayq_oldest_ready_age_seconds',
      help: 'How long the longest-waiting due job has waited (0 when none is due), whatever holds it: no free worker, a paused queue or group, a group or queue at its concurrency limit, a rate limit, priority',
      labelNames: ['queue'],
      registers,
      async collect() {
        await self.#collect((q, s) => this.set({ queue: q }, (s.oldestDueAgeMs ?? 0) / 1000));
      },
    });
    // Held jobs have a gauge of their own, not a state of delayq_jobs: summing delayq_jobs's
    // states already counts the waiting jobs twice, and a held job is not waiting to run.
    new prom.Gauge({
      name: 'delayq_held_jobs',
      help: 'Jobs held: waiting for other jobs to end (dependsOn, a flow) or for a signal (waitForSignal), until what they wait for happens or their deadline passes',
      labelNames: ['queue'],
      registers,
      async collect() {
        await self.#collect((q, s) => this.set({ queue: q }, s.heldJobs));
      },
    });
    this.#groupSeries(prom, registers);
    const counter = (name: string, help: string) => new prom.Counter({ name, help, labelNames: ['queue'], registers });
    this.#enqueued = counter('delayq_enqueued_total', 'Jobs added through observed queues');
    this.#completed = counter('delayq_completed_total', 'Jobs whose handler returned and whose ack landed');
    this.#failed = counter('delayq_failed_total', 'Handler runs that threw (each is then retried or dead)');
    this.#retried = counter('delayq_retried_total', 'Failed jobs scheduled again after their backoff');
    this.#dead = counter('delayq_dead_total', 'Jobs moved to the dead set by observed workers');
    this.#leaseLost = counter('delayq_lease_lost_total', "Hand-outs whose lease expired before the worker's ack (the job runs again elsewhere)");
    this.#revoked = new prom.Counter({
      name: 'delayq_revoked_total',
      help: 'Running jobs of observed workers ended from outside (queue.cancel with running, queue.fail), by why: cancelled or failed',
      labelNames: ['queue', 'why'],
      registers,
    });
    this.#timedOut = counter('delayq_timed_out_total', "Attempts of observed workers failed for running past their timeout (the job's own, else the worker's)");
    this.#shardErrors = new prom.Counter({
      name: 'delayq_shard_errors_total',
      help: "ShardErrors of sharded queues, by shard: a shard whose claim failed while the others answered (each time it is asked again; the worker reports it on 'error'), or that refused an add past the re-route deadline",
      labelNames: ['queue', 'shard'],
      registers,
    });
    this.#duration = new prom.Histogram({
      name: 'delayq_job_duration_seconds',
      help: 'Handler run time',
      labelNames: ['queue'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#lag = new prom.Histogram({
      name: 'delayq_schedule_lag_seconds',
      help: 'Handler start minus due time: how late jobs run',
      labelNames: ['queue'],
      buckets: LAG_BUCKETS,
      registers,
    });
  }

  /**
   * The series of flow control: the queue's limits (absent when none), its rate limiter now
   * (tokens used, the next refill, a hold, the groups held back), counts over its groups,
   * and the top groups by jobs waiting. One bounded walk per queue feeds them all (cached like
   * the stats); the help says which figures are over the groups read, and how to tell a walk
   * that stopped short.
   */
  #groupSeries(prom: PromClient, registers: Registry[]): void {
    const self = this;
    const partial = `over the groups read: at most ${this.#groupPages} pages of ${GROUP_PAGE_SIZE} a scrape, so a lower bound while delayq_groups_walk_complete is 0`;
    const gauge = (name: string, help: string, value: (f: GroupFigures) => number | undefined) =>
      new prom.Gauge({
        name,
        help,
        labelNames: ['queue'],
        registers,
        async collect() {
          // Reset first: a limit removed, or a queue whose walk failed, leaves no stale value.
          this.reset();
          await self.#collectGroups((queue, f) => {
            const v = value(f);
            if (v !== undefined) this.set({ queue }, v);
          });
        },
      });
    gauge('delayq_concurrency_limit', "The queue's concurrency limit: most jobs of the queue running at once (absent when none)", (f) => f.limits.concurrency);
    gauge(
      'delayq_group_concurrency_limit',
      "The queue's groupConcurrency: most jobs of any one group running at once, unless the group has a limit of its own (absent when none)",
      (f) => f.limits.groupConcurrency,
    );
    // Rate limits: a limit's two numbers (absent when none), and the limiter now, on the server's clock.
    gauge('delayq_rate_limit_max', "The queue's rateLimit: most tokens its jobs take in any window (absent when none)", (f) => f.limits.rateLimit?.max);
    gauge('delayq_rate_limit_window_seconds', "The queue's rateLimit window, in seconds (absent when none)", (f) =>
      f.limits.rateLimit === undefined ? undefined : f.limits.rateLimit.perMs / 1000,
    );
    gauge(
      'delayq_group_rate_limit_max',
      "The queue's groupRateLimit: most tokens one group takes in any window, unless it has a rate limit of its own (absent when none)",
      (f) => f.limits.groupRateLimit?.max,
    );
    gauge('delayq_group_rate_limit_window_seconds', "The queue's groupRateLimit window, in seconds (absent when none)", (f) =>
      f.limits.groupRateLimit === undefined ? undefined : f.limits.groupRateLimit.perMs / 1000,
    );
    gauge('delayq_rate_tokens_used', "Tokens the queue's jobs took in the current window of its rateLimit", (f) => f.rate.queue.used);
    gauge('delayq_rate_next_refill_seconds', "Seconds until the queue's oldest token taken comes back (0 when none is taken)", (f) =>
      f.rate.queue.nextRefillMs === undefined ? 0 : Math.max(0, f.rate.queue.nextRefillMs - f.rate.nowMs) / 1000,
    );
    gauge('delayq_rate_held', "1 while the queue's own limiter is held by a RateLimitSignal (thrown by a job of no group), else 0", (f) =>
      f.rate.queue.heldUntilMs !== undefined && f.rate.queue.heldUntilMs > f.rate.nowMs ? 1 : 0,
    );
    gauge(
      'delayq_rate_held_jobs',
      "Due jobs held back by a rate limit now: all of them while the queue's own limiter has no token left or is held, else those waiting in groups whose limiter has none (over the groups read)",
      (f) => f.rateHeldJobs,
    );
    gauge(
      'delayq_rate_groups_held',
      "Groups the store's rate limiter is waiting on (rateStatus().groupsHeld): for a refill, a hold's end, or tokens still to give back",
      (f) => f.rate.groupsHeld,
    );
    gauge('delayq_groups_walk_complete', '1 when this scrape read every group of the queue, 0 when it stopped at its page bound (groupPages)', (f) =>
      f.complete ? 1 : 0,
    );
    gauge('delayq_groups_listed', `Groups with something running or waiting, a limit of their own or a pause, ${partial}`, (f) => f.listed);
    gauge('delayq_groups_waiting', `Groups with jobs waiting (due, held back by a limit, a pause or their turn), ${partial}`, (f) => f.waitingGroups);
    gauge('delayq_groups_running', `Groups with jobs running, ${partial}`, (f) => f.runningGroups);
    gauge('delayq_groups_paused', `Paused groups, ${partial}`, (f) => f.pausedGroups);
    gauge(
      'delayq_groups_at_limit',
      `Groups not paused with jobs waiting and as many running as their limit allows (their own, else groupConcurrency), ${partial}`,
      (f) => f.atLimitGroups,
    );
    new prom.Gauge({
      name: 'delayq_group_jobs',
      help: `Jobs held by groups: running, and waiting (due, held back by a limit, a pause or their turn), summed ${partial}`,
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        this.reset();
        await self.#collectGroups((queue, f) => {
          this.set({ queue, state: 'running' }, f.running);
          this.set({ queue, state: 'waiting' }, f.waiting);
        });
      },
    });
    new prom.Gauge({
      name: 'delayq_top_group_jobs',
      help: `The ${this.#topGroups} groups of each queue with the most jobs waiting (ties by id; among the groups read): their jobs running and waiting. The only series with a group label`,
      labelNames: ['queue', 'group', 'state'],
      registers,
      async collect() {
        // Reset: a group that left the top has no series left behind.
        this.reset();
        await self.#collectGroups((queue, f) => {
          for (const g of f.top) {
            this.set({ queue, group: g.id, state: 'running' }, g.running);
            this.set({ queue, group: g.id, state: 'waiting' }, g.waiting);
          }
        });
      },
    });
  }

  #collectGroups(set: (queue: string, f: GroupFigures) => void): Promise<void> {
    return this.#eachQueue(this.#groupCache, (q) => readGroupFigures(q, { pages: this.#groupPages, top: this.#topGroups }), set);
  }

  /** Loads prom-client; throws a clear error when it is not installed. */
  static async create(opts: MetricsOptions = {}): Promise<DelayqMetrics> {
    let prom: PromClient;
    try {
      prom = await import('prom-client');
    } catch {
      throw new Error('delayq metrics need prom-client: npm install prom-client');
    }
    return new DelayqMetrics(prom, opts);
  }

  /**
   * Reads each observed queue through a per-queue cache (one read per `statsCacheMs`, shared by
   * every series of a scrape) and hands what it got to `set`. A read still under way is shared
   * whatever its age: the series of one scrape collect side by side, and a slow Redis gets one
   * read at a time, not one per series and scrape. A scrape during an outage shows the other
   * series rather than failing whole.
   */
  async #eachQueue<V>(
    cache: Map<string, { at: number; value: Promise<V>; settled?: boolean }>,
    read: (q: Queue<unknown>) => Promise<V>,
    set: (queue: string, v: V) => void,
  ): Promise<void> {
    await Promise.all(
      [...this.#queues.values()].map(async (q) => {
        let c = cache.get(q.name);
        if (!c || (c.settled && Date.now() - c.at >= this.#statsCacheMs)) {
          const entry: { at: number; value: Promise<V>; settled?: boolean } = { at: Date.now(), value: read(q) };
          const settle = () => {
            entry.settled = true;
          };
          entry.value.then(settle, settle);
          c = entry;
          cache.set(q.name, c);
        }
        const v = await c.value.catch(() => undefined);
        if (v !== undefined) set(q.name, v);
      }),
    );
  }

  #collect(set: (queue: string, s: QueueStats) => void): Promise<void> {
    return this.#eachQueue(this.#statsCache, (q) => q.stats(), set);
  }

  /** Per-shard figures of the sharded queues observed (an unsharded queue has no shard series). */
  #collectShards(set: (queue: string, f: ShardFigures) => void): Promise<void> {
    return this.#eachQueue(
      this.#shardCache,
      (q) => q.shardStats(),
      (queue, figures) => {
        if (figures.length === 1 && figures[0]!.name === queue) return;
        for (const f of figures) set(queue, f);
      },
    );
  }

  /** State gauges from this queue's stats at scrape time, and its adds. */
  observeQueue<T>(queue: Queue<T>): this {
    const q = queue as unknown as Queue<unknown>;
    this.#queues.set(q.name, q);
    q.on('added', () => this.#enqueued.inc({ queue: q.name }));
    this.#watchShards(q.store, q.name);
    return this;
  }

  /** Counts the ShardErrors a store reports for `queue` (a store shared by observed queues and workers is heard once). */
  #watchShards(store: Store, queue: string): void {
    if (!(store instanceof ShardedStore)) return;
    let names = this.#shardQueues.get(store);
    if (!names) {
      const watched = new Set<string>();
      names = watched;
      this.#shardQueues.set(store, watched);
      store.onShardError((q, err) => {
        if (watched.has(q)) this.#shardErrors.inc({ queue: q, shard: err.shard });
      });
    }
    names.add(queue);
  }

  /** Counters and histograms from this worker's events. */
  observeWorker<T>(worker: Worker<T>): this {
    const w = worker as unknown as Worker<unknown>;
    const labels = { queue: w.queue };
    this.#watchShards(w.store, w.queue);
    const started = new Map<string, number>();
    this.#started.add(started);
    // Every hand-out ends in exactly one of these events, so its entry goes with it.
    const ended = (job: { token: string }) => {
      const t = started.get(job.token);
      started.delete(job.token);
      if (t !== undefined) this.#duration.observe(labels, (performance.now() - t) / 1000);
    };
    w.on('claimed', (job) => {
      started.set(job.token, performance.now());
      // Due times are the server's; so is the worker's clock for them (never the host's).
      this.#lag.observe(labels, Math.max(0, w.serverNow() - job.dueAtMs) / 1000);
    });
    w.on('completed', (job) => {
      ended(job);
      this.#completed.inc(labels);
    });
    w.on('failed', (job, err) => {
      ended(job);
      this.#failed.inc(labels);
      if (err instanceof HandlerTimeoutError) this.#timedOut.inc(labels);
    });
    w.on('revoked', (job, why) => {
      ended(job);
      this.#revoked.inc({ queue: w.queue, why });
    });
    w.on('snoozed', (job) => ended(job));
    w.on('released', (job) => ended(job));
    // The ack (or retry, snooze, hand-back) was not written: the handler ended all the same.
    w.on('settleFailed', (job) => ended(job));
    w.on('retried', () => this.#retried.inc(labels));
    w.on('dead', (job) => {
      if ('attempt' in job) ended(job);
      this.#dead.inc(labels);
    });
    w.on('leaseLost', (job) => {
      ended(job);
      this.#leaseLost.inc(labels);
    });
    return this;
  }

  /** Hand-outs of observed workers whose start is held (their handler has not ended): for leak checks. */
  get trackedHandOuts(): number {
    let n = 0;
    for (const m of this.#started) n += m.size;
    return n;
  }
}
