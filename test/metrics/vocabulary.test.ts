/**
 * One meaning per word (issue 38): "scheduled" is every job waiting to run, due or not; "ready"
 * (due) is a scheduled job whose time passed; "upcoming" is one not due yet. stats() JSON, the CLI
 * (stats, stats --json, queues, jobs ls, monitor), the dashboard's API and /metrics give the same
 * figure under each word. Before, the dashboard and the CLI said `scheduled 0 · ready 29` where
 * the metrics said `scheduled 29`.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { renderMonitor } from '../../src/cli/monitor-screen.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { run } from '../cli/run-cli.js';
import { parseScrape } from '../helpers/prometheus-text.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { ApiClient } from '../server/client.js';

const fx = useRedis();

describe('scheduled, ready (due) and upcoming mean the same on every surface', () => {
  test('3 due and 2 not yet due, no worker: scheduled 5, ready 3, upcoming 2 everywhere', async () => {
    const prefix = uniqueName('words');
    const name = uniqueName('q');
    const q = new Queue<number>(name, { connection: fx.redis.url, prefix });
    const dash = createDashboard({ connection: fx.redis.url, prefix, sampleMs: 60_000 });
    try {
      const past = (await q.stats()).nowMs - 60_000;
      await q.addBulk([0, 1, 2].map((i) => ({ data: i, opts: { id: `due${i}`, runAt: past + i } })));
      await q.addBulk([0, 1].map((i) => ({ data: i, opts: { id: `later${i}`, delay: 600_000 + i } })));
      const want = { scheduled: 5, ready: 3, upcoming: 2 };

      // The library.
      const s = await q.stats();
      assert.deepEqual({ scheduled: s.scheduled, ready: s.ready, upcoming: s.scheduled - s.ready }, want);
      assert.equal((await q.jobs.list({ state: 'scheduled' })).total, want.upcoming, 'the listing named scheduled holds the upcoming ones');
      assert.equal((await q.jobs.list({ state: 'ready' })).total, want.ready);

      // The CLI.
      const g = ['--redis', fx.redis.url, '--prefix', prefix, '--queue', name];
      const json = JSON.parse((await run([...g, 'stats', '--json'])).stdout);
      assert.deepEqual([json.scheduled, json.ready], [5, 3]);
      assert.match((await run([...g, 'stats'])).stdout, /^scheduled 5 \(ready 3, upcoming 2\) {2}active 0 {2}dead 0$/m);
      assert.match(
        (await run(['--redis', fx.redis.url, '--prefix', prefix, 'queues'])).stdout,
        new RegExp(`${name}\\s+scheduled\\s+5  ready\\s+3  upcoming\\s+2  `),
      );
      assert.match((await run([...g, 'jobs', 'ls', '--state', 'upcoming'])).stdout, /^2 upcoming \(scheduled, not yet due\)\n/);
      assert.match((await run([...g, 'jobs', 'ls', '--state', 'scheduled'])).stdout, /^2 upcoming \(scheduled, not yet due\)\n/);
      assert.match((await run([...g, 'jobs', 'ls', '--state', 'ready'])).stdout, /^3 ready \(due\)\n/);
      const screen = renderMonitor({ queue: name, nowMs: s.nowMs, history: [{ atMs: s.nowMs, stats: s }] }, { colour: false });
      assert.match(screen[1]!, /^scheduled\s+5\s+ready\s+3\s+upcoming\s+2\s+active/);

      // The dashboard's API (what its cards and tabs show) and its /metrics.
      const api = new ApiClient(dash);
      const detail = await api.get(`/api/queues/${name}`);
      assert.equal(detail.status, 200);
      assert.deepEqual([detail.body.stats.scheduled, detail.body.stats.ready], [5, 3]);
      const scrape = await api.get('/metrics');
      assert.equal(scrape.status, 200);
      const m = parseScrape(scrape.body);
      const series = (state: string) => m.get(`delayq_jobs{queue="${name}",state="${state}"}`);
      assert.deepEqual({ scheduled: series('scheduled'), ready: series('ready'), upcoming: series('upcoming') }, want);
    } finally {
      await dash.close();
      await q.close();
    }
  });
});
