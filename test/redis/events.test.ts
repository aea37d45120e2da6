import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { Queue, UnrecoverableError, Worker, type AddResult, type Logger, type StreamEvent } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

function newQueue<T>(): Queue<T> {
  const q = new Queue<T>(uniqueName('e'), { connection: fx.redis.url });
  fx.track(q);
  return q;
}

function newWorker<T>(queue: string, handler: (job: { data: T }) => unknown, extra: Record<string, unknown> = {}): Worker<T> {
  const w = new Worker<T>(queue, handler as never, { connection: fx.redis.url, attempts: 2, backoff: { type: 'fixed', delay: 10 }, ...extra });
  errorLog.watch(w);
  fx.track(w);
  return w;
}

describe('queue events in process', () => {
  test('added, cancelled, rescheduled, paused, resumed fire with their results; a throwing listener fails nothing', async () => {
    const q = newQueue<number>();
    const seen: [string, unknown][] = [];
    q.on('added', (r) => seen.push(['added', r.id]));
    q.on('cancelled', (r) => seen.push(['cancelled', r.id]));
    q.on('rescheduled', (r) => seen.push(['rescheduled', r.id]));
    q.on('paused', () => seen.push(['paused', null]));
    q.on('resumed', () => seen.push(['resumed', null]));
    q.on('added', () => {
      throw new Error('listener bug');
    });
    const a: AddResult = await q.add(1, { id: 'a', delay: 60_000 });
    assert.equal(a.added, true);
    await q.add(1, { id: 'a', delay: 60_000 }); // exists: no event
    await q.addBulk([{ data: 2, opts: { id: 'b', delay: 60_000 } }]);
    await q.reschedule('a', { delay: 120_000 });
    await q.promote('b');
    await q.cancel('a');
    await q.cancel('a'); // gone: no event
    await q.pause();
    await q.resume();
    assert.deepEqual(seen, [
      ['added', 'a'],
      ['added', 'b'],
      ['rescheduled', 'a'],
      ['rescheduled', 'b'],
      ['cancelled', 'a'],
      ['paused', null],
      ['resumed', null],
    ]);
  });
});

describe('event stream', () => {
  test('another process follows what happens to jobs, in order, with attempts, due times and errors', async () => {
    const q = newQueue<string>();
    assert.equal(await q.events.enable({ maxLen: 1000 }), true);
    assert.equal(await q.events.enable({ maxLen: 1000 }), false);
    const follower = spawn(process.execPath, [fileURLToPath(new URL('../helpers/follow-events.js', import.meta.url)), fx.redis.url, q.name], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const events: StreamEvent[] = [];
    createInterface({ input: follower.stdout! }).on('line', (line) => events.push(JSON.parse(line) as StreamEvent));
    try {
      newWorker<string>(q.name, (job) => {
        if (job.data === 'fail') throw new Error('boom');
        if (job.data === 'fatal') throw new UnrecoverableError('no use');
      });
      await q.add('ok', { id: 'ok' });
      await q.add('fail', { id: 'fail' });
      await q.add('fatal', { id: 'fatal' });
      await q.add('later', { id: 'later', delay: 60_000 });
      await q.cancel('later');
      const expected = (id: string) => events.filter((e) => e.id === id).map((e) => e.event);
      await until(
        () =>
          expected('fail').includes('dead') &&
          expected('fatal').includes('dead') &&
          expected('ok').includes('completed') &&
          expected('later').includes('cancelled'),
        'the follower to see every job end',
        10_000,
      );
      assert.deepEqual(expected('ok'), ['added', 'claimed', 'completed']);
      assert.deepEqual(expected('fail'), ['added', 'claimed', 'retried', 'claimed', 'dead']);
      assert.deepEqual(expected('fatal'), ['added', 'claimed', 'dead']);
      assert.deepEqual(expected('later'), ['added', 'cancelled']);
      const retried = events.find((e) => e.id === 'fail' && e.event === 'retried')!;
      assert.equal(retried.fields.attempt, '1');
      assert.match(retried.fields.error!, /boom/);
      assert.ok(Number(retried.fields.due) > 0);
      const cursors = events.map((e) => e.cursor.split('-').map(Number) as [number, number]);
      for (let i = 1; i < cursors.length; i++) {
        const [a, b] = [cursors[i - 1]!, cursors[i]!];
        assert.ok(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]), 'stream cursors increase');
      }
    } finally {
      follower.kill('SIGTERM');
    }
    const code = await within(new Promise((r) => follower.once('exit', r)), 5_000, 'the follower to exit on SIGTERM');
    assert.equal(code, 0, 'the follower stops cleanly on its abort signal');
  });

  test('the stream is capped, shows in stats, and disable removes it', async () => {
    const q = newQueue<number>();
    assert.equal((await q.stats()).eventStreamLength, undefined);
    await q.events.enable({ maxLen: 10 });
    await q.addBulk(Array.from({ length: 2000 }, (_, i) => ({ data: i, opts: { delay: 60_000 } })));
    const len = (await q.stats()).eventStreamLength!;
    // MAXLEN ~ trims whole stream nodes (100 entries by default), so the cap is approximate.
    assert.ok(len >= 10 && len <= 200, `stream length ${len}`);
    assert.equal(await q.events.disable(), true);
    assert.equal((await q.stats()).eventStreamLength, undefined);
    assert.equal(await fx.client.exists(queueKeys('dq', q.name).events), 0);
    await q.add(1);
    assert.equal(await fx.client.exists(queueKeys('dq', q.name).events), 0, 'nothing is written while off');
  });

  test('bad options are refused by field', async () => {
    const q = newQueue<number>();
    await assert.rejects(q.events.enable({ maxLen: 0 }), /^ValidationError: maxLen/);
    const it = q.events.follow({ after: 'yesterday' });
    await assert.rejects(it.next(), /after/);
  });
});

describe('logging', () => {
  test('a pino-compatible logger hears retries, deaths and errors; the worker is silent without one', async () => {
    const q = newQueue<string>();
    const lines: { level: string; obj: Record<string, unknown>; msg: string | undefined }[] = [];
    const logger: Logger = {
      debug: (obj, msg) => lines.push({ level: 'debug', obj: obj as Record<string, unknown>, msg }),
      info: (obj, msg) => lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
      warn: (obj, msg) => lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
      error: () => {
        throw new Error('a broken logger must not break the worker');
      },
    };
    const w = newWorker<string>(
      q.name,
      () => {
        throw new Error('nope');
      },
      { logger },
    );
    const dead = new Promise((r) => w.once('dead', r));
    await q.add('x', { id: 'x' });
    await within(dead, 5_000, 'the failing job to go dead');
    const retried = lines.find((l) => l.obj.event === 'retried');
    assert.equal(retried?.level, 'info');
    assert.equal(retried?.obj.jobId, 'x');
    assert.equal(retried?.obj.queue, q.name);
    assert.ok(retried?.obj.err instanceof Error);
    const deadLine = lines.find((l) => l.obj.event === 'dead');
    assert.equal(deadLine?.level, 'warn');
    assert.match(String(deadLine?.obj.reason), /nope/);
    await assert.rejects(async () => new Queue('q', { connection: fx.redis.url, logger: { info() {} } as never }), /^ValidationError: logger/);
  });
});
