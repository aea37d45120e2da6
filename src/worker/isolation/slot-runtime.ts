/**
 * What runs inside an isolated handler's thread or child process: loads the handler module once,
 * runs each job it is sent on a Job-like object whose progress(), log() and extendLease() are
 * calls to the parent's real job, and answers with the outcome.
 *
 * One slot runs one job at a time (the pool sees to it), but nothing here depends on that.
 */
import { pathToFileURL } from 'node:url';
import type { ChildResults, Job } from '../../job.js';
import { roundedSnooze, snoozeProblem, waitSignalProblem } from '../handed-job.js';
import { WaitForSignal } from '../../errors.js';
import { handlerOfModule } from '../route-by-name.js';
import { type FromSlot, fromWire, type JobSnapshot, type ProxiedMethod, type ToSlot, toWire } from './messages.js';

/** How a slot talks to its pool: a thread's parentPort, or a child process's IPC channel. */
export interface SlotPort {
  send(msg: FromSlot): void;
  onMessage(fn: (msg: ToSlot) => void): void;
}

interface Run {
  controller: AbortController;
  calls: Map<number, { resolve: (value: unknown) => void; reject: (err: unknown) => void }>;
  /** The handler ended; the run is forgotten once its last call is answered. */
  done: boolean;
}

export function serveSlot(moduleUrl: string, port: SlotPort, kind: 'thread' | 'process'): void {
  const shown = moduleUrl.startsWith('file:') ? moduleUrl.slice('file://'.length) : moduleUrl;
  const handler = import(moduleUrl.startsWith('file:') ? moduleUrl : pathToFileURL(moduleUrl).href).then(
    (mod: { default?: unknown; handler?: unknown; handlers?: unknown }) => {
      const h = handlerOfModule(mod);
      if (!h) throw new TypeError(`${shown} has no default export (or 'handler' export) that is a function, nor a 'handlers' export of handlers by job name`);
      return h;
    },
    (err: unknown) => {
      throw new Error(`handler module ${shown} failed to load in its ${kind}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    },
  );
  // A module that fails to load fails each job it is sent, with the reason; not the slot itself.
  handler.catch(() => {});
  const runs = new Map<number, Run>();
  let nextCall = 0;

  const run = async (id: number, snap: JobSnapshot): Promise<void> => {
    const controller = new AbortController();
    const calls: Run['calls'] = new Map();
    const state: Run = { controller, calls, done: false };
    runs.set(id, state);
    let snoozed: { delayMs: number; deadlineAtMs: number | undefined } | undefined;
    const call = <V = void>(method: ProxiedMethod, args: unknown[]) =>
      new Promise<V>((resolve, reject) => {
        const c = nextCall++;
        calls.set(c, { resolve: resolve as (value: unknown) => void, reject });
        port.send({ type: 'call', run: id, call: c, method, args });
      });
    const job: Job<unknown> = {
      ...snap,
      signal: controller.signal,
      snooze(delayMs: number, opts: { deadlineAtMs?: number } = {}): never {
        const bad = snoozeProblem(delayMs, opts.deadlineAtMs, '');
        if (bad) throw bad;
        const signal = roundedSnooze(delayMs, opts.deadlineAtMs);
        snoozed = { delayMs: signal.delayMs, deadlineAtMs: signal.deadlineAtMs };
        throw signal;
      },
      progress: (value) => call('progress', [value]),
      log: (line) => call('log', [line]),
      extendLease: (ms) => call('extendLease', ms === undefined ? [] : [ms]),
      childResults: <R>() => call<ChildResults<R>>('childResults', []),
      waitForSignal(name: string, opts: { timeoutMs?: number } = {}): never {
        const bad = waitSignalProblem(name, opts.timeoutMs, '');
        if (bad) throw bad;
        throw new WaitForSignal(name, opts.timeoutMs === undefined ? undefined : Math.ceil(opts.timeoutMs));
      },
    };
    let msg: FromSlot & { type: 'done' };
    try {
      const result = await (await handler)(job);
      msg = { type: 'done', run: id, ok: true, result };
    } catch (err) {
      const gaveUp = controller.signal.aborted && err === controller.signal.reason;
      msg = { type: 'done', run: id, ok: false, error: toWire(err), ...(gaveUp ? { gaveUp } : {}) };
    }
    // A call still on its way (a progress() not awaited) gets its answer: the pool refuses calls
    // of an ended run, as a job refuses them once it is no longer this worker's.
    state.done = true;
    if (calls.size === 0) runs.delete(id);
    if (snoozed) msg.snoozed = snoozed;
    try {
      port.send(msg);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      const error = new TypeError(`the handler's result cannot be sent from its ${kind}: ${why} (a result must be structured-cloneable; it is stored as JSON)`);
      port.send({ type: 'done', run: id, ok: false, error: toWire(error), ...(snoozed ? { snoozed } : {}) });
    }
  };

  port.onMessage((msg) => {
    if (msg.type === 'run') void run(msg.run, msg.job);
    else if (msg.type === 'abort') runs.get(msg.run)?.controller.abort(msg.reason);
    else if (msg.type === 'reply') {
      const r = runs.get(msg.run);
      const c = r?.calls.get(msg.call);
      if (!c) return;
      r!.calls.delete(msg.call);
      if (r!.done && r!.calls.size === 0) runs.delete(msg.run);
      if (msg.error) c.reject(fromWire(msg.error));
      else c.resolve(msg.value);
    }
  });
  port.send({ type: 'ready' });
}
