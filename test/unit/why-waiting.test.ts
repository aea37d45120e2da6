import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type WaitFacts, type WaitGroup, whyHeld, whyWaiting } from '../../src/inspect/why-waiting.js';
import type { HoldInfo } from '../../src/types.js';
import { NOTHING_HELD } from '../../src/store/held.js';

const NOW = Date.UTC(2026, 10, 29, 17, 5, 0);
const noLimits = { concurrency: undefined, groupConcurrency: undefined, rateLimit: undefined, groupRateLimit: undefined };
const calmGroup: WaitGroup = {
  running: 0,
  concurrency: undefined,
  rateLimit: undefined,
  rate: { used: 0, heldUntilMs: undefined, nextRefillMs: undefined },
  paused: false,
};

function facts(over: {
  job?: Partial<WaitFacts['job']>;
  stats?: Partial<WaitFacts['stats']>;
  limits?: Partial<WaitFacts['limits']>;
  group?: Partial<WaitGroup>;
}): WaitFacts {
  return {
    job: { state: 'scheduled', ready: true, dueAtMs: NOW - 1000, group: over.group ? 'tenant:a' : undefined, ...over.job },
    stats: { nowMs: NOW, paused: false, workers: 1, active: 0, held: NOTHING_HELD, ...over.stats },
    limits: { ...noLimits, ...over.limits },
    group: over.group ? { ...calmGroup, ...over.group } : undefined,
  };
}
const codes = (f: WaitFacts) => whyWaiting(f).map((r) => r.code);

describe('whyWaiting: why a job is not running', () => {
  test('a job that is not scheduled is not waiting', () => {
    for (const state of ['active', 'dead', 'completed'] as const) assert.deepEqual(whyWaiting(facts({ job: { state } })), []);
  });

  test('not due yet: due in 4 s, with the time', () => {
    const [r] = whyWaiting(facts({ job: { ready: false, dueAtMs: NOW + 4000 } }));
    assert.deepEqual(r, { code: 'not_due', text: 'due in 4.0 s (17:05:04 UTC)', untilMs: NOW + 4000 });
  });

  test('not due yet and the queue paused with no worker: all three (the pause and no worker hold it when due); limits do not', () => {
    const f = facts({ job: { ready: false, dueAtMs: NOW + 60_000 }, stats: { paused: true, workers: 0, active: 5 }, limits: { concurrency: 5 } });
    assert.deepEqual(codes(f), ['not_due', 'queue_paused', 'no_worker']);
  });

  test('queue paused', () => assert.deepEqual(codes(facts({ stats: { paused: true } })), ['queue_paused']));

  test('group paused', () => assert.deepEqual(codes(facts({ group: { paused: true } })), ['group_paused']));

  test('group at its limit 2/2: its own limit, else the queue’s groupConcurrency', () => {
    assert.deepEqual(whyWaiting(facts({ group: { running: 2, concurrency: 2 } })), [
      { code: 'group_at_limit', text: 'group at its limit 2/2', running: 2, limit: 2 },
    ]);
    assert.deepEqual(codes(facts({ group: { running: 3 }, limits: { groupConcurrency: 3 } })), ['group_at_limit']);
    assert.deepEqual(codes(facts({ group: { running: 1 }, limits: { groupConcurrency: 3 } })), ['in_line']);
  });

  test('queue at its concurrency limit, from the limit or from stats().held', () => {
    assert.deepEqual(whyWaiting(facts({ stats: { active: 4 }, limits: { concurrency: 4 } })), [
      { code: 'queue_at_limit', text: 'queue at its concurrency limit 4/4', running: 4, limit: 4 },
    ]);
    assert.deepEqual(codes(facts({ stats: { held: { ...NOTHING_HELD, queueAtLimit: true } } })), ['queue_at_limit']);
  });

  test('rate limit holding until HH:MM:SS; a hold already over does not count', () => {
    const r = whyWaiting(facts({ stats: { held: { ...NOTHING_HELD, rateLimitedUntilMs: NOW + 2000 } } }));
    assert.deepEqual(r, [{ code: 'rate_limited', text: 'rate limit holding until 17:05:02 UTC', untilMs: NOW + 2000 }]);
    assert.deepEqual(codes(facts({ stats: { held: { ...NOTHING_HELD, rateLimitedUntilMs: NOW - 1 } } })), ['in_line']);
  });

  test("a group's rate limit: its window full, or a RateLimitSignal's hold", () => {
    const full = facts({
      group: { rate: { used: 5, heldUntilMs: undefined, nextRefillMs: NOW + 7000 } },
      limits: { groupRateLimit: { max: 5, perMs: 60_000 } },
    });
    assert.deepEqual(whyWaiting(full), [{ code: 'group_rate_limited', text: "group's rate limit holding until 17:05:07 UTC", untilMs: NOW + 7000 }]);
    const held = facts({ group: { rate: { used: 0, heldUntilMs: NOW + 1000, nextRefillMs: undefined } } });
    assert.deepEqual(codes(held), ['group_rate_limited']);
  });

  test('no live worker', () => assert.deepEqual(codes(facts({ stats: { workers: 0 } })), ['no_worker']));

  test('due and nothing named holds it: in line', () => {
    assert.deepEqual(codes(facts({})), ['in_line']);
    // ready may lag the clock by a claim; a due time passed is due.
    assert.deepEqual(codes(facts({ job: { ready: false, dueAtMs: NOW } })), ['in_line']);
  });

  test('several at once, most binding first', () => {
    const f = facts({
      stats: { paused: true, workers: 0, active: 2, held: { ...NOTHING_HELD, rateLimitedUntilMs: NOW + 5000 } },
      limits: { concurrency: 2 },
      group: { paused: true, running: 2, concurrency: 2 },
    });
    assert.deepEqual(codes(f), ['queue_paused', 'group_paused', 'no_worker', 'group_at_limit', 'queue_at_limit', 'rate_limited']);
  });
});

describe('whyHeld: what a held job waits for', () => {
  const hold = (over: Partial<HoldInfo>): HoldInfo => ({
    state: 'held',
    waitingFor: [],
    signal: undefined,
    deadlineAtMs: undefined,
    onChildFailure: 'fail',
    children: [],
    ...over,
  });
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `c${i}`);
  const children = (n: number, pending: number) =>
    ids(n).map((id, i) => (i < n - pending ? { id, outcome: 'completed' as const, result: '1' } : { id, outcome: 'pending' as const }));

  test('dependencies not ended, the first five named, until the deadline', () => {
    const h = hold({ waitingFor: ids(10).slice(3), children: children(10, 7), deadlineAtMs: NOW + 2000 });
    assert.deepEqual(whyHeld(h), [
      { code: 'held_dependencies', text: 'waiting for 7 of 10 dependencies (c3, c4, c5, c6, c7 and 2 more) until 17:05:02 UTC', untilMs: NOW + 2000 },
    ]);
    assert.deepEqual(whyWaiting({ ...facts({ job: { state: 'held' } }), hold: h }), whyHeld(h), 'whyWaiting of a held job is its hold');
  });

  test('one dependency, no deadline; a signal; a settled hold or none says nothing', () => {
    assert.deepEqual(whyHeld(hold({ waitingFor: ['a'], children: children(1, 1).map((c) => ({ ...c, id: 'a' })) })), [
      { code: 'held_dependencies', text: 'waiting for 1 of 1 dependency (a)' },
    ]);
    assert.deepEqual(whyHeld(hold({ signal: 'payment', deadlineAtMs: NOW + 7000 })), [
      { code: 'held_signal', text: "waiting for signal 'payment' until 17:05:07 UTC", untilMs: NOW + 7000 },
    ]);
    for (const state of ['released', 'timedOut', 'failed'] as const) assert.deepEqual(whyHeld(hold({ state, signal: 'payment' })), []);
    assert.deepEqual(whyHeld(null), []);
    assert.deepEqual(whyWaiting(facts({ job: { state: 'held' } })), [], 'a held job whose hold was not read');
  });
});
