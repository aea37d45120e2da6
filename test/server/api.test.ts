/**
 * The dashboard's HTTP API on both stores: every operation, the error statuses, the bulk cap
 * and confirmation, redaction, and the audit trail. Security has its own file.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listQueues, MemoryStore, Queue, UnrecoverableError, Worker, type Store } from '../../src/index.js';
import { overdueOccurrence } from '../../src/server/api.js';
import { createDashboard, type AuditLine, type Dashboard, type DashboardOptions } from '../../src/server/dashboard.js';
import { uniqueName } from '../helpers/names.js';
import { useErrorLog } from '../helpers/errors.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { ApiClient } from './client.js';

interface Backend {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Options that put a queue, a worker and a dashboard on the same data. */
  options(): { store: Store } | { connection: string };
}

const fx = useRedis();
const errorLog = useErrorLog();
let memory: MemoryStore | undefined;
const backends: Backend[] = [
  {
    name: 'memory',
    async start() {
      memory = new MemoryStore();
    },
    async stop() {},
    options: () => ({ store: memory! }),
  },
  {
    name: 'redis',
    // The file's server (useRedis) is up before any test and stopped after the last.
    async start() {},
    async stop() {},
    options: () => ({ connection: fx.redis.url }),
  },
];

/** A logger that keeps what it is given (the audit lines). */
function captureLogger(): { lines: AuditLine[]; logger: DashboardOptions['logger'] } {
  const lines: AuditLine[] = [];
  const keep = (obj: unknown) => {
    if (typeof obj === 'object' && obj !== null && (obj as AuditLine).audit) lines.push(obj as AuditLine);
  };
  return { lines, logger: { debug() {}, info: keep, warn() {}, error() {} } };
}

for (const backend of backends) {
  describe(`dashboard API (${backend.name})`, () => {
    const open: { close(): Promise<void> }[] = [];
    const track = <T extends { close(): Promise<void> }>(x: T): T => {
      open.push(x);
      return x;
    };
    before(() => backend.start());
    after(async () => {
      for (const o of open.reverse()) await o.close().catch(() => {});
      await backend.stop();
    });

    function setUp(extra: Partial<DashboardOptions> = {}): { q: Queue; dash: Dashboard; api: ApiClient; audit: AuditLine[]; name: string } {
      const name = uniqueName('api');
      const q = track(new Queue(name, backend.options()));
      const { lines, logger } = captureLogger();
      const dash = track(createDashboard({ ...backend.options(), logger, sampleMs: 200, ...extra }));
      return { q, dash, api: new ApiClient(dash), audit: lines, name };
    }

    /** Makes dead jobs: a worker whose handler gives up at once. */
    async function kill(q: Queue, ids: string[]): Promise<void> {
      for (const id of ids) await q.add({ id, doomed: true }, { id });
      const w = new Worker(
        q.name,
        async () => {
          throw new UnrecoverableError('payment provider said no');
        },
        { ...backend.options(), concurrency: 5 },
      );
      try {
        await until(async () => (await Promise.all(ids.map((id) => q.get(id)))).every((j) => j?.state === 'dead'), `${ids.length} dead jobs`);
      } finally {
        await w.close();
      }
    }

    test('a job goes in, is listed, found, read, rescheduled, promoted and cancelled', async () => {
      const { api, name, audit } = setUp();
      const s = await api.session();
      assert.equal(s.status, 200);
      assert.equal(s.body.canWrite, true);
      assert.equal(s.body.readOnly, false);

      const added = await api.post(`/api/queues/${name}/jobs`, {
        data: { orderId: 'A-1', customer: { email: 'ann@example.com' } },
        opts: { id: 'order:1', delay: 60_000 },
      });
      assert.equal(added.status, 200, JSON.stringify(added.body));
      assert.deepEqual([added.body.id, added.body.added, added.body.state], ['order:1', true, 'scheduled']);
      await api.post(`/api/queues/${name}/jobs`, { data: { orderId: 'B-2' }, opts: { id: 'order:2', delay: 120_000 } });

      const page = await api.get(`/api/queues/${name}/jobs?state=scheduled&limit=1`);
      assert.equal(page.status, 200);
      assert.equal(page.body.total, 2);
      assert.deepEqual(
        page.body.jobs.map((j: { id: string }) => j.id),
        ['order:1'],
      );
      const next = await api.get(`/api/queues/${name}/jobs?state=scheduled&limit=1&cursor=${encodeURIComponent(page.body.cursor)}`);
      assert.deepEqual(
        next.body.jobs.map((j: { id: string }) => j.id),
        ['order:2'],
      );

      const byText = await api.get(`/api/queues/${name}/search?text=ann%40example`);
      assert.deepEqual(
        byText.body.jobs.map((j: { id: string }) => j.id),
        ['order:1'],
      );
      const byPath = await api.get(`/api/queues/${name}/search?path=orderId&equals=${encodeURIComponent('"B-2"')}`);
      assert.deepEqual(
        byPath.body.jobs.map((j: { id: string }) => j.id),
        ['order:2'],
      );
      const bare = await api.get(`/api/queues/${name}/search?path=orderId&equals=B-2`);
      assert.equal(bare.body.jobs.length, 1, 'a bare word is read as a string');

      const job = await api.get(`/api/queues/${name}/jobs/order%3A1`);
      assert.equal(job.status, 200);
      assert.equal(job.body.data.customer.email, 'ann@example.com');

      const moved = await api.post(`/api/queues/${name}/jobs/order%3A1/reschedule`, { delay: 300_000 });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.ok(moved.body.dueAtMs > added.body.dueAtMs);
      const promoted = await api.post(`/api/queues/${name}/jobs/order%3A2/promote`);
      assert.equal(promoted.status, 200);
      const ready = await api.get(`/api/queues/${name}/jobs?state=ready`);
      assert.deepEqual(
        ready.body.jobs.map((j: { id: string }) => j.id),
        ['order:2'],
      );

      assert.equal((await api.post(`/api/queues/${name}/jobs/order%3A1/cancel`)).status, 200);
      const again = await api.post(`/api/queues/${name}/jobs/order%3A1/cancel`);
      assert.equal(again.status, 404, 'a cancelled job is gone');
      assert.equal((await api.get(`/api/queues/${name}/jobs/order%3A1`)).status, 404);
      assert.deepEqual(
        audit.map((a) => [a.action, a.summary, a.target, a.count]),
        [
          ['job.add', 'Adds a job', 'order:1', 1],
          ['job.add', 'Adds a job', 'order:2', 1],
          ['job.reschedule', 'Gives a scheduled job a new due time', 'order:1', 1],
          ['job.promote', 'Makes a scheduled job due now', 'order:2', 1],
          ['job.cancel', 'Cancels a scheduled job', 'order:1', 1],
        ],
      );
      assert.ok(audit.every((a) => a.user === 'anonymous' && a.queue === name));
    });

    test('a running job is cancelled ({ running: true }) or failed now through the API: its handler is told, the write is audited; refusals say why', async () => {
      const { api, name, audit, q } = setUp();
      await api.session();
      const held = new Map<string, AbortSignal>();
      const w = track(
        new Worker(
          name,
          (job) => {
            held.set(job.id, job.signal);
            return new Promise(() => {});
          },
          { ...backend.options(), concurrency: 5 },
        ),
      );
      await q.add({ n: 1 }, { id: 'run:1', attempts: 3 });
      await q.add({ n: 2 }, { id: 'run:2', attempts: 3 });
      await until(() => held.size === 2, 'both run');
      const refused = await api.post(`/api/queues/${name}/jobs/run%3A1/cancel`);
      assert.equal(refused.status, 409);
      assert.match(refused.body.error.message, /is running: cancel it with \{ "running": true \}/);
      const cancelled = await api.post(`/api/queues/${name}/jobs/run%3A1/cancel`, { running: true, reason: 'upstream is down' });
      assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
      assert.deepEqual(cancelled.body, { id: 'run:1', cancelled: true, state: 'active' });
      await until(() => held.get('run:1')!.aborted, 'the handler is told');
      assert.equal(held.get('run:1')!.reason, 'cancelled');

      const failed = await api.post(`/api/queues/${name}/jobs/run%3A2/fail`, { reason: 'hung', retryDelayMs: 3_600_000 });
      assert.equal(failed.status, 200, JSON.stringify(failed.body));
      assert.equal(failed.body.outcome, 'retried');
      await until(() => held.get('run:2')!.aborted, 'the handler is told');
      const notStarted = await api.post(`/api/queues/${name}/jobs/run%3A2/fail`, { reason: 'again' });
      assert.equal(notStarted.status, 409);
      assert.match(notStarted.body.error.message, /has not started: fail it with \{ "dead": true \}/);
      assert.equal((await api.post(`/api/queues/${name}/jobs/run%3A2/fail`, { dead: true, reason: 'poison' })).body.outcome, 'dead');
      assert.equal((await api.post(`/api/queues/${name}/jobs/run%3A2/fail`, { dead: true })).status, 409, 'dead: it has ended');
      assert.equal((await api.post(`/api/queues/${name}/jobs/none/fail`, { dead: true })).status, 404);
      const bad = await api.post(`/api/queues/${name}/jobs/run%3A2/fail`, { dead: 'yes' });
      assert.equal(bad.status, 400);
      assert.deepEqual(
        audit.map((a) => [a.action, a.summary, a.target]),
        [
          ['job.cancel', 'Cancels a scheduled job', 'run:1'],
          ['job.fail', 'Fails a job now', 'run:2'],
          ['job.fail', 'Fails a job now', 'run:2'],
        ],
      );
      await w.close({ timeoutMs: 0 });
    });

    test("the audit line's ip is the client as the dashboard knows it, never a header the client wrote", async () => {
      const forged = { 'x-forwarded-for': '203.0.113.66' };
      const plain = setUp();
      await plain.api.session();
      assert.equal((await plain.api.call('POST', `/api/queues/${plain.name}/jobs`, { body: { data: 1 }, headers: forged })).status, 200);
      // In-process, with no socket and no clientAddress, the dashboard does not know the client.
      assert.equal(plain.audit.at(-1)?.ip, undefined);
      const behindProxy = setUp({ clientAddress: () => '192.0.2.7' });
      await behindProxy.api.session();
      assert.equal((await behindProxy.api.call('POST', `/api/queues/${behindProxy.name}/jobs`, { body: { data: 1 }, headers: forged })).status, 200);
      assert.equal(behindProxy.audit.at(-1)?.ip, '192.0.2.7');
    });

    test('bad input is a 400 naming the field, and writes nothing', async () => {
      const { api, name, q } = setUp();
      await api.session();
      const bad = await api.post(`/api/queues/${name}/jobs`, { data: 1, opts: { delay: -5 } });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.field, 'body.opts.delay');
      assert.match(bad.body.error.message, /must not be negative/);
      const unknown = await api.post(`/api/queues/${name}/jobs`, { data: 1, opts: { dealy: 5 } });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error.field, 'body.opts.dealy');
      const state = await api.get(`/api/queues/${name}/jobs?state=finished`);
      assert.equal(state.status, 400);
      assert.equal(state.body.error.field, 'query.state');
      const notJson = await api.call('POST', `/api/queues/${name}/jobs`, { headers: { 'content-type': 'application/json' }, body: undefined });
      assert.equal(notJson.status, 400, 'an empty body has no data');
      const badName = await api.get('/api/queues/no%20spaces/jobs?state=scheduled');
      assert.equal(badName.status, 400);
      assert.equal(badName.body.error.field, 'queue name');
      assert.equal((await q.stats()).scheduled, 0);
      const wrongState = await api.post(`/api/queues/${name}/jobs/nope/promote`);
      assert.equal(wrongState.status, 404);
    });

    test('dead jobs: retried one by one or in bulk, purged, capped and confirmed', async () => {
      const { api, name, q, audit } = setUp({ maxBulk: 3 });
      await api.session();
      await kill(q, ['d1', 'd2', 'd3', 'd4']);
      const dead = await api.get(`/api/queues/${name}/jobs?state=dead`);
      assert.equal(dead.body.total, 4);
      const one = await api.get(`/api/queues/${name}/jobs/d1`);
      assert.match(one.body.lastError, /payment provider said no/);
      assert.equal(one.body.errors.length, 1, 'every failed attempt, with its stack');
      assert.match(one.body.errors[0].error, /UnrecoverableError: payment provider said no\n\s+at /);

      const retried = await api.post(`/api/queues/${name}/jobs/d1/retry`);
      assert.equal(retried.status, 200);
      assert.equal((await q.get('d1'))?.state, 'scheduled');
      assert.equal((await api.post(`/api/queues/${name}/jobs/d1/retry`)).status, 409, 'a scheduled job is not retried');
      assert.equal((await api.call('DELETE', `/api/queues/${name}/jobs/d1`)).body.count, 1, 'a scheduled job is removed by cancelling it');

      const overCap = await api.post(`/api/queues/${name}/dead/purge`, { all: true });
      // Three dead jobs fit the cap of three; add one more to go over it.
      assert.equal(overCap.status, 200);
      assert.equal(overCap.body.count, 3);
      await kill(q, ['e1', 'e2', 'e3', 'e4']);
      const refused = await api.post(`/api/queues/${name}/dead/retry`, { all: true });
      assert.equal(refused.status, 422);
      assert.match(refused.body.error.message, /at most 3/);
      const tooMany = await api.post(`/api/queues/${name}/dead/retry`, { ids: ['e1', 'e2', 'e3', 'e4'] });
      assert.equal(tooMany.status, 400, 'ids beyond the cap are bad input');

      const unconfirmed = await api.post(`/api/queues/${name}/dead/purge`, { errorContains: 'payment', expect: 2 });
      assert.equal(unconfirmed.status, 422, 'four match, over the cap');
      const filtered = await api.post(`/api/queues/${name}/dead/retry`, { ids: ['e1', 'e2'] });
      assert.equal(filtered.body.count, 2);
      const confirmedLow = await api.post(`/api/queues/${name}/dead/purge`, { errorContains: 'payment', expect: 1 });
      assert.equal(confirmedLow.status, 409, 'two match, more than the one confirmed');
      const confirmed = await api.post(`/api/queues/${name}/dead/purge`, { errorContains: 'payment', expect: 2 });
      assert.equal(confirmed.body.count, 2);
      const nothing = await api.post(`/api/queues/${name}/dead/purge`, {});
      assert.equal(nothing.status, 400, 'an empty filter is not "all"');
      assert.equal((await q.stats()).dead, 0);
      const purges = audit.filter((a) => a.action === 'dead.purge');
      assert.deepEqual(
        purges.map((a) => [a.target, a.count]),
        [
          ['all', 3],
          ['error contains "payment"', 2],
        ],
      );
    });

    test('drain needs a confirmed count; pause and resume; schedules; workers; timeline; queue detail', async () => {
      const { api, name, q } = setUp();
      await api.session();
      for (let i = 0; i < 5; i++) await q.add({ i }, { delay: 60_000 * i + 30_000 });
      const timeline = await api.get(`/api/queues/${name}/timeline`);
      assert.equal(timeline.status, 200);
      assert.equal(timeline.body.bucketMs, 60_000);
      assert.deepEqual(timeline.body.counts.slice(0, 6), [1, 1, 1, 1, 1, 0], 'one job falls due in each of the next five minutes');
      assert.equal((await api.get(`/api/queues/${name}/timeline?buckets=0`)).status, 400);
      const refused = await api.post(`/api/queues/${name}/drain`, { expect: 3 });
      assert.equal(refused.status, 409);
      const drained = await api.post(`/api/queues/${name}/drain`, { expect: 5 });
      assert.equal(drained.body.count, 5);

      assert.deepEqual((await api.post(`/api/queues/${name}/pause`)).body, { ok: true, changed: true });
      assert.deepEqual((await api.post(`/api/queues/${name}/pause`)).body, { ok: true, changed: false });
      assert.equal((await q.stats()).paused, true);
      await api.post(`/api/queues/${name}/resume`);
      assert.equal((await q.stats()).paused, false);

      const up = await api.post(`/api/queues/${name}/schedules/nightly`, { cron: '0 2 * * *', tz: 'Europe/Berlin', data: { report: 'sales' } });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const badCron = await api.post(`/api/queues/${name}/schedules/broken`, { cron: 'every day', tz: 'UTC' });
      assert.equal(badCron.status, 400);
      assert.equal(badCron.body.error.field, 'cron');
      const list = await api.get(`/api/queues/${name}/schedules`);
      assert.equal(list.body.length, 1);
      assert.equal(list.body[0].tz, 'Europe/Berlin');
      assert.ok(list.body[0].nextRunAtMs > Date.now() - 60_000);
      assert.equal((await api.call('DELETE', `/api/queues/${name}/schedules/nightly`)).status, 200);
      assert.equal((await api.call('DELETE', `/api/queues/${name}/schedules/nightly`)).status, 404);

      const w = track(new Worker(name, async () => {}, backend.options()));
      const workers = await until(async () => {
        const r = await api.get(`/api/queues/${name}/workers`);
        return r.body.length === 1 ? r.body : undefined;
      }, 'the worker listed');
      assert.equal(workers[0].id, w.id);
      assert.equal(workers[0].language, 'node', 'the language a worker beats with, beside its host');

      const detail = await api.get(`/api/queues/${name}`);
      assert.equal(detail.status, 200);
      assert.equal(detail.body.stats.workers, 1);
      assert.equal(detail.body.retention.completed, null);
      assert.ok(Array.isArray(detail.body.history));
      assert.deepEqual([detail.body.shards, detail.body.drainingShards], [1, 0]);

      // Shards: an unsharded queue is one; after a reshard, the new ones and what drains.
      await q.add({ left: true }, { id: 'left', delay: 600_000 });
      assert.deepEqual(
        (await api.get(`/api/queues/${name}/shards`)).body.map((f: { name: string; role: string; scheduled: number }) => [f.name, f.role, f.scheduled]),
        [[name, 'current', 1]],
      );
      await q.reshard(2);
      const shards = await api.get(`/api/queues/${name}/shards`);
      assert.equal(shards.status, 200);
      assert.deepEqual(
        shards.body.map((f: { name: string; role: string; scheduled: number }) => [f.name, f.role, f.scheduled]),
        [
          [name, 'draining', 1],
          [`${name}#0`, 'current', 0],
          [`${name}#1`, 'current', 0],
        ],
      );
      const resharded = await api.get(`/api/queues/${name}`);
      assert.deepEqual([resharded.body.shards, resharded.body.drainingShards], [2, 1]);
    });

    test('drain with dueBefore counts exactly what it would take (ready jobs too) and is held to the confirmed expect (409, nothing removed)', async () => {
      const { api, name, q } = setUp();
      await api.session();
      const now = Date.now();
      for (let i = 0; i < 2; i++) await q.add({ i }, { id: `ready-${i}`, runAt: now - 60_000 + i });
      for (let i = 0; i < 3; i++) await q.add({ i }, { id: `soon-${i}`, delay: 60_000 + i * 1000 });
      const late = await q.add({ late: true }, { id: 'late', delay: 3_600_000 });
      const dueBefore = late.dueAtMs - 60_000;
      for (const expect of [0, 1, 4]) {
        const refused = await api.post(`/api/queues/${name}/drain`, { dueBefore, expect });
        assert.equal(refused.status, 409, `expect ${expect}: ${JSON.stringify(refused.body)}`);
        assert.match(refused.body.error.message, /^5 jobs/);
      }
      assert.equal((await q.stats()).scheduled, 6, 'nothing was removed');
      const drained = await api.post(`/api/queues/${name}/drain`, { dueBefore, expect: 5 });
      assert.equal(drained.status, 200, JSON.stringify(drained.body));
      assert.equal(drained.body.count, 5);
      assert.deepEqual(
        (await api.get(`/api/queues/${name}/jobs?state=scheduled`)).body.jobs.map((j: { id: string }) => j.id),
        ['late'],
      );
      assert.equal((await q.stats()).scheduled, 1);
    });

    test('drain is held to maxBulk like every bulk action (422, nothing removed), with or without dueBefore', async () => {
      const { api, name, q } = setUp({ maxBulk: 3 });
      await api.session();
      const added = [];
      for (let i = 0; i < 8; i++) added.push(await q.add({ i }, { id: `j${i}`, delay: 60_000 + i * 1000 }));
      for (const body of [{}, { expect: 8 }, { dueBefore: added[3]!.dueAtMs + 1 }, { dueBefore: added[3]!.dueAtMs + 1, expect: 100 }]) {
        const r = await api.post(`/api/queues/${name}/drain`, body);
        assert.equal(r.status, 422, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.error.message, /at most 3/);
      }
      assert.equal((await q.stats()).scheduled, 8, 'nothing was removed');
      const three = await api.post(`/api/queues/${name}/drain`, { dueBefore: added[2]!.dueAtMs + 1, expect: 3 });
      assert.equal(three.status, 200, JSON.stringify(three.body));
      assert.equal(three.body.count, 3);
      assert.equal((await q.stats()).scheduled, 5);
    });

    test('a drain whose count would read past more than 20,000 due jobs it leaves is refused (422); one over 20,000 jobs within maxBulk is not', async () => {
      const { api, name, q } = setUp({ maxBulk: 30_000 });
      await api.session();
      const now = Date.now();
      // Due jobs (the ready listing is in hand-out order), all due after the drain's bound.
      await q.addBulk(Array.from({ length: 20_001 }, (_, i) => ({ data: i, opts: { id: `r${i}`, runAt: now - 60_000 } })));
      const refused = await api.post(`/api/queues/${name}/drain`, { dueBefore: now - 120_000 });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, /delayq drain/);
      const all = await api.post(`/api/queues/${name}/drain`, { expect: 20_001 });
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.equal(all.body.count, 20_001);
      assert.equal((await q.stats()).scheduled, 0);
    });

    test('a queue that does not exist answers 404 on every route that names it and nothing is written for it; adding a job through the API creates it', async () => {
      const { api } = setUp();
      await api.session();
      const ghost = uniqueName('ghost');
      for (const [method, path, body] of [
        ['GET', '', undefined],
        ['GET', '/jobs?state=scheduled', undefined],
        ['GET', '/search?text=x', undefined],
        ['GET', '/timeline', undefined],
        ['GET', '/shards', undefined],
        ['GET', '/workers', undefined],
        ['GET', '/schedules', undefined],
        ['GET', '/jobs/some-id', undefined],
        ['POST', '/pause', undefined],
        ['POST', '/resume', undefined],
        ['POST', '/drain', {}],
        ['POST', '/dead/purge', { all: true }],
        ['POST', '/schedules/nightly', { every: 60_000 }],
        ['POST', '/jobs/some-id/cancel', undefined],
      ] as const) {
        const r = await api.call(method, `/api/queues/${ghost}${path}`, { body });
        assert.equal(r.status, 404, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.error.message, new RegExp(`no queue ${ghost}`));
      }
      assert.equal((await api.get(`/api/live?queue=${ghost}`)).status, 404);
      assert.ok(!(await listQueues(backend.options())).some((x) => x.name === ghost), 'not registered');
      if (backend.name === 'redis') {
        const client = fx.client;
        assert.deepEqual(await client.keys(`*${ghost}*`), [], 'no key written');
      }
      const added = await api.post(`/api/queues/${ghost}/jobs`, { data: { first: true }, opts: { id: 'first' } });
      assert.equal(added.status, 200, JSON.stringify(added.body));
      const now = await api.get(`/api/queues/${ghost}`);
      assert.equal(now.status, 200, 'the queue exists at once');
      assert.equal(now.body.stats.scheduled, 1);
      track(new Queue(ghost, backend.options()));
    });

    test('a queue obliterated by another process answers 404 within seconds', async () => {
      const { api, name, q } = setUp();
      await api.session();
      await q.add({ x: 1 });
      assert.equal((await api.get(`/api/queues/${name}`)).status, 200);
      await q.obliterate({ force: true });
      await until(async () => (await api.get(`/api/queues/${name}`)).status === 404, 'the obliterated queue to answer 404', 5000);
      assert.equal((await api.post(`/api/queues/${name}/pause`)).status, 404, 'no Pause button for a queue that is gone');
      assert.equal((await q.stats()).paused, false);
    });

    test('every job route answers 404 for a job that is not there, and 409 for one in the wrong state', async () => {
      const { api, name, q } = setUp();
      await api.session();
      for (const [method, path, body] of [
        ['POST', 'cancel', undefined],
        ['POST', 'promote', undefined],
        ['POST', 'reschedule', { delay: 1000 }],
        ['POST', 'retry', undefined],
        ['DELETE', '', undefined],
      ] as const) {
        const r = await api.call(method, `/api/queues/${name}/jobs/ghost${path ? `/${path}` : ''}`, { body });
        assert.equal(r.status, 404, `${method} ${path}`);
      }
      await kill(q, ['gone']);
      const r = await api.post(`/api/queues/${name}/jobs/gone/cancel`);
      assert.equal(r.status, 409);
      assert.match(r.body.error.message, /is dead/);
      assert.equal((await api.call('DELETE', `/api/queues/${name}/jobs/gone`)).body.count, 1);
    });

    test('dead jobs newest first, both ways with their own cursors; filtered by error text up to a budget, counted for a bulk action', async () => {
      const { api, name, q } = setUp({ maxBulk: 5 });
      await api.session();
      const w = track(
        new Worker<{ err: string }>(
          name,
          async (job) => {
            throw new UnrecoverableError(job.data.err);
          },
          backend.options(),
        ),
      );
      errorLog.watch(w);
      for (let i = 0; i < 9; i++) {
        await q.add({ err: i % 3 === 0 ? `ETIMEDOUT after ${i}` : `declined ${i}` }, { id: `d${i}` });
        await until(async () => (await q.stats()).dead === i + 1, `d${i} dead`);
      }
      const ids = (body: { jobs: { id: string }[] }) => body.jobs.map((j) => j.id);
      const oldest = await api.get(`/api/queues/${name}/jobs?state=dead&limit=4`);
      assert.deepEqual(ids(oldest.body), ['d0', 'd1', 'd2', 'd3']);
      const newest = await api.get(`/api/queues/${name}/jobs?state=dead&limit=4&order=desc`);
      assert.deepEqual(ids(newest.body), ['d8', 'd7', 'd6', 'd5']);
      const next = await api.get(`/api/queues/${name}/jobs?state=dead&limit=4&order=desc&cursor=${newest.body.cursor}`);
      assert.deepEqual(ids(next.body), ['d4', 'd3', 'd2', 'd1']);
      // A cursor of one order is refused by the other: 400 naming the cursor.
      const crossed = await api.get(`/api/queues/${name}/jobs?state=dead&limit=4&cursor=${newest.body.cursor}`);
      assert.equal(crossed.status, 400);
      assert.equal(crossed.body.error.field, 'cursor');
      assert.equal((await api.get(`/api/queues/${name}/jobs?state=dead&order=sideways`)).status, 400);

      // By error text: d0, d3, d6 time out. A small budget reads on with the cursor.
      const all = await api.get(`/api/queues/${name}/jobs?state=dead&order=desc&errorContains=ETIMEDOUT`);
      assert.deepEqual(ids(all.body), ['d6', 'd3', 'd0']);
      assert.deepEqual([all.body.scanned, all.body.total, all.body.cursor], [9, 9, undefined]);
      const found: string[] = [];
      let cursor: string | undefined;
      let calls = 0;
      do {
        const page = await api.get(`/api/queues/${name}/jobs?state=dead&errorContains=ETIMEDOUT&budget=2&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.ok(page.body.scanned <= 2, `read ${page.body.scanned}, budget 2`);
        found.push(...ids(page.body));
        cursor = page.body.cursor;
        calls++;
      } while (cursor);
      assert.deepEqual(found, ['d0', 'd3', 'd6']);
      assert.ok(calls >= 5, `${calls} calls of two jobs each`);
      assert.equal((await api.get(`/api/queues/${name}/jobs?state=scheduled&errorContains=x`)).status, 400, 'only dead and completed jobs have a filter');
      assert.equal((await api.get(`/api/queues/${name}/jobs?state=dead&budget=5`)).status, 400, 'a budget goes with a filter');

      // The count a bulk action by the same filter would take, confirmed with expect.
      const count = await api.get(`/api/queues/${name}/dead/count?errorContains=ETIMEDOUT`);
      assert.deepEqual(count.body, { count: 3, more: false });
      assert.deepEqual((await api.get(`/api/queues/${name}/dead/count?errorContains=e`)).body, { count: 5, more: true }, 'capped at maxBulk');
      assert.equal((await api.get(`/api/queues/${name}/dead/count`)).status, 400);
      const retried = await api.post(`/api/queues/${name}/dead/retry`, { errorContains: 'ETIMEDOUT', expect: count.body.count });
      assert.equal(retried.body.count, 3);
    });

    test("jobs listed by name (?name=), with redaction on too: only that name, in the state's order, paged within a budget; by name and last error together; a bad name is a 400", async () => {
      const { api, name, q } = setUp({ redact: () => '[hidden]' });
      await api.session();
      await q.addBulk(
        Array.from({ length: 9 }, (_, i) => ({ data: i, opts: { id: `j${i}`, delay: 60_000 + i * 1_000, name: i % 3 === 0 ? 'mail' : 'charge' } })),
      );
      const ids = (body: { jobs: { id: string }[] }) => body.jobs.map((j) => j.id);
      const all = await api.get(`/api/queues/${name}/jobs?state=scheduled&name=mail`);
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.deepEqual([ids(all.body), all.body.scanned, all.body.total, all.body.cursor], [['j0', 'j3', 'j6'], 9, 9, undefined]);
      assert.deepEqual(
        all.body.jobs.map((j: { name: string; data: unknown }) => [j.name, j.data]),
        [
          ['mail', '[hidden]'],
          ['mail', '[hidden]'],
          ['mail', '[hidden]'],
        ],
      );
      const found: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await api.get(`/api/queues/${name}/jobs?state=scheduled&order=desc&name=mail&budget=2&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200, JSON.stringify(page.body));
        assert.ok(page.body.scanned <= 2, `read ${page.body.scanned}, budget 2`);
        found.push(...ids(page.body));
        cursor = page.body.cursor;
      } while (cursor);
      assert.deepEqual(found, ['j6', 'j3', 'j0']);
      const bad = await api.get(`/api/queues/${name}/jobs?state=scheduled&name=${encodeURIComponent('a\tb')}`);
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.field, 'query.name');
      await kill(q, ['k1', 'k2']);
      await q.add({}, { id: 'k3', name: 'mail' });
      await kill(q, ['k3']);
      const both = await api.get(`/api/queues/${name}/jobs?state=dead&errorContains=provider&name=mail`);
      assert.equal(both.status, 200, JSON.stringify(both.body));
      assert.deepEqual(ids(both.body), ['k3']);
    });

    test('with redaction on, the error text is still searched (it is never redacted) but a count by payload is refused', async () => {
      const { api, name, q } = setUp({ redact: () => '[hidden]' });
      await api.session();
      await kill(q, ['r1', 'r2']);
      const byError = await api.get(`/api/queues/${name}/jobs?state=dead&errorContains=provider`);
      assert.equal(byError.status, 200);
      assert.deepEqual(byError.body.jobs.map((j: { id: string; data: unknown }) => [j.id, j.data]).sort(), [
        ['r1', '[hidden]'],
        ['r2', '[hidden]'],
      ]);
      assert.deepEqual((await api.get(`/api/queues/${name}/dead/count?errorContains=provider`)).body, { count: 2, more: false });
      const byData = await api.get(`/api/queues/${name}/dead/count?errorContains=provider&dataContains=doomed`);
      assert.equal(byData.status, 403);
      assert.equal(byData.body.error.field, 'dataContains');
    });

    test('the history of every queue in one request, kept in the store: a dashboard started after the work shows it; a schedule no Scheduler enqueues is overdue', async () => {
      const { api, name, q } = setUp();
      await q.add({ a: 1 }, { delay: 60_000 });
      // Work done before this dashboard reads anything: two completed, one dead.
      await q.addBulk([{ data: { ok: 1 } }, { data: { ok: 2 } }, { data: { doomed: true }, opts: { id: 'gone' } }]);
      const w = new Worker(
        q.name,
        (job) => {
          if ((job.data as { doomed?: boolean }).doomed) throw new UnrecoverableError('no');
        },
        backend.options(),
      );
      try {
        await until(async () => {
          const done = await q.history({ minutes: 2 });
          return done.reduce((n, m) => n + m.completed, 0) === 2 && done.reduce((n, m) => n + m.dead, 0) === 1;
        }, 'two completions and a death recorded');
      } finally {
        await w.close();
      }
      await api.session();
      const other = uniqueName('api');
      const q2 = track(new Queue(other, backend.options()));
      await q2.add({ b: 1 }, { delay: 60_000 });
      const h = await api.get('/api/history');
      assert.equal(h.status, 200, JSON.stringify(h.body));
      const mine = h.body.queues.filter((x: { name: string }) => x.name === name || x.name === other);
      assert.equal(mine.length, 2, 'both queues in one answer');
      for (const x of mine) {
        assert.equal(typeof x.since, 'number');
        assert.ok(x.since < Date.now() - 58 * 60_000 && x.since > Date.now() - 61 * 60_000, 'the whole hour: the store kept it');
        assert.equal(x.history.length, 60);
        assert.ok(
          x.history.every((p: { completed?: number }) => typeof p.completed === 'number'),
          'every minute is known',
        );
      }
      const byName = Object.fromEntries(mine.map((x: { name: string; completed: number; died: number }) => [x.name, [x.completed, x.died]]));
      assert.deepEqual(byName[name], [2, 1], 'what happened before the dashboard started');
      assert.deepEqual(byName[other], [0, 0]);
      const detail = await api.get(`/api/queues/${name}`);
      assert.equal(detail.body.historySince, mine.find((x: { name: string }) => x.name === name).since);
      assert.equal(
        detail.body.history.reduce((n: number, p: { completed: number }) => n + p.completed, 0),
        2,
      );

      // Made now, nobody running them: not late yet (the first occurrence is not a minute past).
      await q.schedules.upsert('often', { every: 2000 });
      await q.schedules.upsert('daily', { cron: '0 2 * * *', tz: 'UTC' });
      const listed = await api.get(`/api/queues/${name}/schedules`);
      assert.deepEqual(
        listed.body.map((x: { name: string; overdueAtMs?: number }) => [x.name, x.overdueAtMs]),
        [
          ['daily', undefined],
          ['often', undefined],
        ],
      );
      // Late by more than a minute and more than half the interval: overdue (the occurrence named).
      const def = { tz: 'UTC', data: null, opts: {}, missed: 'latest' as const, name: 's', nextRunAtMs: undefined };
      assert.equal(overdueOccurrence({ ...def, every: 2000, anchorMs: 0, lastRunAtMs: undefined }, 120_000), 2000);
      assert.equal(overdueOccurrence({ ...def, every: 2000, anchorMs: 0, lastRunAtMs: 110_000 }, 120_000), undefined);
      assert.equal(overdueOccurrence({ ...def, every: 3_600_000, anchorMs: 0, lastRunAtMs: 0 }, 3_600_000 + 1_700_000), undefined, 'within half the hour');
      assert.equal(overdueOccurrence({ ...def, every: 3_600_000, anchorMs: 0, lastRunAtMs: 0 }, 3_600_000 + 1_900_000), 3_600_000);
    });

    test('redaction hides payload fields everywhere and limits search to ids', async () => {
      const { api, name, q } = setUp({ redact: (data) => ({ ...(data as object), card: '[redacted]' }) });
      await q.add({ orderId: 'R-1', card: '4242 4242 4242 4242' }, { id: 'order:R-1' });
      const job = await api.get(`/api/queues/${name}/jobs/order%3AR-1`);
      assert.equal(job.body.data.card, '[redacted]');
      assert.equal(job.body.data.orderId, 'R-1');
      const page = await api.get(`/api/queues/${name}/jobs?state=ready`);
      assert.equal(page.body.jobs[0].data.card, '[redacted]');
      const probe = await api.get(`/api/queues/${name}/search?text=4242`);
      assert.equal(probe.body.jobs.length, 0, 'a redacted field cannot be found by guessing');
      const byId = await api.get(`/api/queues/${name}/search?text=R-1`);
      assert.equal(byId.body.jobs.length, 1);
      assert.equal(byId.body.jobs[0].data.card, '[redacted]');
      assert.equal((await api.get(`/api/queues/${name}/search?path=card&equals=x`)).status, 403);
    });

    test('with redaction on, search matches ids only: a right and a wrong guess of a payload get byte-identical answers, page after page', async () => {
      const { dash, name, q } = setUp({ redact: (data) => ({ ...(data as object), card: '[redacted]' }) });
      for (let i = 0; i < 12; i++) await q.add({ orderId: `R-${i}`, card: i % 2 ? '4242 4242 4242 4242' : '5555 5555 5555 5555' }, { id: `order:R-${i}` });
      const raw = async (path: string) => {
        const res = await dash.fetch(new Request(`http://127.0.0.1:8787${path}`, { headers: { host: '127.0.0.1:8787' } }));
        return { status: res.status, text: await res.text() };
      };
      /** Every page of a search, raw, following its cursor. */
      const pages = async (text: string) => {
        const out: string[] = [];
        let cursor: string | undefined;
        do {
          const r = await raw(
            `/api/queues/${name}/search?text=${encodeURIComponent(text)}&limit=1&budget=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          );
          assert.equal(r.status, 200, r.text);
          out.push(r.text);
          cursor = JSON.parse(r.text).cursor;
        } while (cursor && out.length < 50);
        return out;
      };
      const right = await pages('4242');
      const wrong = await pages('4343');
      assert.ok(right.length > 1, 'the search went over several pages');
      assert.deepEqual(right, wrong, 'a right guess and a wrong one answer the same, byte for byte');
      assert.ok(right.every((t) => !t.includes('4242')));
      const byId = JSON.parse((await raw(`/api/queues/${name}/search?text=${encodeURIComponent('R-7')}`)).text);
      assert.deepEqual(
        byId.jobs.map((j: { id: string; data: { card: string } }) => [j.id, j.data.card]),
        [['order:R-7', '[redacted]']],
      );
    });

    test('with redaction on, bulk actions refuse a payload filter (403), whatever else they carry; an error filter still works', async () => {
      const { api, name, q } = setUp({ redact: (data) => ({ ...(data as object), card: '[redacted]' }), maxBulk: 3 });
      assert.equal((await api.session()).body.redacted, true, 'the page learns that search goes by id only');
      await kill(q, ['p1', 'p2']);
      await q.setRetention({ completed: { count: 10 } });
      for (const [path, body] of [
        ['dead/purge', { dataContains: 'doomed', expect: 0 }],
        ['dead/purge', { dataContains: 'not-in-any-payload', expect: 0 }],
        ['dead/retry', { dataContains: 'doomed' }],
        ['dead/retry', { dataContains: 'doomed', errorContains: 'payment', expect: 5 }],
        ['completed/purge', { dataContains: 'x' }],
      ] as const) {
        const r = await api.post(`/api/queues/${name}/${path}`, body);
        assert.equal(r.status, 403, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
        assert.equal(r.body.error.code, 'redacted');
      }
      assert.equal((await q.stats()).dead, 2, 'nothing was touched');
      const byError = await api.post(`/api/queues/${name}/dead/purge`, { errorContains: 'payment', expect: 2 });
      assert.equal(byError.status, 200, JSON.stringify(byError.body));
      assert.equal(byError.body.count, 2);
    });

    test('/metrics has the per-shard series by default (metrics: { perShard: false } leaves them off), and scraping again adds no listener', async () => {
      const name = uniqueName('metric');
      const q = track(new Queue(name, { ...backend.options(), shards: 3 }));
      for (let i = 0; i < 9; i++) await q.add({ i }, { id: `m${i}`, delay: 60_000 });
      const on = new ApiClient(track(createDashboard({ ...backend.options(), sampleMs: 60_000 })));
      const warnings: Error[] = [];
      const onWarning = (w: Error) => warnings.push(w);
      process.on('warning', onWarning);
      let text = '';
      try {
        for (let i = 0; i < 15; i++) {
          const r = await on.get('/metrics');
          assert.equal(r.status, 200);
          text = r.body;
        }
        // A warning is emitted on the next turn of the event loop.
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('warning', onWarning);
      }
      assert.deepEqual(
        warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message),
        [],
      );
      const shardJobs = [...text.matchAll(new RegExp(`delayq_shard_jobs\\{queue="${name}",shard="([^"]+)",state="scheduled"\\} (\\d+)`, 'g'))];
      // The three shards, and the queue's own keys (role 'home': schedules, workers).
      assert.equal(
        shardJobs.length,
        4,
        text
          .split('\n')
          .filter((l) => l.includes('shard'))
          .join('\n'),
      );
      assert.equal(
        shardJobs.reduce((n, m) => n + Number(m[2]), 0),
        9,
      );
      assert.match(text, new RegExp(`delayq_shard_oldest_ready_age_seconds\\{queue="${name}",shard="${name}#\\d+"\\}`));
      const off = new ApiClient(track(createDashboard({ ...backend.options(), sampleMs: 60_000, metrics: { perShard: false } })));
      const plain = await off.get('/metrics');
      assert.equal(plain.status, 200);
      assert.match(plain.body, new RegExp(`delayq_jobs\\{queue="${name}",state="scheduled"\\} 9`));
      assert.doesNotMatch(plain.body, /delayq_shard_jobs\{/);
    });

    test('the queue list, the OpenAPI document and the metrics', async () => {
      const { api, name, q } = setUp();
      await q.add({ x: 1 });
      const queues = await until(async () => {
        const r = await api.get('/api/queues');
        return r.body.find((x: { name: string }) => x.name === name);
      }, 'the queue in the list');
      assert.equal(queues.stats.scheduled, 1);

      const doc = await api.get('/openapi.json');
      assert.equal(doc.body.openapi, '3.1.0');
      const ops = Object.values(doc.body.paths as Record<string, Record<string, { requestBody?: unknown }>>).flatMap((p) => Object.keys(p));
      assert.ok(ops.length >= 23, `${ops.length} operations`);
      const add = doc.body.paths['/api/queues/{queue}/jobs'].post;
      const opts = add.requestBody.content['application/json'].schema.properties.opts;
      assert.equal(opts.properties.priority.maximum, 1_000_000, 'the library schema, as is');
      assert.ok(add.responses['400'] && add.responses['403']);

      const metrics = await api.get('/metrics');
      assert.equal(metrics.status, 200);
      assert.match(metrics.body, new RegExp(`delayq_jobs\\{queue="${name}",state="scheduled"\\} 1`));
    });
  });
}
