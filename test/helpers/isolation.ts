/** Handler modules written for a test (a thread or process loads them by path), and a worker's outcomes by job id. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { Worker } from '../../src/index.js';

/** delayq's error classes, for a handler module to import (as a user's module imports 'delayq'). */
export const ERRORS_URL = new URL('../../src/errors.js', import.meta.url).href;

let dir: string | undefined;

/** Writes a handler module (ESM source) and returns its path; the folder goes when the test file ends. */
export function handlerModule(name: string, source: string): string {
  if (!dir) {
    dir = mkdtempSync(join(tmpdir(), 'delayq-isolation-'));
    const made = dir;
    after(() => rmSync(made, { recursive: true, force: true }));
  }
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.mjs`);
  writeFileSync(path, source);
  return path;
}

export type Outcome =
  | { event: 'completed'; result: unknown }
  | { event: 'failed'; error: unknown }
  | { event: 'retried'; dueAtMs: number }
  | { event: 'snoozed'; dueAtMs: number }
  | { event: 'dead'; reason: string }
  | { event: 'rateLimited'; holdMs: number }
  | { event: 'released' };

/**
 * The outcomes of each job id a worker reports, in order (completed, failed, retried, snoozed,
 * dead, rateLimited, released), to wait on with a bound: `next(id)` settles with the outcome or fails
 * after `ms`.
 */
export function outcomes(worker: Worker<unknown>): { next(id: string, ms?: number): Promise<Outcome>; all: Map<string, Outcome[]> } {
  const all = new Map<string, Outcome[]>();
  const waiters = new Map<string, ((o: Outcome) => void)[]>();
  const seen = new Map<string, number>();
  const put = (id: string, o: Outcome) => {
    const list = all.get(id) ?? [];
    list.push(o);
    all.set(id, list);
    const w = waiters.get(id)?.shift();
    if (w) w(o);
  };
  worker.on('completed', (job, result) => put(job.id, { event: 'completed', result }));
  worker.on('failed', (job, error) => put(job.id, { event: 'failed', error }));
  worker.on('retried', (job, _err, dueAtMs) => put(job.id, { event: 'retried', dueAtMs }));
  worker.on('snoozed', (job, dueAtMs) => put(job.id, { event: 'snoozed', dueAtMs }));
  worker.on('dead', (job, reason) => put(job.id, { event: 'dead', reason }));
  worker.on('rateLimited', (job, holdMs) => put(job.id, { event: 'rateLimited', holdMs }));
  worker.on('released', (job) => put(job.id, { event: 'released' }));
  return {
    all,
    next(id, ms = 10_000) {
      const i = seen.get(id) ?? 0;
      seen.set(id, i + 1);
      const ready = all.get(id)?.[i];
      if (ready) return Promise.resolve(ready);
      return new Promise<Outcome>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`job ${id}: no outcome #${i + 1} within ${ms} ms`)), ms);
        const list = waiters.get(id) ?? [];
        list.push((o) => {
          clearTimeout(timer);
          resolve(o);
        });
        waiters.set(id, list);
      });
    },
  };
}
