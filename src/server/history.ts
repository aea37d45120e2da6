/**
 * The dashboard's memory of the last hour: it samples every queue's stats on a timer (one
 * stats script per queue per tick), keeps an hour of samples in this process, and answers
 * "completed per minute", "went dead per minute" and "worst lag per minute" for the charts and
 * the overview. The same samples feed the live stream, so a hundred open pages cost Redis no
 * more than one.
 *
 * The history starts when the server starts: it is not stored in Redis. Every answer says since
 * when it holds samples (`since`), so a page labels it honestly ("12 completed since 11:03")
 * rather than calling an hour what is two minutes.
 */
import { EventEmitter } from 'node:events';
import type { QueueStats } from '../types.js';
import { timerDelay } from '../timers.js';

export interface Sample {
  /** Server clock of the sample. */
  t: number;
  stats: QueueStats;
}

export interface MinutePoint {
  /** Start of the minute, epoch ms (server clock). */
  t: number;
  /** Jobs completed in that minute (undefined: no samples then). */
  completed: number | undefined;
  /** Worst age of the oldest due job seen in that minute, ms (undefined: no samples). */
  lagMaxMs: number | undefined;
  /**
   * Jobs that went dead in that minute, as the samples saw it: the rise of the dead count from
   * one sample to the next (a retry or purge in the same interval hides as many). Undefined: no samples.
   */
  died: number | undefined;
}

/** One queue's last hour, summed: what the overview's table shows. */
export interface HistorySummary {
  /** The first sample still held (server clock), or undefined before any: the figures cover [since, now]. */
  since: number | undefined;
  completed: number;
  died: number;
}

export interface Snapshot {
  /** When the last round of samples was taken (local clock); 0 before the first. */
  takenAt: number;
  queues: { name: string; stats: QueueStats }[];
  /** Set while the last round failed (Redis unreachable): the figures are from before. */
  error: string | undefined;
}

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

/** An hour of one queue's samples, oldest first. */
export class QueueHistory {
  readonly #samples: Sample[] = [];

  /** When the samples held start (server clock): the history covers the hour, or less since then. */
  get since(): number | undefined {
    return this.#samples[0]?.t;
  }

  push(sample: Sample): void {
    const last = this.#samples.at(-1);
    // A counter that went down means the queue was obliterated and started again.
    if (last && sample.stats.completedTotal < last.stats.completedTotal) this.#samples.length = 0;
    this.#samples.push(sample);
    const cutoff = sample.t - HOUR_MS - MINUTE_MS;
    let drop = 0;
    while (drop < this.#samples.length && this.#samples[drop]!.t < cutoff) drop++;
    if (drop > 0) this.#samples.splice(0, drop);
  }

  /** The last `minutes` whole minutes up to `now`, oldest first. */
  perMinute(now: number, minutes = 60): MinutePoint[] {
    const first = Math.floor(now / MINUTE_MS) * MINUTE_MS - (minutes - 1) * MINUTE_MS;
    const out: MinutePoint[] = [];
    for (let i = 0; i < minutes; i++) out.push({ t: first + i * MINUTE_MS, completed: undefined, lagMaxMs: undefined, died: undefined });
    let prev: Sample | undefined;
    for (const s of this.#samples) {
      const i = Math.floor((s.t - first) / MINUTE_MS);
      if (i >= 0 && i < minutes) {
        const p = out[i]!;
        p.lagMaxMs = Math.max(p.lagMaxMs ?? 0, s.stats.oldestDueAgeMs ?? 0);
        // The jobs completed between two samples are counted in the later one's minute.
        p.completed = (p.completed ?? 0) + (prev ? Math.max(0, s.stats.completedTotal - prev.stats.completedTotal) : 0);
        p.died = (p.died ?? 0) + (prev ? Math.max(0, s.stats.dead - prev.stats.dead) : 0);
      }
      prev = s;
    }
    return out;
  }

  /** The last hour up to `now`, summed (less when the samples start later: see `since`). */
  summary(now: number): HistorySummary {
    const points = this.perMinute(now);
    return {
      since: this.since,
      completed: points.reduce((n, p) => n + (p.completed ?? 0), 0),
      died: points.reduce((n, p) => n + (p.died ?? 0), 0),
    };
  }
}

interface SamplerEvents {
  sample: [Snapshot];
}

/** Samples the queues `names()` returns every `intervalMs`, while started. */
export class Sampler extends EventEmitter<SamplerEvents> {
  readonly #names: () => Promise<string[]>;
  readonly #stats: (name: string) => Promise<QueueStats>;
  readonly #intervalMs: number;
  readonly #histories = new Map<string, QueueHistory>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #snapshot: Snapshot = { takenAt: 0, queues: [], error: undefined };

  constructor(names: () => Promise<string[]>, stats: (name: string) => Promise<QueueStats>, intervalMs: number) {
    super();
    this.#names = names;
    this.#stats = stats;
    this.#intervalMs = intervalMs;
  }

  get intervalMs(): number {
    return this.#intervalMs;
  }

  /** Starts sampling (idempotent); resolves once the first round is in. */
  start(): Promise<void> {
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.tick(), timerDelay(this.#intervalMs));
      this.#timer.unref();
      return this.tick();
    }
    return this.#running ?? Promise.resolve();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  get snapshot(): Snapshot {
    return this.#snapshot;
  }

  history(name: string): QueueHistory | undefined {
    return this.#histories.get(name);
  }

  /** One round of samples; a round still running is joined rather than doubled. */
  tick(): Promise<void> {
    this.#running ??= this.#round().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #round(): Promise<void> {
    try {
      const names = await this.#names();
      const stats = await Promise.all(names.map((n) => this.#stats(n)));
      const queues = names.map((name, i) => ({ name, stats: stats[i]! }));
      for (const q of queues) {
        const h = this.#histories.get(q.name) ?? new QueueHistory();
        this.#histories.set(q.name, h);
        h.push({ t: q.stats.nowMs, stats: q.stats });
      }
      for (const name of this.#histories.keys()) if (!names.includes(name)) this.#histories.delete(name);
      this.#snapshot = { takenAt: Date.now(), queues, error: undefined };
    } catch (err) {
      this.#snapshot = { ...this.#snapshot, error: err instanceof Error ? err.message : String(err) };
    }
    this.emit('sample', this.#snapshot);
  }
}
