/**
 * A Scheduler enqueues the occurrences of a queue's recurring schedules, each as a normal job
 * with a deterministic id (`schedule:<name>:<occurrence ms>`) and `runAt` = the occurrence, a
 * little ahead of time so workers run it on the dot. Any number of schedulers may run at once,
 * with no leader: each occurrence's add is guarded in the same script by the schedule's last
 * occurrence, so it is enqueued once even though every scheduler tries.
 *
 * It sleeps on a timer until the next occurrence and re-reads the definitions when one is
 * stored or removed (a signal on the queue's wake channel), so it polls nothing.
 */
import { encodeBackoff } from '../backoff.js';
import type { ConnectionOptions } from '../options.js';
import { parseQueueName } from '../options.js';
import { openStore } from '../store/open-store.js';
import { settlesWithin } from '../settles-within.js';
import type { NewJob, Store, WakeSubscription } from '../store/store.js';
import { decodeDefinition, type StoredDefinition } from './definition.js';
import { latestOccurrence, nextOccurrence } from './occurrences.js';
import { ServerClock } from './server-clock.js';
import { timerDelay } from '../timers.js';

export interface SchedulerOptions extends ConnectionOptions {
  /** Enqueue an occurrence this long before it is due, so it runs on time. @default 1000 */
  leadMs?: number;
  /** An occurrence later than this is "missed" and follows the schedule's `missed` policy. @default 60000 */
  missedAfterMs?: number;
  /** Called with errors (Redis unreachable…); the scheduler retries by itself. */
  onError?: (err: Error) => void;
}

/** The longest a scheduler sleeps without looking (timers beyond ~24 days overflow anyway). */
const MAX_SLEEP_MS = 3_600_000;
const RETRY_MS = 1000;
/** close() waits this long for a pass under way (Redis may not answer); its adds are guarded, so leaving it loses nothing. */
const CLOSE_WAIT_MS = 1000;

export function occurrenceJobId(name: string, occurrenceMs: number): string {
  return `schedule:${name}:${occurrenceMs}`;
}

export class Scheduler {
  readonly queue: string;
  readonly #store: Store;
  readonly #owned: boolean;
  readonly #leadMs: number;
  readonly #missedAfterMs: number;
  readonly #onError: (err: Error) => void;
  /** Occurrences are decided by the store's clock (the Redis server's), never the host's. */
  readonly #clock = new ServerClock();
  #timer: NodeJS.Timeout | undefined;
  #subscription: Promise<WakeSubscription | undefined> | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  /** Occurrences this scheduler enqueued (others may have enqueued the rest). */
  enqueued = 0;

  constructor(queue: string, opts: SchedulerOptions = {}) {
    this.queue = parseQueueName(queue);
    const { store, owned } = openStore(opts);
    this.#store = store;
    this.#owned = owned;
    this.#leadMs = opts.leadMs ?? 1000;
    this.#missedAfterMs = opts.missedAfterMs ?? 60_000;
    this.#onError = opts.onError ?? (() => {});
    this.#subscription = this.#store
      .subscribe([this.queue], {
        onWake: () => {},
        onSchedulesChanged: () => this.#kick(),
        onResubscribed: () => this.#kick(),
        onError: (err) => this.#onError(err),
      })
      .catch((err: Error) => {
        // A close() that began before the SUBSCRIBE was answered cut it short: nothing is wrong.
        if (!this.#closed) this.#onError(err);
        return undefined;
      });
    this.#kick();
  }

  /** Looks at the schedules now (again after the current pass, if one is running). */
  #kick(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    clearTimeout(this.#timer);
    this.#running = this.#pass()
      .then(
        (sleepMs) => this.#sleep(sleepMs),
        (err: Error) => {
          // A pass that close() stopped waiting for ends whenever Redis answers, maybe after
          // the store closed: nothing to report then.
          if (!this.#closed) this.#onError(err);
          this.#sleep(RETRY_MS);
        },
      )
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.#kick();
        }
      });
  }

  #sleep(ms: number): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#kick(), timerDelay(Math.min(ms, MAX_SLEEP_MS)));
  }

  /** Enqueues what is due within the lead time; returns how long to sleep until the next one. */
  async #pass(): Promise<number> {
    const [list] = await Promise.all([this.#store.scheduleList(this.queue), this.#clock.sync(this.#store, this.queue)]);
    let wakeAt = this.#clock.now() + MAX_SLEEP_MS;
    for (const s of list) {
      const def = decodeDefinition(s.definition);
      if (!def) continue;
      let last = s.lastOccurrenceMs ?? def.anchorMs;
      for (;;) {
        const now = this.#clock.now();
        let next = nextOccurrence(def, last);
        if (next === undefined) break;
        if (next > now + this.#leadMs) {
          wakeAt = Math.min(wakeAt, next - this.#leadMs);
          break;
        }
        if (next < now - this.#missedAfterMs) {
          // Missed while no scheduler ran: all of them collapse into the latest, or none runs.
          const latest = latestOccurrence(def, last, now) ?? next;
          if (def.missed === 'skip') {
            await this.#store.add(this.queue, [], { name: s.name, occurrenceMs: latest });
            last = latest;
            continue;
          }
          next = latest;
        }
        const added = await this.#store.add(this.queue, [this.#job(s.name, def, next)], { name: s.name, occurrenceMs: next });
        if (added) this.enqueued++;
        last = next;
      }
    }
    return wakeAt - this.#clock.now();
  }

  #job(name: string, def: StoredDefinition, occurrenceMs: number): NewJob {
    return {
      id: occurrenceJobId(name, occurrenceMs),
      data: JSON.stringify(def.data ?? null),
      delayMs: undefined,
      runAtMs: occurrenceMs,
      group: undefined,
      name: def.opts.name,
      timeoutMs: def.opts.timeoutMs,
      priority: def.opts.priority ?? 0,
      maxAttempts: def.opts.attempts,
      backoff: def.opts.backoff && encodeBackoff(def.opts.backoff),
      replace: false,
      dedup: undefined,
      cost: 1,
      debounce: undefined,
      traceContext: undefined,
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    if (this.#running) await settlesWithin(this.#running, CLOSE_WAIT_MS);
    const unsubscribed = this.#subscription?.then((sub) => sub?.close());
    if (unsubscribed) await settlesWithin(unsubscribed, CLOSE_WAIT_MS);
    if (this.#owned) await this.#store.close();
  }
}
