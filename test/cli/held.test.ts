/**
 * A held job says what it waits for (issue 37, "Around it"): dependencies not ended, a signal, the
 * deadline, and how each dependency ended. On a real redis-server through the library
 * (explainWait), the CLI (get, jobs get, --json, stats, queues) and the HTTP API the dashboard
 * reads; the memory store answers the same through the library.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { MemoryStore, Queue, type Store, UnrecoverableError, Worker } from '../../src/index.js';
import { explainWait } from '../../src/inspect/why-waiting.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { ApiClient } from '../server/client.js';
import { assertFailure, run } from './run-cli.js';

const fx = useRedis();

type Options = { store: Store } | { connection: string; prefix?: string };

/**
 * Parent `p` waits (10 min at most, a failed dependency ignored) for c1 (completes with
 * "charged"), c2 (dies: card declined) and c3 (due in 10 min); `s` waits for the signal
 * `payment` (10 min at most). Returns when c1 and c2 have ended and `s` waits, with the worker
 * closed so nothing runs on.
 */
async function heldScene(options: Options, open: { close(): Promise<void> }[]): Promise<Queue<string>> {
  const q = new Queue<string>(uniqueName('held'), options);
  open.push(q);
  await q.addBulk([
    { data: 'c1', opts: { id: 'c1' } },
    { data: 'c2', opts: { id: 'c2', attempts: 1 } },
    { data: 'c3', opts: { id: 'c3', delay: 600_000 } },
    { data: 'p', opts: { id: 'p', dependsOn: ['c1', 'c2', 'c3'], waitAtMostMs: 600_000, onChildFailure: 'ignore' } },
    { data: 's', opts: { id: 's' } },
  ]);
  const w = new Worker<string>(
    q.name,
    async (job) => {
      if (job.data === 'c2') throw new UnrecoverableError('card declined');
      if (job.data === 's') job.waitForSignal('payment', { timeoutMs: 600_000 });
      return 'charged';
    },
    { ...options, concurrency: 5 },
  );
  try {
    await until(async () => (await q.holdOf('p'))?.waitingFor.length === 1 && (await q.get('s'))?.state === 'held', 'c1, c2 ended and s waits', 10_000);
  } finally {
    await w.close();
  }
  return q;
}

describe('a held job says what it waits for', () => {
  const open: { close(): Promise<void> }[] = [];
  after(async () => {
    for (const o of open.reverse()) await o.close().catch(() => {});
  });

  for (const [kind, options] of [
    ['memory store', () => ({ store: new MemoryStore() })],
    ['redis', () => ({ connection: fx.redis.url })],
  ] as const) {
    test(`${kind}: explainWait names the dependencies not ended and the signal, each until the deadline`, async () => {
      const q = await heldScene(options(), open);
      const p = (await q.get('p'))!;
      assert.equal(p.state, 'held');
      const hold = (await q.holdOf('p'))!;
      assert.ok(hold.deadlineAtMs !== undefined);
      const [reason, ...more] = await explainWait(q, p);
      assert.deepEqual(more, []);
      assert.equal(reason!.code, 'held_dependencies');
      assert.match(reason!.text, /^waiting for 1 of 3 dependencies \(c3\) until \d\d:\d\d:\d\d UTC$/);
      assert.equal(reason!.untilMs, hold.deadlineAtMs);
      // The hold given is used as is (no second read).
      assert.deepEqual(await explainWait(q, p, hold), [reason]);
      const s = (await q.get('s'))!;
      const [signal] = await explainWait(q, s);
      assert.equal(signal!.code, 'held_signal');
      assert.match(signal!.text, /^waiting for signal 'payment' until \d\d:\d\d:\d\d UTC$/);
      assert.equal((await q.stats()).heldJobs, 2);
    });
  }

  test('redis: the CLI (get, jobs get, --json, stats, queues) and the HTTP API say it; bad input gets a clear error', async () => {
    const prefix = uniqueName('heldp');
    const q = await heldScene({ connection: fx.redis.url, prefix }, open);
    const g = ['--redis', fx.redis.url, '--prefix', prefix, '--queue', q.name];
    const cli = async (...args: string[]) => {
      const r = await run([...g, ...args]);
      assert.equal(r.code, 0, r.stderr);
      return r.stdout;
    };

    const p = await cli('get', 'p');
    assert.match(p, /^p {2}held$/m);
    assert.match(p, /^held: waiting for 1 of 3 dependencies \(c3\) until \d\d:\d\d:\d\d UTC$/m);
    assert.match(p, /^dependencies {2}2 of 3 ended; a dead or cancelled one counts as ended$/m);
    assert.match(p, /^ {2}c1 {2}completed {2}"charged"$/m);
    assert.match(p, /^ {2}c2 {2}dead {2}.*card declined/m);
    assert.match(p, /^ {2}c3 {2}pending$/m);
    assert.doesNotMatch(p, /^waiting/m, 'the hold is the reason, not a scheduled wait');
    assert.match(await cli('jobs', 'get', 's'), /^held: waiting for signal 'payment' until \d\d:\d\d:\d\d UTC$/m);
    const json = JSON.parse(await cli('--json', 'get', 'p'));
    assert.equal(json.state, 'held');
    assert.equal(json.hold.state, 'held');
    assert.deepEqual(json.hold.waitingFor, ['c3']);
    assert.deepEqual(
      json.hold.children.map((c: { id: string; outcome: string }) => [c.id, c.outcome]),
      [
        ['c1', 'completed'],
        ['c2', 'dead'],
        ['c3', 'pending'],
      ],
    );
    assert.equal(json.why[0].code, 'held_dependencies');
    assert.equal(JSON.parse(await cli('--json', 'get', 'c3')).hold, null, 'a job never held');

    const stats = await cli('stats');
    assert.match(stats, /^held jobs: 2 /m);
    assert.equal(JSON.parse(await cli('--json', 'stats')).heldJobs, 2);
    assert.match(await cli('queues'), new RegExp(`${q.name}.* held 2 `));
    const ls = await run([...g, 'jobs', 'ls', '--state', 'held']);
    assert.match(assertFailure(ls, 64, 'jobs ls --state held').message, /held jobs are not listed/);
    assertFailure(await run([...g, 'get', 'bad\u0001id']), 64, 'a bad id');

    // The HTTP API the job page reads.
    const dash = createDashboard({ connection: fx.redis.url, prefix, sampleMs: 60_000 });
    open.push(dash);
    const api = new ApiClient(dash);
    const job = await api.get(`/api/queues/${q.name}/jobs/p`);
    assert.equal(job.status, 200, JSON.stringify(job.body));
    assert.equal(job.body.state, 'held');
    assert.deepEqual(job.body.hold, JSON.parse(JSON.stringify(await q.holdOf('p'))));
    assert.deepEqual(
      job.body.why.map((r: { code: string }) => r.code),
      ['held_dependencies'],
    );
    const s = await api.get(`/api/queues/${q.name}/jobs/s`);
    assert.equal(s.body.hold.signal, 'payment');
    assert.deepEqual(
      s.body.why.map((r: { code: string }) => r.code),
      ['held_signal'],
    );
    assert.equal((await api.get(`/api/queues/${q.name}/jobs/c3`)).body.hold, null);
    assert.equal((await api.get(`/api/queues/${q.name}`)).body.stats.heldJobs, 2);
    const listed = (await api.get('/api/queues')).body;
    assert.equal(JSON.stringify(listed).includes('"heldJobs":2'), true, 'the overview has the count');
    assert.equal((await api.get(`/api/queues/${q.name}/jobs?state=held`)).status, 400, 'no listing of held jobs: bad input, not a crash');
    const bad = await api.get(`/api/queues/${q.name}/jobs/bad%01id`);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.field, 'id');

    // The OpenAPI document says so too.
    const doc = (await api.get('/openapi.json')).body;
    const detail = doc.paths['/api/queues/{queue}/jobs/{id}'].get.responses['200'].content['application/json'].schema;
    assert.ok(detail.properties.state.enum.includes('held'));
    assert.deepEqual(detail.properties.hold.anyOf?.[0]?.properties.state.enum ?? detail.properties.hold.properties?.state.enum, [
      'held',
      'released',
      'timedOut',
      'failed',
    ]);
    assert.ok(detail.properties.why.items.properties.code.enum.includes('held_signal'));
    const queueDoc = doc.paths['/api/queues/{queue}'].get.responses['200'].content['application/json'].schema;
    assert.ok(queueDoc.properties.stats.properties.heldJobs, 'stats.heldJobs');

    // A signal over the HTTP API: bad input refused, an unknown job 404, one not waiting keeps it.
    await api.session();
    assert.equal((await api.post(`/api/queues/${q.name}/jobs/s/signal`, { name: 'bad\u0001name' })).status, 400);
    assert.equal((await api.post(`/api/queues/${q.name}/jobs/nobody/signal`, { name: 'payment' })).status, 404);
    const keptOver = await api.post(`/api/queues/${q.name}/jobs/c3/signal`, { name: 'other', data: { n: 1 } });
    assert.equal(keptOver.status, 200, JSON.stringify(keptOver.body));
    assert.equal(keptOver.body.outcome, 'kept');
    // A signal releases s: its hold says so, and it is scheduled (the worker is closed).
    assert.match(await cli('signal', 's', 'payment'), /released/);
    const released = await cli('get', 's');
    assert.match(released, /^s {2}scheduled/m);
    assert.match(released, /^hold {7}released: what it waited for happened \(signal 'payment'\)$/m);
    assert.equal((await api.get(`/api/queues/${q.name}/jobs/s`)).body.hold.state, 'released');

    // Removing a held job cancels it (and its dependency not started), as for a scheduled one.
    await api.session();
    const removed = await api.call('DELETE', `/api/queues/${q.name}/jobs/p`);
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.equal(await q.get('p'), null);
    assert.equal((await q.stats()).heldJobs, 0);
    assert.doesNotMatch(await cli('stats'), /^held jobs/m);
  });
});
