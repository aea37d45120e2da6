/**
 * The dashboard's API for flow control, on both stores: the queue's limits, concurrency and rate
 * (read in the queue's detail with the rate limiter's figures, set with POST limits), its groups
 * (a page with a sealed cursor, one group, each with its rate limit and tokens used), a group's
 * own limit and rate limit, pause and resume. Each write: done and audited, bad input a 400 naming the field
 * with nothing written, refused by a hook that says no (told the route's code), by a read-only
 * dashboard and without the CSRF token (security.test.ts too). Reads of groups tell a guesser
 * nothing a page of groups does not: a made-up group reads as an empty one and writes nothing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { createDashboard, type AuditLine, type DashboardOptions } from '../../src/server/dashboard.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { deferred, until } from '../helpers/wait.js';
import { serverBackends } from './backends.js';
import { ApiClient } from './client.js';

const errorLog = useErrorLog();

/** A group as the API answers it: nothing of its rate limit taken (no hold, no refill to come). */
const IDLE = { used: 0 };

/** Every write route of this file: method, path under the queue, body. */
const WRITES = [
  ['POST', '/limits', { concurrency: 7 }],
  ['POST', '/limits', { rateLimit: { max: 100, perMs: 1000 }, groupRateLimit: null }],
  ['POST', '/groups/tenant-1/limits', { concurrency: 2 }],
  ['POST', '/groups/tenant-1/limits', { rateLimit: { max: 5, perMs: 60_000 } }],
  ['POST', '/groups/tenant-1/pause', undefined],
  ['POST', '/groups/tenant-1/resume', undefined],
] as const;

for (const backend of serverBackends()) {
  describe(`limits and groups through the API (${backend.name})`, () => {
    function setUp(extra: Partial<DashboardOptions> = {}) {
      const name = uniqueName('grp');
      const q = backend.track(new Queue(name, backend.options()));
      const audit: AuditLine[] = [];
      const logger = { debug() {}, info: (o: unknown) => audit.push(o as AuditLine), warn() {}, error() {} };
      const dash = backend.track(createDashboard({ ...backend.options(), logger, sampleMs: 60_000, ...extra }));
      return { name, q, dash, audit, api: new ApiClient(dash) };
    }

    /** What the queue's flow control holds, to show a refused write changed nothing. */
    async function flow(q: Queue): Promise<unknown> {
      return { limits: await q.limits(), groups: (await q.groups.list({ limit: 1000 })).groups };
    }

    test("the queue's limits: in its detail, set, left, removed; each write audited as queue.limit", async () => {
      const { name, q, api, audit } = setUp();
      await q.add({ x: 1 }, { delay: 60_000 });
      await api.session();
      const fresh = (await api.get(`/api/queues/${name}`)).body;
      assert.deepEqual(fresh.limits, {}, 'no limit yet');
      assert.deepEqual(fresh.rate, { nowMs: fresh.rate.nowMs, queue: IDLE, groupsHeld: 0 }, 'the rate limiter: nothing taken');
      assert.equal(typeof fresh.rate.nowMs, 'number');

      const set = await api.post(`/api/queues/${name}/limits`, { concurrency: 10, groupConcurrency: 2 });
      assert.equal(set.status, 200, JSON.stringify(set.body));
      assert.deepEqual(set.body, { ok: true, changed: true, limits: { concurrency: 10, groupConcurrency: 2 } });
      assert.deepEqual(await q.limits(), { concurrency: 10, groupConcurrency: 2, rateLimit: undefined, groupRateLimit: undefined });
      assert.deepEqual((await api.get(`/api/queues/${name}`)).body.limits, { concurrency: 10, groupConcurrency: 2 });

      const again = await api.post(`/api/queues/${name}/limits`, { concurrency: 10 });
      assert.equal(again.body.changed, false, 'a re-sent write changes nothing and says so');
      const removed = await api.post(`/api/queues/${name}/limits`, { concurrency: null });
      assert.deepEqual(removed.body, { ok: true, changed: true, limits: { groupConcurrency: 2 } }, 'null removes one; the one left out stays');

      // Rate limits: { max, perMs }, null removes one; the queue's detail shows them and the tokens taken.
      const rated = await api.post(`/api/queues/${name}/limits`, { rateLimit: { max: 100, perMs: 600_000 }, groupRateLimit: { max: 10, perMs: 60_000 } });
      assert.equal(rated.status, 200, JSON.stringify(rated.body));
      assert.deepEqual(rated.body, {
        ok: true,
        changed: true,
        limits: { groupConcurrency: 2, rateLimit: { max: 100, perMs: 600_000 }, groupRateLimit: { max: 10, perMs: 60_000 } },
      });
      assert.deepEqual((await q.limits()).rateLimit, { max: 100, perMs: 600_000 });
      await q.add({ x: 2 });
      assert.equal((await q.store.claim(name, 1, 60_000, 1)).jobs.length, 1, 'a job handed out takes a token');
      const detail = (await api.get(`/api/queues/${name}`)).body;
      assert.deepEqual(detail.limits.rateLimit, { max: 100, perMs: 600_000 });
      assert.equal(detail.rate.queue.used, 1);
      assert.ok(detail.rate.queue.nextRefillMs > detail.rate.nowMs + 500_000, 'its token comes back a window after it was taken');
      assert.equal(detail.rate.queue.heldUntilMs, undefined);
      const unrated = await api.post(`/api/queues/${name}/limits`, { groupRateLimit: null });
      assert.deepEqual(unrated.body.limits, { groupConcurrency: 2, rateLimit: { max: 100, perMs: 600_000 } });

      assert.deepEqual(
        audit.map((a) => [a.action, a.queue, a.target, a.user]),
        [
          ['queue.limit', name, 'concurrency=10 groupConcurrency=2', 'anonymous'],
          ['queue.limit', name, 'concurrency=10', 'anonymous'],
          ['queue.limit', name, 'concurrency=none', 'anonymous'],
          ['queue.limit', name, 'rateLimit=100/600000 groupRateLimit=10/60000', 'anonymous'],
          ['queue.limit', name, 'groupRateLimit=none', 'anonymous'],
        ],
      );
      assert.equal(audit[0]!.summary, "Sets the queue's limits");
    });

    test('bad limits and bad group ids are a 400 naming the field, and write nothing', async () => {
      const { name, q, api, audit } = setUp();
      await q.add({ x: 1 }, { delay: 60_000 });
      await q.setLimits({ concurrency: 4, rateLimit: { max: 50, perMs: 1000 } });
      await q.groups.setLimits('tenant-1', { concurrency: 3, rateLimit: { max: 5, perMs: 1000 } });
      await api.session();
      const before = await flow(q);
      for (const [path, body, field] of [
        ['/limits', { concurrency: 0 }, 'body.concurrency'],
        ['/limits', { concurrency: 1.5 }, 'body.concurrency'],
        ['/limits', { concurrency: 100_001 }, 'body.concurrency'],
        ['/limits', { groupConcurrency: '5' }, 'body.groupConcurrency'],
        ['/limits', { groupConcurrency: -1 }, 'body.groupConcurrency'],
        ['/limits', { concurency: 5 }, 'body.concurency'],
        ['/limits', {}, 'body.concurrency'],
        ['/limits', { concurrency: 5, groupConcurrency: 0 }, 'body.groupConcurrency'],
        ['/limits', { rateLimit: { max: 0, perMs: 1000 } }, 'body.rateLimit.max'],
        ['/limits', { rateLimit: { max: 1.5, perMs: 1000 } }, 'body.rateLimit.max'],
        ['/limits', { rateLimit: { max: 1_000_001, perMs: 1000 } }, 'body.rateLimit.max'],
        ['/limits', { rateLimit: { max: 10, perMs: 0 } }, 'body.rateLimit.perMs'],
        ['/limits', { rateLimit: { max: 10, perMs: 604_800_001 } }, 'body.rateLimit.perMs'],
        ['/limits', { rateLimit: { max: 10 } }, 'body.rateLimit.perMs'],
        ['/limits', { rateLimit: { max: 10, perMs: 1000, burst: 5 } }, 'body.rateLimit.burst'],
        ['/limits', { rateLimit: '100/1000' }, 'body.rateLimit'],
        ['/limits', { groupRateLimit: 5 }, 'body.groupRateLimit'],
        // A bad rate beside a good limit: neither is written.
        ['/limits', { concurrency: 5, groupRateLimit: { max: -1, perMs: 1000 } }, 'body.groupRateLimit.max'],
        ['/groups/tenant-1/limits', { rateLimit: { max: 5, perMs: '1s' } }, 'body.rateLimit.perMs'],
        ['/groups/tenant-1/limits', { concurrency: 2, rateLimit: [] }, 'body.rateLimit'],
        ['/groups/tenant-1/limits', { concurrency: 0 }, 'body.concurrency'],
        ['/groups/tenant-1/limits', {}, 'body.concurrency'],
        ['/groups/tenant-1/limits', { concurrency: 2, paused: true }, 'body.paused'],
        ['/groups/%01bell/limits', { concurrency: 2 }, 'id'],
        [`/groups/${'g'.repeat(257)}/limits`, { concurrency: 2 }, 'id'],
        ['/groups/%01bell/pause', undefined, 'id'],
        [`/groups/${'g'.repeat(257)}/resume`, undefined, 'id'],
      ] as const) {
        const r = await api.post(`/api/queues/${name}${path}`, body);
        assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.field, field, `${path} ${JSON.stringify(body)}`);
        assert.match(r.body.error.message, /must|known|give/, r.body.error.message);
      }
      for (const path of [`/groups/%01bell`, `/groups/${'g'.repeat(257)}`, '/groups?limit=0', '/groups?limit=1001', '/groups?cursor=x&other=1']) {
        const r = await api.get(`/api/queues/${name}${path}`);
        assert.equal(r.status, 400, `${path}: ${JSON.stringify(r.body)}`);
      }
      assert.deepEqual(await flow(q), before, 'nothing written');
      assert.deepEqual(audit, [], 'nothing audited');
    });

    test("groups: a page with each group's running, waiting, own limit, rate limit and tokens used, and pause; one group; a job shows its group", async () => {
      const { name, q, api } = setUp();
      await q.setLimits({ groupConcurrency: 1 });
      await q.groups.setLimits('tenant/b', { rateLimit: { max: 3, perMs: 600_000 } });
      const gate = deferred();
      const w = errorLog.watch(new Worker(name, () => gate.promise, { ...backend.options(), concurrency: 5 }));
      try {
        for (let i = 0; i < 3; i++) await q.add({ i }, { id: `a-${i}`, group: 'tenant-a' });
        await q.add({ i: 9 }, { id: 'b-0', group: 'tenant/b' });
        await until(
          async () => (await q.groups.get('tenant-a')).running === 1 && (await q.groups.get('tenant/b')).running === 1,
          'one job of each group running',
        );
        await until(async () => (await q.groups.get('tenant-a')).waiting === 2, 'two of tenant-a waiting');
        const page = await api.get(`/api/queues/${name}/groups`);
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.equal(page.body.cursor, undefined, 'one page');
        const byId = Object.fromEntries(page.body.groups.map((g: { id: string }) => [g.id, g]));
        assert.deepEqual(byId['tenant-a'], { id: 'tenant-a', running: 1, waiting: 2, rate: IDLE, paused: false }, 'no rate limit: nothing counted');
        const b = byId['tenant/b'];
        assert.ok(b.rate.nextRefillMs > Date.now() + 500_000, 'its token comes back a window after it was taken');
        const tenantB = {
          id: 'tenant/b',
          running: 1,
          waiting: 0,
          rateLimit: { max: 3, perMs: 600_000 },
          rate: { used: 1, nextRefillMs: b.rate.nextRefillMs },
          paused: false,
        };
        assert.deepEqual(b, tenantB);

        const one = await api.get(`/api/queues/${name}/groups/${encodeURIComponent('tenant/b')}`);
        assert.deepEqual(one.body, tenantB, 'an id with a slash, percent-encoded');
        const job = await api.get(`/api/queues/${name}/jobs/a-0`);
        assert.equal(job.body.group, 'tenant-a');
        const active = await api.get(`/api/queues/${name}/jobs?state=active`);
        assert.deepEqual(active.body.jobs.map((j: { group: string }) => j.group).sort(), ['tenant-a', 'tenant/b']);
      } finally {
        gate.resolve();
        await w.close();
      }
    });

    test('pause, resume and a limit of its own for one group: done, said whether it changed, audited with the group', async () => {
      const { name, q, api, audit } = setUp();
      await q.add({ x: 1 }, { delay: 60_000, group: 'tenant-1' });
      await api.session();
      const paused = await api.post(`/api/queues/${name}/groups/tenant-1/pause`);
      assert.equal(paused.status, 200, JSON.stringify(paused.body));
      assert.deepEqual(paused.body, { ok: true, changed: true, group: { id: 'tenant-1', running: 0, waiting: 0, rate: IDLE, paused: true } });
      assert.equal((await q.groups.get('tenant-1')).paused, true);
      assert.equal((await api.post(`/api/queues/${name}/groups/tenant-1/pause`)).body.changed, false, 're-sent: no change');

      const limited = await api.post(`/api/queues/${name}/groups/tenant-1/limits`, { concurrency: 3 });
      assert.deepEqual(limited.body.group, { id: 'tenant-1', running: 0, waiting: 0, concurrency: 3, rate: IDLE, paused: true });
      const resumed = await api.post(`/api/queues/${name}/groups/tenant-1/resume`);
      assert.deepEqual(resumed.body, { ok: true, changed: true, group: { id: 'tenant-1', running: 0, waiting: 0, concurrency: 3, rate: IDLE, paused: false } });
      const unlimited = await api.post(`/api/queues/${name}/groups/tenant-1/limits`, { concurrency: null });
      assert.equal(unlimited.body.changed, true);
      assert.equal((await q.groups.get('tenant-1')).concurrency, undefined);

      // A rate limit of its own: set (the limit left out stays), re-sent, removed.
      await api.post(`/api/queues/${name}/groups/tenant-1/limits`, { concurrency: 2 });
      const rated = await api.post(`/api/queues/${name}/groups/tenant-1/limits`, { rateLimit: { max: 5, perMs: 60_000 } });
      assert.deepEqual(rated.body, {
        ok: true,
        changed: true,
        group: { id: 'tenant-1', running: 0, waiting: 0, concurrency: 2, rateLimit: { max: 5, perMs: 60_000 }, rate: IDLE, paused: false },
      });
      assert.deepEqual((await q.groups.get('tenant-1')).rateLimit, { max: 5, perMs: 60_000 });
      assert.equal((await api.post(`/api/queues/${name}/groups/tenant-1/limits`, { rateLimit: { max: 5, perMs: 60_000 } })).body.changed, false);
      const both = await api.post(`/api/queues/${name}/groups/tenant-1/limits`, { concurrency: null, rateLimit: null });
      assert.deepEqual(both.body.group, { id: 'tenant-1', running: 0, waiting: 0, rate: IDLE, paused: false });

      assert.deepEqual(
        audit.map((a) => [a.action, a.target]),
        [
          ['group.pause', 'tenant-1'],
          ['group.pause', 'tenant-1'],
          ['group.limit', 'tenant-1 concurrency=3'],
          ['group.resume', 'tenant-1'],
          ['group.limit', 'tenant-1 concurrency=none'],
          ['group.limit', 'tenant-1 concurrency=2'],
          ['group.limit', 'tenant-1 rateLimit=5/60000'],
          ['group.limit', 'tenant-1 rateLimit=5/60000'],
          ['group.limit', 'tenant-1 concurrency=none rateLimit=none'],
        ],
      );
      assert.ok(audit.every((a) => a.queue === name));
    });

    test('groups page by page with the cursor, each once; a forged, cut, edited or other queue’s cursor is a 400 naming it', async () => {
      const { name, q, api } = setUp();
      const other = setUp();
      // Over 512 groups (hash-max-listpack-entries): Redis then keeps them in a hash table, which
      // it walks a part at a time; a smaller hash comes back whole in one page, whatever the limit.
      const ids = Array.from({ length: 600 }, (_, i) => `g-${String(i).padStart(3, '0')}`);
      // A queue exists once a job was added to it (a group's pause alone does not register it).
      for (const x of [q, other.q]) await x.add({ x: 1 }, { delay: 60_000 });
      for (const id of ids) await q.groups.pause(id);
      for (const id of ids) await other.q.groups.pause(id);
      const seen: string[] = [];
      let cursor: string | undefined;
      let calls = 0;
      do {
        const r = await api.get(`/api/queues/${name}/groups?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        seen.push(...r.body.groups.map((g: { id: string }) => g.id));
        cursor = r.body.cursor;
        assert.ok(r.body.groups.length >= 200 || !cursor, `a page before the last is full (${r.body.groups.length})`);
      } while (cursor && ++calls < 20);
      assert.ok(calls >= 2, `${calls + 1} pages`);
      assert.deepEqual(seen.sort(), ids, 'every group once');

      // A cursor to hold: one page of a walk with more to go (a Redis page of a small hash may hold them all).
      const first = await api.get(`/api/queues/${name}/groups?limit=1`);
      const real = first.body.cursor as string;
      const otherCursor = (await other.api.get(`/api/queues/${other.name}/groups?limit=1`)).body.cursor as string;
      assert.ok(real && otherCursor, 'a walk with more to go has a cursor');
      const forged = [
        ['letters', 'abc'],
        ['a library cursor as it is', '0:g-3'],
        ['a number', '12345'],
        ['base64url of a library cursor, unsigned', Buffer.from('0:g-3').toString('base64url')],
        ['a signature that is not one', `${Buffer.from('0:g-3').toString('base64url')}.AAAA`],
        ['not cursor characters', '0:!!'],
      ];
      // Another dashboard (another secret): its cursors are not this one's.
      const foreign = (
        await new ApiClient(backend.track(createDashboard({ ...backend.options(), sampleMs: 60_000 }))).get(`/api/queues/${name}/groups?limit=1`)
      ).body.cursor as string;
      forged.push(
        ['cut short', real.slice(0, -2)],
        ['a byte changed', `${real[0] === 'A' ? 'B' : 'A'}${real.slice(1)}`],
        ['another dashboard’s', foreign],
        ['another queue’s', otherCursor],
      );
      for (const [what, c] of forged) {
        const r = await api.get(`/api/queues/${name}/groups?cursor=${encodeURIComponent(c!)}`);
        assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.field, 'query.cursor', what);
        assert.match(r.body.error.message, /cursor/, what);
      }
      assert.equal((await api.get(`/api/queues/${name}/groups?cursor=${encodeURIComponent(real)}`)).status, 200, 'the real one still goes');
    });

    test('a cursor anchored on the longest group id (256 characters, each three bytes of UTF-8) is taken back', async () => {
      const { name, q, api } = setUp();
      await q.add({ x: 1 }, { delay: 60_000 });
      const ids = [0, 1, 2].map((i) => `${'語'.repeat(255)}${i}`);
      for (const id of ids) await q.groups.pause(id);
      const seen: string[] = [];
      let cursor: string | undefined;
      let calls = 0;
      do {
        const r = await api.get(`/api/queues/${name}/groups?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, `page ${calls + 1}, cursor of ${cursor?.length} characters: ${JSON.stringify(r.body).slice(0, 200)}`);
        seen.push(...r.body.groups.map((g: { id: string }) => g.id));
        cursor = r.body.cursor;
      } while (cursor && ++calls < 10);
      assert.deepEqual(seen.sort(), ids);
    });

    test('a made-up group reads as one with nothing (as an idle group does) and nothing is written for it', async () => {
      const { name, q, api } = setUp();
      await q.add({ x: 1 }, { delay: 60_000, group: 'tenant-real' });
      const snapshot = async () => ({ keys: (await backend.keys?.(`*${name}*`))?.sort(), flow: await flow(q) });
      const before = await snapshot();
      const guess = await api.get(`/api/queues/${name}/groups/tenant-guess`);
      const real = await api.get(`/api/queues/${name}/groups/tenant-real`);
      assert.deepEqual(guess.body, { id: 'tenant-guess', running: 0, waiting: 0, rate: IDLE, paused: false });
      assert.deepEqual({ ...real.body, id: 'tenant-guess' }, guess.body, 'an idle group and a made-up one read alike');
      assert.deepEqual(await snapshot(), before, 'no key written for a read');
      // Removing a limit no group had is no change, and writes nothing either.
      await api.session();
      assert.equal((await api.post(`/api/queues/${name}/groups/tenant-guess/limits`, { concurrency: null })).body.changed, false);
      assert.equal((await api.post(`/api/queues/${name}/groups/tenant-guess/limits`, { rateLimit: null })).body.changed, false);
      assert.equal((await api.post(`/api/queues/${name}/groups/tenant-guess/resume`)).body.changed, false);
      assert.deepEqual(await snapshot(), before, 'no key written for a write that changed nothing');
      assert.equal((await api.get(`/api/queues/${uniqueName('ghost')}/groups/tenant-real`)).status, 404, 'a queue that does not exist');
    });

    test('with redaction on, the group routes answer as they do without it (they show no payload)', async () => {
      const plain = setUp();
      const redacted = setUp({ redact: () => '[hidden]' });
      for (const { q } of [plain, redacted]) {
        await q.add({ card: '4242' }, { delay: 60_000, group: 'tenant-1' });
        await q.groups.setLimits('tenant-1', { concurrency: 2 });
      }
      for (const path of ['/groups', '/groups/tenant-1']) {
        const a = await plain.api.get(`/api/queues/${plain.name}${path}`);
        const b = await redacted.api.get(`/api/queues/${redacted.name}${path}`);
        assert.equal(b.status, 200);
        assert.deepEqual(b.body, a.body, path);
      }
      assert.equal(
        (await redacted.api.get(`/api/queues/${redacted.name}/jobs?state=scheduled`)).body.jobs[0].group,
        'tenant-1',
        'group ids show, as job ids do',
      );
    });

    test('writes are refused by a hook that says no (403, told the route code), by a read-only dashboard (403) and without the CSRF token; nothing written', async () => {
      const operations: string[] = [];
      const hooked = setUp({
        authorize: (req, action, { operation }) => {
          operations.push(`${action} ${operation}`);
          if (action === 'read') return true;
          // Group pauses only, for a person on call: never the queue's limits or a group's limit.
          return req.headers.get('x-user') === 'oncall' && (operation === 'group.pause' || operation === 'group.resume') ? 'oncall@example.com' : false;
        },
      });
      const readOnly = setUp({ readOnly: true });
      for (const s of [hooked, readOnly]) {
        await s.q.add({ x: 1 }, { delay: 60_000, group: 'tenant-1' });
        await s.q.setLimits({ concurrency: 3 });
        await s.api.session();
      }
      for (const s of [hooked, readOnly]) {
        const before = await flow(s.q);
        for (const [method, path, body] of WRITES) {
          const r = await s.api.call(method, `/api/queues/${s.name}${path}`, { body });
          assert.equal(r.status, 403, `${path}: ${JSON.stringify(r.body)}`);
          assert.equal(r.body.error.code, s === readOnly ? 'read_only' : 'forbidden');
        }
        assert.deepEqual(await flow(s.q), before, 'nothing written');
        assert.deepEqual(s.audit, [], 'nothing audited');
      }
      assert.ok(
        operations.includes('write queue.limit') && operations.includes('write group.limit') && operations.includes('write group.pause'),
        operations.join(', '),
      );
      assert.ok(operations.includes('read queue.get') || operations.includes('read undefined'));

      const oncall = { 'x-user': 'oncall' };
      assert.equal((await hooked.api.post(`/api/queues/${hooked.name}/groups/tenant-1/pause`, undefined, { headers: oncall })).status, 200);
      assert.equal((await hooked.api.post(`/api/queues/${hooked.name}/limits`, { concurrency: 9 }, { headers: oncall })).status, 403);
      assert.equal((await hooked.api.post(`/api/queues/${hooked.name}/limits`, { rateLimit: { max: 1, perMs: 1000 } }, { headers: oncall })).status, 403);
      assert.equal(
        (await hooked.api.post(`/api/queues/${hooked.name}/groups/tenant-1/limits`, { rateLimit: null }, { headers: oncall })).status,
        403,
        'a group rate limit is group.limit, not the pause the hook allows',
      );
      assert.equal((await hooked.q.limits()).rateLimit, undefined);
      assert.equal((await hooked.q.groups.get('tenant-1')).paused, true);
      assert.equal((await hooked.q.limits()).concurrency, 3);
      assert.deepEqual(
        hooked.audit.map((a) => [a.action, a.user]),
        [['group.pause', 'oncall@example.com']],
      );

      const { name, q, api } = setUp();
      await q.setLimits({ concurrency: 3 });
      await api.session();
      const before = await flow(q);
      for (const [method, path, body] of WRITES) {
        const r = await api.call(method, `/api/queues/${name}${path}`, { body, noCsrf: true });
        assert.equal(r.status, 403, `${path} without the CSRF token`);
        assert.equal(r.body.error.code, 'csrf');
      }
      assert.deepEqual(await flow(q), before);
    });
  });
}
