/**
 * The queue's per-minute history on a real redis-server (data-model.md `history`): a field whose
 * slot holds a minute a day older, or that does not read, counts as empty and is started afresh
 * (never added to); the CLI's `delayq history` prints and exports what the store keeps.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, UnrecoverableError, Worker } from '../../src/index.js';
import { historyKey, queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until } from '../helpers/wait.js';
import { run } from '../cli/run-cli.js';
import { HASHTABLE_FIELD } from '../../src/store/redis/wire.js';

const fx = useRedis();

describe('the history hash', () => {
  test('a field of a day-old minute, or one that does not read, is empty and started afresh', async () => {
    const name = uniqueName('histf');
    const q = new Queue<string>(name, { connection: fx.redis.url });
    try {
      const key = historyKey(queueKeys('dq', name));
      const minute = Math.floor((await serverTimeMs(fx.client)) / 60_000);
      // The slot of this minute and of the next (a test that crosses a minute still meets one).
      await fx.client.hset(key, String(minute % 1440), `${minute - 1440}:900:900:900:900:900:900`);
      await fx.client.hset(key, String((minute + 1) % 1440), 'not a minute');
      const h = await q.history({ minutes: 2 });
      assert.deepEqual(
        h.map((m) => [m.completed, m.failed, m.dead, m.started]),
        [
          [0, 0, 0, 0],
          [0, 0, 0, 0],
        ],
        'a day-old minute and a bad field read as nothing',
      );
      await q.add('x', { id: 'one' });
      const w = new Worker<string>(name, () => 'ok', { connection: fx.redis.url });
      try {
        await until(async () => (await q.history({ minutes: 2 })).some((m) => m.completed === 1), 'the completion counted');
      } finally {
        await w.close();
      }
      const now = Math.floor((await serverTimeMs(fx.client)) / 60_000);
      const fields = await fx.client.hgetall(key);
      delete fields[HASHTABLE_FIELD];
      const current = Object.values(fields).filter((v) => v.startsWith(`${minute}:`) || v.startsWith(`${now}:`));
      assert.ok(current.length >= 1, JSON.stringify(fields));
      for (const v of current) assert.match(v, /^\d+:[01]:0:0:[01]:\d+:\d+$/, `started afresh, not added to 900: ${v}`);
      assert.ok(
        Object.keys(fields).every((f) => Number(f) < 1440),
        'one field a minute of a day at most',
      );
    } finally {
      await q.close();
    }
  });

  test('delayq history: the last minutes as the store keeps them, for a person and as JSON', async () => {
    const name = uniqueName('histc');
    const q = new Queue<string>(name, { connection: fx.redis.url });
    const w = new Worker<string>(
      name,
      (job) => {
        if (job.data === 'bad') throw new UnrecoverableError('no');
      },
      { connection: fx.redis.url },
    );
    w.on('error', () => {});
    try {
      await q.addBulk([{ data: 'ok' }, { data: 'ok' }, { data: 'bad' }]);
      await until(async () => {
        const h = await q.history({ minutes: 3 });
        return h.reduce((n, m) => n + m.completed, 0) === 2 && h.reduce((n, m) => n + m.dead, 0) === 1;
      }, 'the work recorded');
    } finally {
      await w.close();
      await q.close();
    }
    const g = ['--redis', fx.redis.url, '--queue', name];
    const human = await run([...g, 'history', '--minutes', '5']);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /the last 5 min \(UTC\): completed 2 {2}failed 1 {2}dead 1 {2}started 3/);
    assert.match(human.stdout, /^minute +completed +failed +dead +started/m);
    const json = await run([...g, 'history', '--minutes', '5', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const minutes = JSON.parse(json.stdout) as { atMs: number; completed: number }[];
    assert.equal(minutes.length, 5);
    assert.equal(
      minutes.reduce((n, m) => n + m.completed, 0),
      2,
    );
    for (const bad of ['0', '1441', 'x', '1.5']) {
      const r = await run([...g, 'history', '--minutes', bad]);
      assert.equal(r.code, 64, `${bad}: ${r.stderr}`);
      assert.match(r.stderr, /minutes must be a whole number from 1 to 1440/);
    }
  });
});
