/**
 * The fixture of the dashboard's browser tests (test/server/browser-*.test.ts), one file per part
 * of the dashboard so that the files run side by side and each stays well inside its time limit:
 * a real redis-server, the `orders` queue seeded (seed.ts) and `emails` with due jobs and nobody
 * to take them, a dashboard and a read-only one, and Debian's chromium driven by playwright-core.
 *
 * Every test is bounded on its own (`browserTest`): each step by STEP_MS, the test by its
 * `timeoutMs`, so a stuck page fails that test in seconds with its name, never the file at the
 * suite's timeout. Each test's browser contexts are closed when it ends (a page left open keeps
 * its live stream and timers running, which slows every later test on a busy machine), and a
 * script error or CSP violation is reported by the test whose page logged it. Every page is saved
 * as a PNG under screenshots/ (git-ignored) for a person to look at.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { test } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { Queue } from '../../src/index.js';
import { serveDashboard, type RunningDashboard } from '../../src/server/serve.js';
import { useErrorLog } from '../helpers/errors.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { seedQueue, type SeedResult } from './seed.js';

const CHROMIUM = process.env.DQ_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = new URL('../../../screenshots/', import.meta.url);
/** A stuck step fails in seconds, never at the suite's timeout. */
export const STEP_MS = 5000;
/**
 * A browser test's own bound unless it gives one: a few times what the slowest takes on a loaded
 * 2-core machine (about 15 s), so a stuck test fails with its name well inside the file's limit.
 */
export const TEST_MS = 45_000;

export interface BrowserFixture {
  readonly fx: ReturnType<typeof useRedis>;
  readonly errorLog: ReturnType<typeof useErrorLog>;
  readonly orders: Queue;
  readonly emails: Queue;
  readonly seeded: SeedResult;
  readonly dashboard: RunningDashboard;
  readonly readOnly: RunningDashboard;
  /** A page of a fresh browser context at `url` (closed when the test ends). */
  open(url: string, width?: number, height?: number): Promise<Page>;
  /** Saves the page as screenshots/<name>.png. */
  shot(page: Page, name: string): Promise<void>;
  /** A test bounded by `timeoutMs` (TEST_MS unless given) that fails on a script error or CSP violation of its pages. */
  test(name: string, fn: () => Promise<void>, opts?: { timeoutMs?: number }): void;
}

export function useBrowserFixture(): BrowserFixture {
  const fx = useRedis();
  const errorLog = useErrorLog();
  let orders: Queue;
  let emails: Queue;
  let seeded: SeedResult;
  let dashboard: RunningDashboard;
  let readOnly: RunningDashboard;
  let browser: Browser;
  /** The contexts of the test running now. */
  let contexts: BrowserContext[] = [];
  /** Script errors and CSP violations, and JavaScript dialogs (alert, confirm: an injected script would), of the test running now. */
  let problems: string[] = [];
  let dialogs: string[] = [];

  fx.before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    orders = new Queue('orders', { connection: fx.redis.url });
    emails = new Queue('emails', { connection: fx.redis.url });
    // Chromium starts while the queues are seeded.
    const launched = chromium.launch({ executablePath: CHROMIUM });
    seeded = await seedQueue(orders, { active: 1 });
    // A queue with due jobs and nobody to take them: the overview's alarm.
    for (let i = 0; i < 5; i++) await emails.add({ to: `user${i}@example.com`, template: 'welcome' }, { id: `welcome-${i}` });
    dashboard = await serveDashboard({ connection: fx.redis.url, port: 0, sampleMs: 500 });
    readOnly = await serveDashboard({ connection: fx.redis.url, port: 0, readOnly: true, sampleMs: 500 });
    browser = await launched;
  });

  fx.after(async () => {
    await browser?.close();
    await seeded?.release();
    await Promise.all([dashboard?.close(), readOnly?.close(), orders?.close(), emails?.close()]);
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

  function browserTest(name: string, fn: () => Promise<void>, opts: { timeoutMs?: number } = {}): void {
    test(name, { timeout: opts.timeoutMs ?? TEST_MS }, async () => {
      problems = [];
      dialogs = [];
      try {
        await fn();
        assert.deepEqual(problems, [], 'no script error or CSP violation on its pages');
        assert.deepEqual(dialogs, [], 'no JavaScript dialog opened');
      } finally {
        const open = contexts;
        contexts = [];
        await Promise.all(open.map((c) => c.close().catch(() => {})));
      }
    });
  }

  return {
    fx,
    errorLog,
    get orders() {
      return orders;
    },
    get emails() {
      return emails;
    },
    get seeded() {
      return seeded;
    },
    get dashboard() {
      return dashboard;
    },
    get readOnly() {
      return readOnly;
    },
    open,
    shot,
    test: browserTest,
  };
}
