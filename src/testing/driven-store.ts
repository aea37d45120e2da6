/**
 * A driven store is the embedded MemoryStore seen through a thin wrapper that lets a test env
 * drive the real engine on a virtual clock. It changes no answer: every call goes to the
 * MemoryStore as it came. What it adds:
 *
 * - a gate on claims: outside `advance()`/`runUntilIdle()` a worker's claim waits (parked), so
 *   jobs run only while the env drives, at the virtual instant it chose;
 * - a count of calls in flight and of activity, so the env can tell when the engine is at rest;
 * - the wake-up times the engine itself announces (each claim's `nextWakeMs`, each wake signal),
 *   so the env steps the clock to exactly the instants a real worker's timer would fire;
 * - the subscribers, so the env can tell every worker and scheduler "look now" (onResubscribed,
 *   the signal a reconnect sends) after it moved the clock;
 * - a journal of each job's attempts and outcomes, from the store's answers.
 */
import type { MemoryStore } from '../store/memory/memory-store.js';
import type {
  ClaimResult,
  CompleteRef,
  FailRequest,
  FailResult,
  LeaseOutcome,
  LeaseRef,
  SnoozeRequest,
  SnoozeResult,
  Store,
  UpdateRequest,
  WakeHandlers,
  WakeSubscription,
} from '../store/store.js';
import type { CancelResult } from '../types.js';
import type { Journal } from './journal.js';

export class DrivenStore {
  /** The store to give Queues, Workers and Schedulers: the MemoryStore behind the wrapper. */
  readonly store: Store;
  readonly #inner: MemoryStore;
  readonly #journal: Journal;
  readonly #now: () => number;
  #inFlight = 0;
  /** Bumped by every call and every signal delivered: the env's "something happened". */
  #activity = 0;
  #open = false;
  #closed = false;
  readonly #parked: { run: () => void; empty: () => void }[] = [];
  /** Wake-up times announced by the engine (epoch ms), not yet passed. */
  readonly #wakes = new Set<number>();
  readonly #subscribers = new Set<WakeHandlers>();
  /** Workers that crashed (env.crash), and the lease tokens each worker was handed. */
  readonly #crashed = new Set<string>();
  readonly #holder = new Map<string, string>();

  constructor(inner: MemoryStore, journal: Journal, now: () => number) {
    this.#inner = inner;
    this.#journal = journal;
    this.#now = now;
    const own: Partial<Record<keyof Store, unknown>> = {
      claim: this.#claim.bind(this),
      complete: this.#complete.bind(this),
      fail: this.#fail.bind(this),
      snooze: this.#snooze.bind(this),
      release: this.#release.bind(this),
      cancel: this.#cancel.bind(this),
      update: this.#update.bind(this),
      extend: this.#extend.bind(this),
      subscribe: this.#subscribe.bind(this),
    };
    const cache = new Map<PropertyKey, unknown>();
    this.store = new Proxy(inner, {
      get: (target, prop) => {
        if (cache.has(prop)) return cache.get(prop);
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        const fn = (own[prop as keyof Store] as ((...a: unknown[]) => unknown) | undefined) ?? value.bind(target);
        const wrapped = (...args: unknown[]) => this.#track(fn(...args));
        cache.set(prop, wrapped);
        return wrapped;
      },
    }) as unknown as Store;
  }

  /** Calls under way and activity so far (the env waits for both to stand still). */
  get inFlight(): number {
    return this.#inFlight;
  }

  get activity(): number {
    return this.#activity;
  }

  /** Lets parked and new claims through (while the env drives). */
  open(): void {
    this.#open = true;
    for (const p of this.#parked.splice(0)) p.run();
  }

  /** Parks claims again (between the env's drives). */
  shut(): void {
    this.#open = false;
  }

  /** Answers every parked claim with nothing, for good (the env is closing). */
  close(): void {
    this.#closed = true;
    this.#open = false;
    for (const p of this.#parked.splice(0)) p.empty();
  }

  /**
   * From now on the worker's calls reach the store no more, as if its process died: a claim
   * gets nothing, an ack, fail, snooze, release, extend or update of a lease it holds answers
   * "lease lost" and changes nothing. Its jobs stay active until their leases run out.
   */
  crash(workerId: string): void {
    this.#crashed.add(workerId);
  }

  #gone(token: string): boolean {
    const holder = this.#holder.get(token);
    return holder !== undefined && this.#crashed.has(holder);
  }

  /** The earliest announced wake-up after `afterMs`, forgetting those at or before it. */
  nextWake(afterMs: number): number | undefined {
    let min: number | undefined;
    for (const at of this.#wakes) {
      if (at <= afterMs) this.#wakes.delete(at);
      else if (min === undefined || at < min) min = at;
    }
    return min;
  }

  /** Tells every subscriber to look now, as after a reconnect (a signal may have been missed). */
  kick(): void {
    for (const h of [...this.#subscribers]) {
      this.#activity++;
      h.onResubscribed();
    }
  }

  #track<T>(value: T): T {
    this.#activity++;
    if (value instanceof Promise) {
      this.#inFlight++;
      void value.then(
        () => this.#settled(),
        () => this.#settled(),
      );
    }
    return value;
  }

  #settled(): void {
    this.#inFlight--;
    this.#activity++;
  }

  #announce(atMs: number | undefined): void {
    if (atMs !== undefined && Number.isFinite(atMs) && atMs > this.#now()) this.#wakes.add(atMs);
  }

  #claim(queue: string, count: number, leaseMs: number, defaultMaxAttempts: number, workerId = ''): Promise<ClaimResult> {
    const run = async (): Promise<ClaimResult> => {
      if (this.#crashed.has(workerId)) return { nowMs: this.#now(), jobs: [], unreadable: [], more: false, nextWakeMs: undefined };
      const res = await this.#inner.claim(queue, count, leaseMs, defaultMaxAttempts, workerId);
      for (const c of res.jobs) {
        this.#holder.set(c.token, workerId);
        this.#journal.claimed(queue, c, res.nowMs, workerId);
      }
      this.#announce(res.nextWakeMs);
      return res;
    };
    if (this.#open) return run();
    const empty: ClaimResult = { nowMs: this.#now(), jobs: [], unreadable: [], more: false, nextWakeMs: undefined };
    if (this.#closed) return Promise.resolve(empty);
    // Parked: not in flight (nothing runs until the env opens the gate).
    this.#inFlight--;
    return new Promise<ClaimResult>((resolve, reject) => {
      this.#parked.push({
        run: () => {
          this.#inFlight++;
          run().then(resolve, reject);
        },
        empty: () => {
          this.#inFlight++;
          resolve(empty);
        },
      });
    });
  }

  /** Sends the leases a live worker holds; a crashed worker's answer "lease lost" without a write. */
  async #live<L extends LeaseRef>(leases: L[], send: (live: L[]) => Promise<LeaseOutcome[]>): Promise<LeaseOutcome[]> {
    const live = leases.filter((l) => !this.#gone(l.token));
    const answers = live.length > 0 ? await send(live) : [];
    let i = 0;
    return leases.map((l) => (this.#gone(l.token) ? 'lease_lost' : answers[i++]!));
  }

  #extend(queue: string, leases: LeaseRef[], leaseMs: number, beat?: Parameters<Store['extend']>[3]): Promise<LeaseOutcome[]> {
    return this.#live(leases, (live) => this.#inner.extend(queue, live, leaseMs, beat));
  }

  async #complete(queue: string, leases: CompleteRef[]): Promise<LeaseOutcome[]> {
    const out = await this.#live(leases, (live) => this.#inner.complete(queue, live));
    const now = this.#now();
    leases.forEach((l, i) => {
      if (out[i] === 'ok') this.#journal.completed(queue, l.id, l.token, l.result, now);
    });
    return out;
  }

  async #fail(queue: string, req: FailRequest): Promise<FailResult> {
    if (this.#gone(req.token)) return { outcome: 'lease_lost', dueAtMs: undefined };
    const res = await this.#inner.fail(queue, req);
    if (res.outcome === 'retried' || res.outcome === 'dead') {
      this.#journal.ended(queue, req.id, req.token, res.outcome, this.#now(), req.error, res.dueAtMs);
      this.#announce(res.dueAtMs);
    }
    return res;
  }

  async #snooze(queue: string, req: SnoozeRequest): Promise<SnoozeResult> {
    if (this.#gone(req.token)) return { outcome: 'lease_lost', dueAtMs: undefined };
    const res = await this.#inner.snooze(queue, req);
    if (res.outcome === 'snoozed') this.#journal.ended(queue, req.id, req.token, 'snoozed', this.#now(), undefined, res.dueAtMs);
    else if (res.outcome === 'dead') this.#journal.ended(queue, req.id, req.token, 'dead', this.#now(), 'snooze deadline passed');
    this.#announce(res.dueAtMs);
    return res;
  }

  async #release(queue: string, leases: LeaseRef[], holdMs?: number): Promise<LeaseOutcome[]> {
    const out = await this.#live(leases, (live) => this.#inner.release(queue, live, holdMs));
    const now = this.#now();
    leases.forEach((l, i) => {
      if (out[i] === 'ok') this.#journal.ended(queue, l.id, l.token, holdMs !== undefined && holdMs > 0 ? 'rateLimited' : 'released', now);
    });
    if (holdMs !== undefined && holdMs > 0) this.#announce(now + holdMs);
    return out;
  }

  async #cancel(queue: string, ids: string[]): Promise<CancelResult[]> {
    // Both run at once (the memory store answers within the call): the data read is the data cancelled.
    const before = this.#inner.getMany(queue, ids, false);
    const res = await this.#inner.cancel(queue, ids);
    const infos = await before;
    const now = this.#now();
    res.forEach((r, i) => {
      if (r.cancelled) this.#journal.cancelled(queue, r.id, infos[i]?.data, now);
    });
    return res;
  }

  async #update(queue: string, req: UpdateRequest): Promise<LeaseOutcome> {
    if (this.#gone(req.token)) return 'lease_lost';
    const out = await this.#inner.update(queue, req);
    if (out === 'ok') this.#journal.updated(queue, req.id, req.token, req.progress, req.lines);
    return out;
  }

  async #subscribe(queues: readonly string[], handlers: WakeHandlers): Promise<WakeSubscription> {
    const counted: WakeHandlers = {
      onWake: (dueAtMs, queue) => {
        this.#activity++;
        this.#announce(dueAtMs);
        handlers.onWake(dueAtMs, queue);
      },
      onSchedulesChanged: (queue) => {
        this.#activity++;
        handlers.onSchedulesChanged?.(queue);
      },
      onLayoutChanged: (queue) => {
        this.#activity++;
        handlers.onLayoutChanged?.(queue);
      },
      onResubscribed: () => handlers.onResubscribed(),
      onError: (err) => handlers.onError(err),
    };
    const sub = await this.#inner.subscribe(queues, counted);
    this.#subscribers.add(counted);
    return {
      close: async () => {
        this.#subscribers.delete(counted);
        await sub.close();
      },
    };
  }
}
