/**
 * A pool of worker threads or child processes that runs a handler module: an isolated handler.
 * The handler it gives a Worker sends each job to a free slot and settles with the outcome; when
 * the job's signal aborts (timeout, cancel, lease lost, the worker closing), the slot's job signal
 * aborts too, and after `graceMs` the thread or process is terminated for real, so a handler
 * stuck in `while (true) {}` costs one slot for graceMs and no more.
 *
 * Slots are made when a job needs one (the module is loaded once per slot), reused between jobs,
 * and replaced lazily when one is terminated or crashes. close() terminates them all.
 */
import { existsSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { IsolatedHandlerError } from '../../errors.js';
import type { Job } from '../../job.js';
import { type FromSlot, fromWire, snapshot, toWire } from './messages.js';
import { type IsolationKind, Slot } from './slot.js';
import { timerDelay } from '../../timers.js';

export type { IsolationKind };

/** How long an aborted job's handler may take to stop by itself before its slot is terminated. @default 200 */
export const DEFAULT_ISOLATION_GRACE_MS = 200;

export interface IsolationOptions {
  isolation: IsolationKind;
  /** Threads or processes at most. */
  size: number;
  /** @default 200 */
  graceMs?: number;
  /** Heap cap of each thread or process, MB. @default Node's own */
  memoryMb?: number;
}

export interface IsolatedHandler<T> {
  handler: (job: Job<T>) => Promise<unknown>;
  /** Terminates every thread or process; a job still running is failed with IsolatedHandlerError. */
  close(): Promise<void>;
  /** The threads or processes alive now (terminating ones included), for tests and metrics. */
  slots(): { pid: number | undefined; threadId: number | undefined }[];
}

interface ActiveRun {
  job: Job<unknown>;
  slot: Slot;
  resolve: (v: unknown) => void;
  reject: (err: unknown) => void;
  grace: NodeJS.Timeout | undefined;
  unlisten: () => void;
}

interface Waiter {
  resolve: (slot: Slot) => void;
  reject: (err: unknown) => void;
  unlisten: () => void;
}

/**
 * The file URL of a handler module given as a path (relative to the current directory) or a
 * file URL; a TypeError when it is neither, or names no file.
 */
export function handlerModuleUrl(module: string | URL): string {
  let path: string;
  try {
    path = module instanceof URL || module.startsWith('file:') ? fileURLToPath(module) : resolvePath(module);
  } catch (err) {
    throw new TypeError(`handler module ${String(module)} is not a file path or file URL (${(err as Error).message})`);
  }
  if (!existsSync(path)) throw new TypeError(`handler module ${String(module)}: no such file (${path})`);
  return pathToFileURL(path).href;
}

/** A reason an AbortSignal carries, as it can cross to a thread or process. */
function cloneable(reason: unknown): unknown {
  try {
    structuredClone(reason);
    return reason;
  } catch {
    return String(reason);
  }
}

export function isolatedHandler<T = unknown>(module: string | URL, opts: IsolationOptions): IsolatedHandler<T> {
  const moduleUrl = handlerModuleUrl(module);
  const graceMs = opts.graceMs ?? DEFAULT_ISOLATION_GRACE_MS;
  const all = new Set<Slot>();
  /** Slots counted against `size`: all but those whose job was aborted (in their grace) or being terminated. */
  const counted = new Set<Slot>();
  const idle: Slot[] = [];
  const waiting: Waiter[] = [];
  const runs = new Map<number, ActiveRun>();
  let nextRun = 0;
  let closed = false;

  const spawn = (): Slot => {
    const slot = new Slot({ kind: opts.isolation, moduleUrl, memoryMb: opts.memoryMb, onMessage, onGone });
    all.add(slot);
    counted.add(slot);
    return slot;
  };

  /** A free slot to the first waiter, or to the idle list. */
  const free = (slot: Slot) => {
    slot.run = undefined;
    const w = waiting.shift();
    if (w) {
      w.unlisten();
      w.resolve(slot);
    } else idle.push(slot);
  };

  /** Room made (a slot retired or gone): a waiter gets a new slot. */
  const refill = () => {
    while (!closed && waiting.length > 0 && counted.size < opts.size) {
      const w = waiting.shift()!;
      w.unlisten();
      w.resolve(spawn());
    }
  };

  const retire = (slot: Slot) => {
    if (slot.retired) return;
    slot.retired = true;
    counted.delete(slot);
    const i = idle.indexOf(slot);
    if (i >= 0) idle.splice(i, 1);
    void slot.terminate();
    refill();
  };

  /** Ends a run's bookkeeping; the caller settles it. */
  const end = (id: number): ActiveRun | undefined => {
    const run = runs.get(id);
    if (!run) return undefined;
    runs.delete(id);
    clearTimeout(run.grace);
    run.unlisten();
    return run;
  };

  function onGone(slot: Slot, why: IsolatedHandlerError): void {
    all.delete(slot);
    const wasCounted = counted.delete(slot);
    const i = idle.indexOf(slot);
    if (i >= 0) idle.splice(i, 1);
    if (slot.run !== undefined) {
      const run = end(slot.run);
      // Terminated because its job was aborted: the handler "stopped" with the signal's reason,
      // as a cooperative one would have (a worker closing then hands the job back).
      if (run) run.reject(run.job.signal.aborted ? run.job.signal.reason : why);
    }
    slot.retired = true;
    if (wasCounted) refill();
  }

  function onMessage(slot: Slot, msg: FromSlot): void {
    if (msg.type === 'call') {
      const run = runs.get(msg.run);
      const reply = (error?: unknown, value?: unknown) =>
        slot.send({
          type: 'reply',
          run: msg.run,
          call: msg.call,
          ...(error !== undefined ? { error: toWire(error) } : {}),
          ...(value !== undefined ? { value } : {}),
        });
      if (!run || run.slot !== slot) {
        // As a job refuses its lease's calls once it is no longer this worker's.
        reply(new IsolatedHandlerError(`job.${msg.method}() after the handler's run ended`));
        return;
      }
      const job = run.job as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
      Promise.resolve()
        .then(() => job[msg.method]!(...msg.args))
        .then(
          (value) => reply(undefined, msg.method === 'childResults' ? value : undefined),
          (err: unknown) => reply(err ?? new Error(String(err))),
        );
      return;
    }
    if (msg.type !== 'done' || slot.run !== msg.run) return;
    const run = end(msg.run);
    if (!run) return;
    if (!slot.retired) {
      // A handler that stopped by itself within the grace keeps its slot, if there is room.
      if (!counted.has(slot) && (closed || counted.size >= opts.size)) retire(slot);
      else {
        counted.add(slot);
        free(slot);
      }
    }
    if (msg.snoozed) {
      // On the worker's own job, so the worker snoozes it exactly as in-process (a handler that
      // caught the SnoozeSignal and returned is snoozed all the same).
      try {
        run.job.snooze(msg.snoozed.delayMs, msg.snoozed.deadlineAtMs === undefined ? {} : { deadlineAtMs: msg.snoozed.deadlineAtMs });
      } catch (err) {
        run.reject(err);
      }
      return;
    }
    if (msg.ok) run.resolve(msg.result);
    else if (msg.gaveUp && run.job.signal.aborted) run.reject(run.job.signal.reason);
    else run.reject(fromWire(msg.error!));
  }

  const acquire = (signal: AbortSignal): Promise<Slot> => {
    if (closed) return Promise.reject(new IsolatedHandlerError('the isolated handler pool is closed'));
    const slot = idle.pop();
    if (slot) return Promise.resolve(slot);
    if (counted.size < opts.size) return Promise.resolve(spawn());
    return new Promise<Slot>((resolve, reject) => {
      const onAbort = () => {
        const i = waiting.indexOf(w);
        if (i >= 0) waiting.splice(i, 1);
        reject(signal.reason);
      };
      const w: Waiter = { resolve, reject, unlisten: () => signal.removeEventListener('abort', onAbort) };
      signal.addEventListener('abort', onAbort, { once: true });
      waiting.push(w);
    });
  };

  const handler = async (job: Job<T>): Promise<unknown> => {
    if (closed) throw new IsolatedHandlerError('the isolated handler pool is closed');
    const signal = job.signal;
    if (signal.aborted) throw signal.reason;
    let slot = await acquire(signal);
    // A slot handed over may have died on the way (its thread crashed while it changed hands).
    while (slot.gone) slot = await acquire(signal);
    // The signal may have aborted while the slot changed hands (no listener was on it then).
    if (signal.aborted || closed) {
      if (!slot.retired && !closed) free(slot);
      throw signal.aborted ? signal.reason : new IsolatedHandlerError('the isolated handler pool is closed');
    }
    return new Promise<unknown>((resolve, reject) => {
      const id = nextRun++;
      const onAbort = () => {
        slot.send({ type: 'abort', run: id, reason: cloneable(signal.reason) });
        const run = runs.get(id);
        if (!run) return;
        run.grace = setTimeout(() => retire(slot), timerDelay(graceMs));
        // The Worker freed this job's place at once (a timeout is a failure now): a job it hands
        // out meanwhile gets a slot of its own rather than waiting out the grace.
        counted.delete(slot);
        refill();
      };
      const run: ActiveRun = {
        job: job as Job<unknown>,
        slot,
        resolve,
        reject,
        grace: undefined,
        unlisten: () => signal.removeEventListener('abort', onAbort),
      };
      runs.set(id, run);
      slot.run = id;
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        slot.send({ type: 'run', run: id, job: snapshot(job as Job<unknown>) });
      } catch (err) {
        end(id);
        free(slot);
        reject(new TypeError(`the job cannot be sent to its ${opts.isolation}: ${(err as Error).message}`));
      }
    });
  };

  const close = async (): Promise<void> => {
    closed = true;
    for (const w of waiting.splice(0)) {
      w.unlisten();
      w.reject(new IsolatedHandlerError('the isolated handler pool is closed'));
    }
    const slots = [...all];
    for (const run of [...runs.keys()]) {
      const r = end(run);
      r?.reject(r.job.signal.aborted ? r.job.signal.reason : new IsolatedHandlerError(`the isolated handler pool closed while the job ran`));
    }
    idle.length = 0;
    counted.clear();
    await Promise.all(slots.map((s) => s.terminate()));
  };

  const slots = () => [...all].map((s) => ({ pid: s.pid, threadId: s.threadId }));

  return { handler, close, slots };
}

/**
 * The Worker's seam: an isolated handler for a Worker given a module path (or file URL) with
 * `isolation`, undefined for an in-process handler; a TypeError for a path without `isolation`
 * or `isolation` with a function. Nothing starts here (slots are made when jobs come).
 */
export function isolatedWorkerHandler<T>(
  handler: unknown,
  o: {
    isolation?: IsolationKind | undefined;
    isolationPoolSize?: number | undefined;
    isolationGraceMs?: number | undefined;
    isolationMemoryMb?: number | undefined;
  },
  concurrency: number,
): IsolatedHandler<T> | undefined {
  const path = typeof handler === 'string' || handler instanceof URL;
  if (o.isolation === undefined) {
    if (path)
      throw new TypeError(`a handler given as a module path (${String(handler)}) needs isolation: 'thread' or 'process'; in-process, pass the function itself`);
    return undefined;
  }
  if (!path) throw new TypeError(`isolation: '${o.isolation}' needs the handler as a module path or file URL (a function cannot be sent to a ${o.isolation})`);
  return isolatedHandler<T>(handler, {
    isolation: o.isolation,
    size: o.isolationPoolSize ?? concurrency,
    ...(o.isolationGraceMs !== undefined ? { graceMs: o.isolationGraceMs } : {}),
    ...(o.isolationMemoryMb !== undefined ? { memoryMb: o.isolationMemoryMb } : {}),
  });
}
