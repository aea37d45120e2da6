/**
 * Fills a queue with jobs in every state, for the dashboard's browser tests and screenshots:
 * scheduled jobs spread over the next hour, a few ready ones (due in the past, nobody taking
 * them), dead jobs with their errors, kept completed jobs with results, logs and progress, a
 * payload that tries to inject HTML, and a cron schedule. Optionally a few active jobs, held by
 * a worker until `release()` is called.
 *
 * It runs a short-lived Worker for the dead and completed jobs, so it needs a store that
 * workers can use (Redis or memory://) and finishes in about a second.
 */
import { type Queue, Worker } from '../../src/index.js';

export interface SeedOptions {
  /** Scheduled jobs spread over the next hour. @default 30 */
  scheduled?: number;
  /** Jobs due in the past with no worker to take them. @default 4 */
  ready?: number;
  /** Jobs that failed their only attempt. @default 3 */
  dead?: number;
  /** Jobs completed and kept, with a result, log lines and progress. @default 12 */
  completed?: number;
  /** Jobs held active by a worker until `release()`. @default 0 */
  active?: number;
}

export interface SeedResult {
  scheduled: string[];
  ready: string[];
  dead: string[];
  completed: string[];
  active: string[];
  /** The job whose payload is `{"html":"<img src=x onerror=alert(1)>"}` (scheduled). */
  xss: string;
  /** The schedule's name. */
  schedule: string;
  /** Lets the active jobs finish and closes the worker holding them (a no-op without active jobs). */
  release(): Promise<void>;
}

const CUSTOMERS = ['ada@example.com', 'grace@example.org', 'linus@example.net', 'margaret@example.com', 'ken@example.io', 'barbara@example.dev'];
const KINDS = ['send-receipt', 'charge-card', 'ship-order', 'remind-cart', 'sync-crm'];

const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length]!;

/** A realistic payload: the shape the dashboard's list previews and search are built for. */
function order(i: number): { kind: string; orderId: string; customer: { email: string; tier: string }; amountCents: number; items: string[] } {
  return {
    kind: pick(KINDS, i),
    orderId: `ord_${(10_000 + i * 37).toString(36)}`,
    customer: { email: pick(CUSTOMERS, i), tier: i % 3 === 0 ? 'gold' : 'standard' },
    amountCents: 1_000 + ((i * 733) % 20_000),
    items: Array.from({ length: 1 + (i % 3) }, (_, k) => `sku-${100 + i + k}`),
  };
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`seedQueue: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function seedQueue(queue: Queue, opts: SeedOptions = {}): Promise<SeedResult> {
  const n = { scheduled: opts.scheduled ?? 30, ready: opts.ready ?? 4, dead: opts.dead ?? 3, completed: opts.completed ?? 12, active: opts.active ?? 0 };
  const out: SeedResult = {
    scheduled: [],
    ready: [],
    dead: [],
    completed: [],
    active: [],
    xss: 'xss-probe',
    schedule: 'nightly-report',
    release: async () => {},
  };
  await queue.setRetention({ completed: { count: 100 } });
  const before = await queue.stats();

  // 1. Jobs due now, run by a short-lived worker: the failing ones die (one attempt), the rest
  //    complete with a result, log lines and progress (kept by the retention rule above).
  const worker = new Worker<{ fail?: string; step?: number }>(
    queue.name,
    async (job) => {
      if (job.data.fail) {
        await job.log(`calling the payment gateway for ${job.id}`);
        const err = new Error(job.data.fail);
        err.name = 'GatewayError';
        throw err;
      }
      await job.log('loaded the order');
      await job.progress({ percent: 50, step: 'charged' });
      await job.log('charged the card');
      await job.progress({ percent: 100, step: 'done' });
      await job.log('sent the receipt');
      return { ok: true, receiptId: `rcpt_${job.id}`, tookMs: 12 + (job.data.step ?? 0) };
    },
    { store: queue.store, attempts: 1, concurrency: 8 },
  );
  // Seeding provokes no error: one the worker reports fails the test that seeds.
  const seedErrors: Error[] = [];
  worker.on('error', (err) => seedErrors.push(err));
  try {
    const failures = ['card declined (insufficient_funds)', 'upstream timed out after 30000 ms', 'ECONNRESET: socket hang up'];
    for (let i = 0; i < n.dead; i++) {
      const id = `pay-failed-${i + 1}`;
      out.dead.push(id);
      await queue.add({ ...order(100 + i), fail: pick(failures, i) }, { id, attempts: 1 });
    }
    for (let i = 0; i < n.completed; i++) {
      const id = `done-${String(i + 1).padStart(3, '0')}`;
      out.completed.push(id);
      await queue.add({ ...order(200 + i), step: i }, { id });
    }
    await until(async () => {
      const s = await queue.stats();
      return s.dead >= before.dead + n.dead && s.completedTotal >= before.completedTotal + n.completed;
    }, 'the seeded jobs to finish');
  } finally {
    await worker.close();
  }
  if (seedErrors.length > 0) throw new Error(`the seeding worker reported: ${seedErrors.map(String).join('; ')}`);

  // 2. Active jobs, held until release(): their handler waits on a promise. Added before the
  //    ready jobs, so they are the only ones due when the holder claims.
  if (n.active > 0) {
    let letGo!: () => void;
    const held = new Promise<void>((r) => {
      letGo = r;
    });
    const ids = Array.from({ length: n.active }, (_, i) => `running-${i + 1}`);
    const holder = new Worker<unknown>(
      queue.name,
      async (job) => {
        await job.log('started the export');
        await job.progress({ percent: 40 });
        await held;
        return { exported: true };
      },
      { store: queue.store, concurrency: n.active, autostart: false },
    );
    const holderErrors: Error[] = [];
    holder.on('error', (err) => holderErrors.push(err));
    for (const id of ids) await queue.add({ kind: 'export', id }, { id });
    holder.start();
    await until(async () => (await queue.stats()).active >= before.active + n.active, 'the active jobs to be claimed');
    out.active = ids;
    out.release = async () => {
      letGo();
      await holder.close();
      if (holderErrors.length > 0) throw new Error(`the worker holding the active jobs reported: ${holderErrors.map(String).join('; ')}`);
    };
  }
  // 3. What no worker has taken: ready (due minutes ago), scheduled over the next hour, the
  //    HTML-injection probe, and a recurring schedule.
  const now = Date.now();
  for (let i = 0; i < n.ready; i++) {
    const id = `overdue-${i + 1}`;
    out.ready.push(id);
    await queue.add(order(300 + i), { id, runAt: now - (i + 1) * 90_000 });
  }
  for (let i = 0; i < n.scheduled; i++) {
    const id = `order-${String(i + 1).padStart(3, '0')}`;
    out.scheduled.push(id);
    // Spread over the hour, bunched a little so the timeline has a shape.
    const minute = Math.floor(((i * 7919) % 3600) / 60) * (i % 4 === 0 ? 0.3 : 1) + 1;
    await queue.add(order(i), { id, delay: Math.round(minute * 60_000 + i * 1_000), priority: i % 5 === 0 ? 10 : 0, attempts: 5 });
  }
  await queue.add({ html: '<img src=x onerror=alert(1)>' }, { id: out.xss, delay: 5 * 60_000 });
  await queue.schedules.upsert(out.schedule, { cron: '0 2 * * *', tz: 'Europe/Berlin', data: { report: 'sales' } });

  return out;
}
