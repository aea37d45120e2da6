/** A Store-level job to add, due now unless `extra` says otherwise: for tests that call a store directly. */
import type { NewJob } from '../../src/store/store.js';

export function newJob(id: string, extra: Partial<NewJob> = {}): NewJob {
  return {
    id,
    data: JSON.stringify(id),
    delayMs: 0,
    runAtMs: undefined,
    priority: 0,
    maxAttempts: undefined,
    backoff: undefined,
    replace: false,
    dedup: undefined,
    traceContext: undefined,
    group: undefined,
    name: undefined,
    cost: 1,
    debounce: undefined,
    ...extra,
  };
}
