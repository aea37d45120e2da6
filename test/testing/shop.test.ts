/**
 * The shop's tests from docs/testing.md, on the testing kit: each drives minutes, days or a DST
 * change of virtual time through the real Queue, Worker and Scheduler, and takes milliseconds.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { createTestEnv, type TestEnv } from '../../src/testing/index.js';

const MIN = 60_000;

interface Order {
  id: number;
  paid: boolean;
  status: 'open' | 'cancelled';
  cancelledAtMs?: number;
}

describe('the shop, on virtual time', () => {
  let env: TestEnv;
  let startedAt: number;
  beforeEach(() => {
    env = createTestEnv({ startAt: '2025-03-28T12:00:00Z' });
    startedAt = performance.now();
  });
  afterEach(async () => {
    await env.close();
    // Well under a second of real time, whatever the virtual span.
    assert.ok(performance.now() - startedAt < 1000, `took ${performance.now() - startedAt} ms`);
  });

  /** The app: an order book, and a worker that cancels an unpaid order when its timeout runs. */
  function shop() {
    const orders = new Map<number, Order>();
    const timeouts = env.queue<{ orderId: number }>('order-timeouts');
    env.worker<{ orderId: number }>('order-timeouts', (job) => {
      const order = orders.get(job.data.orderId)!;
      if (order.paid) return 'paid';
      Object.assign(order, { status: 'cancelled', cancelledAtMs: env.now() });
      return 'cancelled';
    });
    return {
      orders,
      timeouts,
      async place(id: number) {
        orders.set(id, { id, paid: false, status: 'open' });
        await timeouts.add({ orderId: id }, { id: `order:${id}`, delay: 30 * MIN });
      },
      async pay(id: number) {
        orders.get(id)!.paid = true;
        await timeouts.cancel(`order:${id}`);
      },
    };
  }

  test('an unpaid order is cancelled at 30 minutes, not a millisecond before', async () => {
    const app = shop();
    const placedAt = env.now();
    await app.place(1);
    assert.deepEqual(
      (await env.enqueued('order-timeouts', { id: 'order:1' })).map((j) => j.dueAtMs),
      [placedAt + 30 * MIN],
    );
    await env.advance(30 * MIN - 1);
    assert.equal(app.orders.get(1)!.status, 'open');
    await env.advance(1);
    assert.equal(app.orders.get(1)!.status, 'cancelled');
    assert.equal(app.orders.get(1)!.cancelledAtMs, placedAt + 30 * MIN);
    const [done] = env.completed('order-timeouts', { data: { orderId: 1 } });
    assert.equal(done!.result, 'cancelled');
    assert.equal(done!.attempts, 1);
  });

  test('an order paid at minute 10 is not cancelled', async () => {
    const app = shop();
    const placedAt = env.now();
    await app.place(2);
    await env.advance(10 * MIN);
    await app.pay(2);
    await env.advance(60 * MIN);
    assert.equal(app.orders.get(2)!.status, 'open');
    assert.deepEqual(await env.enqueued('order-timeouts'), []);
    assert.deepEqual(env.completed('order-timeouts'), []);
    const [cancelled] = env.cancelled('order-timeouts');
    assert.equal(cancelled!.id, 'order:2');
    assert.deepEqual(cancelled!.data, { orderId: 2 });
    assert.equal(cancelled!.atMs, placedAt + 10 * MIN);
  });

  test('payment pending: snoozed twice, then dead at the deadline', async () => {
    const checks = env.queue<{ orderId: number }>('payment-checks');
    const looked: number[] = [];
    env.worker<{ orderId: number }>('payment-checks', (job) => {
      looked.push(env.now());
      // The payment provider still says "pending": look again in 10 minutes, for 25 minutes at most.
      job.snooze(10 * MIN, { deadlineAtMs: job.createdAtMs + 25 * MIN });
    });
    const t0 = env.now();
    await checks.add({ orderId: 3 }, { id: 'payment:3', delay: 5 * MIN });
    await env.advance(60 * MIN);
    assert.deepEqual(looked, [t0 + 5 * MIN, t0 + 15 * MIN, t0 + 25 * MIN]);
    const [dead] = env.dead('payment-checks');
    assert.equal(dead!.id, 'payment:3');
    assert.equal(dead!.atMs, t0 + 25 * MIN);
    assert.equal(dead!.reason, 'snooze deadline passed');
    assert.deepEqual(
      dead!.history.map((a) => a.outcome),
      ['snoozed', 'snoozed', 'dead'],
    );
    assert.deepEqual(dead!.errors, []);
  });

  test('a failing call is retried with backoff, then goes to the dead set', async () => {
    const calls = env.queue<{ orderId: number }>('capture-payment');
    env.worker(
      'capture-payment',
      () => {
        throw new Error('payment API answered 503');
      },
      { attempts: 4, backoff: { type: 'exponential', delay: 1000, jitter: false } },
    );
    const t0 = env.now();
    await calls.add({ orderId: 4 }, { id: 'capture:4' });
    await env.advance(MIN);
    const [dead] = env.dead('capture-payment', { id: 'capture:4' });
    assert.ok(dead);
    // 1 s, 2 s, 4 s between the four attempts.
    assert.deepEqual(
      dead.history.map((a) => a.startedAtMs - t0),
      [0, 1000, 3000, 7000],
    );
    assert.deepEqual(
      dead.history.map((a) => a.outcome),
      ['retried', 'retried', 'retried', 'dead'],
    );
    assert.equal(dead.errors.length, 4);
    assert.match(dead.errors[3]!, /payment API answered 503/);
    assert.equal(dead.atMs, t0 + 7000);
    assert.deepEqual(await env.enqueued('capture-payment'), []);
  });

  test('the nightly report runs at 02:00 Europe/Berlin, across the change to summer time', async () => {
    const reports = env.queue('reports');
    const ran: string[] = [];
    env.worker('reports', () => {
      ran.push(new Date(env.now()).toISOString());
    });
    await reports.schedules.upsert('nightly-report', { cron: '0 2 * * *', tz: 'Europe/Berlin', data: { report: 'sales' } });
    // 2025-03-30: at 02:00 the clocks go to 03:00, so that night has no 02:00 at all.
    await env.advanceTo('2025-04-01T12:00:00Z');
    assert.deepEqual(ran, [
      '2025-03-29T01:00:00.000Z', // 02:00 CET (UTC+1)
      '2025-03-30T01:00:00.000Z', // the missing 02:00: run at 03:00 CEST, the first moment after it
      '2025-03-31T00:00:00.000Z', // 02:00 CEST (UTC+2)
      '2025-04-01T00:00:00.000Z',
    ]);
  });

  test('the nightly report runs once at 02:00 Europe/Berlin on the night 02:00 happens twice', async () => {
    const reports = env.queue('reports');
    const ran: string[] = [];
    env.worker('reports', () => {
      ran.push(new Date(env.now()).toISOString());
    });
    await env.advanceTo('2025-10-25T12:00:00Z');
    await reports.schedules.upsert('nightly-report', { cron: '0 2 * * *', tz: 'Europe/Berlin' });
    // 2025-10-26: at 03:00 the clocks go back to 02:00.
    await env.advanceTo('2025-10-28T12:00:00Z');
    assert.deepEqual(ran, ['2025-10-26T00:00:00.000Z', '2025-10-27T01:00:00.000Z', '2025-10-28T01:00:00.000Z']);
  });

  test("a tenant's group limit holds: one job of a tenant at a time, the other tenant not kept waiting", async () => {
    const imports = env.queue<{ tenant: string; n: number }>('imports');
    await imports.setLimits({ groupConcurrency: 1 });
    const running = new Map<string, number>();
    let most = 0;
    const started: string[] = [];
    env.worker<{ tenant: string; n: number }>(
      'imports',
      async (job) => {
        const t = job.data.tenant;
        running.set(t, (running.get(t) ?? 0) + 1);
        most = Math.max(most, running.get(t)!);
        started.push(`${t}${job.data.n}`);
        // Work that takes a few turns of the event loop (no virtual time).
        for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
        running.set(t, running.get(t)! - 1);
      },
      { concurrency: 10 },
    );
    for (const n of [1, 2, 3]) await imports.add({ tenant: 'big', n }, { group: 'big', delay: 1000 });
    await imports.add({ tenant: 'small', n: 1 }, { group: 'small', delay: 1000 });
    await env.advance(1000);
    assert.equal(most, 1);
    assert.equal(env.completed('imports').length, 4);
    // The small tenant started before the big one's second job: a limit per tenant, not a queue in line.
    assert.ok(started.indexOf('small1') < started.indexOf('big2'), started.join(' '));
    assert.equal(env.completed('imports', { group: 'big' }).length, 3);
  });
});
