/**
 * The dashboard's last hour. Completed, dead and lateness per minute come from the queue's
 * history kept in the store (queue.history(): written by the workers' own calls, 24 h), so the
 * charts are full the moment `delayq serve` (re)starts. Beside it the dashboard samples every
 * queue's stats on a timer (one stats script per queue per tick) and keeps an hour of samples in
 * this process: the worst wait of a due job per minute (a stuck queue starts nothing, so only a
 * sample sees its jobs wait), and the live stream, so a hundred open pages cost Redis no more
 * than one. `mergedMinutes` puts the two together.
 */
import { EventEmitter } from 'node:events';
import type { HistoryMinute, QueueStats } from '../types.js';
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

/**
 * The stored minutes (completed, dead, how late jobs started) with the samples' worst wait per
 * minute, by minute: the worse of a sampled wait and a stored late start is the minute's
 * lateness. Stored minutes are never "no sample": the store counted them, zero included.
 */
export function mergedMinutes(stored: HistoryMinute[], sampled: MinutePoint[]): MinutePoint[] {
  const lag = new Map(sampled.map((p) => [p.t, p.lagMaxMs]));
  return stored.map((m) => {
    const waits = [lag.get(m.atMs), m.lateMaxMs].filter((v): v is number => v !== undefined);
    return { t: m.atMs, completed: m.completed, died: m.dead, lagMaxMs: waits.length > 0 ? Math.max(...waits) : 0 };
  });
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
}

interface SamplerEvents {
  sample: [Snapshot];
}

/** Samples the queues `names()` returns every `intervalMs`, while started. */
export class Sampler extends EventEmitter<SamplerEvents> {
  readonly #names: () => Promise<string[]>;
  readonly #stats: (name: string) => Promise<QueueStats>;
  readonly #stored: ((name: string) => Promise<HistoryMinute[]>) | undefined;
  readonly #intervalMs: number;
  readonly #histories = new Map<string, QueueHistory>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #snapshot: Snapshot = { takenAt: 0, queues: [], error: undefined };

  /** `stored`: a queue's last hour as the store keeps it (queue.history()), read when a page asks. */
  constructor(
    names: () => Promise<string[]>,
    stats: (name: string) => Promise<QueueStats>,
    intervalMs: number,
    stored?: (name: string) => Promise<HistoryMinute[]>,
  ) {
    super();
    this.#names = names;
    this.#stats = stats;
    this.#intervalMs = intervalMs;
    this.#stored = stored;
  }

  /**
   * A queue's last hour per minute: the stored history merged with this process's samples, and
   * since when the figures go back (the hour's first minute; the first sample when the store
   * keeps no history, as a store of an older version did not).
   */
  async lastHour(name: string, now: number): Promise<{ since: number | undefined; points: MinutePoint[] }> {
    const sampled = this.#histories.get(name);
    const points = sampled?.perMinute(now) ?? [];
    if (!this.#stored) return { since: sampled?.since, points };
    const stored = await this.#stored(name);
    return { since: stored[0]?.atMs, points: mergedMinutes(stored, points) };
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
