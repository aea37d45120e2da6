/**
 * The conformance suite of the queue's per-minute history (`queue.history()`): completions,
 * failed attempts, deaths, starts and how late they were, counted by the calls workers make
 * anyway, read back by minute on the server clock; bad options refused. Run on every store by the
 * files that run the group suite.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UnrecoverableError, ValidationError, type HistoryMinute } from '../../src/index.js';
import { until } from '../helpers/wait.js';
import { useHarness } from './harness.js';
import type { StoreKind } from './suite.js';

const total = (ms: HistoryMinute[], k: 'completed' | 'failed' | 'dead' | 'started') => ms.reduce((n, m) => n + m[k], 0);

export function historyConformance(kind: StoreKind): void {
  describe(`the queue's history [${kind.name}]`, () => {
    const { queue, worker } = useHarness(kind, 'hist');

    test('counts completions, failed attempts, deaths, starts and lateness in their minute', async () => {
      const q = queue<string>();
      const before = await q.history({ minutes: 2 });
      assert.deepEqual(
        [total(before, 'completed'), total(before, 'failed'), total(before, 'dead'), total(before, 'started')],
        [0, 0, 0, 0],
        'a new queue has none',
      );
      await q.addBulk([
        { data: 'ok', opts: { id: 'a' } },
        { data: 'ok', opts: { id: 'b' } },
        { data: 'flaky', opts: { id: 'c', attempts: 2, backoff: { type: 'fixed', delay: 1 } } },
        { data: 'bad', opts: { id: 'd' } },
      ]);
      // Due now; the worker starts 300 ms later, so every start is at least that late.
      await new Promise((r) => setTimeout(r, 300));
      const tries = new Map<string, number>();
      worker(q, (job) => {
        const n = (tries.get(job.id) ?? 0) + 1;
        tries.set(job.id, n);
        if (job.data === 'bad') throw new UnrecoverableError('no');
        if (job.data === 'flaky' && n === 1) throw new Error('once');
      });
      await until(async () => {
        const s = await q.stats();
        return s.scheduled === 0 && s.active === 0 && s.dead === 1;
      }, 'all settled');
      // The acks of the last hand-outs may land a moment after the job left active.
      await until(async () => total(await q.history({ minutes: 3 }), 'completed') === 3, 'three completions counted');
      const h = await q.history({ minutes: 3 });
      assert.equal(h.length, 3);
      assert.deepEqual([total(h, 'completed'), total(h, 'failed'), total(h, 'dead'), total(h, 'started')], [3, 2, 1, 5], JSON.stringify(h));
      const late = h.filter((m) => m.started > 0);
      assert.ok(late.length > 0);
      assert.ok(Math.max(...late.map((m) => m.lateMaxMs!)) >= 250, `the first starts were ~300 ms late: ${JSON.stringify(late)}`);
      assert.ok(late.every((m) => m.lateMeanMs! <= m.lateMaxMs!));
      assert.ok(h.filter((m) => m.started === 0).every((m) => m.lateMeanMs === undefined && m.lateMaxMs === undefined));
    });

    test('one entry a minute, oldest first, ending with the current minute on the server clock; bad options refused', async () => {
      const q = queue<string>();
      const h = await q.history();
      assert.equal(h.length, 60, 'an hour by default');
      const now = (await q.stats()).nowMs;
      const last = h.at(-1)!.atMs;
      assert.ok(last <= now && now - last < 60_000 + 1_000, `the last minute is the current one (${last} vs ${now})`);
      assert.ok(h.every((m, i) => i === 0 || m.atMs - h[i - 1]!.atMs === 60_000));
      assert.equal((await q.history({ minutes: 1440 })).length, 1440, 'a day at most');
      for (const bad of [{ minutes: 0 }, { minutes: 1441 }, { minutes: 1.5 }, { minutes: '5' }, { hours: 1 }, 'x']) {
        await assert.rejects(q.history(bad as never), ValidationError, JSON.stringify(bad));
      }
    });

    test('a running job failed from outside counts as a failed attempt', async () => {
      const q = queue<string>();
      await q.add('x', { id: 'held', attempts: 1 });
      let started = false;
      worker(q, (job) => {
        started = true;
        return new Promise((_, reject) => job.signal.addEventListener('abort', () => reject(job.signal.reason)));
      });
      await until(() => started, 'the job to start');
      await q.fail('held', { reason: 'operator' });
      await until(async () => (await q.stats()).dead === 1, 'dead');
      const h = await q.history({ minutes: 2 });
      assert.deepEqual([total(h, 'failed'), total(h, 'dead'), total(h, 'started')], [1, 1, 1]);
    });
  });
}
