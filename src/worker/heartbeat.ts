/**
 * A heartbeat keeps a worker on the list of live workers (`queue.workers()`, the dashboard):
 * one every BEAT_MS, carried by the lease renewal when the worker has jobs (so a busy worker
 * pays no round trip for it), or sent on its own when no renewal carried one lately. The entry
 * expires after three missed beats, so a worker that died drops off by itself; one that closes
 * takes itself off at once.
 */
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Store, WorkerBeat } from '../store/store.js';
import { VERSION } from '../version.js';

const BEAT_MS = 10_000;
const BEAT_TTL_MS = 3 * BEAT_MS;

export interface HeartbeatParams {
  store: Store;
  queue: string;
  /** The worker's id, its entry in the registry. */
  id: string;
  concurrency: number;
  /** Jobs whose handlers are running now. */
  running: () => number;
  onError: (err: unknown) => void;
}

export class Heartbeat {
  readonly #p: HeartbeatParams;
  readonly #startedAtMs = Date.now();
  #lastBeatAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** The beat under way (it never rejects): gone() waits for it, so no beat lands after the removal. */
  #beating: Promise<void> = Promise.resolve();

  constructor(params: HeartbeatParams) {
    this.#p = params;
  }

  /** Beats now, then whenever no lease renewal carried a beat for about BEAT_MS. */
  start(): void {
    this.#beat();
    this.#timer = setInterval(() => {
      if (performance.now() - this.#lastBeatAt >= BEAT_MS * 0.9) this.#beat();
    }, BEAT_MS);
    this.#timer.unref();
  }

  /** No beat goes out after this; one already sent settles without reporting a closed store. */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  /** The beat a lease renewal carries now (which counts as one). */
  carried(): WorkerBeat {
    this.#lastBeatAt = performance.now();
    return this.#info();
  }

  /** Takes the worker off the list of live workers at once, rather than when its entry expires. */
  async gone(): Promise<void> {
    await this.#beating;
    return this.#p.store.beat(this.#p.queue, this.#info(), true);
  }

  #info(): WorkerBeat {
    const info = {
      host: hostname(),
      pid: process.pid,
      queue: this.#p.queue,
      concurrency: this.#p.concurrency,
      running: this.#p.running(),
      startedAtMs: this.#startedAtMs,
      version: VERSION,
      language: 'node',
    };
    return { id: this.#p.id, info: JSON.stringify(info), ttlMs: BEAT_TTL_MS };
  }

  /** A heartbeat of its own (no lease renewal carried one lately); the first also names the queue in the registry. */
  #beat(): void {
    this.#lastBeatAt = performance.now();
    // The first beat waits for the queue's registration, which may answer after stop() (on a
    // Cluster the registry sits on another node): then it beats no more, and the worker's close
    // neither gets an entry back after taking it off nor hears of the store it closed since.
    this.#beating = this.#p.store
      .register(this.#p.queue)
      .then(() => (this.#stopped ? undefined : this.#p.store.beat(this.#p.queue, this.#info())))
      .catch((err) => {
        if (!this.#stopped) this.#p.onError(err);
      });
  }
}
