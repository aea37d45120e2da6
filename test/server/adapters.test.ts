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
