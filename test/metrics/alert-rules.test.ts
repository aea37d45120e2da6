/**
 * The monitoring the docs give, tested: the alert rules of docs/metrics.md through `promtool test
 * rules` on series taken from a real scrape (the stuck tenant of issue 38 must fire the backlog
 * alert, a calm queue must not), and docs/grafana/delayq.json, whose every query must name a
 * metric a real scrape exports, and the KEDA recipe's query of docs/operations.md on a real scrape
 * exported by two processes. promtool is Debian's `prometheus` package (.ci/run and the test
 * preflight install it): without it locally the rules test skips and says so.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { DelayqMetrics, Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const DOCS = new URL('../../../docs/', import.meta.url);

/** The scrape's samples: `name{labels}` -> value, and the metric names it has TYPE lines for. */
function parse(text: string): { samples: Map<string, number>; families: Set<string> } {
  const samples = new Map<string, number>();
  const families = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      families.add(type[1]!);
      if (type[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) families.add(type[1]! + s);
      continue;
    }
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    samples.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return { samples, families };
}

/** The stuck tenant of issue 38, and a calm queue beside it, scraped once. */
async function scrapeScene(): Promise<{ text: string; stuck: string; calm: string }> {
  const prefix = uniqueName('alerts');
  const stuck = `${prefix}-stuck`;
  const calm = `${prefix}-calm`;
  const connection = { connection: fx.redis.url, prefix };
  const q = new Queue<string>(stuck, connection);
  const c = new Queue<string>(calm, connection);
  const release: (() => void)[] = [];
  const workers: Worker<string>[] = [];
  try {
    const twoMinutesAgo = (await q.stats()).nowMs - 120_000;
    await q.groups.pause('tenant-a');
    await q.groups.setLimits('tenant-b', { concurrency: 2 });
    await q.addBulk([
      { data: 'a1', opts: { id: 'a1', group: 'tenant-a', runAt: twoMinutesAgo } },
      ...Array.from({ length: 30 }, (_, i) => ({ data: `b${i}`, opts: { id: `b${i}`, group: 'tenant-b', runAt: twoMinutesAgo + i } })),
    ]);
    await c.add('later', { delay: 600_000 });
    const hang = async () => new Promise<void>((resolve) => release.push(resolve));
    const w = new Worker<string>(stuck, hang, { ...connection, concurrency: 10, leaseMs: 120_000 });
    const wc = new Worker<string>(calm, hang, connection);
    workers.push(w, wc);
    await until(async () => (await q.stats()).active === 2, 'two hung handlers of tenant-b', 10_000);
    const registry = new Registry();
    const metrics = await DelayqMetrics.create({ registry, statsCacheMs: 0, topGroups: 5, perShard: true });
    metrics.observeQueue(q).observeQueue(c).observeWorker(w).observeWorker(wc);
    return { text: await registry.metrics(), stuck, calm };
  } finally {
    for (const f of release) f();
    await Promise.all(workers.map((w) => w.close()));
    await Promise.all([q.close(), c.close()]);
  }
}

/** The YAML block under "## Alerts worth having" in docs/metrics.md. */
function documentedRules(): string {
  const doc = readFileSync(new URL('metrics.md', DOCS), 'utf8');
  const section = doc.slice(doc.indexOf('## Alerts worth having'));
  const m = /```yaml\n([\s\S]*?)```/.exec(section);
  assert.ok(m, 'docs/metrics.md has a yaml block of alert rules');
  return m[1]!;
}

const promtool = spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;

describe('monitoring, tested', () => {
  test('the documented alert rules, through promtool, on a real scrape: the stuck tenant fires DelayqBacklog, the calm queue fires nothing', async (t) => {
    if (!promtool) return t.skip('promtool not found: install Debian\'s "prometheus" package (CI installs it: .ci/run)');
    const { text, stuck, calm } = await scrapeScene();
    const { samples } = parse(text);
    const lag = samples.get(`delayq_oldest_ready_age_seconds{queue="${stuck}"}`);
    assert.ok(lag !== undefined && lag >= 120, `the stuck queue's lag in the scrape: ${lag}`);
    assert.equal(samples.get(`delayq_oldest_ready_age_seconds{queue="${calm}"}`), 0);
    // Every series of the two queues as scraped, held for 15 minutes; the lag grows a minute a minute.
    const series = [...samples]
      .filter(([s]) => s.includes(`queue="${stuck}"`) || s.includes(`queue="${calm}"`))
      .map(([s, v]) => ({
        series: s,
        values: s.startsWith('delayq_oldest_ready_age_seconds') && v > 0 ? `${v}+60x15` : `${v}x15`,
      }));
    const dir = mkdtempSync(join(tmpdir(), 'delayq-promtool-'));
    try {
      writeFileSync(join(dir, 'rules.yml'), documentedRules());
      const check = spawnSync('promtool', ['check', 'rules', join(dir, 'rules.yml')], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(check.status, 0, `promtool check rules: ${check.stdout}${check.stderr}`);
      const tests = {
        rule_files: ['rules.yml'],
        evaluation_interval: '1m',
        tests: [
          {
            interval: '1m',
            input_series: series,
            alert_rule_test: [
              { eval_time: '1m', alertname: 'DelayqBacklog', exp_alerts: [] },
              { eval_time: '10m', alertname: 'DelayqBacklog', exp_alerts: [{ exp_labels: { queue: stuck } }] },
              { eval_time: '10m', alertname: 'DelayqGroupWalkPartial', exp_alerts: [] },
              { eval_time: '10m', alertname: 'DelayqDeadJobs', exp_alerts: [] },
              { eval_time: '10m', alertname: 'DelayqTenantBacklog', exp_alerts: [] },
            ],
          },
        ],
      };
      // JSON is YAML: promtool reads it as is.
      writeFileSync(join(dir, 'tests.yml'), JSON.stringify(tests, null, 2));
      const r = spawnSync('promtool', ['test', 'rules', join(dir, 'tests.yml')], { encoding: 'utf8', timeout: 60_000, cwd: dir });
      assert.equal(r.status, 0, `promtool test rules:\n${r.stdout}${r.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('docs/grafana/delayq.json: every query names a metric a real scrape exports', async () => {
    const dashboard = JSON.parse(readFileSync(new URL('grafana/delayq.json', DOCS), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const { text } = await scrapeScene();
    const { families } = parse(text);
    const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
    assert.ok(queries.length >= 8, `the dashboard has queries (${queries.length})`);
    for (const { panel, expr } of queries) {
      const names = expr.match(/\bdelayq_[a-z_]+/g) ?? [];
      assert.ok(names.length > 0, `panel ${panel}: ${expr} names a delayq metric`);
      for (const n of names) assert.ok(families.has(n), `panel ${panel}: ${n} is not in a real scrape (${[...families].join(', ')})`);
    }
    // Each documented alert's metric is on the dashboard too, so the page explains a page.
    for (const n of new Set(documentedRules().match(/\bdelayq_[a-z_]+/g) ?? [])) {
      assert.ok(
        queries.some((q) => q.expr.includes(n)),
        `${n} (an alert's) has a panel`,
      );
    }
  });

  test("the KEDA recipe's query (docs/operations.md), through promtool, on a real scrape exported by two processes", async (t) => {
    if (!promtool) return t.skip('promtool not found: install Debian\'s "prometheus" package (CI installs it: .ci/run)');
    const doc = readFileSync(new URL('operations.md', DOCS), 'utf8');
    const section = doc.slice(doc.indexOf('## Scaling workers before the jobs fall due'));
    const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block, 'docs/operations.md has the ScaledObject');
    const folded = /query: >-\n((?: {10}\S.*\n)+)/.exec(block)?.[1];
    assert.ok(folded, 'the ScaledObject has a folded query');
    const name = uniqueName('keda');
    const query = folded
      .trim()
      .split(/\s*\n\s*/)
      .join(' ')
      .replaceAll('queue="orders"', `queue="${name}"`);
    // 3 due now, 10 due within 5 minutes, 6 later: 3 + 10 / 5 = 5 jobs to run in the next minute.
    const q = new Queue<number>(name, { connection: fx.redis.url });
    let text: string;
    try {
      const past = (await q.stats()).nowMs - 1000;
      await q.addBulk([
        ...Array.from({ length: 3 }, (_, i) => ({ data: i, opts: { runAt: past } })),
        ...Array.from({ length: 10 }, (_, i) => ({ data: i, opts: { delay: 30_000 + i * 20_000 } })),
        ...Array.from({ length: 6 }, (_, i) => ({ data: i, opts: { delay: 600_000 + i } })),
      ]);
      const registry = new Registry();
      (await DelayqMetrics.create({ registry, statsCacheMs: 0 })).observeQueue(q);
      text = await registry.metrics();
    } finally {
      await q.close();
    }
    const { samples } = parse(text);
    assert.equal(samples.get(`delayq_upcoming_due_jobs{queue="${name}",within_seconds="300"}`), 10);
    // Two processes observe the queue (a worker and a dashboard): each exports the same gauges.
    const series = [...samples]
      .filter(([s]) => s.includes(`queue="${name}"`))
      .flatMap(([s, v]) => ['worker', 'dashboard'].map((instance) => ({ series: s.replace(/}$/, `,instance="${instance}"}`), values: `${v}x5` })));
    const dir = mkdtempSync(join(tmpdir(), 'delayq-promtool-'));
    try {
      writeFileSync(join(dir, 'rules.yml'), 'groups: []\n');
      const tests = {
        rule_files: ['rules.yml'],
        evaluation_interval: '1m',
        tests: [{ interval: '1m', input_series: series, promql_expr_test: [{ expr: query, eval_time: '2m', exp_samples: [{ labels: '{}', value: 5 }] }] }],
      };
      writeFileSync(join(dir, 'tests.yml'), JSON.stringify(tests, null, 2));
      const r = spawnSync('promtool', ['test', 'rules', join(dir, 'tests.yml')], { encoding: 'utf8', timeout: 60_000, cwd: dir });
      assert.equal(r.status, 0, `promtool test rules (${query}):\n${r.stdout}${r.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
