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
  /** Jobs completed in that minute (the store's history). */
  completed: number | undefined;
  /** The minute's lateness: the worse of the sampled wait of the oldest due job and the latest start the store recorded, ms. */
  lagMaxMs: number | undefined;
  /** Jobs that went dead in that minute (the store's history). */
  died: number | undefined;
}

/**
 * The stored minutes (completed, dead, how late jobs started) with the samples' worst wait per
 * minute, by minute: the worse of a sampled wait and a stored late start is the minute's
 * lateness. Stored minutes are never "no sample": the store counted them, zero included.
 */
export function mergedMinutes(stored: HistoryMinute[], lag: Map<number, number>): MinutePoint[] {
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

/** An hour of one queue's samples, oldest first: what they tell that the store does not, the waits. */
export class QueueHistory {
  readonly #samples: Sample[] = [];

  push(sample: Sample): void {
    this.#samples.push(sample);
    const cutoff = sample.t - HOUR_MS - MINUTE_MS;
    let drop = 0;
    while (drop < this.#samples.length && this.#samples[drop]!.t < cutoff) drop++;
    if (drop > 0) this.#samples.splice(0, drop);
  }

  /** The worst wait of the oldest due job seen in each minute (start of the minute -> ms). */
  lagPerMinute(): Map<number, number> {
    const out = new Map<number, number>();
    for (const s of this.#samples) {
      const t = Math.floor(s.t / MINUTE_MS) * MINUTE_MS;
      out.set(t, Math.max(out.get(t) ?? 0, s.stats.oldestDueAgeMs ?? 0));
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
  readonly #stored: (name: string) => Promise<HistoryMinute[]>;
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
    stored: (name: string) => Promise<HistoryMinute[]>,
  ) {
    super();
    this.#names = names;
    this.#stats = stats;
    this.#intervalMs = intervalMs;
    this.#stored = stored;
  }

  /** A queue's last hour per minute: the stored history with this process's sampled waits, and since when it goes back (its first minute). */
  async lastHour(name: string): Promise<{ since: number | undefined; points: MinutePoint[] }> {
    const stored = await this.#stored(name);
    return { since: stored[0]?.atMs, points: mergedMinutes(stored, this.#histories.get(name)?.lagPerMinute() ?? new Map()) };
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
