/**
 * The dashboard on a Redis user made from aclRules() alone: every page's reads, the actions and
 * the metrics answer as they do for the default user (a missing permission shows up as a 500
 * carrying NOPERM).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { aclRules, Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { ApiClient, type Answer } from './client.js';

const fx = useRedis();

let url: string;
fx.before(async () => {
  await fx.client.call('ACL', 'SETUSER', 'jobs', 'on', '>s3cret', ...aclRules('dq'));
  url = `redis://jobs:s3cret@127.0.0.1:${fx.redis.port}`;
});

function ok(a: Answer, what: string): Answer {
  assert.equal(a.status, 200, `${what}: ${a.status} ${JSON.stringify(a.body)}`);
  return a;
}

describe('the dashboard as the aclRules() user', () => {
  test('reads every page, acts on jobs and the dead set, and serves metrics', async () => {
    const name = uniqueName('acl');
    const q = new Queue<{ n: number }>(name, { connection: url });
    const dash = createDashboard({ connection: url, sampleMs: 200 });
    const worker = new Worker<{ n: number }>(
      name,
      (job) => {
        if (job.data.n < 3) throw new UnrecoverableError('no');
      },
      { connection: url },
    );
    const errors: Error[] = [];
    worker.on('error', (e) => errors.push(e));
    try {
      await q.setRetention({ completed: { count: 10 } });
      for (let n = 0; n < 5; n++) await q.add({ n }, { id: `j${n}` });
      await until(async () => {
        const s = await q.stats();
        return s.dead === 3 && s.completed === 2;
      }, 'three dead and two completed');
      await worker.close();
      await q.add({ n: 9 }, { id: 'later', delay: 60_000 });
      const api = new ApiClient(dash);
      ok(await api.session(), 'session');
      const base = `/api/queues/${encodeURIComponent(name)}`;
      await until(async () => (await api.get('/api/queues')).status === 200, 'the overview');
      for (const path of [
        '/api/queues',
        base,
        `${base}/timeline`,
        `${base}/shards`,
        `${base}/workers`,
        `${base}/jobs?state=scheduled`,
        `${base}/jobs?state=dead`,
        `${base}/jobs?state=completed`,
        `${base}/search?text=j`,
        `${base}/jobs/j0`,
        `${base}/schedules`,
      ])
        ok(await api.get(path), path);
      ok(await api.post(`${base}/jobs`, { data: { n: 10 }, opts: { id: 'added', delay: 60_000 } }), 'add');
      ok(await api.post(`${base}/jobs/added/reschedule`, { delay: 120_000 }), 'reschedule');
      ok(await api.post(`${base}/jobs/added/promote`), 'promote');
      ok(await api.post(`${base}/jobs/added/cancel`), 'cancel');
      ok(await api.post(`${base}/jobs/j0/retry`), 'retry one dead job');
      ok(await api.post(`${base}/dead/retry`, { ids: ['j1'] }), 'bulk retry');
      ok(await api.post(`${base}/dead/purge`, { errorContains: 'no', expect: 1 }), 'purge by error');
      ok(await api.post(`${base}/completed/purge`, { all: true, expect: 2 }), 'purge completed');
      ok(await api.post(`${base}/pause`), 'pause');
      ok(await api.post(`${base}/resume`), 'resume');
      ok(await api.post(`${base}/drain`, {}), 'drain');
      const metrics = await dash.fetch(new Request('http://127.0.0.1/metrics'));
      const text = await metrics.text();
      assert.equal(metrics.status, 200, text);
      assert.match(text, new RegExp(`delayq_jobs\\{queue="${name}",state="dead"\\}`));
      const obliterated = await q.obliterate({ force: true });
      assert.equal(obliterated.removed, true);
      assert.deepEqual(errors, []);
    } finally {
      await worker.close();
      await dash.close();
      await q.close();
    }
  });
});
