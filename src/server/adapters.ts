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
import { rememberHostRequest } from './host-request.js';

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** A `(req, res)` listener for `http.createServer`. The Node request goes along, for the client's address. */
export function nodeHandler(dashboard: Dashboard): NodeHandler {
  const listener = getRequestListener((request, env) => dashboard.fetch(request, env));
  return (req, res) => void listener(req, res);
}

type ExpressRequest = IncomingMessage & { originalUrl?: string; body?: unknown; rawBody?: unknown };

/**
 * The body a parser that ran before the dashboard read from the stream (`express.json()` and
 * its kin, mounted before the dashboard as apps usually do): its raw bytes when it kept them
 * (`req.rawBody`), else what it parsed, written back as it came (JSON as JSON text, text as
 * text). Undefined when the stream is still unread.
 */
function bodyReadBefore(req: ExpressRequest): Buffer | undefined {
  if (Buffer.isBuffer(req.rawBody)) return req.rawBody;
  if (!req.readableEnded) return undefined;
  const b = req.body;
  if (Buffer.isBuffer(b)) return b;
  if (typeof b === 'string') return Buffer.from(b, 'utf8');
  if (b === undefined) return undefined;
  return Buffer.from(JSON.stringify(b), 'utf8');
}

/**
 * Express middleware. Express strips the mount path from `req.url`; the dashboard wants it
 * back (`originalUrl`). A body parser that ran before it (`app.use(express.json())` above the
 * mount) has read the stream: the dashboard then takes the body the parser kept (`req.rawBody`)
 * or parsed (`req.body`). A stream read by something that left neither is answered 500 with
 * a message that says so, never a misleading 400. The authorize hook gets Express's `req`
 * (`context.req.user`).
 */
export function expressHandler(dashboard: Dashboard): (req: ExpressRequest, res: ServerResponse) => void {
  const handle = nodeHandler(dashboard);
  return (req, res) => {
    if (typeof req.originalUrl === 'string') req.url = req.originalUrl;
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD' && req.readableEnded && !Buffer.isBuffer(req.rawBody)) {
      const body = bodyReadBefore(req);
      if (body === undefined) {
        res.statusCode = 500;
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            error: {
              code: 'body_consumed',
              message:
                'delayq dashboard: a middleware read the request body before the dashboard and kept neither req.body nor req.rawBody: mount the dashboard before it',
            },
          }),
        );
        return;
      }
      req.rawBody = body;
    }
    handle(req, res);
  };
}

interface FastifyLike {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(type: string, parser: (req: unknown, payload: unknown, done: (err: null, body?: unknown) => void) => void): void;
  all(path: string, handler: (req: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => void): void;
}

/** A Fastify plugin: register it with `{ prefix }` equal to the dashboard's basePath. The authorize hook gets Fastify's `request`. */
export function fastifyPlugin(dashboard: Dashboard): (fastify: FastifyLike) => Promise<void> {
  const handle = nodeHandler(dashboard);
  return async (fastify) => {
    // The dashboard reads the request body itself, so Fastify must leave the stream unread.
    fastify.removeAllContentTypeParsers();
    fastify.addContentTypeParser('*', (_req, _payload, done) => done(null));
    const pass = (req: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => {
      // The authorize hook gets Fastify's request (where a login plugin puts the user).
      rememberHostRequest(req.raw, req);
      reply.hijack();
      handle(req.raw, reply.raw);
    };
    fastify.all('/', pass);
    fastify.all('/*', pass);
  };
}
