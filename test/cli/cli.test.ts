import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { freePort } from '../helpers/redis-server.js';
import { until } from '../helpers/wait.js';
import { assertFailure, run, start } from './run-cli.js';

const fx = useRedis();

const HANDLER = fileURLToPath(new URL('./fixtures/record-handler.js', import.meta.url));

let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'delayq-cli-'));
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
});

describe('delayq CLI against a real redis-server', () => {
  test('add, get, reschedule, promote, cancel, stats: human and --json output', async () => {
    const q = uniqueName('cli');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const added = await run([...g, 'add', '{"orderId":"123"}', '--id', 'order:123', '--delay', '30m', '--json']);
    assert.equal(added.code, 0, added.stderr);
    const a = JSON.parse(added.stdout) as { id: string; added: boolean; dueAtMs: number };
    assert.deepEqual([a.id, a.added], ['order:123', true]);

    const human = await run([...g, 'add', 'plain text', '--id', 'text-job', '--delay', '1h']);
    assert.match(human.stdout, /^added text-job, due \d{4}-/);
    // --text takes the data as it is, even when it looks like JSON.
    assert.equal((await run([...g, 'add', '--text', '{"a":', '--id', 'text-brace', '--delay', '1h'])).code, 0);
    assert.equal(JSON.parse((await run([...g, 'get', 'text-brace', '--json'])).stdout).data, '{"a":');
    assert.equal((await run([...g, 'cancel', 'text-brace'])).code, 0);

    const got = JSON.parse((await run([...g, 'get', 'order:123', '--json'])).stdout) as { state: string; data: unknown };
    assert.deepEqual([got.state, got.data], ['scheduled', { orderId: '123' }]);
    assert.equal((JSON.parse((await run([...g, 'get', 'text-job', '--json'])).stdout) as { data: unknown }).data, 'plain text');

    const at = '2031-01-01T00:00:00.000Z';
    const re = JSON.parse((await run([...g, 'reschedule', 'order:123', '--at', at, '--json'])).stdout) as { dueAtMs: number };
    assert.equal(re.dueAtMs, Date.parse(at));
    assert.equal((JSON.parse((await run([...g, 'promote', 'order:123', '--json'])).stdout) as { rescheduled: boolean }).rescheduled, true);

    const stats = JSON.parse((await run([...g, 'stats', '--json'])).stdout) as { scheduled: number; ready: number };
    assert.deepEqual([stats.scheduled, stats.ready], [2, 1]);
    const statsText = (await run([...g, 'stats'])).stdout;
    // One meaning of "scheduled" everywhere: every job waiting to run, as in stats() and /metrics;
    // ready = due, upcoming = not yet due (the listing named scheduled).
    assert.match(statsText, /scheduled 2 \(ready 1, upcoming 1\) {2}/);
    assert.match((await run([...g, 'jobs', 'ls', '--state', 'scheduled'])).stdout, /^1 upcoming \(scheduled, not yet due\)\n/);
    assert.match((await run([...g, 'jobs', 'ls', '--state', 'ready'])).stdout, /^1 ready \(due\)\n/);
    assert.match((await run([...g, 'queues'])).stdout, new RegExp(`${q}\\s+scheduled\\s+2  ready\\s+1  upcoming\\s+1 `));
    // A due job is not "next due in 0 ms": it is due now, and has waited.
    assert.match(statsText, /next due: now \(1 due, the oldest since [\d.]+ (ms|s) ago\)/);

    assert.equal((await run([...g, 'cancel', 'order:123'])).code, 0);
    const again = await run([...g, 'cancel', 'order:123', '--json']);
    assert.equal(again.code, 2, 'cancelling a missing job says so in the exit code');
    assert.deepEqual(JSON.parse(again.stdout), { id: 'order:123', cancelled: false });
    const missing = await run([...g, 'get', 'order:123', '--json']);
    assert.deepEqual([missing.code, missing.stdout.trim()], [2, 'null']);
  });

  test('data from stdin and a file; NDJSON bulk', async () => {
    const q = uniqueName('cli');
    const g = ['--redis', fx.redis.url, '--queue', q];
    assert.equal((await run([...g, 'add', '--id', 'from-stdin', '--delay', '1h'], { input: '{"a":1}' })).code, 0);
    const file = join(dir, 'job.json');
    writeFileSync(file, '{"b":2}');
    assert.equal((await run([...g, 'add', '--file', file, '--id', 'from-file', '--delay', '1h'])).code, 0);
    const lines = [...Array.from({ length: 2500 }, (_, i) => JSON.stringify({ data: { n: i }, opts: { id: `bulk-${i}` } })), '{"n":"bare"}'].join('\n');
    const bulk = await run([...g, 'add', '--ndjson', '--delay', '1h', '--json'], { input: lines });
    assert.equal(bulk.code, 0, bulk.stderr);
    assert.deepEqual(JSON.parse(bulk.stdout), { added: 2501, existing: 0 });
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      assert.equal((await queue.stats()).scheduled, 2503);
      assert.deepEqual((await queue.get('from-stdin'))?.data, { a: 1 });
      assert.deepEqual((await queue.get('from-file'))?.data, { b: 2 });
    } finally {
      await queue.close();
    }
  });

  test('bad input: `error:` on stderr (and maybe a `hint:`), exit code 64, nothing written', async () => {
    const q = uniqueName('cli');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const cases: [string[], RegExp, string?][] = [
      [[...g, 'add', '1', '--delay', '-5'], /--delay must be a duration/],
      [[...g, 'add', '1', '--id', ''], /id must not be empty/],
      [[...g, 'add', '1', '--delay', '10', '--at', '2030-01-01'], /delay and runAt cannot both be given/],
      [[...g, 'add', '1', '--priority', 'high'], /--priority must be a number/],
      [[...g, 'add', '--ndjson'], /^line 2: not JSON/, '{"data":1}\nnot json\n'],
      // Looks like JSON and does not parse: a typo, not a text payload (--text says otherwise).
      [[...g, 'add', '{"a":'], /^data looks like JSON but does not parse/],
      [[...g, 'add', ' [1, 2'], /^data looks like JSON but does not parse/],
      [[...g, 'add', '--id', 'from-stdin'], /^data looks like JSON but does not parse/, '{"a":'],
      // Nothing on stdin is no job, as on a terminal.
      [[...g, 'add', '--id', 'empty'], /^no data/, ''],
      [[...g, 'add', '--id', 'blank'], /^no data/, ' \n'],
      [[...g, 'add', '--file', '/nonexistent/delayq-data.json'], /^cannot read --file/],
      [[...g, 'add', '--ndjson', '--file', '/nonexistent/delayq-jobs.ndjson'], /^cannot read --file/],
      [[...g, 'reschedule', 'x'], /exactly one of --delay and --at/],
      [['--redis', 'http://nope', '--queue', q, 'stats'], /connection must be a redis:\/\//],
      [['--redis', fx.redis.url, '--queue', 'bad name!', 'stats'], /queue/],
      [[...g, 'frobnicate'], /unknown command 'frobnicate'/],
      [[...g, 'get'], /missing required argument 'id'/],
      [[...g, 'dead', 'purge'], /exactly one of: ids, --all, --older-than/],
    ];
    await Promise.all(
      cases.map(async ([args, message, input]) => {
        const r = await run(args, input === undefined ? {} : { input });
        assert.match(assertFailure(r, 64, args.join(' ')).message, message, args.join(' '));
        assert.equal(r.stdout, '', `${args.join(' ')}: nothing on stdout`);
      }),
    );
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      assert.equal((await queue.stats()).scheduled, 0, 'nothing was written (the NDJSON import validates every line first)');
    } finally {
      await queue.close();
    }
  });

  test('migrate says what it did: nothing on a queue of this version, the mark it took off on one an older version marked', async () => {
    const q = uniqueName('cli-migrate');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await queue.add({ n: 1 }, { id: 'plain', delay: 60_000 });
      const none = await run([...g, 'migrate']);
      assert.equal(none.code, 0, none.stderr);
      assert.match(none.stdout, /^nothing to convert/);
      // Marked as a version before the priority count left a queue that once had a job with a
      // priority (none left): migrate takes the mark off, and says so.
      await fx.client.hset(`dq:{${q}}:meta`, 'prioritized', '1');
      const took = await run([...g, 'migrate']);
      assert.equal(took.code, 0, took.stderr);
      assert.match(took.stdout, /^migrated: 1 entry rewritten/);
      assert.equal(await fx.client.hget(`dq:{${q}}:meta`, 'prioritized'), null);
      assert.deepEqual(JSON.parse((await run([...g, 'migrate', '--json'])).stdout), { converted: 0 });
    } finally {
      await queue.close();
    }
  });

  test('dead list, retry and purge', async () => {
    const q = uniqueName('cli');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      for (const id of ['d1', 'd2', 'd3']) {
        await queue.add(id, { id });
        const c = (await queue.store.claim(q, 1, 30_000, 1)).jobs[0]!;
        await queue.store.fail(q, { id: c.id, token: c.token, error: 'boom', retryDelayMs: 0, dead: true, defaultMaxAttempts: 1 });
      }
      const list = JSON.parse((await run([...g, 'dead', 'list', '--json'])).stdout) as { total: number; jobs: { id: string; lastError: string }[] };
      assert.equal(list.total, 3);
      assert.equal(list.jobs[0]!.lastError, 'boom');
      assert.match((await run([...g, 'dead', 'list'])).stdout, /3 dead\nd1 .*boom/);
      assert.deepEqual(JSON.parse((await run([...g, 'dead', 'retry', 'd1', '--json'])).stdout), { retried: 1 });
      assert.deepEqual(JSON.parse((await run([...g, 'dead', 'purge', '--all', '--json'])).stdout), { purged: 2 });
      assert.equal((await queue.stats()).dead, 0);
    } finally {
      await queue.close();
    }
  });

  test('monitor --json: one JSON line per refresh with an ISO time; an unreachable Redis gives reconnecting lines', async () => {
    const q = uniqueName('cli');
    const r = await run(['--redis', fx.redis.url, '--queue', q, 'monitor', '--interval', '50ms', '--count', '3', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { time: string; queue: string; scheduled: number; completedTotal: number; throughputPerSec?: number });
    assert.equal(rows.length, 3);
    assert.equal(rows[0]!.scheduled, 0);
    assert.equal(rows[0]!.queue, q);
    for (const row of rows) assert.equal(new Date(row.time).toISOString(), row.time);
    assert.equal(rows[2]!.throughputPerSec, 0, 'a rate once there are two samples');

    const port = await freePort();
    const down = await run(['--redis', `redis://127.0.0.1:${port}`, '--queue', q, 'monitor', '--count', '1', '--json']);
    assert.equal(down.code, 0, down.stderr);
    const row = JSON.parse(down.stdout) as { time: string; reconnecting: boolean; error: string; lastSampleTime: string | null };
    assert.equal(row.reconnecting, true);
    assert.match(row.error, new RegExp(`^Redis at 127\\.0\\.0\\.1:${port}`));
    assert.equal(row.lastSampleTime, null);
    assert.equal(new Date(row.time).toISOString(), row.time);

    // Off a terminal and without --json: one plain line per refresh.
    const plain = await run(['--redis', fx.redis.url, '--queue', q, 'monitor', '--interval', '50ms', '--count', '2']);
    const lines = plain.stdout.trim().split('\n');
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /^delayq monitor — \S+ \S+Z \| scheduled 0 ready 0 upcoming 0 active 0 dead 0 \|/);
  });

  test('worker runs a handler module and stops cleanly on SIGTERM without losing a job', async () => {
    const q = uniqueName('cli');
    const record = join(dir, `${q}.log`);
    writeFileSync(record, '');
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      const n = 40;
      await queue.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { id: `w${i}` } })));
      const w = start(['--redis', fx.redis.url, '--queue', q, 'worker', '--handler', HANDLER, '--concurrency', '4', '--close-timeout', '5s', '--json'], {
        env: { DELAYQ_TEST_RECORD: record, DELAYQ_TEST_SLEEP_MS: '100' },
      });
      await until(() => readFileSync(record, 'utf8').split('\n').filter(Boolean).length >= 4, 'the worker to finish a few jobs');
      w.child.kill('SIGTERM');
      const r = await w.done;
      assert.equal(r.code, 0, r.stderr);
      const events = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { event: string; completed?: number });
      assert.equal(events.at(-1)!.event, 'stopped');
      const finished = new Set(readFileSync(record, 'utf8').split('\n').filter(Boolean));
      const s = await queue.stats();
      // Every job either finished (and was acked) or is still scheduled: none is stuck active, none lost.
      assert.equal(s.active, 0);
      assert.equal(finished.size + s.scheduled, n, `${finished.size} finished + ${s.scheduled} scheduled`);
      assert.equal(events.at(-1)!.completed, finished.size);
      assert.equal((await queue.verify()).ok, true);
    } finally {
      await queue.close();
    }
  });

  test('the demo passes its own check on memory:// and on Redis', async () => {
    for (const store of [[], ['--redis', fx.redis.url]]) {
      // An empty REDIS_URL counts as unset, so the first run is on memory://.
      const r = await run([...store, 'demo', '--orders', '60', '--timeout-ms', '600', '--seed', '7', '--json'], { env: { REDIS_URL: '' } });
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const report = JSON.parse(r.stdout) as { ok: boolean; placed: number; paid: number; cancelled: number; checks: { ok: boolean }[] };
      assert.equal(report.ok, true, JSON.stringify(report.checks));
      assert.equal(report.placed, 60);
      assert.equal(report.paid + report.cancelled, 60);
    }
  });

  test('shards: show, reshard with --set (exit 2 when unchanged), draining shards listed', async () => {
    const q = uniqueName('cli');
    const g = ['--redis', fx.redis.url, '--queue', q];
    assert.match((await run([...g, 'shards'])).stdout, /: 1 shard \(unsharded\)/);
    assert.equal((await run([...g, 'add', '{}', '--id', 'old', '--delay', '1h'])).code, 0);
    const set = JSON.parse((await run([...g, 'shards', '--set', '3', '--json'])).stdout) as {
      resharded: { from: number; to: number };
      shards: number;
      names: string[];
    };
    assert.deepEqual([set.resharded.from, set.resharded.to, set.shards], [1, 3, 3]);
    assert.deepEqual(set.names, [`${q}#0`, `${q}#1`, `${q}#2`]);
    const shown = await run([...g, 'shards']);
    assert.match(shown.stdout, new RegExp(`3 shards  ${q}#0 ${q}#1 ${q}#2\n  draining ${q}: 1 jobs left`));
    // One row per shard: the home keys (where the job added before the reshard still waits), the three new ones.
    assert.match(shown.stdout, /SHARD\s+ROLE\s+NODE\s+SCHEDULED\s+READY\s+UPCOMING\s+ACTIVE\s+DEAD\s+COMPLETED\s+LAG/);
    assert.match(shown.stdout, new RegExp(`\n${q}\\s+draining\\s+127\\.0\\.0\\.1:\\d+\\s+1\\s`));
    for (let i = 0; i < 3; i++) assert.match(shown.stdout, new RegExp(`\n${q}#${i}\\s+current\\s+127\\.0\\.0\\.1:\\d+\\s+0\\s`));
    assert.equal((await run([...g, 'shards', '--set', '3'])).code, 2);
    assert.match(assertFailure(await run([...g, 'shards', '--set', '0']), 64, 'shards --set 0').message, /--set must be a whole number from 1 to 256/);
  });

  test('--help shows examples; --version the package version', async () => {
    const help = await run(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Examples:/);
    const version = await run(['--version']);
    assert.equal(version.code, 0);
    assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+$/);
  });
});
