/**
 * The dashboard's API under abuse, route by route. The routes come from the OpenAPI document
 * (checked against the route table, so a route cannot be left out of either), and each is asked
 * what a guesser, a cross-site page, a reader who may not write, a reader who may not see
 * payloads, an oversized or forged input and a typo'd queue name get:
 *
 * - no credential, or a wrong token: 401 (the wrong-token cost is cut short here: its own tests
 *   hold the real one);
 * - a write from another site, with the right token: 403;
 * - a write by a read-only dashboard or by a reader the hook lets read only: 403;
 * - with redaction on: no answer of any route holds a payload;
 * - a queue name, id or schedule name over its bound, a query value or a body over its bound: 400
 *   or 413; a forged cursor: 400; a queue that does not exist: 404;
 *
 * and none of it wrote anything. On both stores.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { listQueues, Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { apiRoutes } from '../../src/server/api.js';
import { createDashboard, type Dashboard, type DashboardOptions } from '../../src/server/dashboard.js';
import { uniqueName } from '../helpers/names.js';
import { until } from '../helpers/wait.js';
import { serverBackends, type Backend } from './backends.js';

const TOKEN = 'abuse-suite-token-0123456789';
const SECRET = 'SECRET-4242-CARD';
const ORIGIN = 'http://127.0.0.1:8787';
/** The wrong-token cost, cut short (wrong-token.test.ts holds the real one). */
const TUNING = { wrongTokenDelayMs: 2 };

/** Bodies that a write route takes as valid; a route without one here gets `{}`. */
const BODIES: Record<string, unknown> = {
  'post /api/queues/{queue}/jobs': { data: { card: SECRET }, opts: { delay: 60_000 } },
  'post /api/queues/{queue}/jobs/{id}/reschedule': { delay: 120_000 },
  'post /api/queues/{queue}/cancel': { ids: ['job-1'] },
  'post /api/queues/{queue}/jobs/{id}/cancel': { running: true, reason: 'abuse' },
  'post /api/queues/{queue}/jobs/{id}/fail': { reason: 'abuse', dead: true },
  'post /api/queues/{queue}/jobs/{id}/signal': { name: 'payment', data: { card: SECRET } },
  'post /api/queues/{queue}/dead/retry': { all: true, expect: 10 },
  'post /api/queues/{queue}/dead/purge': { all: true, expect: 10 },
  'post /api/queues/{queue}/completed/purge': { all: true, expect: 10 },
  'post /api/queues/{queue}/drain': { expect: 10 },
  'post /api/queues/{queue}/schedules/{name}': { every: 3_600_000, data: { card: SECRET } },
  'post /api/queues/{queue}/limits': { concurrency: 5, groupConcurrency: 2, rateLimit: { max: 100, perMs: 1000 }, groupRateLimit: null },
  'post /api/queues/{queue}/groups/{id}/limits': { concurrency: 3, rateLimit: { max: 10, perMs: 60_000 } },
};

interface RouteCase {
  method: string;
  /** The OpenAPI path, e.g. /api/queues/{queue}/jobs/{id}. */
  template: string;
  action: 'read' | 'write';
  createsQueue: boolean;
  /** Query parameters: name → the value a valid request sends (required ones only get one). */
  query: Record<string, string>;
  queryNames: string[];
  hasBody: boolean;
}

/** Endpoints outside the route table that need credentials too. */
const OTHER_ENDPOINTS = ['/api/session', '/api/live', '/metrics', '/openapi.json'];

interface Ask {
  headers?: Record<string, string>;
  body?: unknown;
  rawBody?: string;
}

/** An operation of the OpenAPI document, as far as this suite reads it. */
interface Operation {
  parameters?: { name: string; in: string; required: boolean; schema: { enum?: string[] } }[];
  requestBody?: unknown;
  'x-delayq-action': 'read' | 'write';
  'x-delayq-creates-queue'?: boolean;
}

/** An answer's JSON, as far as this suite reads it. */
interface Body {
  error: { code: string; message: string; field?: string };
  canWrite?: boolean;
  csrfToken?: string;
  paths?: Record<string, Record<string, Operation>>;
}

function ask(dash: Dashboard, method: string, path: string, opts: Ask = {}): Promise<{ status: number; text: string; json: Body }> {
  const headers: Record<string, string> = { host: '127.0.0.1:8787', 'sec-fetch-site': 'same-origin' };
  if (method !== 'GET') headers.origin = ORIGIN;
  const body = opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  Object.assign(headers, opts.headers);
  return Promise.resolve(dash.fetch(new Request(`${ORIGIN}${path}`, { method: method.toUpperCase(), headers, body }))).then(async (res) => {
    const text = await res.text();
    let json = undefined as unknown as Body;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON (metrics, pages): `text` is the answer
    }
    return { status: res.status, text, json };
  });
}

const bearer = { authorization: `Bearer ${TOKEN}` };

/** The fixture: a queue with a scheduled job, a dead one, a kept completed one, a schedule and a group's limit, every payload holding SECRET. */
async function seed(backend: Backend): Promise<{ name: string; q: Queue }> {
  const name = uniqueName('abuse');
  const q = backend.track(new Queue(name, backend.options()));
  await q.setRetention({ completed: { count: 10 } });
  await q.add({ card: SECRET, n: 1 }, { id: 'dead-1', attempts: 1 });
  await q.add({ card: SECRET, n: 2 }, { id: 'done-1' });
  const w = new Worker(
    name,
    async (job) => {
      if (job.id === 'dead-1') throw new UnrecoverableError('declined');
      return { ok: true };
    },
    { ...backend.options(), concurrency: 2 },
  );
  try {
    await until(async () => {
      const s = await q.stats();
      return s.dead === 1 && s.completed === 1;
    }, 'the dead and the completed job');
  } finally {
    await w.close();
  }
  await q.add({ card: SECRET, n: 3 }, { id: 'job-1', delay: 3_600_000 });
  await q.schedules.upsert('nightly', { cron: '0 2 * * *', data: { card: SECRET } });
  // A group with a state of its own, so that "nothing written" covers the groups too.
  await q.groups.setLimits('tenant-9', { concurrency: 4, rateLimit: { max: 20, perMs: 60_000 } });
  await q.setLimits({ groupRateLimit: { max: 5, perMs: 1000 } });
  return { name, q };
}

/** What a queue holds, to show nothing was written. */
async function snapshot(q: Queue): Promise<unknown> {
  const s = await q.stats();
  const jobs = await Promise.all(['job-1', 'dead-1', 'done-1'].map(async (id) => (await q.get(id))?.state));
  return {
    scheduled: s.scheduled,
    dead: s.dead,
    completed: s.completed,
    paused: s.paused,
    jobs,
    schedules: (await q.schedules.list()).map((x) => x.name),
    limits: await q.limits(),
    groups: (await q.groups.list()).groups,
  };
}

/** A concrete path: the fixture's queue, job and schedule, or the values given. */
function fill(template: string, values: { queue: string; id?: string; name?: string }): string {
  return template
    .replace('{queue}', encodeURIComponent(values.queue))
    .replace('{id}', encodeURIComponent(values.id ?? 'job-1'))
    .replace('{name}', encodeURIComponent(values.name ?? 'nightly'));
}

function withQuery(path: string, query: Record<string, string>): string {
  const qs = new URLSearchParams(query).toString();
  return qs ? `${path}?${qs}` : path;
}

for (const backend of serverBackends()) {
  describe(`the API under abuse (${backend.name})`, () => {
    let routes: RouteCase[] = [];
    const dashboards = new Map<string, Dashboard>();
    const dashboard = (key: string, extra: Partial<DashboardOptions> = {}): Dashboard => {
      let d = dashboards.get(key);
      if (!d) {
        d = backend.track(createDashboard({ ...backend.options(), sampleMs: 60_000, logger: quiet, ...extra }, TUNING));
        dashboards.set(key, d);
      }
      return d;
    };
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const secured = () => dashboard('token', { token: TOKEN });

    before(async () => {
      const doc = await ask(secured(), 'GET', '/openapi.json', { headers: bearer });
      assert.equal(doc.status, 200);
      for (const [template, ops] of Object.entries(doc.json.paths!)) {
        // The probes answer without credentials by design (test/server/health.test.ts holds them to it).
        if (template.endsWith('/healthz') || template.endsWith('/readyz')) continue;
        for (const [method, op] of Object.entries(ops)) {
          const params = op.parameters ?? [];
          const queryParams = params.filter((p) => p.in === 'query');
          const query: Record<string, string> = {};
          for (const p of queryParams) if (p.required) query[p.name] = p.schema.enum?.[0] ?? 'x';
          if (template.endsWith('/search')) query.text = 'job';
          routes.push({
            method,
            template,
            action: op['x-delayq-action'],
            createsQueue: op['x-delayq-creates-queue'] === true,
            query,
            queryNames: queryParams.map((p) => p.name),
            hasBody: op.requestBody !== undefined,
          });
        }
      }
      routes = routes.sort((a, b) => (a.action === b.action ? 0 : a.action === 'read' ? -1 : 1));
    });

    test('the OpenAPI document lists every route of the table, and the suite below covers them all', () => {
      const table = apiRoutes({ sampler: undefined as never, maxBulk: 10, redact: undefined, sealer: undefined as never });
      assert.equal(routes.length, table.length);
      assert.ok(routes.length >= 23, `${routes.length} routes`);
      assert.ok(routes.some((r) => r.action === 'write'));
      const known = new Set(Object.keys(BODIES));
      for (const r of routes.filter((x) => x.hasBody)) assert.ok(known.has(`${r.method} ${r.template}`), `a valid body for ${r.method} ${r.template}`);
    });

    test('no credential, a wrong token, a token in another scheme: 401 on every route and endpoint, nothing written', async () => {
      const { name, q } = await seed(backend);
      const before = await snapshot(q);
      const dash = secured();
      for (const r of routes) {
        const path = withQuery(fill(r.template, { queue: name }), r.query);
        const body = BODIES[`${r.method} ${r.template}`];
        for (const [how, headers] of [
          ['no credential', {}],
          ['a wrong token', { authorization: 'Bearer not-the-token-not-the-token' }],
          ['another scheme', { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }],
          ['a forged session', { cookie: `dq_session=${Date.now() + 60_000}.forged` }],
        ] as const) {
          const a = await ask(dash, r.method, path, { headers, body });
          assert.equal(a.status, 401, `${how}: ${r.method} ${path}: ${a.text}`);
          assert.ok(!a.text.includes(SECRET));
        }
      }
      for (const path of OTHER_ENDPOINTS) {
        assert.equal((await ask(dash, 'GET', path)).status, 401, path);
        assert.equal((await ask(dash, 'GET', path, { headers: { authorization: 'Bearer nope-nope-nope-nope' } })).status, 401, path);
      }
      assert.deepEqual(await snapshot(q), before);
    });

    test('a write from another site is refused (403) on every write route, even with the right token', async () => {
      const { name, q } = await seed(backend);
      const before = await snapshot(q);
      for (const r of routes.filter((x) => x.action === 'write')) {
        const path = withQuery(fill(r.template, { queue: name }), r.query);
        const body = BODIES[`${r.method} ${r.template}`];
        for (const headers of [
          { ...bearer, 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
          { ...bearer, 'sec-fetch-site': 'same-site', origin: `https://x.127.0.0.1.nip.io` },
          { ...bearer, 'sec-fetch-site': '', origin: 'https://evil.example' },
        ]) {
          for (const [k, v] of Object.entries(headers)) if (v === '') delete (headers as Record<string, string>)[k];
          const a = await ask(secured(), r.method, path, { headers, body });
          assert.equal(a.status, 403, `${r.method} ${path} ${JSON.stringify(headers)}: ${a.text}`);
          assert.equal(a.json.error.code, 'cross_origin');
        }
      }
      assert.deepEqual(await snapshot(q), before);
    });

    test('a reader who may not write is refused (403) on every write route: a read-only dashboard, and a hook that lets read only', async () => {
      const { name, q } = await seed(backend);
      const before = await snapshot(q);
      const readOnly = dashboard('read-only', { token: TOKEN, readOnly: true });
      const viewer = dashboard('viewer', { authorize: (_req, action) => (action === 'read' ? 'viewer@example.com' : '') });
      const csrf = await ask(viewer, 'GET', '/api/session');
      assert.equal(csrf.status, 200);
      assert.equal(csrf.json.canWrite, false);
      const cookie = csrf.json.csrfToken!;
      for (const r of routes) {
        const path = withQuery(fill(r.template, { queue: name }), r.query);
        const body = BODIES[`${r.method} ${r.template}`];
        if (r.action === 'read') {
          const a = await ask(viewer, r.method, path);
          assert.ok(a.status !== 401 && a.status !== 403, `a viewer reads ${path}: ${a.status}`);
          continue;
        }
        const ro = await ask(readOnly, r.method, path, { headers: bearer, body });
        assert.equal(ro.status, 403, `read-only: ${r.method} ${path}: ${ro.text}`);
        assert.equal(ro.json.error.code, 'read_only');
        const v = await ask(viewer, r.method, path, { headers: { cookie: `dq_csrf=${cookie}`, 'x-csrf-token': cookie }, body });
        assert.equal(v.status, 403, `viewer: ${r.method} ${path}: ${v.text}`);
        assert.equal(v.json.error.code, 'forbidden');
      }
      assert.deepEqual(await snapshot(q), before);
    });

    test('with redaction on, no answer of any route holds a payload', async () => {
      const { name } = await seed(backend);
      const dash = dashboard('redact', { token: TOKEN, redact: () => '[hidden]' });
      const answers: string[] = [];
      // Reads first (they see every job), then writes, each once.
      for (const r of routes) {
        const body = BODIES[`${r.method} ${r.template}`];
        const paths = [withQuery(fill(r.template, { queue: name }), r.query)];
        if (r.template.includes('{id}')) paths.push(withQuery(fill(r.template, { queue: name, id: 'dead-1' }), r.query));
        if (r.template.includes('{id}')) paths.push(withQuery(fill(r.template, { queue: name, id: 'done-1' }), r.query));
        if (r.queryNames.includes('state'))
          for (const state of ['scheduled', 'ready', 'active', 'dead', 'completed'])
            paths.push(withQuery(fill(r.template, { queue: name }), { ...r.query, state }));
        if (r.template.endsWith('/search'))
          paths.push(withQuery(fill(r.template, { queue: name }), { text: SECRET }), withQuery(fill(r.template, { queue: name }), { text: '-1' }));
        for (const path of paths) {
          const a = await ask(dash, r.method, path, { headers: bearer, body });
          assert.ok(a.status < 500, `${r.method} ${path}: ${a.text}`);
          assert.ok(!a.text.includes(SECRET), `${r.method} ${path} shows a payload: ${a.text.slice(0, 300)}`);
          answers.push(a.text);
        }
      }
      assert.ok(
        answers.some((t) => t.includes('[hidden]')),
        'the redacted payloads were there to be seen',
      );
    });

    test('oversize input: a queue name, an id, a schedule name, a query value or a body over its bound is refused (400, 413), nothing written', async () => {
      const { name, q } = await seed(backend);
      const before = await snapshot(q);
      const dash = secured();
      const big = 'x'.repeat(1024 * 1024 + 1);
      for (const r of routes) {
        const body = BODIES[`${r.method} ${r.template}`];
        if (r.template.includes('{queue}')) {
          const longQueue = await ask(dash, r.method, withQuery(fill(r.template, { queue: 'q'.repeat(101) }), r.query), { headers: bearer, body });
          assert.equal(longQueue.status, 400, `a long queue name: ${r.method} ${r.template}: ${longQueue.text}`);
          assert.equal(longQueue.json.error.field, 'queue name');
        }
        if (r.template.includes('{id}')) {
          const longId = await ask(dash, r.method, withQuery(fill(r.template, { queue: name, id: 'i'.repeat(257) }), r.query), { headers: bearer, body });
          assert.equal(longId.status, 400, `a long id: ${r.method} ${r.template}: ${longId.text}`);
        }
        if (r.template.includes('{name}')) {
          const longName = await ask(dash, r.method, withQuery(fill(r.template, { queue: name, name: 'n'.repeat(257) }), r.query), { headers: bearer, body });
          assert.equal(longName.status, 400, `a long schedule name: ${r.method} ${r.template}: ${longName.text}`);
        }
        for (const param of r.queryNames) {
          const a = await ask(dash, r.method, withQuery(fill(r.template, { queue: name }), { ...r.query, [param]: '9'.repeat(70_000) }), {
            headers: bearer,
            body,
          });
          assert.equal(a.status, 400, `a long ${param}: ${r.method} ${r.template}: ${a.text.slice(0, 200)}`);
        }
        if (r.action === 'write') {
          const a = await ask(dash, r.method, fill(r.template, { queue: name }), { headers: bearer, rawBody: JSON.stringify({ data: big }) });
          assert.equal(a.status, 413, `a body over 1 MiB: ${r.method} ${r.template}: ${a.text.slice(0, 200)}`);
        }
      }
      assert.deepEqual(await snapshot(q), before);
    });

    test('a forged cursor is a 400 on every route that takes one; a queue that does not exist is a 404 on every route that names one; nothing written', async () => {
      const { name, q } = await seed(backend);
      const before = await snapshot(q);
      const dash = secured();
      const withCursor = routes.filter((r) => r.queryNames.includes('cursor'));
      assert.ok(withCursor.length >= 2);
      for (const r of withCursor) {
        for (const cursor of ['forged!', Buffer.from('{"not":"a cursor"}').toString('base64url'), '7~!!', 'A'.repeat(70_000)]) {
          const a = await ask(dash, r.method, withQuery(fill(r.template, { queue: name }), { ...r.query, cursor }), { headers: bearer });
          assert.equal(a.status, 400, `${r.template} cursor ${cursor.slice(0, 20)}: ${a.text.slice(0, 200)}`);
          assert.match(a.json.error.field ?? '', /cursor/);
        }
      }
      const ghost = uniqueName('typo');
      for (const r of routes.filter((x) => x.template.includes('{queue}') && !x.createsQueue)) {
        const a = await ask(dash, r.method, withQuery(fill(r.template, { queue: ghost }), r.query), {
          headers: bearer,
          body: BODIES[`${r.method} ${r.template}`],
        });
        assert.equal(a.status, 404, `${r.method} ${r.template}: ${a.text}`);
      }
      assert.ok(!(await listQueues(backend.options())).some((x) => x.name === ghost), 'the typo was not registered');
      assert.deepEqual(await snapshot(q), before);
    });
  });
}
