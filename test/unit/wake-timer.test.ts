import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import { WAKE_LEAD_MS, WakeTimer } from '../../src/worker/wake-timer.js';

describe('wake timer', () => {
  test('a sleep set before the server clock was known does not hide a later, earlier wake-up', async () => {
    // The regression: a 30 s sleep set in the unsynced frame (offset 0) compared as "earlier"
    // than any real server time, so a retry due in 10 ms waited for the idle check.
    let fired = 0;
    const timer = new WakeTimer(() => fired++, 30_000);
    timer.wakeAt(undefined); // the idle sleep, before any claim answered
    const serverNow = Date.UTC(2026, 10, 22);
    const t = performance.now();
    timer.observe(serverNow, t, t);
    const start = performance.now();
    timer.wakeAt(serverNow + 20);
    await new Promise<void>((resolve, reject) => {
      const check = setInterval(() => {
        if (fired > 0) {
          clearInterval(check);
          resolve();
        } else if (performance.now() - start > 2_000) {
          clearInterval(check);
          reject(new Error('the 20 ms wake-up did not fire within 2 s'));
        }
      }, 5);
    });
    assert.equal(fired, 1);
    timer.stop();
  });

  test('before the clock is known, a wake for a server time fires at once (the claim that follows syncs it)', async () => {
    let fired = 0;
    const timer = new WakeTimer(() => fired++, 30_000);
    assert.equal(timer.synced, false);
    timer.wakeAt(Date.UTC(2030, 0, 1));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(fired, 1);
  });

  test('an earlier pending wake-up is kept; a later request does not replace it', async () => {
    let fired = 0;
    const timer = new WakeTimer(() => fired++, 30_000);
    const t = performance.now();
    timer.observe(1_000_000, t, t);
    timer.wakeAt(1_000_010);
    timer.wakeAt(1_020_000);
    const start = performance.now();
    while (fired === 0 && performance.now() - start < 2_000) await new Promise((r) => setTimeout(r, 5));
    assert.equal(fired, 1);
    timer.stop();
  });

  test('never fires more than WAKE_LEAD_MS before its moment: Node fires a timer of a fractional delay up to 2 ms early', async () => {
    // Node truncates a delay to whole ms and counts from the loop's cached time: a timer set for
    // 1.9 ms fires after 1. A worker woken early sends a claim that finds nothing (at 400 jobs/s,
    // half a claim a job). Each wake here is set for a server moment a fraction of a ms apart;
    // when it fires, the timer's own reading of the server clock must be within the lead of it.
    const t = performance.now();
    const S = 1_000_000_000;
    const early: number[] = [];
    for (let i = 0; i < 60; i++) {
      const probe = new WakeTimer(() => {}, 30_000);
      probe.observe(S, t, t);
      const wanted = probe.serverNow() + 0.3 + (i % 10) * 0.17;
      const seen = await new Promise<number>((resolve) => {
        const timer = new WakeTimer(() => resolve(timer.serverNow()), 30_000);
        timer.observe(S, t, t);
        timer.wakeAt(wanted);
      });
      if (seen < wanted - WAKE_LEAD_MS) early.push(Math.round((wanted - seen) * 1000) / 1000);
    }
    assert.deepEqual(early, [], `${early.length} of 60 wakes fired more than ${WAKE_LEAD_MS} ms early (ms early): ${early.join(', ')}`);
  });
});

describe('wake timer: the server clock from round trips', () => {
  // The offset in use: server ms minus local monotonic ms, from two reads of the local clock. A
  // busy machine can put many microseconds between them, so the assertions allow half a
  // millisecond (the errors they catch are 0.9 ms and more).
  const offsetOf = (timer: WakeTimer) => timer.serverNow() - performance.now();
  const S = Date.UTC(2026, 10, 25);

  test('a round trip that waited does not move the clock by half its wait', () => {
    const timer = new WakeTimer(() => {}, 30_000);
    timer.observe(S, 1000, 1000.2);
    const tight = offsetOf(timer);
    assert.ok(Math.abs(tight - (S + 0.5 - 1000.1)) < 0.5, `offset ${tight - S}`);
    // 50 ms later the server answers as fast, but the reply sat 20 ms behind other work: the
    // midpoint would put the server 10 ms behind, and every wake-up 10 ms late.
    timer.observe(S + 50, 1050, 1070);
    assert.ok(Math.abs(offsetOf(timer) - tight) < 0.5, `moved by ${offsetOf(timer) - tight} ms`);
  });

  test('a server clock that stepped is followed at once, whatever the round trip', () => {
    const timer = new WakeTimer(() => {}, 30_000);
    timer.observe(S, 1000, 1000.2);
    // A failover to a replica an hour ahead: no offset could explain both answers.
    timer.observe(S + 3_600_010, 1010, 1030);
    assert.ok(Math.abs(offsetOf(timer) - (S + 3_600_010.5 - 1020)) < 0.5, `offset ${offsetOf(timer) - S}`);
  });

  test('a kept offset gives way to a looser one as the time since grows (clocks drift)', () => {
    const timer = new WakeTimer(() => {}, 30_000);
    timer.observe(S, 1000, 1000.2); // within 0.6 ms
    // One second on, a sample within 2 ms is not better than the kept one plus 0.5 ms of drift...
    timer.observe(S + 1000, 1999, 2003);
    assert.ok(Math.abs(offsetOf(timer) - (S + 0.5 - 1000.1)) < 0.5);
    // ...ten seconds on it is (0.6 + 5 ms of drift allowed).
    timer.observe(S + 10_001, 10_999, 11_003);
    assert.ok(Math.abs(offsetOf(timer) - (S + 10_001.5 - 11_001)) < 0.5, `offset ${offsetOf(timer) - S}`);
  });
});

describe('wake timer: the offset narrowed by many answers', () => {
  // How far the timer's server clock is from `offset` plus the local clock: serverNow() read
  // between two reads of the local clock, so a pause of this process between the reads (a busy
  // machine) cannot count as an error of the timer's.
  const offError = (timer: WakeTimer, offset: number) => {
    const before = performance.now();
    const server = timer.serverNow();
    const after = performance.now();
    return Math.min(0, server - (after + offset)) + Math.max(0, server - (before + offset));
  };

  test('answers read at different points of the server ms narrow the offset to about a round trip, and a wake then never fires more than WAKE_LEAD_MS before its moment', async () => {
    // A simulated server a fractional number of ms ahead of this process: every answer reads its
    // clock 0.05 ms into a 0.1 ms round trip and floors it to the ms. One answer places the
    // offset within 1.1 ms (a wake aimed at its middle fires up to half a ms early, a claim that
    // finds nothing); forty answers at different points of the ms place it within the trip.
    const ahead = 1_764_000_000_123.37;
    const base = performance.now() - 1000;
    const timer = new WakeTimer(() => {}, 30_000);
    for (let i = 0; i < 40; i++) {
      const sentAt = base + i * 7.31;
      timer.observe(Math.floor(sentAt + 0.05 + ahead), sentAt, sentAt + 0.1);
    }
    const error = offError(timer, ahead);
    assert.ok(Math.abs(error) < 0.1, `offset off by ${error} ms`);
    // Wakes for server moments a fraction of a ms apart: none fires more than WAKE_LEAD_MS before
    // its moment by the simulated server's clock.
    const early: number[] = [];
    for (let i = 0; i < 20; i++) {
      const moment = performance.now() + ahead + 2 + i * 0.13;
      const firedAt = await new Promise<number>((resolve) => {
        const t = new WakeTimer(() => resolve(performance.now()), 30_000);
        for (let k = 0; k < 40; k++) {
          const sentAt = base + k * 7.31;
          t.observe(Math.floor(sentAt + 0.05 + ahead), sentAt, sentAt + 0.1);
        }
        t.wakeAt(moment);
      });
      if (firedAt + ahead < moment - WAKE_LEAD_MS) early.push(Math.round((moment - firedAt - ahead) * 1000) / 1000);
    }
    assert.deepEqual(early, [], `${early.length} of 20 wakes fired more than ${WAKE_LEAD_MS} ms before their moment (ms early): ${early.join(', ')}`);
  });

  test('an answer outside the bounds (the server clock stepped) starts them afresh; one inside narrows them', () => {
    const timer = new WakeTimer(() => {}, 30_000);
    const S = Date.UTC(2026, 10, 30);
    timer.observe(S, 1000, 1000.2);
    timer.observe(S + 10, 1010.4, 1010.6);
    // [S - 1000.2, S - 999] and [S - 1000.6, S - 999.4]: within [S - 1000.2, S - 999.4].
    const narrowed = offError(timer, S - 999.8);
    assert.ok(Math.abs(narrowed) < 0.05, `offset off by ${narrowed} ms`);
    timer.observe(S + 60_000, 1020, 1020.2);
    const afresh = offError(timer, S + 60_000 - 1019.6);
    assert.ok(Math.abs(afresh) < 0.05, `offset off by ${afresh} ms`);
  });
});

describe('wake timer with an idle check past what a Node timer holds', () => {
  test('never hands Node a delay over 2^31 - 1 ms (it would fire at once, with a TimeoutOverflowWarning)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    let fired = 0;
    const timer = new WakeTimer(() => fired++, 2 ** 40);
    try {
      // The sleep is "now + the longest delay", less "now" again: in floating point that is
      // sometimes a hair over the longest delay. A thousand tries at as many clock readings.
      for (let i = 0; i < 1000; i++) {
        timer.stop();
        timer.wakeAt(undefined);
        const spin = performance.now() + 0.013;
        while (performance.now() < spin) {}
      }
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 20));
    } finally {
      timer.stop();
      process.off('warning', onWarning);
    }
    assert.deepEqual(
      warnings.filter((w) => w.startsWith('TimeoutOverflowWarning')),
      [],
    );
    assert.equal(fired, 0, 'the sleep did not end at once');
  });
});
