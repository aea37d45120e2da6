/**
 * The dashboard in Chromium (browser-harness.ts): jobs: the dead list (sorted, paged, searched by error text, retried in bulk), a search on a large queue, a schedule nobody enqueues, from a queue to a job, retrying a dead job, cancelling a scheduled one, cancelling or failing a running one, and an HTML payload shown as text.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { until } from '../helpers/wait.js';
import { useBrowserFixture, STEP_MS } from './browser-harness.js';

const dash = useBrowserFixture();
const { fx, errorLog, open, shot } = dash;

describe('the dashboard in Chromium: jobs', () => {
  dash.test('dead jobs: newest first, the other way on request, pages both ways; by error text, retried in bulk with the count confirmed', async () => {
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

      const page = await open(`${dash.dashboard.url}#/queues/billing/dead`);
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
      const phone = await open(`${dash.dashboard.url}#/queues/billing/dead`, 390, 844);
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

  dash.test('a search on a large queue reads on by itself, showing how far it got, until it finds a page or its time is up', async () => {
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
      const page = await open(`${dash.dashboard.url}#/queues/archive`);
      await page.waitForSelector('tbody tr');
      const searches: string[] = [];
      page.on('request', (r) => {
        if (r.url().includes('/search?')) searches.push(r.url());
      });
      await page.getByLabel('Id or payload text').fill('needle-in');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.locator('tbody tr', { hasText: 'a-11990' }).waitFor();
      // The walk's order is Redis's (a hash scan), so the needle may come in the second call of 5,000
      // or the third; and on a busy machine the page's 2 s of reading on may end after two. Either
      // way it read on by itself, and says how far it got.
      assert.ok(searches.length >= 2, `${searches.length} calls, each of at most 5,000 jobs, with no click between them`);
      const note = (await page.locator('.search-note').textContent())!;
      const searched = /searched ([\d,]+) of 12,000/.exec(note);
      assert.ok(searched && Number(searched[1]!.replace(/,/g, '')) >= 5_000 * Math.min(searches.length, 2), note);
      await shot(page, 'search-large');
    } finally {
      await big.obliterate({ force: true });
      await big.close();
    }
  });

  dash.test('a schedule nobody enqueues is flagged on its queue: not being enqueued, is a Scheduler running?', async () => {
    // Stored as a schedule made ten minutes ago, every minute, and never run.
    const def = { every: 60_000, tz: 'UTC', data: { report: 'stale' }, opts: {}, missed: 'latest', anchorMs: Date.now() - 600_000 };
    await dash.orders.store.scheduleSet('orders', 'stale-export', JSON.stringify(def));
    try {
      const page = await open(`${dash.dashboard.url}#/queues/orders`);
      const warn = page.getByRole('link', { name: /Schedule stale-export not being enqueued · is a Scheduler running\?/ });
      await warn.waitFor();
      await warn.click();
      await page.waitForSelector('.overdue');
      assert.equal(await page.locator('.overdue').count(), 1, 'the nightly report is on time; only the stale one is flagged');
      await shot(page, 'queue-schedules-overdue');
    } finally {
      await dash.orders.schedules.remove('stale-export');
    }
  });

  dash.test('follows a queue to a job', async () => {
    const page = await open(dash.dashboard.url);
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

  dash.test('retries a dead job and sees it move to scheduled', async () => {
    const id = dash.seeded.dead[0]!;
    const page = await open(`${dash.dashboard.url}#/queues/orders/dead`);
    await page.waitForSelector('tbody tr');
    await shot(page, 'queue-dead');
    await page.getByRole('button', { name: `Retry ${id}` }).click();
    await page.waitForSelector('.toast-success');
    await until(async () => (await dash.orders.get(id))?.state === 'scheduled', `${id} scheduled in Redis`, STEP_MS);
    await page.goto(`${dash.dashboard.url}#/queues/orders/jobs/${encodeURIComponent(id)}`);
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

  dash.test('cancels a scheduled job', async () => {
    const id = dash.seeded.scheduled[5]!;
    const page = await open(`${dash.dashboard.url}#/queues/orders/jobs/${encodeURIComponent(id)}`);
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
    await until(async () => (await dash.orders.get(id)) === null, `${id} gone from Redis`, STEP_MS);
    await until(() => page.url().endsWith('#/queues/orders'), 'back on the queue page', STEP_MS);
  });

  dash.test('a running job: Cancel… and Fail now… end it from its page (confirmed, with a reason); the handler is told', async () => {
    const hung = new Queue<number>('hung-jobs', { connection: fx.redis.url });
    const signals = new Map<string, AbortSignal>();
    const w = new Worker<number>(
      'hung-jobs',
      (job) => {
        signals.set(job.id, job.signal);
        return new Promise(() => {});
      },
      { connection: fx.redis.url, concurrency: 5 },
    );
    errorLog.watch(w);
    try {
      await hung.add(1, { id: 'wh:1' });
      await hung.add(2, { id: 'wh:2', attempts: 3 });
      await until(() => signals.size === 2, 'both run', STEP_MS);

      const page = await open(`${dash.dashboard.url}#/queues/hung-jobs/jobs/${encodeURIComponent('wh:1')}`);
      await page.waitForSelector('h1.job-id');
      await page.getByRole('button', { name: 'Cancel…' }).click();
      const dialog = page.locator('dialog[open]');
      await dialog.waitFor();
      assert.deepEqual(
        (await dialog.getByRole('button').allTextContents()).map((t) => t.trim()),
        ['Keep it running', 'Cancel the job'],
      );
      await dialog.getByLabel('Reason').fill('upstream is down');
      await shot(page, 'dialog-cancel-running');
      await dialog.getByRole('button', { name: 'Cancel the job' }).click();
      await until(() => signals.get('wh:1')!.aborted, 'the handler is told', STEP_MS);
      assert.equal(signals.get('wh:1')!.reason, 'cancelled');
      await until(async () => (await hung.get('wh:1')) === null, 'wh:1 gone', STEP_MS);

      const page2 = await open(`${dash.dashboard.url}#/queues/hung-jobs/jobs/${encodeURIComponent('wh:2')}`);
      await page2.waitForSelector('h1.job-id');
      await page2.getByRole('button', { name: 'Fail now…' }).click();
      const failDialog = page2.locator('dialog[open]');
      await failDialog.getByLabel('Reason').fill('hung on a dead upstream');
      await failDialog.getByLabel('To the dead set now (no retry)').check();
      await failDialog.getByRole('button', { name: 'Fail the attempt' }).click();
      await until(() => signals.get('wh:2')!.aborted, 'the handler is told', STEP_MS);
      assert.equal(signals.get('wh:2')!.reason, 'failed');
      await until(async () => (await hung.get('wh:2'))?.state === 'dead', 'wh:2 dead', STEP_MS);
      assert.equal((await hung.get('wh:2'))?.lastError, 'hung on a dead upstream');
    } finally {
      await w.close({ timeoutMs: 0 });
      await hung.obliterate({ force: true });
      await hung.close();
    }
  });

  dash.test('the active list: how long each job has run, past its own timeout in amber, and an expired lease flagged with when it is recovered', async () => {
    const stuck = new Queue<number>('stuck-jobs', { connection: fx.redis.url });
    try {
      await stuck.add(1, { id: 'timed', timeoutMs: 50 });
      await stuck.add(2, { id: 'orphan' });
      // A claim of this test: 'timed' holds a long lease, 'orphan' one that runs out (its worker "died").
      const [first] = (await stuck.store.claim('stuck-jobs', 1, 600_000, 3)).jobs;
      assert.equal(first?.id, 'timed');
      await stuck.store.claim('stuck-jobs', 1, 50, 3);
      await new Promise((r) => setTimeout(r, 150));
      const page = await open(`${dash.dashboard.url}#/queues/stuck-jobs/active`);
      await page.waitForSelector('tbody tr');
      const row = (id: string) => page.locator('tbody tr', { has: page.locator('.id-link', { hasText: id }) });
      assert.match((await row('timed').locator('td.col-time').first().textContent())!, /past its 50 ms timeout/);
      assert.match((await row('orphan').textContent())!, /expired .* recovered at the next claim/);
      await shot(page, 'queue-active-expired');
    } finally {
      await stuck.obliterate({ force: true });
      await stuck.close();
    }
  });

  dash.test('shows an HTML payload as text and runs none of it', async () => {
    const page = await open(`${dash.dashboard.url}#/queues/orders/jobs/${encodeURIComponent(dash.seeded.xss)}`);
    await page.waitForSelector('h1.job-id');
    const text = await page.locator('pre').first().textContent();
    assert.ok(text!.includes('<img src=x onerror=alert(1)>'), 'the markup is shown as characters');
    assert.equal(await page.locator('img[src="x"]').count(), 0, 'no element was made from it');
    // Search results and lists render it as text too.
    await page.goto(`${dash.dashboard.url}#/queues/orders/search?text=onerror`);
    await page.waitForSelector('tbody tr');
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    // A moment for a script to run, had one been made: the harness fails the test on any JavaScript dialog.
    await page.waitForTimeout(300);
    await shot(page, 'search-xss');
  });
});
