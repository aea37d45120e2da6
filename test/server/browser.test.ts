/**
 * The dashboard in a real browser: Debian's chromium, driven by playwright-core, against a real
 * redis-server. A person's paths through it (overview → queue → job, retry a dead job, cancel
 * a scheduled one), the attacks it must shrug off (an HTML payload, a cross-site POST), and
 * read-only mode. Every page is saved as a PNG under screenshots/ (git-ignored) for a person
 * to look at; no page may log a script error or a CSP violation.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { Queue } from '../../src/index.js';
import { serveDashboard, type RunningDashboard } from '../../src/server/serve.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { until } from '../helpers/wait.js';
import { seedQueue, type SeedResult } from './seed.js';

const CHROMIUM = process.env.DQ_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = new URL('../../../screenshots/', import.meta.url);
/** A stuck step fails in seconds, never at the suite's timeout. */
const STEP_MS = 5000;

let redis: RedisServer;
let orders: Queue;
let emails: Queue;
/** A sharded queue, made by its own test (the overview test counts two queues). */
let payments: Queue | undefined;
let seeded: SeedResult;
let dashboard: RunningDashboard;
let readOnly: RunningDashboard;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Script errors and CSP violations, from every page of the run. */
const problems: string[] = [];
/** JavaScript dialogs (alert, confirm) that any page opened: an injected script would. */
const dialogs: string[] = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  redis = await startRedis();
  orders = new Queue('orders', { connection: redis.url });
  emails = new Queue('emails', { connection: redis.url });
  seeded = await seedQueue(orders, { active: 1 });
  // A queue with due jobs and nobody to take them: the overview's alarm.
  for (let i = 0; i < 5; i++) await emails.add({ to: `user${i}@example.com`, template: 'welcome' }, { id: `welcome-${i}` });
  dashboard = await serveDashboard({ connection: redis.url, port: 0, sampleMs: 500 });
  readOnly = await serveDashboard({ connection: redis.url, port: 0, readOnly: true, sampleMs: 500 });
  browser = await chromium.launch({ executablePath: CHROMIUM });
});

after(async () => {
  await browser?.close();
  await seeded?.release().catch(() => {});
  await Promise.all([dashboard?.close(), readOnly?.close(), orders?.close(), emails?.close(), payments?.close()]);
  await redis?.stop();
});

async function open(url: string, width = 1280, height = 800): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width, height } });
  contexts.push(ctx);
  const page = await ctx.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.on('console', (m) => {
    // A 4xx the page asked for and handled is logged by the browser as a failed load; that is not a problem.
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) problems.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`${page.url()}: ${e.message}`));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto(url);
  return page;
}

async function shot(page: Page, name: string): Promise<void> {
  // Relative times tick and charts draw on load; a moment lets the page settle before the picture.
  await page.waitForTimeout(150);
  await page.screenshot({ path: new URL(`${name}.png`, SHOTS).pathname, fullPage: true });
}

describe('the dashboard in Chromium', () => {
  test('opens the overview: every queue with its counts, charts, and the no-live-workers alarm', async () => {
    const page = await open(dashboard.url);
    await page.waitForSelector('.queue-card');
    const cards = page.locator('.queue-card');
    assert.equal(await cards.count(), 2);
    const emailsCard = cards.filter({ hasText: 'emails' });
    await emailsCard.getByText('No live workers').waitFor();
    assert.equal(await cards.filter({ hasText: 'orders' }).getByText('No live workers').count(), 0, 'orders has a live worker');
    // The cards split the scheduled jobs into those waiting for their time and those due (ready).
    const s = await orders.stats();
    const card = cards.filter({ hasText: 'orders' });
    assert.equal(Number(await card.locator('.stat-scheduled .stat-value').textContent()), s.scheduled - s.ready);
    assert.equal(Number(await card.locator('.stat-ready .stat-value').textContent()), s.ready);
    assert.ok((await page.locator('.queue-card svg').count()) >= 4, 'throughput and lateness charts per queue');

    // Live: a job added elsewhere shows up without a reload.
    await emails.add({ to: 'late@example.com' }, { delay: 3_600_000 });
    await until(async () => Number(await emailsCard.locator('.stat-scheduled .stat-value').textContent()) === 1, 'the live count', STEP_MS);
    await shot(page, 'overview-desktop');
    const phone = await open(dashboard.url, 390, 844);
    await phone.waitForSelector('.queue-card');
    await shot(phone, 'overview-phone');
  });

  test('follows a queue to a job', async () => {
    const page = await open(dashboard.url);
    await page.getByRole('link', { name: 'orders' }).first().click();
    await page.waitForSelector('.tabs');
    await page.waitForSelector('tbody tr');
    await shot(page, 'queue-scheduled');
    const first = page.locator('tbody a').first();
    const id = (await first.textContent())!.trim();
    await first.click();
    await page.waitForSelector('h1.job-id');
    assert.equal(await page.locator('h1.job-id').textContent(), id);
    const payload = await page.locator('pre').first().textContent();
    assert.match(payload!, /"orderId": "ord_/, 'the payload, pretty-printed');
    assert.ok(page.url().includes(`#/queues/orders/jobs/${encodeURIComponent(id)}`));
    await shot(page, 'job-scheduled');
  });

  test('retries a dead job and sees it move to scheduled', async () => {
    const id = seeded.dead[0]!;
    const page = await open(`${dashboard.url}#/queues/orders/dead`);
    await page.waitForSelector('tbody tr');
    await shot(page, 'queue-dead');
    await page.getByRole('button', { name: `Retry ${id}` }).click();
    await page.waitForSelector('.toast-success');
    await until(async () => (await orders.get(id))?.state === 'scheduled', `${id} scheduled in Redis`, STEP_MS);
    await page.goto(`${dashboard.url}#/queues/orders/jobs/${encodeURIComponent(id)}`);
    await page.waitForSelector('h1.job-id');
    // Due now, so shown as ready: scheduled and waiting for a worker.
    await page.locator('h1.job-id + .chip-ready, h1.job-id + .chip-scheduled').waitFor();
    // The failed attempt stays on the page, with its stack.
    assert.match(
      (await page
        .getByText(/GatewayError/)
        .first()
        .textContent())!,
      /GatewayError/,
    );
  });

  test('cancels a scheduled job', async () => {
    const id = seeded.scheduled[5]!;
    const page = await open(`${dashboard.url}#/queues/orders/jobs/${encodeURIComponent(id)}`);
    await page.waitForSelector('h1.job-id');
    await page.getByRole('button', { name: 'Cancel job…' }).click();
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    await shot(page, 'dialog-cancel');
    await dialog.getByRole('button', { name: 'Cancel the job' }).click();
    await until(async () => (await orders.get(id)) === null, `${id} gone from Redis`, STEP_MS);
    await until(() => page.url().endsWith('#/queues/orders'), 'back on the queue page', STEP_MS);
  });

  test('shows an HTML payload as text and runs none of it', async () => {
    const page = await open(`${dashboard.url}#/queues/orders/jobs/${encodeURIComponent(seeded.xss)}`);
    await page.waitForSelector('h1.job-id');
    const text = await page.locator('pre').first().textContent();
    assert.ok(text!.includes('<img src=x onerror=alert(1)>'), 'the markup is shown as characters');
    assert.equal(await page.locator('img[src="x"]').count(), 0, 'no element was made from it');
    // Search results and lists render it as text too.
    await page.goto(`${dashboard.url}#/queues/orders/search?text=onerror`);
    await page.waitForSelector('tbody tr');
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    await page.waitForTimeout(300);
    assert.deepEqual(dialogs, [], 'no script ran');
    await shot(page, 'search-xss');
  });

  test('refuses a cross-site POST, from fetch and from a form', async () => {
    // A page on another site (localhost is not 127.0.0.1 to a browser) that tries to pause the
    // queue: first with fetch (credentials included), then with a plain form.
    const target = `${dashboard.url}api/queues/orders/pause`;
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><form id=f method=POST action="${target}" enctype="text/plain"><input name=x value=y></form>
<script>fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{}' })
  .then(() => 'answered', () => 'blocked').then((how) => { document.title = how; document.getElementById('f').submit(); });</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      // The victim has been on the dashboard: its CSRF cookie is set in this browser.
      const page = await open(dashboard.url);
      await page.waitForSelector('.queue-card');
      const sent: string[] = [];
      page.on('request', (r) => {
        if (r.url() === target) sent.push(r.method());
      });
      await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      // The form's answer is the page the browser lands on: the dashboard's refusal.
      await page.waitForURL(target);
      const refusal = JSON.parse((await page.locator('body').textContent())!);
      assert.equal(refusal.error.code, 'cross_origin');
      assert.deepEqual(sent, ['POST', 'POST'], 'both requests reached the dashboard');
      assert.equal((await orders.stats()).paused, false, 'the queue was not paused');
    } finally {
      evil.close();
    }
  });

  test('read-only mode hides every action', async () => {
    const page = await open(`${readOnly.url}#/queues/orders/dead`);
    await page.waitForSelector('tbody tr');
    const actions = /^(Retry|Purge|Pause|Resume|Drain|Run now|Reschedule|Cancel)/;
    assert.equal(await page.getByRole('button', { name: actions }).count(), 0, 'no action on the queue page');
    assert.equal(await page.locator('tbody input[type=checkbox]').count(), 0, 'nothing to select');
    await shot(page, 'readonly-dead');
    await page.goto(`${readOnly.url}#/queues/orders/jobs/${encodeURIComponent(seeded.dead[1]!)}`);
    await page.waitForSelector('h1.job-id');
    assert.equal(await page.getByRole('button', { name: actions }).count(), 0, 'no action on the job page');
    await shot(page, 'readonly-job');
  });

  test('a sharded queue has a Shards tab: each shard with its node, counts and lag; an unsharded queue has none', async () => {
    payments = new Queue('payments', { connection: redis.url, shards: 3 });
    await payments.addBulk(Array.from({ length: 30 }, (_, i) => ({ data: { n: i }, opts: { id: `pay-${i}`, delay: i < 6 ? 0 : 600_000 } })));
    const page = await open(`${dashboard.url}#/queues/payments`);
    const tab = page.locator('.tabs a', { hasText: 'Shards' });
    await tab.click();
    await page.waitForSelector('tbody tr[data-shard]');
    assert.ok(page.url().endsWith('#/queues/payments/shards'), page.url());
    const figures = await payments.shardStats();
    assert.equal(figures.length, 4, 'the home keys and three shards');
    assert.equal(await page.locator('tbody tr[data-shard]').count(), figures.length);
    for (const f of figures) {
      const row = page.locator(`tbody tr[data-shard="${f.name}"]`);
      assert.equal((await row.locator('td').nth(2).textContent())?.trim(), f.node, `${f.name}: its node`);
      assert.equal(await row.locator('meter').getAttribute('value'), String(f.scheduled), `${f.name}: its scheduled jobs`);
      assert.equal((await row.locator('td').nth(4).textContent())?.trim(), String(f.ready), `${f.name}: its due jobs`);
    }
    await shot(page, 'queue-shards');
    await page.goto(`${dashboard.url}#/queues/orders`);
    await page.waitForSelector('tbody tr');
    assert.equal(await page.locator('.tabs a', { hasText: 'Shards' }).count(), 0, 'orders is not sharded');
  });

  test('every other page, for a person to look at, with no script error or CSP violation anywhere', async () => {
    const pages: [string, string][] = [
      ['queue-ready', '#/queues/orders/ready'],
      ['queue-active', '#/queues/orders/active'],
      ['queue-completed', '#/queues/orders/completed'],
      ['queue-schedules', '#/queues/orders/schedules'],
      ['queue-workers', '#/queues/orders/workers'],
      ['queue-shards', '#/queues/payments/shards'],
      ['queue-emails-no-workers', '#/queues/emails'],
      ['job-dead', `#/queues/orders/jobs/${encodeURIComponent(seeded.dead[2]!)}`],
      ['job-completed', `#/queues/orders/jobs/${encodeURIComponent(seeded.completed[0]!)}`],
      ['search-path', '#/queues/orders/search?path=customer.tier&equals=gold'],
    ];
    for (const [width, suffix] of [
      [1280, 'desktop'],
      [390, 'phone'],
    ] as const) {
      const page = await open(dashboard.url, width, 800);
      for (const [name, hash] of pages) {
        await page.goto(`${dashboard.url}${hash}`);
        await page.waitForSelector('main h1');
        // The live stream keeps the network busy for good, so "loaded" means no spinner left.
        await page.locator('main .loading').first().waitFor({ state: 'detached' });
        await shot(page, `${name}-${suffix}`);
      }
    }
    assert.deepEqual(problems, []);
    assert.deepEqual(dialogs, []);
  });
});
