/**
 * The messages between an isolated-handler pool and its threads or child processes, written
 * once for both sides, and how a Job and a thrown value cross the boundary.
 *
 * Every message is structured-cloneable (a thread's postMessage, a child's `advanced` IPC). A
 * thrown value crosses as a WireError and is rebuilt on the other side with its class when it is
 * one of ours that a Worker treats specially (SnoozeSignal, RateLimitSignal, UnrecoverableError,
 * LeaseLostError, ValidationError, HandlerTimeoutError), so a handler in a thread means what it
 * means in-process.
 */
import {
  DelayqError,
  HandlerTimeoutError,
  LeaseLostError,
  RateLimitSignal,
  SnoozeSignal,
  UnrecoverableError,
  ValidationError,
  WaitForSignal,
} from '../../errors.js';
import type { Job, JobHold, JobSignal } from '../../job.js';

/** The plain part of a Job: what a handler reads. */
export interface JobSnapshot {
  queue: string;
  id: string;
  data: unknown;
  attempt: number;
  maxAttempts: number;
  dueAtMs: number;
  priority: number;
  group: string | undefined;
  name: string | undefined;
  timeoutMs: number | undefined;
  createdAtMs: number;
  token: string;
  hold: JobHold | undefined;
  signalled: JobSignal | undefined;
}

/** The Job methods a handler in a thread calls on the parent's real job. */
export type ProxiedMethod = 'progress' | 'log' | 'extendLease' | 'childResults';

/** A thrown value on the wire: an Error's name, message, stack and the fields our classes carry. */
export interface WireError {
  name: string;
  message: string;
  stack: string | undefined;
  /** Not an Error at all (a thrown string, number…): rebuilt as itself when cloneable. */
  value?: unknown;
  notError?: boolean;
  code?: unknown;
  delayMs?: number;
  deadlineAtMs?: number | undefined;
  retryAfterMs?: number;
  field?: string;
  jobId?: string;
  token?: string;
  timeoutMs?: number | undefined;
  signalName?: string;
}

/** From the pool to a slot. */
export type ToSlot =
  | { type: 'run'; run: number; job: JobSnapshot }
  /** The parent job's signal aborted: the slot's job signal aborts with the same reason. */
  | { type: 'abort'; run: number; reason: unknown }
  /** The answer to a proxied call. */
  | { type: 'reply'; run: number; call: number; error?: WireError; value?: unknown };

/** From a slot to the pool. */
export type FromSlot =
  /** The slot listens: messages sent before this are held by the pool. */
  | { type: 'ready' }
  /** A child process is about to exit on an uncaught exception (a thread's own 'error' event says it). */
  | { type: 'crashed'; error: WireError }
  | { type: 'call'; run: number; call: number; method: ProxiedMethod; args: unknown[] }
  | {
      type: 'done';
      run: number;
      ok: boolean;
      result?: unknown;
      error?: WireError;
      /** The handler threw its own signal's reason: it gave up because it was asked to. */
      gaveUp?: boolean;
      /** job.snooze() was called (honoured even if the handler caught the signal and returned). */
      snoozed?: { delayMs: number; deadlineAtMs: number | undefined };
    };

export function snapshot(job: Job<unknown>): JobSnapshot {
  return {
    queue: job.queue,
    id: job.id,
    data: job.data,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    dueAtMs: job.dueAtMs,
    priority: job.priority,
    group: job.group,
    name: job.name,
    timeoutMs: job.timeoutMs,
    createdAtMs: job.createdAtMs,
    token: job.token,
    hold: job.hold,
    signalled: job.signalled,
  };
}

export function toWire(thrown: unknown): WireError {
  if (!(thrown instanceof Error)) {
    let value: unknown = thrown;
    try {
      structuredClone(thrown);
    } catch {
      value = String(thrown);
    }
    return { name: 'Error', message: String(thrown), stack: undefined, value, notError: true };
  }
  const e = thrown as Error & Record<string, unknown>;
  const w: WireError = { name: String(e.name), message: String(e.message), stack: typeof e.stack === 'string' ? e.stack : undefined };
  if (e.code !== undefined && (typeof e.code === 'string' || typeof e.code === 'number')) w.code = e.code;
  if (thrown instanceof SnoozeSignal) {
    w.delayMs = thrown.delayMs;
    w.deadlineAtMs = thrown.deadlineAtMs;
  } else if (thrown instanceof WaitForSignal) {
    w.signalName = thrown.signalName;
    w.timeoutMs = thrown.timeoutMs;
  } else if (thrown instanceof RateLimitSignal) w.retryAfterMs = thrown.retryAfterMs;
  else if (thrown instanceof ValidationError) w.field = thrown.field;
  else if (thrown instanceof LeaseLostError) {
    w.jobId = thrown.jobId;
    w.token = thrown.token;
  } else if (thrown instanceof HandlerTimeoutError) w.timeoutMs = thrown.timeoutMs;
  return w;
}

/** The thrown value again, with its class when it is one of ours, and its name, message and stack. */
export function fromWire(w: WireError): unknown {
  if (w.notError) return w.value;
  let err: Error;
  switch (w.name) {
    case 'SnoozeSignal':
      err = new SnoozeSignal(w.delayMs as number, w.deadlineAtMs);
      break;
    case 'RateLimitSignal':
      err = new RateLimitSignal(w.retryAfterMs as number);
      break;
    case 'WaitForSignal':
      err = new WaitForSignal(String(w.signalName), w.timeoutMs);
      break;
    case 'UnrecoverableError':
      err = new UnrecoverableError(w.message);
      break;
    case 'ValidationError':
      err = new ValidationError(w.field ?? '', '');
      break;
    case 'LeaseLostError':
      err = new LeaseLostError(w.jobId ?? '', w.token ?? '');
      break;
    case 'HandlerTimeoutError':
      err = new HandlerTimeoutError(w.timeoutMs ?? 0);
      break;
    case 'DelayqError':
      err = new DelayqError(w.message);
      break;
    default:
      err = new Error(w.message);
      err.name = w.name;
  }
  err.message = w.message;
  if (w.stack !== undefined) err.stack = w.stack;
  if (w.code !== undefined) (err as Error & { code?: unknown }).code = w.code;
  return err;
}
