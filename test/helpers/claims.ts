/** Claims of a whole backlog, and ids whose text order is their number's order. */
import type { Store } from '../../src/store/store.js';

const LEASE_MS = 60_000;

/** Every job of the queue handed out by claims of `batch` (worker `w`), in the order they came; `each` runs after every claim. */
export async function claimAll(store: Store, queue: string, batch: number, each?: () => Promise<void>): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const r = await store.claim(queue, batch, LEASE_MS, 3, 'w');
    if (r.jobs.length === 0) return out;
    for (const j of r.jobs) out.push(j.id);
    if (each) await each();
  }
}

/** `n` ids `<prefix>0000`, `<prefix>0001`, ...: their text order is their add order. */
export const paddedIds = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, '0')}`);
