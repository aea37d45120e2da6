/**
 * One API route, described once: its method and path, what it needs (read or write), its
 * input schemas and its output schema. The app (dashboard.ts) mounts the table, the OpenAPI
 * document (openapi.ts) is generated from it, and the audit log names writes by `code` (a stable
 * code such as `job.cancel`), with `summary` beside it for a person.
 */
import type { Context } from 'hono';
import type * as z from 'zod';
import type { Queue } from '../queue.js';
import type { Action } from './security.js';

export interface HandlerInput<Q, B> {
  c: Context;
  /** The `:queue` of the path, opened (routes without one get undefined; 404 before the handler for one that does not exist). */
  queue: Queue<unknown>;
  params: Record<string, string>;
  query: Q;
  body: B;
}

/** What a write tells the audit log: the target and how many jobs it touched. */
export interface AuditFacts {
  target?: string;
  count?: number;
}

export interface Route<Q = unknown, B = unknown> {
  method: 'get' | 'post' | 'delete';
  /** Hono path under /api, e.g. `/queues/:queue/jobs/:id`. */
  path: string;
  /** A stable name for the operation, e.g. `job.cancel` or `dead.retry`: the audit line's `action` and the OpenAPI operationId. */
  code: string;
  summary: string;
  tag: 'queues' | 'jobs' | 'dead set' | 'schedules' | 'groups' | 'session';
  action: Action;
  /** The route may name a queue that does not exist yet (adding its first job); every other answers 404 for one. */
  createsQueue?: true;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /** The answer's schema, for the OpenAPI document. */
  response: z.ZodType;
  /** Status codes besides 200 the route answers with, for the document. */
  errors?: number[];
  handler(input: HandlerInput<Q, B>): Promise<unknown>;
  /** For writes: what the audit line says about the result. */
  audit?(result: unknown, input: HandlerInput<Q, B>): AuditFacts;
}

/** Keeps each route's input types checked against its handler while the table stays one array. */
export function route<Q = undefined, B = undefined>(r: Route<Q, B>): Route<unknown, unknown> {
  return r as unknown as Route<unknown, unknown>;
}

/** An error with an HTTP status, for answers that are not the library's own errors. */
export class HttpError extends Error {
  constructor(
    readonly status: 400 | 403 | 404 | 409 | 413 | 422 | 503,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/** Why a request was refused before it reached its route: HTTP status and a message for the JSON error. */
export class Refusal extends Error {
  constructor(
    readonly status: 401 | 403 | 421 | 429,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
