/**
 * The demo tells a slow host from a queue fault (issue 38): a payment is judged by when it ran,
 * not when it was planned, so one this host ran after its order's deadline (its timer fired late)
 * is no failure of the queue's; one that ran in time and was cancelled all the same is. And a
 * real run with the event loop stalled in the middle passes, saying the host was slow.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../../src/index.js';
import { paymentsByTime, runDemo, SLOW_HOST_MS } from '../../src/demo/run-demo.js';

test('a payment is judged by when it ran: after the deadline it is the host, before it the queue', () => {
  const deadline = 1000;
  assert.deepEqual(
    paymentsByTime([
      { status: 'paid', payRanAtMs: 500, payDeadlineMs: deadline },
      { status: 'cancelled', payRanAtMs: 1200, payDeadlineMs: deadline },
      { status: 'paid', payRanAtMs: 999, payDeadlineMs: deadline },
    ]),
    { inTime: 2, paidInTime: 2, late: 1 },
    'the late payer, cancelled, counts against no one',
  );
  const fault = paymentsByTime([{ status: 'cancelled', payRanAtMs: 400, payDeadlineMs: deadline }]);
  assert.notEqual(fault.paidInTime, fault.inTime, 'paid in time and cancelled all the same: the queue');
  assert.deepEqual(
    paymentsByTime([{ status: 'unpaid', payRanAtMs: undefined, payDeadlineMs: deadline }]),
    { inTime: 0, paidInTime: 0, late: 0 },
    'not run yet',
  );
  // "Pending" said after the timeout: the order was unpaid when its job ran, so cancelled; the host's.
  assert.deepEqual(paymentsByTime([{ status: 'cancelled', payRanAtMs: 900, payDeadlineMs: 1400, pendingRanAtMs: 1100, pendingDeadlineMs: deadline }]), {
    inTime: 0,
    paidInTime: 0,
    late: 1,
  });
});

test('a run whose host stalls for 400 ms passes and says the host was slow', async () => {
  const store = new MemoryStore();
  // Busy-wait the event loop while orders are out: every timer due meanwhile fires late.
  const stall = setTimeout(() => {
    const until = Date.now() + 400;
    while (Date.now() < until) {}
  }, 250);
  try {
    const report = await runDemo({ store, orders: 60, placeMs: 300, timeoutMs: 400, graceMs: 400, pollMs: 50, seed: 7 });
    assert.equal(report.ok, true, JSON.stringify(report.checks));
    assert.equal(report.host.slow, true, JSON.stringify(report.host));
    assert.ok(report.host.timerLateMax > SLOW_HOST_MS && report.host.timerLateMax >= 300, JSON.stringify(report.host));
  } finally {
    clearTimeout(stall);
    await store.close();
  }
});
