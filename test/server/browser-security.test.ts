/**
 * The dashboard in Chromium (browser-harness.ts): what the dashboard must shrug off: a cross-site POST (from fetch and from a form), and read-only mode with no action anywhere.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe } from 'node:test';
import { useBrowserFixture } from './browser-harness.js';

const dash = useBrowserFixture();
const { open, shot } = dash;

describe('the dashboard in Chromium: security', () => {
  dash.test('refuses a cross-site POST, from fetch and from a form', async () => {
    // A page on another site (localhost is not 127.0.0.1 to a browser) that tries to pause the
    // queue: first with fetch (credentials included), then with a plain form.
    const target = `${dash.dashboard.url}api/queues/orders/pause`;
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><form id=f method=POST action="${target}" enctype="text/plain"><input name=x value=y></form>
<script>fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{}' })
  .then(() => 'answered', () => 'blocked').then((how) => { document.title = how; document.getElementById('f').submit(); });</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      // The victim has been on the dashboard: its CSRF cookie is set in this browser.
      const page = await open(dash.dashboard.url);
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
      assert.equal((await dash.orders.stats()).paused, false, 'the queue was not paused');
    } finally {
      evil.close();
    }
  });

  dash.test('read-only mode hides every action', async () => {
    const page = await open(`${dash.readOnly.url}#/queues/orders/dead`);
    await page.waitForSelector('tbody tr');
    const actions = /^(Retry|Purge|Pause|Resume|Drain|Run now|Reschedule|Cancel)/;
    assert.equal(await page.getByRole('button', { name: actions }).count(), 0, 'no action on the queue page');
    assert.equal(await page.locator('tbody input[type=checkbox]').count(), 0, 'nothing to select');
    await shot(page, 'readonly-dead');
    await page.goto(`${dash.readOnly.url}#/queues/orders/jobs/${encodeURIComponent(dash.seeded.dead[1]!)}`);
    await page.waitForSelector('h1.job-id');
    assert.equal(await page.getByRole('button', { name: actions }).count(), 0, 'no action on the job page');
    await shot(page, 'readonly-job');
  });
});
