import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import { WakeTimer } from '../../src/worker/wake-timer.js';

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
