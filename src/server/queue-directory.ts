/**
 * The queues the dashboard shows, opened on demand and kept in a bounded cache.
 *
 * Which queues exist: the registry (`<prefix>:queues`, what `listQueues` and the overview read),
 * which names every queue added to or run by a worker until it is obliterated. A name a request
 * makes up is answered 404 and never opened, so a request cannot make the dashboard remember
 * it; a queue obliterated by another process answers 404 once the registry is read again
 * (within `HIT_TTL_MS`). With the `queues` option, the configured names are the ones shown.
 *
 * The cache is an LRU of `Queue` objects. A Queue here shares the dashboard's store and holds no
 * connection, timer or subscription of its own (its close() closes nothing), so an evicted one
 * is simply dropped; a request still using it finishes normally.
 */
import { parseQueueName } from '../options.js';
import { Queue } from '../queue.js';
import type { Store } from '../store/store.js';
import { HttpError } from './route.js';

function isQueueName(name: string): boolean {
  try {
    parseQueueName(name);
    return true;
  } catch {
    return false;
  }
}

/** How old a registry read may be for a name found in it (a queue obliterated elsewhere answers 404 after at most this). */
const HIT_TTL_MS = 2000;

export class QueueDirectory {
  readonly #store: Store;
  readonly #allowed: readonly string[] | undefined;
  readonly #capacity: number;
  readonly #open = new Map<string, Queue<unknown>>();
  #registry: { names: Set<string>; at: number } | undefined;
  #reading: { names: Promise<Set<string>>; at: number } | undefined;

  /** `allowed`: the configured queues (already checked names), or undefined for the registry's. */
  constructor(store: Store, allowed: readonly string[] | undefined, capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new TypeError('the queue cache must hold at least one queue');
    this.#store = store;
    this.#allowed = allowed;
    this.#capacity = capacity;
  }

  /** Queues open now (bounded by the capacity). */
  get size(): number {
    return this.#open.size;
  }

  /**
   * The names shown: the configured ones, or the registry's (read now). A registry entry that is
   * no queue name (written by hand or by another client) is left out rather than break the
   * overview, the samples and the metrics.
   */
  async names(): Promise<string[]> {
    if (this.#allowed) return [...this.#allowed];
    return [...(await this.#read(performance.now()))].filter(isQueueName).sort();
  }

  /**
   * The queue a request names, opened: 400 for a name that is not a queue name, 404 for a queue
   * that is not shown or does not exist. `create`: the request may bring the queue into being
   * (adding a job), so only the configured list applies.
   */
  async find(name: string, opts: { create?: boolean } = {}): Promise<Queue<unknown>> {
    const n = parseQueueName(name);
    if (this.#allowed) {
      if (!this.#allowed.includes(n)) throw new HttpError(404, 'not_found', `no queue ${n} here`);
    } else if (!opts.create && !(await this.#exists(n))) {
      throw new HttpError(404, 'not_found', `no queue ${n}: none was added to or run under that name (or it was obliterated)`);
    }
    return this.open(n);
  }

  /** After a request created a queue: it is shown at once, before the registry is read again. */
  created(name: string): void {
    this.#registry?.names.add(name);
  }

  /** Opens a queue by a name known to exist (from the registry or the configured list). */
  open(name: string): Queue<unknown> {
    let q = this.#open.get(name);
    if (q) {
      // Most recently used last: Map keeps insertion order.
      this.#open.delete(name);
      this.#open.set(name, q);
      return q;
    }
    q = new Queue<unknown>(name, { store: this.#store });
    this.#open.set(name, q);
    if (this.#open.size > this.#capacity) {
      const [oldest, dropped] = this.#open.entries().next().value!;
      this.#open.delete(oldest);
      void dropped.close().catch(() => {});
    }
    return q;
  }

  async close(): Promise<void> {
    const open = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(open.map((q) => q.close()));
  }

  async #exists(name: string): Promise<boolean> {
    const asked = performance.now();
    if ((await this.#read(asked - HIT_TTL_MS)).has(name)) return true;
    // Not there a moment ago: it may be new, so the registry is read again, from after the
    // request came in. (Only a signed-in reader gets this far.)
    return (await this.#read(asked)).has(name);
  }

  /** The registry's names from a read that started at `since` or later; concurrent callers share one. */
  #read(since: number): Promise<Set<string>> {
    if (this.#registry && this.#registry.at >= since) return Promise.resolve(this.#registry.names);
    if (this.#reading && this.#reading.at >= since) return this.#reading.names;
    const at = performance.now();
    const names = this.#store.queues().then((list) => {
      const set = new Set(list);
      if (!this.#registry || this.#registry.at <= at) this.#registry = { names: set, at };
      return set;
    });
    const reading = { at, names };
    this.#reading = reading;
    void names
      .finally(() => {
        if (this.#reading === reading) this.#reading = undefined;
      })
      .catch(() => {});
    return names;
  }
}
