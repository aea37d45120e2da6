/**
 * The dashboard in Chromium (browser-harness.ts): held jobs (issue 37). A flow's parent says what
 * it waits for, until when, and lists its dependencies as links to their own pages with how each
 * ended; a job waiting for a signal says which; the queue page and the overview count held jobs.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { until } from '../helpers/wait.js';
import { useBrowserFixture } from './browser-harness.js';

const dash = useBrowserFixture();
const { fx, errorLog, open, shot } = dash;

describe('the dashboard in Chromium: held jobs', () => {
  dash.test("a flow's parent: the reason, the deadline, its dependencies as links; a signal wait; the counts on the queue and the overview", async () => {
    const flows = new Queue<string>('flows', { connection: fx.redis.url });
    try {
      await flows.addBulk([
        { data: 'charge', opts: { id: 'order:7/charge' } },
        { data: 'reserve', opts: { id: 'order:7/reserve', attempts: 1 } },
        { data: 'label', opts: { id: 'order:7/label', delay: 600_000 } },
        {
          data: 'ship',
          opts: { id: 'order:7', dependsOn: ['order:7/charge', 'order:7/reserve', 'order:7/label'], waitAtMostMs: 600_000, onChildFailure: 'ignore' },
        },
        { data: 'pay', opts: { id: 'order:8' } },
      ]);
      const w = new Worker<string>(
        'flows',
        async (job) => {
          if (job.data === 'reserve') throw new UnrecoverableError('out of stock');
          if (job.data === 'pay') job.waitForSignal('payment', { timeoutMs: 600_000 });
          return 'ok';
        },
        { connection: fx.redis.url },
      );
      errorLog.watch(w);
      try {
        await until(
          async () => (await flows.holdOf('order:7'))?.waitingFor.length === 1 && (await flows.get('order:8'))?.state === 'held',
          'two dependencies ended and order:8 waits',
          10_000,
        );
      } finally {
        await w.close();
      }

      const page = await open(`${dash.dashboard.url}#/queues/flows/jobs/${encodeURIComponent('order:7')}`);
      await page.waitForSelector('h1.job-id');
      await page.waitForSelector('.deps');
      assert.equal((await page.locator('.title-row .chip').textContent())?.trim(), 'held');
      const held = page.locator('.fact', { has: page.locator('dt', { hasText: /^Held$/ }) });
      assert.match((await held.textContent())!, /waiting for 1 of 3 dependencies \(order:7\/label\) until \d\d:\d\d:\d\d UTC/);
      assert.equal(await page.locator('.fact dt', { hasText: /^Deadline$/ }).count(), 1);
      assert.match((await page.locator('section h2', { hasText: /^Dependencies/ }).textContent())!, /Dependencies \(2 of 3 ended\)/);
      const deps = page.locator('.dep');
      assert.equal(await deps.count(), 3);
      assert.match((await deps.nth(0).textContent())!, /order:7\/charge\s*completed\s*"ok"/);
      assert.match((await deps.nth(1).textContent())!, /order:7\/reserve\s*dead.*out of stock/);
      assert.match((await deps.nth(2).textContent())!, /order:7\/label\s*pending/);
      assert.equal(await page.getByRole('button', { name: 'Cancel job…' }).count(), 1, 'a held job can be cancelled');
      await shot(page, 'job-held-flow');

      // A dependency's link opens its own page.
      await page.getByRole('link', { name: 'order:7/label' }).click();
      await page.waitForSelector('h1.job-id');
      await until(async () => (await page.locator('h1.job-id').textContent()) === 'order:7/label', 'the dependency page', 5000);
      assert.ok(page.url().endsWith(`#/queues/flows/jobs/${encodeURIComponent('order:7/label')}`), page.url());

      // A job waiting for a signal.
      await page.goto(`${dash.dashboard.url}#/queues/flows/jobs/${encodeURIComponent('order:8')}`);
      await until(async () => /waiting for signal 'payment' until/.test((await page.locator('.facts').textContent()) ?? ''), 'the signal reason', 5000);

      // The queue page and the overview count them.
      await page.goto(`${dash.dashboard.url}#/queues/flows`);
      await page.waitForSelector('.badges .badge');
      assert.match((await page.locator('.badges').textContent())!, /2 held jobs · waiting for other jobs or a signal/);
      await page.goto(`${dash.dashboard.url}#/`);
      await page.waitForSelector('tr[data-queue="flows"]');
      assert.match((await page.locator('.page-sub').textContent())!, /· 2 held/);
      const cells = page.locator('tr[data-queue="flows"] td');
      assert.equal((await cells.nth(8).textContent())?.trim(), '2', 'the Held column');
    } finally {
      await flows.obliterate({ force: true }).catch(() => {});
      await flows.close();
    }
  });
});
