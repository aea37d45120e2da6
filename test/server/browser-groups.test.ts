/**
 * The dashboard in Chromium (browser-harness.ts): flow control and shards: the Groups tab (counts, pause through the dialog, a group's limit), the queue's limits from under the title (a dialog sends only what the person changed), and a sharded queue's Shards tab.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { deferred, until } from '../helpers/wait.js';
import { useBrowserFixture, STEP_MS } from './browser-harness.js';

const dash = useBrowserFixture();
const { fx, errorLog, open, shot } = dash;

describe('the dashboard in Chromium: groups', () => {
  dash.test(
    "a queue's groups: the Groups tab lists a group with its counts; it is paused through the dialog and shows paused; the limits are set from under the title",
    async () => {
      const tenants = new Queue<{ n: number }>('tenants', { connection: fx.redis.url });
      const gate = deferred();
      const w = errorLog.watch(new Worker<{ n: number }>('tenants', () => gate.promise, { connection: fx.redis.url, concurrency: 4 }));
      try {
        await tenants.setLimits({ groupConcurrency: 1 });
        await tenants.groups.setLimits('tenant-7', { rateLimit: { max: 5, perMs: 60_000 } });
        for (let i = 0; i < 3; i++) await tenants.add({ n: i }, { id: `t42-${i}`, group: 'tenant-42' });
        await tenants.add({ n: 9 }, { id: 't7-0', group: 'tenant-7' });
        await until(async () => (await tenants.groups.get('tenant-42')).waiting === 2, 'one of tenant-42 running, two waiting', STEP_MS);

        const page = await open(`${dash.dashboard.url}#/queues/tenants`);
        const limitsLine = page.locator('.limits-line');
        await limitsLine.getByText('per group').waitFor();
        assert.match((await limitsLine.textContent())!, /Concurrency no limit · per group 1/);
        // The header says what holds the due jobs (stats().held), and counts their wait.
        await page.locator('.held-why', { hasText: '1 group at its limit with 2 waiting' }).waitFor();
        assert.match((await page.locator('.due-now').textContent())!, /^2 jobs due now · oldest waiting .+ · held: 1 group at its limit with 2 waiting$/);
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
        await page.locator('.held-why', { hasText: '1 group paused with 2 waiting' }).waitFor();
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

        // The queue's limits, from the line under the title. The form shows them as the page loaded
        // them; a limit changed elsewhere while it is open (the CLI, another tab) is not reverted by
        // a field nobody touched (issue 34, item 16d).
        await page.getByRole('button', { name: 'Set the queue’s limits' }).click();
        await dialog.waitFor();
        assert.equal(await dialog.getByLabel('Concurrency per group', { exact: true }).inputValue(), '1', 'the form as loaded');
        await tenants.setLimits({ groupConcurrency: 3 });
        await dialog.getByLabel('Concurrency', { exact: true }).fill('8');
        await dialog.getByLabel('Rate tokens', { exact: true }).fill('100');
        await dialog.getByLabel('Rate window (ms)', { exact: true }).fill('1000');
        await shot(page, 'dialog-limits');
        await dialog.getByRole('button', { name: 'Set limits' }).click();
        await until(
          async () => /Concurrency 8 · per group 3 · Rate 100 per 1 s · group rate no limit/.test((await limitsLine.textContent()) ?? ''),
          'the new limits on the page',
          STEP_MS,
        );
        assert.deepEqual(
          { ...(await tenants.limits()) },
          { concurrency: 8, groupConcurrency: 3, rateLimit: { max: 100, perMs: 1000 }, groupRateLimit: undefined },
          'what the person typed, and the per-group limit set elsewhere meanwhile',
        );
        // The form confirmed with nothing changed sends nothing: a change made meanwhile stays.
        await page.getByRole('button', { name: 'Set the queue’s limits' }).click();
        await dialog.waitFor();
        await tenants.setLimits({ concurrency: 9 });
        await dialog.getByRole('button', { name: 'Set limits' }).click();
        await page.locator('.toast', { hasText: 'Nothing changed' }).waitFor();
        assert.equal((await tenants.limits()).concurrency, 9, 'not reverted to the 8 the form showed');

        // A group's rate limit, through its limit dialog.
        await page.goto(`${dash.dashboard.url}#/queues/tenants/groups`);
        await row.waitFor();
        while ((await page.locator('.toast .toast-close').count()) > 0) await page.locator('.toast .toast-close').first().click();
        await page.getByRole('button', { name: 'Set the limit of tenant-42' }).click();
        await dialog.waitFor();
        // Its concurrency limit, set elsewhere while the form is open, stays.
        await tenants.groups.setLimits('tenant-42', { concurrency: 2 });
        await dialog.getByLabel('Rate of tenant-42 tokens', { exact: true }).fill('3');
        await dialog.getByLabel('Rate of tenant-42 window (ms)', { exact: true }).fill('60000');
        await dialog.getByRole('button', { name: 'Set limit' }).click();
        await page.waitForSelector('.toast-success');
        await until(async () => (await tenants.groups.get('tenant-42')).rateLimit?.max === 3, 'the group rate limit in Redis', STEP_MS);
        assert.deepEqual((await tenants.groups.get('tenant-42')).rateLimit, { max: 3, perMs: 60_000 });
        assert.equal((await tenants.groups.get('tenant-42')).concurrency, 2, 'the limit set meanwhile was not reverted');

        // A job shows its group, in its row and on its page.
        await page.goto(`${dash.dashboard.url}#/queues/tenants/active`);
        await page.locator('tbody .group-tag', { hasText: 'tenant-' }).first().waitFor();
        await shot(page, 'queue-active-groups');
        await page.goto(`${dash.dashboard.url}#/queues/tenants/jobs/t42-1`);
        await page.locator('.fact', { hasText: 'Group' }).getByRole('link', { name: 'tenant-42' }).waitFor();
        await shot(page, 'job-active-group');

        // Read-only: the groups and limits show, with nothing to act on.
        const ro = await open(`${dash.readOnly.url}#/queues/tenants/groups`);
        await ro.locator('tbody tr[data-group="tenant-42"]').waitFor();
        await ro.locator('.limits-line').getByText('per group').waitFor();
        assert.equal(await ro.getByRole('button', { name: /^(Pause|Resume|Set)/ }).count(), 0);
      } finally {
        gate.resolve();
        await w.close();
        await tenants.obliterate({ force: true });
        await tenants.close();
      }
    },
  );

  dash.test('a sharded queue has a Shards tab: each shard with its node, counts and lag; an unsharded queue has none', async () => {
    const payments = new Queue('payments', { connection: fx.redis.url, shards: 3 });
    try {
      await payments.addBulk(Array.from({ length: 30 }, (_, i) => ({ data: { n: i }, opts: { id: `pay-${i}`, delay: i < 6 ? 0 : 600_000 } })));
      const page = await open(`${dash.dashboard.url}#/queues/payments`);
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
      await page.goto(`${dash.dashboard.url}#/queues/orders`);
      await page.waitForSelector('tbody tr');
      assert.equal(await page.locator('.tabs a', { hasText: 'Shards' }).count(), 0, 'orders is not sharded');
    } finally {
      await payments.obliterate({ force: true });
      await payments.close();
    }
  });
});
