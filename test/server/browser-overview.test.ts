/**
 * The dashboard in Chromium (browser-harness.ts): the overview and a queue's page: one row per queue with the one in trouble first, sortable; a queue's counts and charts; a queue that does not exist; many queues in trouble order (the README picture).
 */
import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { describe } from 'node:test';
import { Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { until } from '../helpers/wait.js';
import { useBrowserFixture, SHOTS, STEP_MS } from './browser-harness.js';

const dash = useBrowserFixture();
const { fx, errorLog, open, shot } = dash;

describe('the dashboard in Chromium: overview', () => {
  dash.test('opens the overview: one row per queue, the one in trouble first, from one history request, sortable by any column', async () => {
    const page = await open('about:blank');
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/')) apiCalls.push(new URL(r.url()).pathname);
    });
    await page.goto(dash.dashboard.url);
    await page.waitForSelector('.queue-table tbody tr');
    const rows = page.locator('.queue-table tbody tr');
    assert.equal(await rows.count(), 2);
    // emails has due jobs and no live worker: first, marked, though it sorts after orders by name.
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'emails');
    assert.equal(await rows.nth(0).getAttribute('class'), 'row-alert');
    assert.equal(await rows.nth(1).getAttribute('data-queue'), 'orders');
    assert.match((await page.locator('.page-sub').textContent())!, /1 queue with due jobs and no live worker/);
    const s = await dash.orders.stats();
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
    assert.match(
      (await page.locator('.table-note').textContent())!,
      /Failures: jobs that went dead in the last hour/,
      'the whole hour: the history is kept in the store',
    );
    // Sort by name: orders last → first after a click on "Queue" (ascending), then the other way.
    await page.getByRole('button', { name: 'Queue' }).click();
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'emails');
    await page.getByRole('button', { name: 'Queue' }).click();
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'orders');
    await page.getByRole('button', { name: 'Sort by trouble' }).click();
    assert.equal(await rows.nth(0).getAttribute('data-queue'), 'emails');

    // Live: a job added elsewhere shows up without a reload.
    await dash.emails.add({ to: 'late@example.com' }, { id: 'due-too' });
    await until(async () => (await rows.nth(0).locator('td').nth(2).textContent())?.trim() === '6', 'the live count', STEP_MS);
    await shot(page, 'overview-desktop');
    const phone = await open(dash.dashboard.url, 390, 844);
    await phone.waitForSelector('.queue-table tbody tr');
    await shot(phone, 'overview-phone');
  });

  dash.test('a queue page has the counts and charts of the last hour, kept in the store (not since the dashboard started)', async () => {
    const page = await open(`${dash.dashboard.url}#/queues/orders`);
    await page.waitForSelector('.stats .stat-ready');
    const s = await dash.orders.stats();
    assert.equal(Number(await page.locator('.stat-ready .stat-value').textContent()), s.ready);
    assert.equal(Number(await page.locator('.stat-scheduled .stat-value').textContent()), s.scheduled - s.ready);
    // The words of stats() and /metrics: the Upcoming card says of how many scheduled (ready included).
    assert.equal((await page.locator('.stat-scheduled .stat-label').textContent())?.trim(), 'Upcoming');
    assert.match((await page.locator('.stat-scheduled .stat-note').textContent())!, new RegExp(`^of ${s.scheduled} scheduled`));
    await page.getByText(/completed in the last hour/).waitFor();
    assert.equal(await page.getByText(/completed since \d\d:\d\d/).count(), 0, 'the whole hour, though the dashboard just started');
  });

  dash.test('a queue that does not exist says so, with nothing to act on', async () => {
    const page = await open(`${dash.dashboard.url}#/queues/no-such-queue`);
    await page.getByText('No such queue').first().waitFor();
    await page.waitForTimeout(300);
    assert.equal(await page.getByRole('button', { name: /Pause|Drain|Resume/ }).count(), 0);
    assert.equal(await page.locator('.tabs').count(), 0);
    await shot(page, 'queue-missing');
  });

  dash.test(
    'with many queues the trouble comes first: stranded by wait, then lag, then failures, then dead, then by name (the README picture)',
    async () => {
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
        const page = await open(dash.dashboard.url, 1280, 640);
        const rows = page.locator('.queue-table tbody tr');
        const order = ['search-index', 'emails', 'orders', 'webhooks', 'invoices', 'notifications', 'reports'];
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
    },
    { timeoutMs: 75_000 },
  );
});
