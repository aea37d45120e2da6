/** `cron ls` and `events follow / enable / disable` against a real redis-server. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { assertFailure, run, start } from './run-cli.js';

const fx = useRedis();

interface EventRow {
  time: string;
  cursor: string;
  event: string;
  id: string;
  fields: Record<string, string>;
}

describe('delayq cron and events', () => {
  test('cron ls: name, pattern or interval, time zone, last and next occurrence', async () => {
    const q = uniqueName('cron');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const empty = await run([...g, 'cron', 'ls']);
    assert.deepEqual([empty.code, empty.stdout], [0, `no recurring schedules on ${q}\n`]);

    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await queue.schedules.upsert('nightly-report', { cron: '0 2 * * *', tz: 'Europe/Berlin', data: { report: 'sales' } });
      await queue.schedules.upsert('heartbeat', { every: 300_000, missed: 'skip' });
      const expected = await queue.schedules.list();
      const json = await run([...g, 'cron', 'ls', '--json']);
      assert.equal(json.code, 0, json.stderr);
      const { schedules } = JSON.parse(json.stdout) as { schedules: { name: string; cron?: string; every?: number; tz: string; nextRunAtMs: number }[] };
      assert.deepEqual(
        schedules.map((s) => s.name),
        ['heartbeat', 'nightly-report'],
      );
      for (const s of schedules) {
        const e = expected.find((x) => x.name === s.name)!;
        assert.deepEqual([s.cron, s.every, s.tz, s.nextRunAtMs], [e.cron, e.every, e.tz, e.nextRunAtMs], s.name);
      }

      const text = await run([...g, 'cron', 'ls']);
      const lines = text.stdout.trim().split('\n');
      assert.match(lines[0]!, /^NAME\s+WHEN\s+TZ\s+MISSED\s+LAST\s+NEXT$/);
      const nightly = expected.find((x) => x.name === 'nightly-report')!;
      assert.match(lines[1]!, /^heartbeat\s+every 5\.0 min\s+—\s+skip\s+—\s+\d{4}-\S+Z$/);
      assert.match(
        lines[2]!,
        new RegExp(`^nightly-report\\s+cron 0 2 \\* \\* \\*\\s+Europe/Berlin\\s+latest\\s+—\\s+${new Date(nightly.nextRunAtMs!).toISOString()}$`),
      );
      // Next occurrences are computed, not guessed: 02:00 in Berlin is 00:00 or 01:00 UTC.
      assert.match(new Date(nightly.nextRunAtMs!).toISOString(), /T0[01]:00:00\.000Z$/);
    } finally {
      await queue.close();
    }
  });

  test('events follow on a queue whose stream is off says so and how to turn it on (exit 2); enable and disable say when nothing changed', async () => {
    const q = uniqueName('events');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const off = assertFailure(await run([...g, 'events', 'follow']), 2, 'events follow with the stream off');
    assert.equal(off.message, `the event stream of queue "${q}" is off`);
    assert.match(off.hint ?? '', new RegExp(`^turn it on with 'delayq events enable --queue ${q}'`));

    assert.deepEqual(JSON.parse((await run([...g, 'events', 'enable', '--json'])).stdout), { changed: true });
    const again = await run([...g, 'events', 'enable']);
    assert.deepEqual([again.code, again.stdout], [2, `the event stream of ${q} was already on\n`]);
    assert.equal((await run([...g, 'events', 'disable'])).code, 0);
    assert.equal((await run([...g, 'events', 'disable'])).code, 2);
  });

  test('events follow: one line per event, or one JSON object with an ISO time from the cursor', async () => {
    const q = uniqueName('events');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await queue.events.enable();
      await queue.add({ n: 1 }, { id: 'a', runAt: Date.parse('2031-01-01T00:00:00Z') });
      await queue.add({ n: 2 }, { id: 'b', delay: 3_600_000 });
      await queue.cancel('b');

      // --after 0 replays what the stream keeps: deterministic, no race with a live follower.
      const replay = await run([...g, 'events', 'follow', '--after', '0', '--count', '3', '--json']);
      assert.equal(replay.code, 0, replay.stderr);
      const rows = replay.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as EventRow);
      assert.deepEqual(
        rows.map((r) => [r.event, r.id]),
        [
          ['added', 'a'],
          ['added', 'b'],
          ['cancelled', 'b'],
        ],
      );
      for (const r of rows) assert.equal(r.time, new Date(Number(r.cursor.split('-')[0])).toISOString());
      assert.equal(rows[0]!.fields.due, String(Date.parse('2031-01-01T00:00:00Z')));

      const text = await run([...g, 'events', 'follow', '--after', '0', '--count', '1']);
      assert.match(text.stdout, /^\d{4}-\S+Z {2}added {8}a {2}due=2031-01-01T00:00:00\.000Z\n$/);
      assert.match(text.stderr, /^following the events of /);

      // Live: new events only; the producer adds until the follower has printed one, then Ctrl-C.
      const live = start([...g, 'events', 'follow', '--json']);
      let out = '';
      live.child.stdout!.on('data', (d) => (out += d));
      let n = 0;
      await until(async () => (await queue.add(n, { id: `live-${n++}`, delay: 3_600_000 }), out.includes('\n')), 'a live event', 10_000, 50);
      live.child.kill('SIGINT');
      const r = await live.done;
      assert.equal(r.code, 0, r.stderr);
      const first = JSON.parse(r.stdout.split('\n')[0]!) as EventRow;
      assert.equal(first.event, 'added');
      assert.match(first.id, /^live-\d+$/);
    } finally {
      await queue.close();
    }
  });
});
