/**
 * The dashboard's security model: what a cross-site page, a missing CSRF token, a wrong token,
 * a read-only deployment, a rebinding DNS name and a narrow authorize hook each get.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { MemoryStore, Queue } from '../../src/index.js';
import { createDashboard, type AuditLine, type DashboardOptions } from '../../src/server/dashboard.js';
import { serveDashboard, type RunningDashboard } from '../../src/server/serve.js';
import { uniqueName } from '../helpers/names.js';
import { within } from '../helpers/wait.js';
import { keepingLogger, serverBackends } from './backends.js';
import { ApiClient } from './client.js';

const TOKEN = 'correct-horse-battery-staple';
const open: { close(): Promise<void> }[] = [];
after(async () => {
  for (const o of open) await o.close().catch(() => {});
});

function setUp(extra: Partial<DashboardOptions> = {}) {
  const store = new MemoryStore();
  const name = uniqueName('sec');
  const q = new Queue(name, { store });
  const audit: AuditLine[] = [];
  const logger = { debug() {}, info: (o: unknown) => audit.push(o as AuditLine), warn() {}, error() {} };
  const dash = createDashboard({ store, logger, ...extra });
  open.push(dash);
  return { q, dash, name, audit, api: new ApiClient(dash) };
}

describe('writes from another site', () => {
  test('a cross-site POST is refused, whatever cookies it carries', async () => {
    const { api, name, q } = setUp();
    await api.session();
    const add = { data: { evil: true } };
    const crossSite = await api.post(`/api/queues/${name}/jobs`, add, { headers: { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' } });
    assert.equal(crossSite.status, 403);
    assert.equal(crossSite.body.error.code, 'cross_origin');
    const sameSite = await api.post(`/api/queues/${name}/jobs`, add, { headers: { 'sec-fetch-site': 'same-site' } });
    assert.equal(sameSite.status, 403, 'a sibling subdomain is another origin');
    const oldBrowser = await api.post(`/api/queues/${name}/jobs`, add, { headers: { 'sec-fetch-site': '', origin: 'https://evil.example' } });
    assert.equal(oldBrowser.status, 403, 'without Sec-Fetch-Site, Origin decides');
    assert.equal((await q.stats()).scheduled, 0);
  });

  test('a write without the CSRF token, or with a forged one, is refused', async () => {
    const { api, name, q } = setUp();
    await q.add({ x: 1 });
    const before = await api.post(`/api/queues/${name}/pause`);
    assert.equal(before.status, 403, 'no session yet, no token');
    assert.equal(before.body.error.code, 'csrf');
    await api.session();
    assert.equal((await api.post(`/api/queues/${name}/pause`, undefined, { noCsrf: true })).status, 403);
    assert.equal((await api.post(`/api/queues/${name}/pause`, undefined, { headers: { 'x-csrf-token': 'forged.token' } })).status, 403);
    // A token signed by another dashboard (another secret) is no good here.
    const other = new ApiClient(setUp().dash);
    const foreign = (await other.session()).body.csrfToken;
    assert.equal((await api.post(`/api/queues/${name}/pause`, undefined, { headers: { 'x-csrf-token': foreign } })).status, 403);
    assert.equal((await q.stats()).paused, false);
    assert.equal((await api.post(`/api/queues/${name}/pause`)).status, 200);
  });

  test('the limit and group writes need the CSRF token and the same origin, like every write: refused, nothing changed', async () => {
    const { api, name, q, audit } = setUp();
    await q.add({ x: 1 }, { group: 'tenant-1', delay: 60_000 });
    const writes = [
      ['/limits', { concurrency: 5, groupConcurrency: 1 }],
      ['/groups/tenant-1/limits', { concurrency: 2 }],
      ['/groups/tenant-1/pause', undefined],
      ['/groups/tenant-1/resume', undefined],
    ] as const;
    const state = async () => ({ limits: await q.limits(), group: await q.groups.get('tenant-1') });
    const before = await state();
    for (const [path] of writes) assert.equal((await api.post(`/api/queues/${name}${path}`)).body.error?.code, 'csrf', `${path}: no session yet, no token`);
    await api.session();
    for (const [path, body] of writes) {
      const none = await api.post(`/api/queues/${name}${path}`, body, { noCsrf: true });
      assert.equal(none.status, 403, `${path} without the token`);
      assert.equal(none.body.error.code, 'csrf');
      const forged = await api.post(`/api/queues/${name}${path}`, body, { headers: { 'x-csrf-token': 'forged.token' } });
      assert.equal(forged.status, 403, `${path} with a forged token`);
      const crossSite = await api.post(`/api/queues/${name}${path}`, body, { headers: { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' } });
      assert.equal(crossSite.status, 403, `${path} from another site`);
      assert.equal(crossSite.body.error.code, 'cross_origin');
    }
    assert.deepEqual(await state(), before, 'nothing changed');
    assert.deepEqual(audit, [], 'nothing audited');
    assert.equal((await api.post(`/api/queues/${name}/groups/tenant-1/pause`)).status, 200, 'with the token it goes');
    assert.equal((await q.groups.get('tenant-1')).paused, true);
  });

  test('the CSRF cookie is HttpOnly and SameSite=Strict, on the mount path', async () => {
    const { dash } = setUp({ basePath: '/admin/queues' });
    const res = await dash.fetch(new Request('http://127.0.0.1/admin/queues/api/session'));
    const cookie = res.headers.getSetCookie()[0] ?? '';
    assert.match(cookie, /^dq_csrf=/);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\/admin\/queues/);
  });

  test('a form-encoded or text body is refused (only JSON, which needs a preflight cross-site)', async () => {
    const { api, name } = setUp();
    await api.session();
    const r = await api.call('POST', `/api/queues/${name}/jobs`, { headers: { 'content-type': 'text/plain' }, body: { data: 1 } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'content_type');
  });
});

describe('who may read and write', () => {
  test('read-only hides the actions and refuses every write', async () => {
    const { api, name, q } = setUp({ readOnly: true });
    const s = await api.session();
    assert.equal(s.body.readOnly, true);
    assert.equal(s.body.canWrite, false);
    await q.add({ x: 1 }, { id: 'kept' });
    for (const [method, path] of [
      ['POST', `/api/queues/${name}/jobs/kept/cancel`],
      ['DELETE', `/api/queues/${name}/jobs/kept`],
      ['POST', `/api/queues/${name}/drain`],
      ['POST', `/api/queues/${name}/dead/purge`],
    ] as const) {
      const r = await api.call(method, path, { body: {} });
      assert.equal(r.status, 403, path);
      assert.equal(r.body.error.code, 'read_only');
    }
    assert.equal((await api.get(`/api/queues/${name}/jobs/kept`)).status, 200);
    assert.equal((await q.stats()).scheduled, 1);
  });

  test('a token: nothing without it; a bearer token needs no CSRF token; the login form starts a session', async () => {
    const { api, name, q, audit } = setUp({ token: TOKEN });
    assert.equal((await api.get('/api/session')).status, 401);
    assert.equal((await api.get('/api/queues')).status, 401);
    assert.equal((await api.get('/metrics')).status, 401);
    assert.equal((await api.get('/openapi.json')).status, 401);
    assert.equal((await api.get('/')).status, 200, 'the page itself (with its login form) holds no data');
    assert.equal((await api.get('/api/queues', { authorization: 'Bearer wrong-token-wrong-token' })).status, 401);

    const bearer = { authorization: `Bearer ${TOKEN}` };
    const added = await api.post(`/api/queues/${name}/jobs`, { data: 1, opts: { id: 'b1' } }, { headers: bearer });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    const crossSite = await api.post(`/api/queues/${name}/pause`, undefined, { headers: { ...bearer, 'sec-fetch-site': 'cross-site' } });
    assert.equal(crossSite.status, 403, 'a bearer token does not make a cross-site write acceptable');

    const t0 = Date.now();
    assert.equal((await api.post('/api/login', { token: 'not-the-token-at-all' })).status, 401);
    assert.ok(Date.now() - t0 >= 900, 'a wrong guess costs a second');
    assert.equal((await api.post('/api/login', { token: TOKEN })).status, 200);
    const s = await api.session();
    assert.equal(s.status, 200);
    assert.equal(s.body.user, 'session');
    assert.equal(
      (await api.post(`/api/queues/${name}/jobs/b1/cancel`, undefined, { noCsrf: true })).status,
      403,
      'a session is ambient: it needs the CSRF token',
    );
    assert.equal((await api.post(`/api/queues/${name}/jobs/b1/cancel`)).status, 200);
    assert.equal((await q.stats()).scheduled, 0);
    assert.deepEqual(
      audit.map((a) => a.user),
      ['token', 'session'],
    );
    await api.post('/api/logout');
    assert.equal((await api.get('/api/session')).status, 401);
  });

  test('an authorize hook tells reads from writes and names the user in the audit log', async () => {
    const { api, name, audit, q } = setUp({
      authorize: (req, action) => {
        const user = req.headers.get('x-user');
        if (user === 'ops') return 'ops@example.com';
        return user === 'viewer' && action === 'read';
      },
    });
    await q.add({ x: 1 });
    const viewer = { 'x-user': 'viewer' };
    const ops = { 'x-user': 'ops' };
    assert.equal((await api.get('/api/queues')).status, 401, 'nobody');
    const s = await api.call('GET', '/api/session', { headers: viewer });
    assert.equal(s.status, 200);
    assert.equal(s.body.canWrite, false, 'the page hides actions from a viewer');
    const csrf = s.body.csrfToken;
    const refused = await api.post(`/api/queues/${name}/pause`, undefined, { headers: { ...viewer, 'x-csrf-token': csrf } });
    assert.equal(refused.status, 403);
    const done = await api.post(`/api/queues/${name}/pause`, undefined, { headers: { ...ops, 'x-csrf-token': csrf } });
    assert.equal(done.status, 200);
    assert.equal(audit.length, 1);
    assert.equal(audit[0]!.user, 'ops@example.com');
    assert.equal(audit[0]!.queue, name);
  });

  test('without authentication, only a loopback Host is answered (DNS rebinding)', async () => {
    const { dash } = setUp();
    const ask = (host: string) => dash.fetch(new Request('http://127.0.0.1/api/session', { headers: { host } }));
    assert.equal((await ask('127.0.0.1:8787')).status, 200);
    assert.equal((await ask('localhost:8787')).status, 200);
    assert.equal((await ask('[::1]:8787')).status, 200);
    assert.equal((await ask('attacker.example:8787')).status, 421);
    assert.equal((await ask('127.0.0.1.attacker.example')).status, 421);
    const withToken = setUp({ token: TOKEN }).dash;
    const r = await withToken.fetch(
      new Request('http://127.0.0.1/api/session', { headers: { host: 'queues.internal.example', authorization: `Bearer ${TOKEN}` } }),
    );
    assert.equal(r.status, 200, 'with a token, any name may front it');
  });

  test('a short token is refused at start', () => {
    assert.throws(() => createDashboard({ store: new MemoryStore(), token: 'short' }), /at least 16 characters/);
  });
});

describe('answers', () => {
  test('every answer carries a strict CSP and no-framing headers', async () => {
    const { dash } = setUp();
    for (const path of ['/', '/api/session', '/api/nope', '/assets/missing.js']) {
      const res = await dash.fetch(new Request(`http://127.0.0.1${path}`));
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /script-src 'self'/, path);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, path);
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
  });
});

describe('delayq serve', () => {
  test('refuses a non-loopback address without authentication', async () => {
    await assert.rejects(serveDashboard({ store: new MemoryStore(), host: '0.0.0.0', port: 0 }), /without authentication/);
  });

  test('listens on 127.0.0.1 and streams live counts over Server-Sent Events', async () => {
    const store = new MemoryStore();
    const name = uniqueName('live');
    const q = new Queue(name, { store });
    await q.add({ x: 1 });
    const running: RunningDashboard = await serveDashboard({ store, port: 0, sampleMs: 100 });
    open.push(running);
    assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const ctl = new AbortController();
    const res = await fetch(`${running.url}api/live`, { signal: ctl.signal });
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    await within(
      (async () => {
        while (!/event: stats\ndata: .*"name":"live-/.test(text)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += new TextDecoder().decode(value);
        }
      })(),
      5000,
      'a stats event',
    );
    const data = JSON.parse(/event: stats\ndata: (.*)/.exec(text)![1]!);
    assert.equal(data.queues.find((x: { name: string }) => x.name === name).stats.scheduled, 1);
    ctl.abort();
    await within(running.close(), 3000, 'close with a live page open');
    open.pop();
  });
});

const backends = serverBackends();

for (const backend of backends) {
  describe(`the authorize hook fails closed (${backend.name})`, () => {
    test('only true or a user name lets a request in: "", "  ", undefined, null, 0 and a throw refuse reads and writes, and a throw is logged', async () => {
      const name = uniqueName('hook');
      const q = backend.track(new Queue(name, backend.options()));
      await q.add({ x: 1 }, { id: 'kept', delay: 60_000 });
      const answers: Record<string, unknown> = { yes: true, user: 'ops@example.com', no: false, empty: '', blank: '  ', undef: undefined, nul: null, zero: 0 };
      const { logger, lines } = keepingLogger();
      const dash = backend.track(
        createDashboard({
          ...backend.options(),
          logger,
          authorize: async (req) => {
            const who = req.headers.get('x-who') ?? '';
            if (who === 'throws') throw new Error('the user directory is down');
            return answers[who] as boolean | string;
          },
        }),
      );
      const api = new ApiClient(dash);
      const csrf = (await api.call('GET', '/api/session', { headers: { 'x-who': 'yes' } })).body.csrfToken as string;
      for (const who of ['empty', 'blank', 'undef', 'nul', 'zero', 'no', 'throws']) {
        const read = await api.call('GET', `/api/queues/${name}/jobs/kept`, { headers: { 'x-who': who } });
        assert.equal(read.status, 401, `a read with a hook answering ${who}`);
        assert.equal(read.body.error.code, 'forbidden');
        const write = await api.post(`/api/queues/${name}/jobs/kept/cancel`, undefined, { headers: { 'x-who': who, 'x-csrf-token': csrf } });
        assert.equal(write.status, 403, `a write with a hook answering ${who}`);
        assert.equal((await api.call('GET', '/api/session', { headers: { 'x-who': who } })).status, 401, `the session with ${who}`);
      }
      assert.equal((await q.get('kept'))?.state, 'scheduled', 'nothing was cancelled');
      const thrown = lines.filter((l) => l.level === 'error');
      assert.ok(thrown.length >= 1, 'the throw is logged');
      assert.match(String((thrown[0]!.obj.err as Error).message), /user directory is down/);
      assert.equal((await api.call('GET', `/api/queues/${name}/jobs/kept`, { headers: { 'x-who': 'yes' } })).status, 200);
      const done = await api.post(`/api/queues/${name}/jobs/kept/cancel`, undefined, { headers: { 'x-who': 'user', 'x-csrf-token': csrf } });
      assert.equal(done.status, 200, 'a user name is allowed');
    });
  });
}
