/**
 * Mounting the dashboard in an existing app: node:http, Express and Fastify, each under a base
 * path, each carrying a write (a JSON body, cookies and the CSRF token) through to the queue.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import { MemoryStore, Queue } from '../../src/index.js';
import { expressHandler, fastifyPlugin, nodeHandler } from '../../src/server/adapters.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { uniqueName } from '../helpers/names.js';
import { ApiClient } from './client.js';

const BASE = '/admin/queues';
const closers: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const c of closers) await c().catch(() => {});
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Reads the page and a queue, adds a job through the mount, and checks the queue has it. */
async function roundTrip(origin: string, store: MemoryStore): Promise<void> {
  const name = uniqueName('mount');
  const q = new Queue(name, { store });
  const api = new ApiClient(origin, origin, BASE);
  const page = await api.get('/');
  assert.equal(page.status, 200);
  assert.match(String(page.body), /<html/i);
  assert.equal((await api.session()).status, 200);
  const added = await api.post(`/api/queues/${name}/jobs`, { data: { via: 'mount' }, opts: { id: 'm1' } });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  assert.deepEqual((await q.get('m1'))?.data, { via: 'mount' });
  const bare = await fetch(`${origin}${BASE}`, { redirect: 'manual' });
  assert.equal(bare.status, 302, 'the bare mount path redirects to the page');
  assert.equal(bare.headers.get('location'), `${BASE}/`);
}

test('node:http', async () => {
  const store = new MemoryStore();
  const dash = createDashboard({ store, basePath: BASE });
  closers.push(() => dash.close());
  await roundTrip(await listen(createServer(nodeHandler(dash))), store);
});

test('Express, with a JSON body parser elsewhere in the app', async () => {
  const store = new MemoryStore();
  const dash = createDashboard({ store, basePath: BASE });
  closers.push(() => dash.close());
  const app = express();
  app.use(BASE, expressHandler(dash));
  app.use(express.json());
  app.post('/other', (req, res) => {
    res.json({ echoed: req.body });
  });
  const origin = await listen(createServer(app));
  await roundTrip(origin, store);
  const other = await fetch(`${origin}/other`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
  assert.deepEqual(await other.json(), { echoed: { a: 1 } }, "the host app's own routes are untouched");
});

test('Fastify, as a plugin with a prefix', async () => {
  const store = new MemoryStore();
  const dash = createDashboard({ store, basePath: BASE });
  closers.push(() => dash.close());
  const app = Fastify();
  await app.register(fastifyPlugin(dash) as never, { prefix: BASE });
  app.post('/other', async (req) => ({ echoed: req.body }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => app.close());
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await roundTrip(origin, store);
  const other = await fetch(`${origin}/other`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
  assert.deepEqual(await other.json(), { echoed: { a: 1 } }, "the host app's own routes are untouched");
});

test('Express, mounted after express.json() (the usual order): writes work, and the hook reads req.user', async () => {
  const store = new MemoryStore();
  const seen: unknown[] = [];
  const dash = createDashboard({
    store,
    basePath: BASE,
    // The app's login put the user on Express's req; the hook reads it from context.req.
    authorize: (_request, _action, context) => {
      const user = (context.req as { user?: { email: string } } | undefined)?.user;
      seen.push(user);
      return user?.email ?? false;
    },
  });
  closers.push(() => dash.close());
  const app = express();
  app.use(express.json());
  app.use((req, _res, next) => {
    // The app's login: everyone is ann, unless the request says it signed in as nobody.
    if (!req.headers['x-test-anonymous']) (req as unknown as { user: { email: string } }).user = { email: 'ann@example.com' };
    next();
  });
  app.use(BASE, expressHandler(dash));
  // The app's own error handler (Express's default one prints the stack).
  app.use((err: Error & { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(err.status ?? 500).json({ error: { message: err.message } });
  });
  const origin = await listen(createServer(app));
  const name = uniqueName('after-json');
  const q = new Queue(name, { store });
  const api = new ApiClient(origin, origin, BASE);
  assert.equal((await api.session()).status, 200);
  const added = await api.post(`/api/queues/${name}/jobs`, { data: { via: 'after json' }, opts: { id: 'j1' } });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  assert.deepEqual((await q.get('j1'))?.data, { via: 'after json' });
  assert.ok(
    seen.some((u) => (u as { email?: string } | undefined)?.email === 'ann@example.com'),
    'the hook saw req.user',
  );
  const nobody = await api.get(`/api/queues/${name}/jobs?state=scheduled`, { 'x-test-anonymous': '1' });
  assert.equal(nobody.status, 401, 'no user: refused');
  // Bad JSON is still named as bad JSON (express.json() answers it before the dashboard).
  const bad = await fetch(`${origin}${BASE}/api/queues/${name}/pause`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin', origin },
    body: '{"a":',
  });
  assert.equal(bad.status, 400);
});

test('Express: a stream read by a middleware that kept no body is a clear 500, not a misleading 400', async () => {
  const store = new MemoryStore();
  const dash = createDashboard({ store, basePath: BASE });
  closers.push(() => dash.close());
  const app = express();
  app.use((req, _res, next) => {
    req.on('end', () => next());
    req.resume();
  });
  app.use(BASE, expressHandler(dash));
  const origin = await listen(createServer(app));
  const name = uniqueName('swallowed');
  new Queue(name, { store });
  const api = new ApiClient(origin, origin, BASE);
  await api.session();
  const a = await api.post(`/api/queues/${name}/jobs`, { data: 1 });
  assert.equal(a.status, 500);
  assert.match(a.body.error.message, /read the request body before the dashboard/);
});

test('Fastify: the hook gets Fastify request', async () => {
  const store = new MemoryStore();
  let seen: unknown;
  const dash = createDashboard({
    store,
    basePath: BASE,
    authorize: (_request, _action, context) => {
      seen = context.req;
      return true;
    },
  });
  closers.push(() => dash.close());
  const app = Fastify();
  await app.register(fastifyPlugin(dash) as never, { prefix: BASE });
  await app.listen({ port: 0, host: '127.0.0.1' });
  closers.push(() => app.close());
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  assert.equal((await new ApiClient(origin, origin, BASE).session()).status, 200);
  assert.ok(seen && typeof seen === 'object' && 'raw' in seen, 'the Fastify request, with its raw Node request');
});
