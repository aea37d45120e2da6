/**
 * The dashboard in a real browser: Debian's chromium, driven by playwright-core, against a real
 * redis-server. A person's paths through it (overview → queue → job, retry a dead job, cancel
 * a scheduled one, pause a group and set the queue's limits), the attacks it must shrug off (an HTML payload, a cross-site POST), and
 * read-only mode. Every page is saved as a PNG under screenshots/ (git-ignored) for a person
 * to look at; no page may log a script error or a CSP violation.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { serveDashboard, type RunningDashboard } from '../../src/server/serve.js';
import { deferred, until } from '../helpers/wait.js';
import { seedQueue, type SeedResult } from './seed.js';
import { useErrorLog } from '../helpers/errors.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();
const errorLog = useErrorLog();

const CHROMIUM = process.env.DQ_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = new URL('../../../screenshots/', import.meta.url);
/** A stuck step fails in seconds, never at the suite's timeout. */
const STEP_MS = 5000;

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

fx.before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  orders = new Queue('orders', { connection: fx.redis.url });
  emails = new Queue('emails', { connection: fx.redis.url });
  seeded = await seedQueue(orders, { active: 1 });
  // A queue with due jobs and nobody to take them: the overview's alarm.
  for (let i = 0; i < 5; i++) await emails.add({ to: `user${i}@example.com`, template: 'welcome' }, { id: `welcome-${i}` });
  dashboard = await serveDashboard({ connection: fx.redis.url, port: 0, sampleMs: 500 });
  readOnly = await serveDashboard({ connection: fx.redis.url, port: 0, readOnly: true, sampleMs: 500 });
  browser = await chromium.launch({ executablePath: CHROMIUM });
});

fx.after(async () => {
  await browser?.close();
  await seeded?.release();
  await Promise.all([dashboard?.close(), readOnly?.close(), orders?.close(), emails?.close(), payments?.close()]);
});

async function open(url: string, width = 1280, height = 800): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width, height } });
  contexts.push(ctx);
  const page = await ctx.newPage();
  page.setDefaultTimeout(STEP_MS);
  // A first load in a fresh context (fonts, scripts, the first API calls) is the slowest step on a
  // loaded 2-core machine: a CI run saw one pass 5 s. Still a stuck page fails in seconds.
  page.setDefaultNavigationTimeout(3 * STEP_MS);
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
  test('opens the overview: one row per queue, the one in trouble first, from one history request, sortable by any column', async () => {
    const page = await open('about:blank');
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/')) apiCalls.push(new URL(r.url()).pathname);
    });
    await page.goto(dashboard.url);
    await page.waitForSelector('.queue-table tbody tr');
    const rows = page.locator('.queue-table tbody tr');
    assert.equal(await rows.count(), 2);
    // emails has due jobs and no live worker: first, marked, though it sorts after orders by name.
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'emails');
    assert.equal(await rows.nth(0).getAttribute('class'), 'row-alert');
    assert.equal(await rows.nth(1).getAttribute('data-queue'), 'orders');
    assert.match((await page.locator('.page-sub').textContent())!, /1 queue with due jobs and no live worker/);
    const s = await orders.stats();
    const cells = rows.nth(1).locator('td');
    assert.equal((await cells.nth(2).textContent())?.trim(), String(s.ready), 'due now');
    assert.equal((await cells.nth(4).textContent())?.trim(), String(s.active), 'running');
    assert.equal((await cells.nth(6).textContent())?.trim(), String(s.dead), 'dead');
    assert.equal((await cells.nth(7).textContent())?.trim(), String(s.workers), 'workers');
    await until(async () => apiCalls.includes('/api/history'), 'the history request', STEP_MS);
    await page.waitForTimeout(300);
    assert.equal(apiCalls.filter((p) => p === '/api/history').length, 1, 'one history request for every queue');
    assert.deepEqual(
      apiCalls.filter((p) => p.startsWith('/api/queues/')),
      [],
      'no request per queue',
    );
    assert.match((await page.locator('.table-note').textContent())!, /Failures are counted since \d\d:\d\d/, 'the history says since when');
    // Sort by name: orders last → first after a click on "Queue" (ascending), then the other way.
    await page.getByRole('button', { name: 'Queue' }).click();
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'emails');
    await page.getByRole('button', { name: 'Queue' }).click();
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'orders');
    await page.getByRole('button', { name: 'Sort by trouble' }).click();
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'emails');

    // Live: a job added elsewhere shows up without a reload.
    await emails.add({ to: 'late@example.com' }, { id: 'due-too' });
    await until(async () => (await rows.nth(0).locator('td').nth(2).textContent())?.trim() === '6', 'the live count', STEP_MS);
    await shot(page, 'overview-desktop');
    const phone = await open(dashboard.url, 390, 844);
    await phone.waitForSelector('.queue-table tbody tr');
    await shot(phone, 'overview-phone');
  });

  test('a queue page has the counts and charts, labelled with since when the history goes back', async () => {
    const page = await open(`${dashboard.url}#/queues/orders`);
    await page.waitForSelector('.stats .stat-ready');
    const s = await orders.stats();
    assert.equal(Number(await page.locator('.stat-ready .stat-value').textContent()), s.ready);
    assert.equal(Number(await page.locator('.stat-scheduled .stat-value').textContent()), s.scheduled - s.ready);
    await page.getByText(/completed since \d\d:\d\d/).waitFor();
    assert.equal(await page.getByText('in the last hour').count(), 0, 'not an hour: the dashboard just started');
  });

  test('a queue that does not exist says so, with nothing to act on', async () => {
    const page = await open(`${dashboard.url}#/queues/no-such-queue`);
    await page.getByText('No such queue').first().waitFor();
    await page.waitForTimeout(300);
    assert.equal(await page.getByRole('button', { name: /Pause|Drain|Resume/ }).count(), 0);
    assert.equal(await page.locator('.tabs').count(), 0);
    await shot(page, 'queue-missing');
  });

  test('dead jobs: newest first, the other way on request, pages both ways; by error text, retried in bulk with the count confirmed', async () => {
    const billing = new Queue<{ err: string }>('billing', { connection: fx.redis.url });
    try {
      const w = new Worker<{ err: string }>(
        'billing',
        async (job) => {
          throw new UnrecoverableError(job.data.err);
        },
        { connection: fx.redis.url },
      );
      errorLog.watch(w);
      for (let i = 0; i < 30; i++)
        await billing.add(
          { err: i % 3 === 0 ? `connect ETIMEDOUT 127.0.0.1:${5400 + i}` : `card declined (${i})` },
          { id: `bill-${String(i).padStart(2, '0')}` },
        );
      await until(async () => (await billing.stats()).dead === 30, 'thirty dead', 10_000);
      await w.close();
      const newest = (await billing.jobs.list({ state: 'dead', order: 'desc', limit: 30 })).jobs.map((j) => j.id);

      const page = await open(`${dashboard.url}#/queues/billing/dead`);
      await page.waitForSelector('tbody tr');
      const ids = async () => (await page.locator('tbody .id-link').allTextContents()).map((t) => t.trim());
      assert.deepEqual(await ids(), newest.slice(0, 25), 'newest first');
      await page.getByRole('button', { name: 'Next page' }).click();
      await until(async () => (await ids())[0] === newest[25], 'the next page', STEP_MS);
      assert.deepEqual(await ids(), newest.slice(25));
      await page.getByRole('button', { name: 'Previous page' }).click();
      await until(async () => (await ids())[0] === newest[0], 'back to the first page', STEP_MS);
      await page.getByRole('button', { name: 'Oldest first' }).click();
      await until(async () => (await ids())[0] === newest.at(-1), 'oldest first', STEP_MS);
      await shot(page, 'queue-dead-oldest-first');

      // By error text, from the search box.
      await page.getByRole('button', { name: 'Newest first' }).click();
      await page.getByLabel('Search by').selectOption('error');
      await page.getByLabel('Error text').fill('ETIMEDOUT');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(/#\/queues\/billing\/dead\?error=ETIMEDOUT$/);
      const retryAll = page.getByRole('button', { name: 'Retry all 10 whose error contains “ETIMEDOUT”' });
      await retryAll.waitFor();
      assert.equal(await page.locator('tbody tr').count(), 10);
      assert.match((await page.locator('.search-note').textContent())!, /looked through 30 of 30/);
      await shot(page, 'queue-dead-error-search');
      await retryAll.click();
      const dialog = page.locator('dialog[open]');
      await dialog.getByRole('button', { name: 'Retry 10 jobs' }).click();
      await page.waitForSelector('.toast-success');
      await until(async () => (await billing.stats()).dead === 20, 'ten retried', STEP_MS);
      const phone = await open(`${dashboard.url}#/queues/billing/dead`, 390, 844);
      await phone.waitForSelector('tbody tr');
      assert.ok(await phone.locator('tbody td.col-error').first().isVisible(), 'the error column on a phone');
      const list = await phone.locator('.queue-list-part').boundingBox();
      const charts = await phone.locator('.queue-charts').boundingBox();
      assert.ok(list && charts && list.y < charts.y, 'on a phone the list comes before the charts');
      await shot(phone, 'queue-dead-phone');
    } finally {
      await billing.obliterate({ force: true });
      await billing.close();
    }
  });

  test('a search on a large queue reads on by itself, showing how far it got, until it finds a page or its time is up', async () => {
    const big = new Queue('archive', { connection: fx.redis.url });
    try {
      for (let at = 0; at < 12_000; at += 2000) {
        await big.addBulk(
          Array.from({ length: 2000 }, (_, i) => ({
            data: { n: at + i, tag: at + i === 11_990 ? 'needle-in-hay' : 'hay' },
            opts: { id: `a-${at + i}`, delay: 3_600_000 },
          })),
        );
      }
      const page = await open(`${dashboard.url}#/queues/archive`);
      await page.waitForSelector('tbody tr');
      const searches: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/search?')) searches.push(r.url());
      });
      await page.getByLabel('Id or payload text').fill('needle-in');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.locator('tbody tr', { hasText: 'a-11990' }).waitFor();
      assert.ok(searches.length >= 3, `${searches.length} calls, each of at most 5,000 jobs, with no click between them`);
      assert.match((await page.locator('.search-note').textContent())!, /searched 12,000 of 12,000/);
      await shot(page, 'search-large');
    } finally {
      await big.obliterate({ force: true });
      await big.close();
    }
  });

  test('a schedule nobody enqueues is flagged on its queue: not being enqueued, is a Scheduler running?', async () => {
    // Stored as a schedule made ten minutes ago, every minute, and never run.
    const def = { every: 60_000, tz: 'UTC', data: { report: 'stale' }, opts: {}, missed: 'latest', anchorMs: Date.now() - 600_000 };
    await orders.store.scheduleSet('orders', 'stale-export', JSON.stringify(def));
    try {
      const page = await open(`${dashboard.url}#/queues/orders`);
      const warn = page.getByRole('link', { name: /Schedule stale-export not being enqueued · is a Scheduler running\?/ });
      await warn.waitFor();
      await warn.click();
      await page.waitForSelector('.overdue');
      assert.equal(await page.locator('.overdue').count(), 1, 'the nightly report is on time; only the stale one is flagged');
      await shot(page, 'queue-schedules-overdue');
    } finally {
      await orders.schedules.remove('stale-export');
    }
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
    assert.deepEqual(
      (await dialog.getByRole('button').allTextContents()).map((t) => t.trim()),
      ['Keep the job', 'Cancel the job'],
      'the way out does not read as the action',
    );
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
      await page.waitForSelector('.queue-table');
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

  test("a queue's groups: the Groups tab lists a group with its counts; it is paused through the dialog and shows paused; the limits are set from under the title", async () => {
    const tenants = new Queue<{ n: number }>('tenants', { connection: fx.redis.url });
    const gate = deferred();
    const w = errorLog.watch(new Worker<{ n: number }>('tenants', () => gate.promise, { connection: fx.redis.url, concurrency: 4 }));
    try {
      await tenants.setLimits({ groupConcurrency: 1 });
      await tenants.groups.setLimits('tenant-7', { rateLimit: { max: 5, perMs: 60_000 } });
      for (let i = 0; i < 3; i++) await tenants.add({ n: i }, { id: `t42-${i}`, group: 'tenant-42' });
      await tenants.add({ n: 9 }, { id: 't7-0', group: 'tenant-7' });
      await until(async () => (await tenants.groups.get('tenant-42')).waiting === 2, 'one of tenant-42 running, two waiting', STEP_MS);

      const page = await open(`${dashboard.url}#/queues/tenants`);
      const limitsLine = page.locator('.limits-line');
      await limitsLine.getByText('per group').waitFor();
      assert.match((await limitsLine.textContent())!, /Concurrency no limit · per group 1/);
      await page.locator('.tabs a', { hasText: 'Groups' }).click();
      await page.waitForURL(/#\/queues\/tenants\/groups$/);
      const row = page.locator('tbody tr[data-group="tenant-42"]');
      await row.waitFor();
      const cells = row.locator('td');
      assert.equal((await cells.nth(1).textContent())?.trim(), '1 / 1', 'running, of the limit per group');
      assert.equal((await cells.nth(2).textContent())?.trim(), '2', 'waiting');
      assert.equal((await cells.nth(3).textContent())?.trim(), "1 (queue's)", "no limit of its own: the queue's applies");
      assert.equal((await cells.nth(4).textContent())?.trim(), 'none', 'no rate limit');
      assert.equal((await cells.nth(5).textContent())?.trim(), 'no', 'not paused');
      const seven = page.locator('tbody tr[data-group="tenant-7"]');
      await seven.waitFor();
      assert.equal((await seven.locator('td').nth(4).textContent())?.trim(), '1 / 5 per 1 min', 'its own rate limit: a token used of 5 a minute');
      await shot(page, 'queue-groups');

      await page.getByRole('button', { name: 'Pause tenant-42' }).click();
      const dialog = page.locator('dialog[open]');
      await dialog.waitFor();
      assert.match((await dialog.textContent())!, /1 running job finishes; 2 waiting jobs stay in line/);
      await shot(page, 'dialog-pause-group');
      await dialog.getByRole('button', { name: 'Pause group' }).click();
      await page.waitForSelector('.toast-success');
      await row.locator('.badge', { hasText: 'Paused' }).waitFor();
      assert.equal(await row.getAttribute('class'), 'row-paused');
      assert.equal((await tenants.groups.get('tenant-42')).paused, true, 'paused in Redis');
      await page.getByRole('button', { name: 'Resume tenant-42' }).waitFor();
      await shot(page, 'queue-groups-paused');

      // A group named "..": a URL resolves groups/../pause to the queue's own pause, so the page
      // must refuse to name it in a path rather than pause the whole queue.
      await tenants.groups.setLimits('..', { concurrency: 2 });
      await page.locator('tbody tr[data-group=".."]').waitFor();
      await page.getByRole('button', { name: 'Pause ..' }).click();
      await dialog.getByRole('button', { name: 'Pause group' }).click();
      await page.locator('.toast-error', { hasText: 'cannot be named in a URL' }).waitFor();
      await page.locator('.toast-error .toast-close').click();
      assert.equal((await tenants.stats()).paused, false, 'the queue was not paused');
      assert.equal((await tenants.groups.get('..')).paused, false);

      // The queue's limits, from the line under the title.
      await page.getByRole('button', { name: 'Set the queue’s limits' }).click();
      await dialog.getByLabel('Concurrency', { exact: true }).fill('8');
      await dialog.getByLabel('Rate tokens', { exact: true }).fill('100');
      await dialog.getByLabel('Rate window (ms)', { exact: true }).fill('1000');
      await shot(page, 'dialog-limits');
      await dialog.getByRole('button', { name: 'Set limits' }).click();
      await until(
        async () => /Concurrency 8 · per group 1 · Rate 100 per 1 s · group rate no limit/.test((await limitsLine.textContent()) ?? ''),
        'the new limits on the page',
        STEP_MS,
      );
      assert.deepEqual(
        { ...(await tenants.limits()) },
        { concurrency: 8, groupConcurrency: 1, rateLimit: { max: 100, perMs: 1000 }, groupRateLimit: undefined },
      );

      // A group's rate limit, through its limit dialog.
      await page.goto(`${dashboard.url}#/queues/tenants/groups`);
      await row.waitFor();
      while ((await page.locator('.toast .toast-close').count()) > 0) await page.locator('.toast .toast-close').first().click();
      await page.getByRole('button', { name: 'Set the limit of tenant-42' }).click();
      await dialog.getByLabel('Rate of tenant-42 tokens', { exact: true }).fill('3');
      await dialog.getByLabel('Rate of tenant-42 window (ms)', { exact: true }).fill('60000');
      await dialog.getByRole('button', { name: 'Set limit' }).click();
      await page.waitForSelector('.toast-success');
      await until(async () => (await tenants.groups.get('tenant-42')).rateLimit?.max === 3, 'the group rate limit in Redis', STEP_MS);
      assert.deepEqual((await tenants.groups.get('tenant-42')).rateLimit, { max: 3, perMs: 60_000 });

      // A job shows its group, in its row and on its page.
      await page.goto(`${dashboard.url}#/queues/tenants/active`);
      await page.locator('tbody .group-tag', { hasText: 'tenant-' }).first().waitFor();
      await shot(page, 'queue-active-groups');
      await page.goto(`${dashboard.url}#/queues/tenants/jobs/t42-1`);
      await page.locator('.fact', { hasText: 'Group' }).getByRole('link', { name: 'tenant-42' }).waitFor();
      await shot(page, 'job-active-group');

      // Read-only: the groups and limits show, with nothing to act on.
      const ro = await open(`${readOnly.url}#/queues/tenants/groups`);
      await ro.locator('tbody tr[data-group="tenant-42"]').waitFor();
      await ro.locator('.limits-line').getByText('per group').waitFor();
      assert.equal(await ro.getByRole('button', { name: /^(Pause|Resume|Set)/ }).count(), 0);
    } finally {
      gate.resolve();
      await w.close();
      await tenants.obliterate({ force: true });
      await tenants.close();
    }
  });

  test('a sharded queue has a Shards tab: each shard with its node, counts and lag; an unsharded queue has none', async () => {
    payments = new Queue('payments', { connection: fx.redis.url, shards: 3 });
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

  test('with many queues the trouble comes first: stranded by wait, then lag, then failures, then dead, then by name (the README picture)', async () => {
    const made: Queue<unknown>[] = [];
    const make = (name: string) => {
      const q = new Queue(name, { connection: fx.redis.url });
      made.push(q);
      return q;
    };
    try {
      const now = Date.now();
      const index = make('search-index');
      for (let i = 0; i < 2; i++) await index.add({ doc: i }, { id: `doc-${i}`, runAt: now - 20 * 60_000 - i });
      const hooks = make('webhooks');
      // Sampled before its jobs fail, so the dashboard sees the dead count rise ("failed, 1 h").
      await hooks.add({ later: true }, { id: 'hook-later', delay: 3_600_000 });
      await new Promise((r) => setTimeout(r, 1500));
      const w = new Worker(
        'webhooks',
        async () => {
          throw new UnrecoverableError('POST https://hooks.example.com/ 502');
        },
        { connection: fx.redis.url },
      );
      errorLog.watch(w);
      for (let i = 0; i < 8; i++) await hooks.add({ i }, { id: `hook-${i}` });
      await until(async () => (await hooks.stats()).dead === 8, 'eight dead webhooks', 10_000);
      await w.close();
      const invoices = make('invoices');
      await invoices.add({ n: 1 }, { delay: 3_600_000 });
      await invoices.pause();
      for (const name of ['reports', 'notifications']) await make(name).add({ n: 1 }, { delay: 600_000 });
      const page = await open(dashboard.url, 1280, 640);
      const rows = page.locator('.queue-table tbody tr');
      // payments (the sharded queue of an earlier test) has due jobs and nobody on it either.
      const order = ['search-index', 'emails', ...(payments ? ['payments'] : []), 'orders', 'webhooks', 'invoices', 'notifications', 'reports'];
      // The failures column fills in from the history (the dead count rose while sampled).
      await until(
        async () => JSON.stringify(await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-queue')))) === JSON.stringify(order),
        `the trouble order ${order.join(', ')}`,
        15_000,
      );
      await until(
        async () => (await rows.nth(order.indexOf('webhooks')).locator('td').nth(5).textContent())?.trim() === '8',
        'eight failed in the hour',
        35_000,
      );
      await shot(page, 'overview-many');
      // DQ_DOCS_SHOT=1 makes this picture the README's (docs/dashboard.png).
      if (process.env.DQ_DOCS_SHOT === '1') copyFileSync(new URL('overview-many.png', SHOTS), new URL('../../../docs/dashboard.png', import.meta.url));
    } finally {
      for (const q of made) {
        await q.obliterate({ force: true });
        await q.close();
      }
    }
  });

  test('every other page, for a person to look at, with no script error or CSP violation anywhere', async () => {
    const pages: [string, string][] = [
      ['queue-ready', '#/queues/orders/ready'],
      ['queue-active', '#/queues/orders/active'],
      ['queue-completed', '#/queues/orders/completed'],
      ['queue-schedules', '#/queues/orders/schedules'],
      ['queue-workers', '#/queues/orders/workers'],
      ['queue-groups-none', '#/queues/orders/groups'],
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
