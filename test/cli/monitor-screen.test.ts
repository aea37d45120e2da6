/** The monitor's screen as a pure function: fixed state in, exact lines out. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type MonitorState, monitorRecord, rates, renderMonitor, type Sample, withSample } from '../../src/cli/monitor-screen.js';
import { NOTHING_HELD } from '../../src/store/held.js';
import type { QueueStats } from '../../src/types.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');

function stats(over: Partial<QueueStats> = {}): QueueStats {
  return {
    scheduled: 120,
    ready: 7,
    active: 3,
    dead: 2,
    nextDueInMs: 0,
    dueWithinWindow: 40,
    windowMs: 60_000,
    nowMs: T0,
    paused: false,
    eventStreamLength: undefined,
    completedTotal: 1000,
    oldestDueAgeMs: 1500,
    completed: 0,
    workers: 1,
    held: { ...NOTHING_HELD },
    heldJobs: 0,
    ...over,
  };
}

const sample = (atMs: number, over: Partial<QueueStats> = {}): Sample => ({ atMs, stats: stats({ nowMs: atMs, ...over }) });

describe('monitor screen', () => {
  test('every figure of a good sample, with rates from the history', () => {
    const history = [sample(T0, { completedTotal: 1000 }), sample(T0 + 30_000, { completedTotal: 1900 }), sample(T0 + 31_000, { completedTotal: 2000 })];
    const state: MonitorState = { queue: 'orders', nowMs: T0 + 31_250, history };
    assert.deepEqual(renderMonitor(state, { colour: false }), [
      'delayq monitor — orders   2030-01-01T00:00:31.250Z',
      'scheduled      120   ready        7   upcoming      113   active      3   dead      2',
      'due in the next 60.0 s       40   next due: now (7 due, the oldest since 1.5 s ago)',
      'completed 100/s now, 32/s over the last minute   (2000 in all)',
      'lag 1.5 s (the oldest due job has waited this long)',
      'event stream off   kept completed 0',
      'workers 1 live',
      'last sample 2030-01-01T00:00:31.000Z (250 ms ago)',
    ]);
    assert.deepEqual(rates(history), { completedPerSec: 100, completedPerSecMinute: 1000 / 31 });
  });

  test('paused, nothing due, stream on', () => {
    const state: MonitorState = {
      queue: 'q',
      nowMs: T0,
      history: [sample(T0, { paused: true, ready: 0, nextDueInMs: undefined, oldestDueAgeMs: undefined, eventStreamLength: 42 })],
    };
    const lines = renderMonitor(state, { colour: false });
    assert.match(lines[0]!, /PAUSED/);
    assert.match(lines[2]!, /next due: none scheduled/);
    assert.equal(lines[3], 'completed — now, — over the last minute   (1000 in all)');
    assert.equal(lines[4], 'lag none (no job is due)');
    assert.equal(lines[5], 'event stream on, 42 entries   kept completed 0');
  });

  test('live workers, the next due jobs, and the alarm when jobs are due and no worker is live', () => {
    const worker = {
      id: 'w1',
      host: 'box-a',
      pid: 1,
      queue: 'q',
      concurrency: 10,
      running: 4,
      startedAtMs: T0,
      lastSeenAtMs: T0,
      expiresAtMs: T0 + 30_000,
      version: '0',
      language: 'node',
    };
    const next = [
      { id: 'o1', dueAtMs: T0 + 2000 },
      { id: 'o2', dueAtMs: T0 + 90_000 },
    ] as never;
    const busy = renderMonitor({ queue: 'q', nowMs: T0, history: [{ ...sample(T0, { workers: 1 }), workers: [worker], next }] }, { colour: false });
    assert.ok(busy.includes('workers 1 live, running 4 of 10 slots (box-a)'), busy.join('\n'));
    assert.ok(busy.includes('next due: o1 in 2.0 s, o2 in 90.0 s'), busy.join('\n'));
    const idle = renderMonitor({ queue: 'q', nowMs: T0, history: [sample(T0, { workers: 0, ready: 7 })] }, { colour: false });
    assert.ok(idle.includes('no live worker, and 7 jobs are due'), idle.join('\n'));
  });

  test('reconnecting: the clock is the caller’s, the last sample keeps its own time and ages', () => {
    const history = [sample(T0)];
    const outage = { sinceMs: T0 + 1000, error: 'Redis at 127.0.0.1:1: no connection within 2000 ms', address: '127.0.0.1:1' };
    const at = (nowMs: number) => renderMonitor({ queue: 'q', nowMs, history, outage }, { colour: false });
    const early = at(T0 + 4000);
    const later = at(T0 + 9000);
    assert.equal(early[0], 'delayq monitor — q   2030-01-01T00:00:04.000Z');
    assert.equal(later[0], 'delayq monitor — q   2030-01-01T00:00:09.000Z');
    assert.equal(early.at(-2), 'reconnecting… for 3.0 s: Redis at 127.0.0.1:1: no connection within 2000 ms');
    assert.equal(later.at(-2), 'reconnecting… for 8.0 s: Redis at 127.0.0.1:1: no connection within 2000 ms');
    assert.equal(later.at(-1), 'last sample 2030-01-01T00:00:00.000Z (9.0 s ago): the figures above are from then');
    // The old figures stay on screen, marked by the line above as old.
    assert.match(later[1]!, /^scheduled\s+120\s+ready\s+7\s+upcoming\s+113/);

    const record = monitorRecord({ queue: 'q', nowMs: T0 + 9000, history, outage });
    assert.deepEqual(record, {
      time: '2030-01-01T00:00:09.000Z',
      queue: 'q',
      reconnecting: true,
      error: outage.error,
      address: '127.0.0.1:1',
      reconnectingForMs: 8000,
      lastSampleTime: '2030-01-01T00:00:00.000Z',
      lastSampleAgeMs: 9000,
    });
  });

  test('before the first answer, and a slow answer', () => {
    assert.deepEqual(renderMonitor({ queue: 'q', nowMs: T0, history: [] }, { colour: false }), [
      'delayq monitor — q   2030-01-01T00:00:00.000Z',
      'connecting…',
    ]);
    const slow = renderMonitor({ queue: 'q', nowMs: T0 + 3000, history: [sample(T0)], askingSinceMs: T0 + 500 }, { colour: false });
    assert.equal(slow.at(-2), 'waiting for Redis to answer… 2.5 s');
    const quick = renderMonitor({ queue: 'q', nowMs: T0 + 600, history: [sample(T0)], askingSinceMs: T0 + 500 }, { colour: false });
    assert.doesNotMatch(quick.join('\n'), /waiting/);
  });

  test('no escape codes without colour (pipes, NO_COLOR)', () => {
    const state: MonitorState = { queue: 'q', nowMs: T0, history: [sample(T0)], outage: { sinceMs: T0, error: 'x' } };
    assert.ok(!renderMonitor(state, { colour: false }).join('').includes('\u001b'), 'no ESC character');
  });

  test('the history keeps a minute, and starts afresh when the completed counter goes down', () => {
    let h: Sample[] = [];
    for (let t = 0; t <= 90_000; t += 10_000) h = withSample(h, sample(T0 + t, { completedTotal: t }));
    assert.deepEqual(
      h.map((s) => s.atMs - T0),
      [30_000, 40_000, 50_000, 60_000, 70_000, 80_000, 90_000],
    );
    h = withSample(h, sample(T0 + 100_000, { completedTotal: 5 }));
    assert.equal(h.length, 1);
    assert.deepEqual(rates(h), { completedPerSec: undefined, completedPerSecMinute: undefined });
  });

  test('the --json record of a good sample keeps the stats fields and adds time and rates', () => {
    const record = monitorRecord({ queue: 'q', nowMs: T0 + 1000, history: [sample(T0, { completedTotal: 0 }), sample(T0 + 1000, { completedTotal: 50 })] });
    assert.equal(record.time, '2030-01-01T00:00:01.000Z');
    assert.equal(record.scheduled, 120);
    assert.equal(record.throughputPerSec, 50);
    assert.equal(record.completedPerSecMinute, 50);
    assert.equal(record.reconnecting, undefined);
  });
});
