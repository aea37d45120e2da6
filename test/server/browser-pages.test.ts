/**
 * The dashboard in Chromium (browser-harness.ts): every other page, at a desktop's width and a
 * phone's, saved for a person to look at, with no script error or CSP violation on any.
 */
import { describe } from 'node:test';
import { Queue } from '../../src/index.js';
import { useBrowserFixture } from './browser-harness.js';

const dash = useBrowserFixture();
const { fx, open, shot } = dash;

/** A sharded queue, for its Shards tab. */
let payments: Queue;
fx.before(async () => {
  payments = new Queue('payments', { connection: fx.redis.url, shards: 3 });
  await payments.addBulk(Array.from({ length: 30 }, (_, i) => ({ data: { n: i }, opts: { id: `pay-${i}`, delay: i < 6 ? 0 : 600_000 } })));
});
fx.after(() => payments?.close());

describe('the dashboard in Chromium: every other page', () => {
  const pages = (): [string, string][] => [
    ['queue-ready', '#/queues/orders/ready'],
    ['queue-active', '#/queues/orders/active'],
    ['queue-completed', '#/queues/orders/completed'],
    ['queue-schedules', '#/queues/orders/schedules'],
    ['queue-workers', '#/queues/orders/workers'],
    ['queue-groups-none', '#/queues/orders/groups'],
    ['queue-shards', '#/queues/payments/shards'],
    ['queue-emails-no-workers', '#/queues/emails'],
    ['job-dead', `#/queues/orders/jobs/${encodeURIComponent(dash.seeded.dead[2]!)}`],
    ['job-completed', `#/queues/orders/jobs/${encodeURIComponent(dash.seeded.completed[0]!)}`],
    ['search-path', '#/queues/orders/search?path=customer.tier&equals=gold'],
  ];
  for (const [width, suffix] of [
    [1280, 'desktop'],
    [390, 'phone'],
  ] as const) {
    dash.test(`every other page at a ${suffix}'s width (${width} px), for a person to look at, with no script error or CSP violation`, async () => {
      const page = await open(dash.dashboard.url, width, 800);
      for (const [name, hash] of pages()) {
        await page.goto(`${dash.dashboard.url}${hash}`);
        await page.waitForSelector('main h1');
        // The live stream keeps the network busy for good, so "loaded" means no spinner left.
        await page.locator('main .loading').first().waitFor({ state: 'detached' });
        await shot(page, `${name}-${suffix}`);
      }
    });
  }
});
