/**
 * `queue.completed`: the completed jobs a retention rule keeps (see queue.setRetention), and a
 * way to delete them before the rule would. Reading them is a listing (`queue.jobs.list`).
 */
import type { Store } from '../store/store.js';
import { purgeTarget } from './validation.js';

/** Kept completed jobs (see setRetention). */
export interface CompletedSet {
  /** Deletes kept completed jobs now. Returns how many. */
  purge: (target: string | readonly string[] | { all: true } | { olderThanMs: number }) => Promise<number>;
}

export function completedSet(store: Store, queue: string): CompletedSet {
  return {
    purge: (target) => store.purge(queue, 'completed', purgeTarget(target)),
  };
}
