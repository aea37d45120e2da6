/**
 * Mounting the dashboard in an app you already run. Each adapter hands the raw Node request to
 * the dashboard's web-standard handler; the dashboard routes on the full path, so give it the
 * `basePath` you mount it at.
 *
 *   const dashboard = createDashboard({ connection: process.env.REDIS_URL, basePath: '/admin/queues', authorize });
 *   app.use('/admin/queues', expressHandler(dashboard));                         // Express
 *   http.createServer(nodeHandler(dashboard));                                   // node:http
 *   fastify.register(fastifyPlugin(dashboard), { prefix: '/admin/queues' });     // Fastify
 *   honoApp.route('/', dashboard.app);                                            // Hono
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Dashboard } from './dashboard.js';

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A `(req, res)` listener for `http.createServer`. The Node request goes along, for the client's address. */
export function nodeHandler(dashboard: Dashboard): NodeHandler {
  const listener = getRequestListener((request, env) => dashboard.fetch(request, env));
  return (req, res) => void listener(req, res);
}

/**
 * Express middleware. Express strips the mount path from `req.url`; the dashboard wants it
 * back (`originalUrl`). A body parser that ran before it is fine when it keeps `req.rawBody`;
 * otherwise mount the dashboard before `express.json()`.
 */
export function expressHandler(dashboard: Dashboard): (req: IncomingMessage & { originalUrl?: string }, res: ServerResponse) => void {
  const handle = nodeHandler(dashboard);
  return (req, res) => {
    if (typeof req.originalUrl === 'string') req.url = req.originalUrl;
    handle(req, res);
  };
}

interface FastifyLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(type: string, parser: (req: unknown, payload: unknown, done: (err: null, body?: unknown) => void) => void): void;
  all(path: string, handler: (req: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => void): void;
}

/** A Fastify plugin: register it with `{ prefix }` equal to the dashboard's basePath. */
export function fastifyPlugin(dashboard: Dashboard): (fastify: FastifyLike) => Promise<void> {
  const handle = nodeHandler(dashboard);
  return async (fastify) => {
    // The dashboard reads the request body itself, so Fastify must leave the stream unread.
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', (_req, _payload, done) => done(null));
    const pass = (req: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => {
      reply.hijack();
      handle(req.raw, reply.raw);
    };
    fastify.all('/', pass);
    fastify.all('/*', pass);
  };
}
