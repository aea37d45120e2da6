/**
 * The dashboard in Chromium (browser-harness.ts) on a phone at 3 a.m. (390 × 844, issue 38): the
 * overview shows the due, failing and dead counts; a queue page in trouble fits without sideways
 * scroll and its warning badges are whole; the Groups tab shows every column; a held job's page
 * says why it is not running. Each page is saved as screenshots/phone-*.png.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import type { Locator, Page } from 'playwright-core';
import { Queue, Worker } from '../../src/index.js';
import { until } from '../helpers/wait.js';
import { useBrowserFixture, STEP_MS } from './browser-harness.js';

const dash = useBrowserFixture();
const { fx, errorLog, open, shot } = dash;
const PHONE = { width: 390, height: 844 };

/** Nothing wider than the screen: no sideways scroll of the page. */
async function noSidewaysScroll(page: Page, what: string): Promise<void> {
  // A string: the tests compile without the DOM's types.
  const { scroll, inner } = (await page.evaluate('({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth })')) as {
    scroll: number;
    inner: number;
  };
  assert.ok(scroll <= inner, `${what}: the page scrolls sideways (${scroll} px wide on a ${inner} px screen)`);
}

/**
 * `el` is shown, whole, and inside the screen's width: read in one step in the page (the lists
 * re-render with each live sample, so separate reads could meet two different elements).
 */
async function withinScreen(el: Locator, what: string): Promise<void> {
  const measure = () =>
    el.evaluate((e) => {
      const r = e.getBoundingClientRect();
      return { connected: e.isConnected, x: r.x, width: r.width, height: r.height, cut: e.scrollWidth > e.clientWidth + 1 };
    });
  // A live sample may re-render the list between finding the element and measuring it: a
  // measure of an element no longer on the page (zero-sized) is taken again.
  let m = await measure();
  for (let tries = 0; !m.connected && tries < 20; tries++) m = await measure();
  assert.ok(m.connected, `${what}: measured on the page`);
  assert.ok(m.width > 0 && m.height > 0, `${what} is shown`);
  assert.ok(m.x >= 0 && m.x + m.width <= PHONE.width + 0.5, `${what} is inside the screen (x ${m.x.toFixed(1)}, width ${m.width.toFixed(1)})`);
  assert.ok(!m.cut, `${what} is not cut (its text is wider than its box)`);
}

/**
 * Every badge shown on the page is whole and inside the screen, read in one step; `atLeast` of them
 * (a header draws its badges as their figures arrive: read again until they are there, for at most
 * STEP_MS). Returns how many are shown.
 */
async function badgesWithinScreen(page: Page, what: string, atLeast = 0): Promise<number> {
  const read = () =>
    page.locator('main .badge').evaluateAll((els) =>
      els
        .map((e) => {
          const r = e.getBoundingClientRect();
          return { text: (e.textContent ?? '').trim(), x: r.x, width: r.width, height: r.height, cut: e.scrollWidth > e.clientWidth + 1 };
        })
        .filter((b) => b.width > 0 && b.height > 0),
    );
  let shown = await read();
  const deadline = Date.now() + STEP_MS;
  while (shown.length < atLeast && Date.now() < deadline) shown = await read();
  assert.ok(shown.length >= atLeast, `${what}: at least ${atLeast} badges shown (${shown.map((b) => b.text).join(', ')})`);
  for (const b of shown) {
    assert.ok(
      b.x >= 0 && b.x + b.width <= PHONE.width + 0.5,
      `${what}: badge "${b.text}" is inside the screen (x ${b.x.toFixed(1)}, width ${b.width.toFixed(1)})`,
    );
    assert.ok(!b.cut, `${what}: badge "${b.text}" is not cut`);
  }
  return shown.length;
}

describe('the dashboard in Chromium: a phone at 3 a.m. (390 × 844)', () => {
  dash.test(
    'overview, a queue in trouble, its Groups tab and a held job: no sideways scroll, badges whole, the counts that matter shown',
    async () => {
      // The scene of issue 38: one tenant's group paused, another's full with a hung handler.
      const name = 'tenant-jobs-with-a-long-queue-name';
      const q = new Queue<{ n: number }>(name, { connection: fx.redis.url });
      const stranded = new Queue<{ n: number }>('notifications-for-the-enterprise-tenants-eu-west', { connection: fx.redis.url });
      let release!: () => void;
      const hung = new Promise<void>((r) => (release = r));
      const w = errorLog.watch(new Worker<{ n: number }>(name, () => hung, { connection: fx.redis.url, concurrency: 4, leaseMs: 120_000 }));
      try {
        const past = (await q.stats()).nowMs - 5 * 60_000;
        await q.groups.pause('tenant-a-paused-by-support');
        await q.groups.setLimits('tenant-b-with-hung-handlers', { concurrency: 1, rateLimit: { max: 50, perMs: 60_000 } });
        await q.addBulk([
          ...Array.from({ length: 3 }, (_, i) => ({ data: { n: i }, opts: { id: `a-${i}`, group: 'tenant-a-paused-by-support', runAt: past + i } })),
          ...Array.from({ length: 6 }, (_, i) => ({ data: { n: i }, opts: { id: `b-${i}`, group: 'tenant-b-with-hung-handlers', runAt: past + i } })),
          { data: { n: 99 }, opts: { id: 'later', delay: 600_000 } },
        ]);
        await until(async () => (await q.stats()).active === 1, 'one of tenant-b running', STEP_MS);
        await stranded.addBulk(Array.from({ length: 12 }, (_, i) => ({ data: { n: i }, opts: { id: `n-${i}`, runAt: past + i } })));
        await stranded.pause();

        // The overview: due, failing and dead counts shown for every queue.
        const page = await open(dash.dashboard.url, PHONE.width, PHONE.height);
        await page.waitForSelector(`.queue-table tbody tr[data-queue="${name}"]`);
        await noSidewaysScroll(page, 'overview');
        const heads = page.locator('.queue-table thead th');
        for (const label of ['Due now', 'Failed, 1 h', 'Dead']) await withinScreen(heads.filter({ hasText: label }), `overview column ${label}`);
        const row = page.locator(`.queue-table tbody tr[data-queue="${name}"]`);
        const due = row.locator('td').nth(2);
        await withinScreen(due, 'the due count');
        assert.equal((await due.textContent())?.trim(), '8');
        for (const [i, what] of [
          [5, 'the failed count'],
          [6, 'the dead count'],
        ] as const)
          await withinScreen(row.locator('td').nth(i), what);
        // The columns a phone leaves out, said under the queue's name.
        assert.match((await row.locator('.show-sm').textContent())!, /^oldest wait 5(\.\d)? min · 1 running · 1 worker$/);
        await badgesWithinScreen(page, 'overview');
        await shot(page, 'phone-overview');

        // The queue page: its warnings whole, nothing wider than the screen.
        await page.goto(`${dash.dashboard.url}#/queues/${name}`);
        await page.locator('.held-why', { hasText: '1 group paused with 3 waiting' }).waitFor();
        await page.locator('main .loading').first().waitFor({ state: 'detached' });
        await noSidewaysScroll(page, 'queue page');
        await badgesWithinScreen(page, 'queue page');
        await withinScreen(page.locator('.due-now'), 'the due line');
        // The rate limits start a line of their own, not with a stray dot.
        assert.equal(await page.locator('.limits-line .lead-sep').isVisible(), false, 'no dot leads the rate line');
        await shot(page, 'phone-queue');
        // A long-named queue, paused, with due jobs and nobody to take them: its badges whole.
        await page.goto(`${dash.dashboard.url}#/queues/${stranded.name}`);
        await page.locator('main .badge', { hasText: 'No live workers' }).first().waitFor();
        await page.locator('main .badge', { hasText: 'Paused' }).first().waitFor();
        await shot(page, 'phone-queue-no-worker');
        await noSidewaysScroll(page, 'a paused queue with no live worker');
        await badgesWithinScreen(page, 'a paused queue with no live worker', 2);

        // The Groups tab: every column shown for each group (a card a group, a line a column), inside the screen.
        await page.goto(`${dash.dashboard.url}#/queues/${name}/groups`);
        const full = page.locator('tbody tr[data-group="tenant-b-with-hung-handlers"]');
        await full.waitFor();
        await noSidewaysScroll(page, 'Groups tab');
        const labels = await full.locator('td[data-label]').evaluateAll((tds) => tds.map((td) => td.getAttribute('data-label')));
        assert.deepEqual(labels, ['Group', 'Running', 'Waiting', 'Limit', 'Rate', 'Paused']);
        // Every cell of both groups, read in one step (the list re-renders with each live sample;
        // a read in the middle of one is taken again, for at most STEP_MS).
        const readCells = () =>
          page.locator('tbody tr[data-group] td').evaluateAll((tds) =>
            tds.map((td) => {
              const r = td.getBoundingClientRect();
              return {
                what: `${td.parentElement?.getAttribute('data-group')}: ${td.getAttribute('data-label') ?? 'actions'}`,
                x: r.x,
                width: r.width,
                height: r.height,
                cut: td.scrollWidth > td.clientWidth + 1,
              };
            }),
          );
        type Cell = Awaited<ReturnType<typeof readCells>>[number];
        const fine = (c: Cell) => c.width > 0 && c.height > 0 && c.x >= 0 && c.x + c.width <= PHONE.width + 0.5 && !c.cut;
        let cells = await readCells();
        const deadline = Date.now() + STEP_MS;
        while (!(cells.length === 2 * (labels.length + 1) && cells.every(fine)) && Date.now() < deadline) cells = await readCells();
        assert.equal(cells.length, 2 * (labels.length + 1), 'two groups, each with its columns and its actions');
        for (const c of cells) {
          assert.ok(c.width > 0 && c.height > 0, `${c.what} is shown`);
          assert.ok(c.x >= 0 && c.x + c.width <= PHONE.width + 0.5, `${c.what} is inside the screen (x ${c.x.toFixed(1)}, width ${c.width.toFixed(1)})`);
          assert.ok(!c.cut, `${c.what} is not cut`);
        }
        assert.equal((await full.locator('td[data-label="Limit"]').textContent())?.trim(), '1');
        assert.match((await full.locator('td[data-label="Rate"]').textContent())!, /^\d+ \/ 50 per 1 min$/);
        await badgesWithinScreen(page, 'Groups tab');
        await shot(page, 'phone-groups');

        // A held job's page: why it is not running, whole.
        await page.goto(`${dash.dashboard.url}#/queues/${name}/jobs/b-3`);
        const why = page.locator('.why-waiting');
        await why.getByText('group at its limit 1/1').waitFor();
        await noSidewaysScroll(page, 'job page');
        await badgesWithinScreen(page, 'job page', 1);
        await shot(page, 'phone-job-held');
        await page.goto(`${dash.dashboard.url}#/queues/${name}/jobs/a-0`);
        await page.locator('.why-waiting').getByText('group paused').waitFor();
        await page.goto(`${dash.dashboard.url}#/queues/${name}/jobs/later`);
        await page
          .locator('.why-waiting')
          .getByText(/^due in \d+ min$/)
          .waitFor();
        await noSidewaysScroll(page, 'job page, not due');
        // One word: the job is scheduled, not due yet: "upcoming", as its tab says.
        assert.equal((await page.locator('h1.job-id + .chip-scheduled').textContent())?.trim(), 'upcoming');
        await shot(page, 'phone-job-upcoming');
      } finally {
        release();
        await w.close();
        await q.obliterate({ force: true });
        await q.close();
        await stranded.obliterate({ force: true });
        await stranded.close();
      }
    },
    { timeoutMs: 60_000 },
  );
});
