/**
 * OpenTelemetry tracing through @opentelemetry/api only: spans go to whatever SDK the
 * application registered, and nowhere without one. Opt-in (`tracing: true` or a Tracer), so the
 * hot path pays nothing by default.
 *
 * Follows the messaging semantic conventions: a PRODUCER span per add (per addBulk call, with
 * the batch size), whose context travels inside the job; a CONSUMER span per processing attempt,
 * linked to it. A link, not a parent: a delayed job may run hours after it was added, and its
 * processing is a trace of its own.
 *
 * @opentelemetry/api is an optional peer dependency: it is loaded on the first Queue or Worker
 * that asks for tracing, never before, and the public types name only the structural
 * TracerLike / SpanLike below, so a TypeScript user without it compiles too.
 */
import { createRequire } from 'node:module';
import type { Link, Tracer } from '@opentelemetry/api';
import { VERSION } from './version.js';

/** What delayq needs of an OpenTelemetry `Tracer` (any `Tracer` from @opentelemetry/api fits). */
export interface TracerLike {
  startSpan(name: string, options?: { kind?: number; links?: unknown[]; attributes?: Record<string, unknown> }): SpanLike;
}

/** What delayq needs of an OpenTelemetry `Span`. */
export interface SpanLike {
  end(): void;
  recordException(exception: Error | string): void;
  setStatus(status: { code: number; message?: string }): unknown;
}

export type TracingOption = boolean | TracerLike | undefined;

const SYSTEM = 'delayq';
/** SpanStatusCode.ERROR; fixed by the OpenTelemetry specification. */
const STATUS_ERROR = 2;

type OtelApi = typeof import('@opentelemetry/api');
let otel: OtelApi | undefined;

/** Loads @opentelemetry/api on first use; a clear error when it is not installed. */
function api(): OtelApi {
  if (!otel) {
    try {
      // require, not import: Queue and Worker are built synchronously. The API keeps its state on
      // globalThis, so its CommonJS build shares the application's provider and propagator.
      otel = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    } catch (err) {
      if ((err as { code?: string }).code !== 'MODULE_NOT_FOUND') throw err;
      throw new Error('delayq tracing needs @opentelemetry/api: npm install @opentelemetry/api');
    }
  }
  return otel;
}

export class Tracing {
  readonly #tracer: Tracer;
  readonly #api: OtelApi;

  constructor(tracer: TracerLike) {
    this.#api = api();
    this.#tracer = tracer as Tracer;
  }

  static from(option: TracingOption): Tracing | undefined {
    if (!option) return undefined;
    return new Tracing(option === true ? api().trace.getTracer(SYSTEM, VERSION) : option);
  }

  /** Runs `send` inside a producer span; `inject` gives the text to store with each job. */
  async produce<R>(queue: string, ids: readonly string[], send: (carrier: string | undefined) => Promise<R>): Promise<R> {
    const { context, propagation, SpanKind, trace } = this.#api;
    const span = this.#tracer.startSpan(`send ${queue}`, {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': SYSTEM,
        'messaging.destination.name': queue,
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'add',
        ...(ids.length === 1 ? { 'messaging.message.id': ids[0] } : { 'messaging.batch.message_count': ids.length }),
      },
    });
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), carrier);
    const text = Object.keys(carrier).length > 0 ? JSON.stringify(carrier) : undefined;
    try {
      return await send(text);
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  }

  /** Starts the consumer span of one processing attempt; `run` executes with it active. */
  process<R>(queue: string, job: { id: string; attempt: number; dueAtMs: number }, carrier: string | undefined, run: () => R): { span: SpanLike; result: R } {
    const { context, propagation, SpanKind, trace } = this.#api;
    const links: Link[] = [];
    const producer = carrier === undefined ? undefined : trace.getSpanContext(propagation.extract(context.active(), parseCarrier(carrier)));
    if (producer) links.push({ context: producer });
    const span = this.#tracer.startSpan(`process ${queue}`, {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        'messaging.system': SYSTEM,
        'messaging.destination.name': queue,
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.message.id': job.id,
        'messaging.delayq.attempt': job.attempt,
        'messaging.delayq.due_at_ms': job.dueAtMs,
      },
    });
    const result = context.with(trace.setSpan(context.active(), span), run);
    return { span, result };
  }
}

export function fail(span: SpanLike, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: STATUS_ERROR, message: err instanceof Error ? err.message : String(err) });
}

function parseCarrier(text: string): Record<string, string> {
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, string>) : {};
  } catch {
    // A bad carrier only loses the link, never the job.
    return {};
  }
}
