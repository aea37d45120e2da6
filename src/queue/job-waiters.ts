/**
 * Waiting for jobs to end (`queue.waitFor`, `addAndWait`): one pub/sub subscription per Queue,
 * opened with the first wait and closed with the last, on which the stores publish the end of
 * every job someone waits for (watch.lua registers the wait; `finish` in _lifecycle.lua tells).
 * No polling: a wait is woken by the end itself, on whichever process and shard it happens.
 *
 * A message can be lost while the subscription reconnects, so after every (re)subscribe each
 * pending wait asks the store again (watch), which also renews its registration.
 */
import { JobCancelledError, JobFailedError, JobNotFoundError, WaitTimeoutError } from '../errors.js';
import type { Finish } from '../store/lifecycle.js';
import type { Store, WakeSubscription, WatchAnswer } from '../store/store.js';
import { setLongTimeout, type LongTimeout } from '../timers.js';

/** How long a wait's registration outlives its own timeout, so an end in its last moments is still told. */
const REGISTRATION_SLACK_MS = 1_000;

interface Wait {
  id: string;
  deadline: number;
  timeoutMs: number;
  resolve(result: unknown): void;
  reject(err: Error): void;
  timer: LongTimeout;
}

export class JobWaiters {
  readonly #store: Store;
  readonly #queue: string;
  readonly #waits = new Map<string, Set<Wait>>();
  #subscription: Promise<WakeSubscription> | undefined;
  #onError: (err: Error) => void;

  constructor(store: Store, queue: string, onError: (err: Error) => void) {
    this.#store = store;
    this.#queue = queue;
    this.#onError = onError;
  }

  /**
   * Resolves with the job's result once it completes; rejects with JobFailedError (dead),
   * JobCancelledError, JobNotFoundError or WaitTimeoutError. `before` runs once the wait is
   * registered (addAndWait adds the job there), so no end falls between; it answers whether the
   * store must be asked about the job after it (not for a job it added: that one's end will be
   * told; yes for one that existed already, which may have ended).
   */
  async wait(id: string, timeoutMs: number, before?: () => Promise<boolean>): Promise<unknown> {
    await this.#subscribed();
    let wait!: Wait;
    const settled = new Promise<unknown>((resolve, reject) => {
      wait = { id, timeoutMs, deadline: Date.now() + timeoutMs, resolve, reject, timer: { clear: () => {} } };
    });
    // It may settle before this function returns it (an end heard while the store answers):
    // marked handled here, the caller still gets the rejection.
    settled.catch(() => {});
    this.#hold(wait);
    wait.timer = setLongTimeout(() => this.#settle(wait, { state: 'timeout' }), timeoutMs);
    try {
      // Registered before anything else, so an end told meanwhile is heard.
      const registered = this.#store.watch(this.#queue, [id], timeoutMs + REGISTRATION_SLACK_MS, before !== undefined);
      if (!before) this.#settle(wait, (await registered)[0]!);
      else {
        await registered;
        if (await before()) {
          const [now] = await this.#store.watch(this.#queue, [id], timeoutMs + REGISTRATION_SLACK_MS);
          // After `before` an unknown job is one that ended unkept since: its end was published
          // to this registration and is on its way on the other connection.
          this.#settle(wait, now!.state === 'unknown' ? { state: 'waiting' } : now!);
        }
      }
    } catch (err) {
      this.#drop(wait);
      wait.timer.clear();
      wait.reject(err as Error);
    }
    return settled;
  }

  /** Settles a wait from what the store knows; 'waiting' leaves it pending. */
  #settle(wait: Wait, answer: WatchAnswer | { state: 'timeout' } | { state: 'ended'; end: Finish; payload: string }): void {
    if (answer.state === 'waiting') return;
    if (!this.#drop(wait)) return;
    wait.timer.clear();
    if (answer.state === 'completed') this.#resolveResult(wait, answer.result);
    else if (answer.state === 'dead') wait.reject(new JobFailedError(wait.id, answer.error));
    else if (answer.state === 'unknown') wait.reject(new JobNotFoundError(wait.id));
    else if (answer.state === 'timeout') {
      wait.reject(new WaitTimeoutError(wait.id, wait.timeoutMs));
      // Its registration runs out REGISTRATION_SLACK_MS later: pruned then, rather than left to
      // the next wait's or end's call.
      setTimeout(() => this.#store.watch(this.#queue, [], 0).catch(() => {}), REGISTRATION_SLACK_MS + 50).unref();
    } else if (answer.end === 'completed') this.#resolveResult(wait, answer.payload);
    else if (answer.end === 'dead') wait.reject(new JobFailedError(wait.id, answer.payload));
    else wait.reject(new JobCancelledError(wait.id, answer.payload));
  }

  #resolveResult(wait: Wait, text: string): void {
    let result: unknown;
    try {
      result = text === '' ? undefined : JSON.parse(text);
    } catch {
      result = text;
    }
    wait.resolve(result);
  }

  #hold(wait: Wait): void {
    const set = this.#waits.get(wait.id) ?? new Set<Wait>();
    this.#waits.set(wait.id, set);
    set.add(wait);
  }

  /** Takes the wait out; false when it was settled already. Closes the subscription after the last. */
  #drop(wait: Wait): boolean {
    const set = this.#waits.get(wait.id);
    if (!set?.delete(wait)) return false;
    if (set.size === 0) this.#waits.delete(wait.id);
    if (this.#waits.size === 0) this.#unsubscribe();
    return true;
  }

  #subscribed(): Promise<WakeSubscription> {
    this.#subscription ??= this.#store.subscribe([this.#queue], {
      onWake: () => {},
      onFinished: (id, end, payload) => {
        for (const wait of [...(this.#waits.get(id) ?? [])]) this.#settle(wait, { state: 'ended', end, payload });
      },
      onResubscribed: () => void this.#recheck(),
      onError: (err) => this.#onError(err),
    });
    const sub = this.#subscription;
    sub.catch(() => {
      if (this.#subscription === sub) this.#subscription = undefined;
    });
    return sub;
  }

  #unsubscribe(): void {
    const sub = this.#subscription;
    this.#subscription = undefined;
    sub?.then((s) => s.close()).catch(() => {});
  }

  /** After a reconnect, ends told meanwhile were lost: ask the store about every pending wait. */
  async #recheck(): Promise<void> {
    const ids = [...this.#waits.keys()];
    if (ids.length === 0) return;
    const longest = Math.max(...[...this.#waits.values()].flatMap((set) => [...set].map((w) => w.deadline - Date.now())));
    try {
      const answers = await this.#store.watch(this.#queue, ids, Math.max(1, longest) + REGISTRATION_SLACK_MS);
      ids.forEach((id, i) => {
        for (const wait of [...(this.#waits.get(id) ?? [])]) this.#settle(wait, answers[i]!);
      });
    } catch (err) {
      this.#onError(err as Error);
    }
  }

  /** Rejects every pending wait (the queue is closing). */
  close(): void {
    for (const set of [...this.#waits.values()]) for (const wait of [...set]) this.#settle(wait, { state: 'timeout' });
    this.#unsubscribe();
  }
}
