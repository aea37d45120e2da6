import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseSpec } from '../../src/schedules/definition.js';
import { latestOccurrence, nextOccurrence } from '../../src/schedules/occurrences.js';

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('occurrences (croner does the calendar)', () => {
  test('a 02:30 Europe/Berlin job on the spring-forward day runs once, at the first valid time after the gap', () => {
    const def = parseSpec({ cron: '30 2 * * *', tz: 'Europe/Berlin' }, 0);
    const runs: (string | undefined)[] = [];
    let t = Date.parse('2026-03-27T12:00:00Z');
    for (let i = 0; i < 4; i++) {
      const n = nextOccurrence(def, t)!;
      runs.push(iso(n));
      t = n;
    }
    assert.deepEqual(runs, [
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist that night: 03:00 CEST, once
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  test('*/30 through the repeated autumn hour in Europe/Berlin: every half hour of real time, none twice, none skipped', () => {
    const def = parseSpec({ cron: '*/30 * * * *', tz: 'Europe/Berlin' }, 0);
    const runs: (string | undefined)[] = [];
    let t = Date.parse('2026-10-24T23:40:00Z');
    for (let i = 0; i < 6; i++) {
      const n = nextOccurrence(def, t)!;
      runs.push(iso(n));
      t = n;
    }
    // 02:00 and 02:30 local happen twice (CEST, then CET): four runs in those two real hours.
    assert.deepEqual(runs, [
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T02:30:00.000Z',
    ]);
  });

  test('America/New_York spring forward: a 02:30 job runs once that day', () => {
    const def = parseSpec({ cron: '30 2 * * *', tz: 'America/New_York' }, 0);
    const first = nextOccurrence(def, Date.parse('2026-03-08T00:00:00Z'))!;
    const second = nextOccurrence(def, first)!;
    assert.equal(new Date(first).toISOString().slice(0, 10), '2026-03-08');
    assert.equal(new Date(second).toISOString().slice(0, 10), '2026-03-09');
  });

  test('intervals fall on anchor + k × every; the latest missed occurrence is found', () => {
    const def = parseSpec({ every: 1000 }, 10_000);
    assert.equal(nextOccurrence(def, 10_000), 11_000);
    assert.equal(nextOccurrence(def, 11_500), 12_000);
    assert.equal(latestOccurrence(def, 11_000, 15_400), 15_000);
    assert.equal(latestOccurrence(def, 15_000, 15_400), undefined);
    const cron = parseSpec({ cron: '0 * * * *' }, 0);
    assert.equal(iso(latestOccurrence(cron, Date.parse('2026-01-01T00:00:00Z'), Date.parse('2026-01-01T05:30:00Z'))), '2026-01-01T05:00:00.000Z');
  });
});
