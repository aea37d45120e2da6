/**
 * The set-up the conformance suites share (suite.ts, groups.ts, rates.ts): the store started
 * before and stopped after, queues and workers made through it and closed after each test, each
 * queue left consistent (verify) by every test (the workers stop first, so their acks land), and
 * an error a worker emitted fails it.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before } from 'node:test';
import { Queue, Worker, type Handlers, type Job, type WorkerOptions } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import type { StoreKind } from './suite.js';

export interface Harness {
  queue<T>(): Queue<T>;
  worker<T>(q: Queue<T>, handler: ((job: Job<T>) => unknown) | Handlers<T>, opts?: WorkerOptions<T>): Worker<T>;
}

/** Call inside a describe: registers the hooks, answers the makers. */
export function useHarness(kind: StoreKind, prefix: string): Harness {
  let open: { close(): Promise<void> }[] = [];
  let queues: Queue<unknown>[] = [];
  let workers: Worker<never>[] = [];
  before(() => kind.start());
  after(() => kind.stop());
  afterEach(async () => {
    await Promise.all(workers.map((w) => w.close()));
    // Every test leaves its queues consistent: each group's counts equal its jobs (verify).
    for (const q of queues) {
      const report = await q.verify();
      assert.equal(report.ok, true, `${q.name}: ${report.problems.join('; ')}`);
    }
    await Promise.all(open.map((o) => o.close()));
    [open, queues, workers] = [[], [], []];
  });
  const errorLog = useErrorLog();
  return {
    queue<T>(): Queue<T> {
      const q = new Queue<T>(uniqueName(prefix), kind.options());
      open.push(q);
      queues.push(q as Queue<unknown>);
      return q;
    },
    worker<T>(q: Queue<T>, handler: ((job: Job<T>) => unknown) | Handlers<T>, opts: WorkerOptions<T> = {}): Worker<T> {
      const w = new Worker<T>(q.name, handler, { ...kind.options(), ...opts } as WorkerOptions<T>);
      errorLog.watch(w);
      workers.push(w as unknown as Worker<never>);
      return w;
    },
  };
}
