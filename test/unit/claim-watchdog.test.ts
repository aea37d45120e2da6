/**
 * The claim watchdog: one timer for every claim in flight, firing for each claim unanswered for
 * its time (once per claim), never for one answered in time, and holding the process open only
 * while a claim waits.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClaimWatchdog } from '../../src/store/redis/claim-watchdog.js';

/** Timeouts that hold the process open (hasRef), as Node counts them. */
const refTimeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('a claim unanswered for its time fires once; one answered in time never does', async () => {
  let fired = 0;
  const w = new ClaimWatchdog(60, () => fired++);
  const quick = w.begin();
  const slow = w.begin();
  await sleep(10);
  w.end(quick);
  await sleep(120);
  assert.equal(fired, 1, 'the slow claim, once');
  await sleep(120);
  assert.equal(fired, 1, 'not again while it is still unanswered');
  w.end(slow);
  const answered = w.begin();
  await sleep(20);
  w.end(answered);
  await sleep(120);
  assert.equal(fired, 1, 'a claim answered in time never fires');
});

test('claims sent apart fire each at its own time, from one timer re-armed', async () => {
  const at: number[] = [];
  const t0 = performance.now();
  const w = new ClaimWatchdog(80, () => at.push(performance.now() - t0));
  const a = w.begin();
  await sleep(50);
  const b = w.begin();
  await sleep(200);
  assert.equal(at.length, 2, `fired at ${at.map(Math.round).join(', ')} ms`);
  assert.ok(at[0]! >= 79 && at[1]! >= 129, `each after its own claim's time: ${at.map(Math.round).join(', ')} ms`);
  w.end(a);
  w.end(b);
});

test('slots are reused, and the timer holds the process open only while a claim waits', async () => {
  const before = refTimeouts();
  const w = new ClaimWatchdog(10_000, () => assert.fail('no claim waited that long'));
  const a = w.begin();
  assert.equal(refTimeouts(), before + 1, 'armed while a claim waits');
  w.end(a);
  assert.equal(refTimeouts(), before, 'unref once none waits');
  assert.equal(w.begin(), a, 'a freed slot is taken again');
  assert.equal(refTimeouts(), before + 1, 'the same timer, ref again');
  w.end(a);
  assert.equal(refTimeouts(), before);
});

test('a claim sent while one it fired for is still unanswered is watched too', async () => {
  let fired = 0;
  const w = new ClaimWatchdog(50, () => fired++);
  const wedged = w.begin();
  await sleep(100);
  assert.equal(fired, 1);
  const next = w.begin();
  await sleep(100);
  assert.equal(fired, 2, 'the second claim fired as well');
  w.end(wedged);
  w.end(next);
});
