/**
 * The dashboard as a Hono app: the JSON API (api.ts) under /api, the live stream, the
 * OpenAPI document, Prometheus metrics, and the pages (static files shipped in the package).
 * Mount it anywhere (adapters.ts) or run it alone (serve.ts).
 */
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { DelayqError, ConnectionError, ValidationError } from '../errors.js';
import { logSafely, type Logger } from '../logger.js';
import { DelayqMetrics } from '../metrics/metrics.js';
import { parseQueueName, parseValue, type ConnectionOptions } from '../options.js';
import type { Queue } from '../queue.js';
import { openStore } from '../store/open-store.js';
import { VERSION } from '../version.js';
import { apiRoutes } from './api.js';
import { loadAssets } from './assets.js';
import { Sampler } from './history.js';
import { publicMinute } from '../store/history-minutes.js';
import { liveStreams } from './live.js';
import { openApiDocument } from './openapi.js';
import { QueueDirectory } from './queue-directory.js';
import { HttpError, type Route } from './route.js';
import { loginBody } from './schemas.js';
import { Refusal, SECURITY_HEADERS, Security, type AuthorizeHook } from './security.js';

export interface DashboardOptions extends ConnectionOptions {
  /** The queues to show. @default every queue in the registry (`listQueues`) */
  queues?: string[];
  /** Hides every action and refuses every write. @default false */
  readOnly?: boolean;
  /** A shared secret (16+ characters): `Authorization: Bearer <token>`, or typed once into the login page. */
  token?: string;
  /** The host app's access rule, told reads from writes; see AuthorizeHook. */
  authorize?: AuthorizeHook;
  /** Signs the session and CSRF cookies. @default random per process */
  secret?: string;
  /** Origins besides the request's own that may send writes (a proxy that rewrites Host). */
  allowedOrigins?: string[];
  /** Where the dashboard is mounted in the host app, e.g. '/admin/queues'. @default '' */
  basePath?: string;
  /**
   * Hides payload fields before any page or API answer shows them (a schedule's data too, with
   * id `schedule:<name>`). While it is set, search matches ids only and payload filters are refused.
   */
  redact?: (data: unknown, job: { queue: string; id: string }) => unknown;
  /** Most jobs one bulk action may touch. @default 1000 */
  maxBulk?: number;
  /** How often the counts are sampled for the charts and the live stream. @default 2000 */
  sampleMs?: number;
  /**
   * Serve Prometheus metrics at /metrics (needs prom-client): true, false, or options.
   * `perShard` adds the per-shard series of sharded queues (`delayq_shard_jobs`,
   * `delayq_shard_oldest_ready_age_seconds`; one stats call per shard per scrape, cached 1 s).
   * @default true (with perShard)
   */
  metrics?: boolean | { perShard?: boolean };
  /**
   * Tells clients apart for the cost of a wrong token (each address waits a second per wrong
   * try, one try at a time). By default the TCP peer's address; behind a reverse proxy every
   * client has the proxy's, so give the header your proxy sets, e.g.
   * `(req) => req.headers.get('x-real-ip') ?? undefined`. Never trust a header a client can set
   * itself: a guesser would name a new address per try.
   */
  clientAddress?: (request: Request) => string | undefined;
}

/**
 * Knobs for tests, not part of the API: they keep the suite fast where it does not test the
 * default itself.
 */
export interface DashboardTuning {
  /** What a wrong token costs. @default 1000 */
  wrongTokenDelayMs?: number;
  /** Most tries with a token one address may have waiting at once. @default 16 */
  maxWaitingTries?: number;
  /** Most addresses with wrong tries pending kept apart. @default 10000 */
  guessingClients?: number;
  /** Queue objects kept open. @default 1000 */
  queueCache?: number;
}

export interface AuditLine {
  audit: true;
  user: string;
  /** A stable code for what was done: `job.cancel`, `dead.retry`, `queue.drain`… (docs/dashboard.md lists them). */
  action: string;
  /** The same in words, for a person: "Cancels a scheduled job". */
  summary: string;
  queue: string | undefined;
  target: string | undefined;
  count: number | undefined;
  ip: string | undefined;
}

export interface Dashboard {
  /** The Hono app (mount it with `app.route(basePath, dashboard.app)` or use an adapter). */
  readonly app: Hono;
  /**
   * The web-standard handler: Request in, Response out. `env` is what the host's server passes
   * along (@hono/node-server: the Node request and response), from which the client's address
   * is read.
   */
  fetch(request: Request, env?: unknown): Response | Promise<Response>;
  /** Stops sampling and closes the connection the dashboard opened. */
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;
/** The queue /readyz reads (read-only, nothing is written): a name no application uses. */
export const READY_PROBE_QUEUE = 'delayq-readyz-probe';
/** How long /readyz waits for Redis before it answers 503. */
const READY_TIMEOUT_MS = 2_000;
/** Queue objects kept open (a few KB each); see queue-directory.ts. */
const QUEUE_CACHE = 1000;

function errorJson(c: Context, status: number, code: string, message: string, field?: string): Response {
  return c.json({ error: field === undefined ? { code, message } : { code, message, field } }, status as 400);
}

function normaliseBase(base: string | undefined): string {
  if (base === undefined || base === '' || base === '/') return '';
  if (!/^\/[A-Za-z0-9._~\-/]*[^/]$/.test(base)) throw new TypeError(`basePath must look like /admin/queues (got ${JSON.stringify(base)})`);
  return base;
}

export function createDashboard(opts: DashboardOptions = {}, tuning: DashboardTuning = {}): Dashboard {
  const base = normaliseBase(opts.basePath);
  const maxBulk = opts.maxBulk ?? 1000;
  if (!Number.isInteger(maxBulk) || maxBulk < 1 || maxBulk > 100_000) throw new TypeError('maxBulk must be a whole number from 1 to 100000');
  const allowed = opts.queues?.map((q) => parseQueueName(q));
  const security = new Security({
    token: opts.token,
    authorize: opts.authorize,
    secret: opts.secret,
    allowedOrigins: opts.allowedOrigins,
    cookiePath: base || '/',
    logger: opts.logger,
    clientAddress: opts.clientAddress,
    wrongToken: { delayMs: tuning.wrongTokenDelayMs ?? 1000, maxWaiting: tuning.maxWaitingTries ?? 16, maxClients: tuning.guessingClients ?? 10_000 },
  });
  const logger: Logger | undefined = opts.logger;
  const { store, owned } = openStore(opts, { connectTimeoutMs: 5_000, commandTimeoutMs: 5_000 });
  const directory = new QueueDirectory(store, allowed, tuning.queueCache ?? QUEUE_CACHE);
  const names = () => directory.names();
  const sampler = new Sampler(
    names,
    (n) => store.stats(n, 60_000),
    opts.sampleMs ?? 2000,
    async (n) => (await store.history(n, 60)).minutes.map(publicMinute),
  );
  const routes = apiRoutes({ sampler, maxBulk, redact: opts.redact, sealer: security });
  const assets = loadAssets();
  const live = liveStreams(sampler, allowed);
  let metrics: Promise<DelayqMetrics | undefined> | undefined;
  const observed = new WeakSet<Queue<unknown>>();

  const audit = (line: AuditLine) => {
    if (logger) logSafely(logger, 'info', line, `delayq dashboard: ${line.summary}`);
    // Without a logger the audit trail still exists: one JSON line per write on stderr.
    else process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...line })}\n`);
  };

  const app = new Hono().basePath(base);
  app.use('*', async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v);
  });
  app.use('*', async (c, next) => {
    security.checkHost(c);
    await next();
  });
  app.use('/api/*', bodyLimit({ maxSize: BODY_LIMIT, onError: (c) => errorJson(c, 413, 'too_large', `the body is over ${BODY_LIMIT} bytes`) }));

  app.onError((err, c) => {
    if (err instanceof Refusal) {
      // A full line of wrong tries: one wrong try's cost later there is room again.
      if (err.status === 429) c.header('retry-after', '1');
      return errorJson(c, err.status, err.code, err.message);
    }
    if (err instanceof HttpError) return errorJson(c, err.status, err.code, err.message, err.field);
    if (err instanceof ValidationError) return errorJson(c, 400, 'validation', err.message, err.field);
    if (err instanceof ConnectionError) return errorJson(c, 503, 'unavailable', err.message);
    if (err instanceof DelayqError) return errorJson(c, 500, 'error', err.message);
    logSafely(logger, 'error', { err }, 'delayq dashboard: a request failed');
    return errorJson(c, 500, 'internal', 'internal error (see the server log)');
  });
  app.notFound((c) => errorJson(c, 404, 'not_found', `no route ${c.req.method} ${new URL(c.req.url).pathname}`));

  // ---- health (no authentication: a probe carries no token; the answers name no address or queue) ----
  // Liveness: the process answers HTTP. Readiness: one read-only script of the library on a queue
  // of no one's (READY_PROBE_QUEUE) went through, so Redis is reachable and the scripts run (the
  // call loads the library when the server lacks it, as any call does).
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      // Bounded: a probe that hangs for the store's 5 s connect timeout is a probe timed out.
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new ConnectionError('redis', `no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      });
      await Promise.race([store.rateStatus(READY_PROBE_QUEUE), late]);
      return c.json({ status: 'ready', checks: { redis: 'ok', scripts: 'ok' } });
    } catch (err) {
      const redisDown = err instanceof ConnectionError;
      logSafely(logger, 'warn', { err }, 'delayq dashboard: /readyz failed');
      return c.json({ status: 'not ready', checks: { redis: redisDown ? 'unreachable' : 'ok', scripts: redisDown ? 'unknown' : 'failed' } }, 503);
    } finally {
      clearTimeout(timer);
    }
  });

  // ---- session ----
  app.get('/api/session', async (c) => {
    const { user } = await security.authorize(c, 'read');
    return c.json({
      version: VERSION,
      readOnly: opts.readOnly ?? false,
      canWrite: !opts.readOnly && (await security.canWrite(c)),
      user,
      csrfToken: security.csrfToken(c),
      maxBulk,
      redacted: opts.redact !== undefined,
      queues: allowed,
    });
  });
  app.post('/api/login', async (c) => {
    security.checkSameOrigin(c);
    if (!security.usesLogin) throw new HttpError(404, 'not_found', 'this dashboard has no token to sign in with');
    const body = parseValue(loginBody, await readJson(c), 'body');
    await security.login(c, body.token);
    return c.json({ ok: true });
  });
  app.post('/api/logout', (c) => {
    security.checkSameOrigin(c);
    security.logout(c);
    return c.json({ ok: true });
  });

  // ---- the API table ----
  for (const r of routes) mount(r);

  function mount(r: Route): void {
    app.on(r.method.toUpperCase(), `/api${r.path}`, async (c) => {
      const { user, viaBearer } = await security.authorize(c, r.action, r.code);
      if (r.action === 'write') {
        if (opts.readOnly) throw new Refusal(403, 'read_only', 'the dashboard is read-only');
        security.checkSameOrigin(c);
        security.checkCsrf(c, viaBearer);
      }
      const params = c.req.param() as Record<string, string>;
      // Bad input is named before the queue is looked up; a queue that does not exist is a 404
      // before anything is read or written for it.
      const query = r.query ? parseValue(r.query, c.req.query(), 'query') : undefined;
      const body = r.body ? parseValue(r.body, await readJson(c), 'body') : undefined;
      const q = params.queue === undefined ? (undefined as unknown as Queue<unknown>) : await directory.find(params.queue, { create: r.createsQueue });
      const input = { c, queue: q, params, query, body };
      const result = await r.handler(input);
      if (r.createsQueue && q) directory.created(q.name);
      if (r.action === 'write') {
        const facts = r.audit?.(result, input) ?? {};
        audit({
          audit: true,
          user,
          action: r.code,
          summary: r.summary.split(/[:(]/)[0]!.trim(),
          queue: q?.name,
          target: facts.target,
          count: facts.count,
          ip: security.clientAddress(c),
        });
      }
      return c.json(result as object);
    });
  }

  app.get('/api/live', async (c) => {
    await security.authorize(c, 'read');
    const name = c.req.query('queue');
    return live(c, name === undefined ? undefined : await directory.find(name));
  });

  app.get('/openapi.json', async (c) => {
    await security.authorize(c, 'read');
    return c.json(openApiDocument(routes, base, VERSION));
  });

  app.get('/metrics', async (c) => {
    await security.authorize(c, 'read');
    if (opts.metrics === false) throw new HttpError(404, 'not_found', 'metrics are off');
    const perShard = typeof opts.metrics === 'object' ? opts.metrics.perShard !== false : true;
    metrics ??= import('prom-client').then(
      async (prom) => DelayqMetrics.create({ registry: new prom.Registry(), perShard }),
      () => undefined,
    );
    const m = await metrics;
    if (!m) throw new HttpError(503, 'unavailable', 'install prom-client to serve metrics');
    // Each Queue object is observed once (observing adds a listener to it); the registry's
    // names only, so a request cannot add a series.
    for (const n of await names()) {
      const q = directory.open(n);
      if (!observed.has(q)) {
        observed.add(q);
        m.observeQueue(q);
      }
    }
    return c.body(await m.registry.metrics(), 200, { 'content-type': m.registry.contentType });
  });

  // ---- the pages ----
  // The page lives at `<base>/` with the slash, so its relative links (assets/…, api/…) resolve
  // under the mount; Hono folds `<base>/` into `<base>`, hence the path is matched by hand.
  app.get('*', async (c, next) => {
    const path = new URL(c.req.url).pathname;
    if (path === `${base}/`) return assets.page(c);
    if (base !== '' && path === base) return c.redirect(`${base}/`);
    await next();
  });
  app.get('/assets/:file', (c) => assets.answer(c, c.req.param('file')));
  app.get('/assets/:version/:file', (c) => assets.answer(c, c.req.param('file'), c.req.param('version')));

  return {
    app,
    fetch: (request, env) => app.fetch(request, env),
    async close() {
      sampler.stop();
      await directory.close();
      if (owned) await store.close();
    },
  };
}

/** The JSON body of a write; an empty body is `{}`, anything but JSON is refused. */
async function readJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/json\b/i.test(type)) throw new HttpError(400, 'content_type', 'send the body as application/json');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'json', `the body is not JSON: ${(err as Error).message}`, 'body');
  }
}
