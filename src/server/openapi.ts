/**
 * The OpenAPI 3.1 document, generated from the route table and its zod schemas (zod's own
 * JSON Schema output, which OpenAPI 3.1 takes as is).
 */
import * as z from 'zod';
import type { Route } from './route.js';
import { errorBody } from './schemas.js';

type JsonSchema = Record<string, unknown>;

function schemaOf(s: z.ZodType): JsonSchema {
  const out = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete out.$schema;
  return out;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad input; `error.field` names the field',
  401: 'Not signed in',
  403: 'Refused: read-only, cross-site, CSRF token missing, or not allowed',
  404: 'No such job, schedule or queue',
  409: 'The job is in a state the action does not fit, or more jobs match than were confirmed',
  413: 'The body is too large',
  422: 'Over the bulk cap',
  429: 'Too many tries with a wrong token from this address are waiting',
  503: 'Redis is unreachable',
};

export function openApiDocument(routes: readonly Route[], base: string, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const error = schemaOf(errorBody);
  for (const r of routes) {
    const path = `${base}/api${r.path.replace(/:(\w+)/g, '{$1}')}`;
    const parameters: Record<string, unknown>[] = [];
    for (const m of r.path.matchAll(/:(\w+)/g)) parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
    if (r.query) {
      const q = schemaOf(r.query) as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
      }
    }
    const responses: Record<string, unknown> = { 200: { description: 'OK', content: { 'application/json': { schema: schemaOf(r.response) } } } };
    const codes = new Set([...(r.errors ?? []), 401, 429, 503, ...(r.action === 'write' ? [403] : [])]);
    for (const code of [...codes].sort()) responses[code] = { description: STATUS_TEXT[code] ?? 'Error', content: { 'application/json': { schema: error } } };
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method}${r.path.replace(/:(\w+)/g, 'By-$1').replace(/[^A-Za-z0-9]+(.)?/g, (_m, ch: string | undefined) => (ch ? ch.toUpperCase() : ''))}`,
      parameters,
      responses,
      'x-delayq-action': r.action,
      'x-delayq-code': r.code,
    };
    // Every other route answers 404 for a queue that does not exist.
    if (r.createsQueue) op['x-delayq-creates-queue'] = true;
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: schemaOf(r.body) } } };
    if (r.action === 'write') op.description = 'Needs the X-CSRF-Token header (from GET /api/session) unless sent with a bearer token.';
    paths[path] = { ...paths[path], [r.method]: op };
  }
  const health = (summary: string, description: string, ok: JsonSchema, down?: JsonSchema) => ({
    get: {
      summary,
      description,
      tags: ['health'],
      operationId: summary === 'Liveness' ? 'getHealthz' : 'getReadyz',
      security: [],
      responses: {
        200: { description: 'OK', content: { 'application/json': { schema: ok } } },
        ...(down ? { 503: { description: 'Not ready: Redis is unreachable or the scripts failed', content: { 'application/json': { schema: down } } } } : {}),
      },
    },
  });
  const checks = {
    type: 'object',
    properties: { redis: { enum: ['ok', 'unreachable'] }, scripts: { enum: ['ok', 'failed', 'unknown'] } },
    required: ['redis', 'scripts'],
  };
  paths[`${base}/healthz`] = health('Liveness', 'The process answers HTTP. No authentication.', {
    type: 'object',
    properties: { status: { const: 'ok' } },
    required: ['status'],
  });
  paths[`${base}/readyz`] = health(
    'Readiness',
    'Redis is reachable and the scripts run: one read-only script call. No authentication; the answer names no address or queue.',
    { type: 'object', properties: { status: { const: 'ready' }, checks }, required: ['status', 'checks'] },
    { type: 'object', properties: { status: { const: 'not ready' }, checks }, required: ['status', 'checks'] },
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'delayq dashboard API',
      version,
      description: 'Delayed jobs on Redis sorted sets. Errors are { error: { code, message, field? } }.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, session: { type: 'apiKey', in: 'cookie', name: 'dq_session' } },
    },
    security: [{ bearer: [] }, { session: [] }, {}],
    paths,
  };
}
