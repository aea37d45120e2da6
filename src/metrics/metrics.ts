/**
 * Prometheus metrics through prom-client, an optional peer dependency: it is imported only
 * when metrics are asked for, so the library works without it. Labels are queue names only —
 * never a job id, which would make one series per job.
 *
 *   const metrics = await DelayqMetrics.create();          // prom-client's default registry
 *   metrics.observeQueue(queue); metrics.observeWorker(worker);
 *   http.createServer(async (_, res) => res.end(await metrics.registry.metrics()));
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queue } from '../queue.js';
import type { ShardFigures } from '../store/shard-admin.js';
import { ShardedStore } from '../store/sharded/sharded-store.js';
import type { Store } from '../store/store.js';
import type { QueueStats } from '../types.js';
import type { Worker } from '../worker.js';

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
}

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
  readonly #shardErrors: Counter<'queue' | 'shard'>;
  /** Per sharding store watched: the observed queues whose ShardErrors are counted (each error once). */
  readonly #shardQueues = new WeakMap<ShardedStore, Set<string>>();
  readonly #duration: Histogram<'queue'>;
  readonly #lag: Histogram<'queue'>;
  readonly #queues = new Map<string, Queue<unknown>>();
  readonly #statsCache = new Map<string, { at: number; value: Promise<QueueStats> }>();
  readonly #shardCache = new Map<string, { at: number; value: Promise<ShardFigures[]> }>();
  readonly #statsCacheMs: number;
  /** Start of each hand-out in flight (performance.now()), per observed worker, for the duration histogram. */
  readonly #started = new Set<Map<string, number>>();

  private constructor(prom: PromClient, opts: MetricsOptions) {
    this.registry = opts.registry ?? prom.register;
    this.#statsCacheMs = opts.statsCacheMs ?? 1000;
    const registers = [this.registry as Registry];
    const self = this;
    if (opts.perShard) {
      new prom.Gauge({
        name: 'delayq_shard_jobs',
        help: 'Jobs by state in each shard of a sharded queue (scheduled includes ready)',
        labelNames: ['queue', 'shard', 'state'],
        registers,
        async collect() {
          this.reset();
          await self.#collectShards((queue, f) => {
            for (const state of ['scheduled', 'ready', 'active', 'dead'] as const) this.set({ queue, shard: f.name, state }, f[state]);
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
      help: 'Jobs by state (scheduled includes ready; ready = due and waiting for a worker)',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        await self.#collect((q, s) => {
          this.set({ queue: q, state: 'scheduled' }, s.scheduled);
          this.set({ queue: q, state: 'ready' }, s.ready);
          this.set({ queue: q, state: 'active' }, s.active);
          this.set({ queue: q, state: 'dead' }, s.dead);
        });
      },
    });
    this.#oldestDue = new prom.Gauge({
      name: 'delayq_oldest_ready_age_seconds',
      help: 'How long the longest-waiting due job has waited for a worker (0 when none is due)',
      labelNames: ['queue'],
      registers,
      async collect() {
        await self.#collect((q, s) => this.set({ queue: q }, (s.oldestDueAgeMs ?? 0) / 1000));
      },
    });
    const counter = (name: string, help: string) => new prom.Counter({ name, help, labelNames: ['queue'], registers });
    this.#enqueued = counter('delayq_enqueued_total', 'Jobs added through observed queues');
    this.#completed = counter('delayq_completed_total', 'Jobs whose handler returned and whose ack landed');
    this.#failed = counter('delayq_failed_total', 'Handler runs that threw (each is then retried or dead)');
    this.#retried = counter('delayq_retried_total', 'Failed jobs scheduled again after their backoff');
    this.#dead = counter('delayq_dead_total', 'Jobs moved to the dead set by observed workers');
    this.#leaseLost = counter('delayq_lease_lost_total', "Hand-outs whose lease expired before the worker's ack (the job runs again elsewhere)");
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
   * every series of a scrape) and hands what it got to `set`. A scrape during an outage shows the
   * other series rather than failing whole.
   */
  async #eachQueue<V>(
    cache: Map<string, { at: number; value: Promise<V> }>,
    read: (q: Queue<unknown>) => Promise<V>,
    set: (queue: string, v: V) => void,
  ): Promise<void> {
    await Promise.all(
      [...this.#queues.values()].map(async (q) => {
        let c = cache.get(q.name);
        if (!c || Date.now() - c.at > this.#statsCacheMs) {
          c = { at: Date.now(), value: read(q) };
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
    w.on('failed', (job) => {
      ended(job);
      this.#failed.inc(labels);
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
