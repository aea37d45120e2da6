/**
 * The reference Python client (clients/python/delayq_client), built only from the published
 * protocol and pip-installed into a fresh venv (every driver runs against that install), against a real redis-server beside the Node library: Python adds and Node runs,
 * Node adds and Python runs (acks, retries with backoff, the dead set), both at once on one
 * queue, an add re-sent after its reply was lost, the flow options of add (cost against a Node
 * rate limit, debounce, dedup), and bad input refused before any write. The
 * Python side runs as child processes (the driver scripts in clients/python/tests/), each
 * bounded by a timeout so a stuck one fails the test in seconds.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue, ValidationError, Worker } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { type InstalledClient, installPythonClient } from '../helpers/python-client.js';
import { type PyRun, runDriver } from '../helpers/python-driver.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { startProxy } from '../helpers/tcp-proxy.js';
import { deferred, serverTimeMs, until, within } from '../helpers/wait.js';
import { jobFields } from '../helpers/job-fields.js';
import { HASHTABLE_FIELD } from '../../src/store/redis/wire.js';

const fx = useRedis();
const errors = useErrorLog();

// The client as users get it: pip-installed into a fresh venv (test/helpers/python-client.ts),
// once for the file; every driver runs against that install.
let installed: InstalledClient | undefined;
after(() => installed?.remove());

/** Fails (never skips) with one clear line when Python or a package the install needs is missing. */
function requirePython(): void {
  installed ??= installPythonClient();
}

/** Runs a driver script against the installed client (test/helpers/python-driver.ts). */
function py(script: string, args: string[], timeoutMs = 30_000): Promise<PyRun> {
  requirePython();
  return runDriver(installed!.python, join(installed!.drivers, script), args, { timeoutMs, env: installed!.env, cwd: installed!.dir });
}

function ok(r: PyRun, what: string): Record<string, unknown>[] {
  assert.equal(r.code, 0, `${what} exited ${r.code}: ${r.stderr}`);
  return r.lines;
}

test('Python adds (plain, delayed, priority, group, bulk); a Node worker runs every job once with its data and group', async () => {
  requirePython();
  const name = uniqueName('py-add');
  const start = await serverTimeMs(fx.client);
  // No script loaded: the client's EVALSHA meets NOSCRIPT and falls back to EVAL.
  await fx.client.script('FLUSH');
  const lines = ok(await py('produce.py', [fx.redis.url, name]), 'produce.py');
  const results = lines.filter((l) => 'result' in l);
  assert.deepEqual(
    results.map((l) => l.result),
    ['added', 'added', 'added', 'added', 'exists', 'added', 'added', 'added'],
  );
  assert.ok(
    lines.some((l) => l.registered === true),
    'the add named the queue in the registry',
  );
  const generated = results[7]!.id as string;
  assert.match(generated, /^[0-9a-f-]{36}$/, 'a generated uuid4 id');

  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const delayed = await queue.get('delayed');
  assert.equal(delayed?.state, 'scheduled');
  assert.ok(delayed!.dueAtMs >= start + 300, 'delay_ms is from the server clock');
  assert.equal((await queue.get('urgent'))?.priority, 10);
  assert.equal((await queue.get('grouped'))?.group, 'g1');

  const ran = new Map<string, { data: unknown; group: string | undefined; n: number; at: number }>();
  fx.track(
    new Worker(
      name,
      async (job) => {
        const seen = ran.get(job.id);
        ran.set(job.id, { data: job.data, group: job.group, n: (seen?.n ?? 0) + 1, at: Date.now() });
      },
      { connection: fx.redis.url, concurrency: 2 },
    ),
  );
  await until(() => ran.size === 7, 'seven jobs run', 10_000);
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(
    [...ran.values()].map((r) => r.n),
    [1, 1, 1, 1, 1, 1, 1],
    'each ran once',
  );
  assert.deepEqual(ran.get('plain')?.data, { kind: 'plain', n: 1 }, 'the existing job was left alone');
  assert.deepEqual(ran.get('urgent')?.data, { kind: 'priority', n: 3 });
  assert.deepEqual(ran.get('delayed')?.data, { kind: 'delayed', n: 2 });
  assert.deepEqual(ran.get(generated)?.data, { kind: 'bulk', n: 7 });
  assert.equal(ran.get('grouped')?.group, 'g1');
  assert.equal(ran.get('bulk-2')?.group, 'g2');
  assert.equal(ran.get('bulk-1')?.group, undefined);
  assert.equal(ran.get('plain')?.group, undefined);
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('Node adds; the Python worker runs them and acks; a failing job retries with backoff, then goes dead', async () => {
  requirePython();
  const name = uniqueName('py-work');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.setRetention({ completed: { count: 100 } });
  await queue.add({ n: 1 }, { id: 'ok-1' });
  await queue.add({ n: 2, slow_ms: 700 }, { id: 'ok-slow' }); // longer than a third of the 900 ms lease: extended
  await queue.add({ n: 3 }, { id: 'ok-grouped', group: 'gg', delay: 100 });
  await queue.add({ n: 4 }, { id: 'fail-1' });
  const lines = ok(await py('work.py', [fx.redis.url, name, '800', '3', '100']), 'work.py');
  const runs = lines.filter((l) => 'ran' in l && !('done' in l));
  // Out of the Python worker's 3 attempts (it has none of its own): the max that applied is kept.
  assert.deepEqual(
    lines.filter((l) => 'got' in l),
    [{ got: 'fail-1', state: 'dead', attempts: 3, max_attempts: 3 }],
  );
  const count = (id: string) => runs.filter((r) => r.ran === id).length;
  assert.equal(count('ok-1'), 1);
  assert.equal(count('ok-slow'), 1, 'an extended lease is not handed out again');
  assert.equal(count('ok-grouped'), 1);
  assert.equal(runs.find((r) => r.ran === 'ok-grouped')?.group, 'gg');
  assert.deepEqual(runs.find((r) => r.ran === 'ok-1')?.data, { n: 1 });
  assert.deepEqual(
    runs.filter((r) => r.ran === 'fail-1').map((r) => r.attempt),
    [1, 2, 3],
  );
  for (const id of ['ok-1', 'ok-slow', 'ok-grouped']) {
    const job = await queue.get(id);
    assert.equal(job?.state, 'completed', id);
    assert.deepEqual(job?.result, { by: 'python', id });
  }
  const dead = await queue.get('fail-1');
  assert.equal(dead?.state, 'dead');
  assert.deepEqual([dead?.attempt, dead?.maxAttempts], [3, 3]);
  assert.match(dead?.lastError ?? '', /RuntimeError: planned failure 3/);
  const errors = dead?.errors ?? [];
  assert.deepEqual(
    errors.map((e) => e.attempt),
    [1, 2, 3],
  );
  // Exponential backoff of 100 ms without jitter: 100 ms, then 200 ms between the attempts.
  assert.ok(errors[1]!.atMs - errors[0]!.atMs >= 100, `first retry after ${errors[1]!.atMs - errors[0]!.atMs} ms`);
  assert.ok(errors[2]!.atMs - errors[1]!.atMs >= 200, `second retry after ${errors[2]!.atMs - errors[1]!.atMs} ms`);
  const list = await queue.dead.list();
  assert.deepEqual(
    list.jobs.map((j) => [j.id, j.maxAttempts]),
    [['fail-1', 3]],
  );
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('job names: Python adds named jobs and a Node worker routes them by name; Node adds named jobs and a Python worker routes them; bad names refused by both, nothing written', async () => {
  requirePython();
  const name = uniqueName('py-names');
  const queue = fx.track(new Queue<unknown>(name, { connection: fx.redis.url }));
  const produced = ok(await py('names.py', [fx.redis.url, name, 'produce']), 'names.py produce');
  assert.deepEqual(
    produced.map((l) => l.result),
    ['added', 'added', 'added', 'added', 'added'],
  );
  assert.equal((await queue.get('b1'))?.name, 'é名🙂');
  assert.equal((await queue.get('u'))?.name, undefined);
  const ran: string[] = [];
  const all = deferred();
  const note = (who: string) => (job: { id: string; name: string | undefined }) => {
    ran.push(`${job.id}:${job.name ?? '-'}:${who}`);
    if (ran.length === 5) all.resolve();
  };
  const w = new Worker(name, { 'send-email': note('send-email'), charge: note('charge'), default: note('default') }, { connection: fx.redis.url });
  errors.watch(w);
  await within(all.promise, 10_000, 'five jobs to run');
  await w.close();
  assert.deepEqual(ran.sort(), ['b1:é名🙂:default', 'b2:charge:charge', 'c:charge:charge', 'e:send-email:send-email', 'u:-:default']);

  // Node adds; the Python worker routes by name.
  const q2 = uniqueName('py-names');
  const node = fx.track(new Queue<unknown>(q2, { connection: fx.redis.url }));
  await node.add({}, { id: 'n1', name: 'send-email' });
  await node.add({}, { id: 'n2', name: 'charge' });
  await node.add({}, { id: 'n3', name: 'ünknown' });
  await node.add({}, { id: 'n4' });
  const worked = ok(await py('names.py', [fx.redis.url, q2, 'work']), 'names.py work');
  assert.deepEqual(
    worked
      .filter((l) => 'handler' in l)
      .map((l) => `${String(l.ran)}:${String(l.name ?? '-')}:${String(l.handler)}`)
      .sort(),
    ['n1:send-email:send-email', 'n2:charge:charge', 'n3:ünknown:default', 'n4:-:default'],
  );
  // Without a default, an unknown name fails the attempt, naming it.
  const q3 = uniqueName('py-names');
  const strict = fx.track(new Queue<unknown>(q3, { connection: fx.redis.url }));
  await strict.add({}, { id: 's1', name: 'charge' });
  ok(await py('names.py', [fx.redis.url, q3, 'strict']), 'names.py strict');
  const dead = await strict.get('s1');
  assert.equal(dead?.state, 'dead');
  assert.match(dead?.lastError ?? '', /no handler for job name "charge": this worker handles "send-email" and has no 'default' handler/);

  // Bad names: refused by the Python client as by the Node library, naming the field; nothing written.
  const q4 = uniqueName('py-names');
  const refused = ok(await py('names.py', [fx.redis.url, q4, 'bad']), 'names.py bad');
  assert.equal(refused.length, 5);
  for (const l of refused) assert.match(String(l.error), /name/, JSON.stringify(l));
  assert.match(String(refused[4]!.error), /jobs\[1\]\.name/);
  const bad = fx.track(new Queue<unknown>(q4, { connection: fx.redis.url }));
  assert.equal((await bad.stats()).scheduled, 0);
  for (const n of ['', 'x'.repeat(257), 'send\nemail']) await assert.rejects(bad.add(1, { name: n }), ValidationError);
  assert.equal((await bad.stats()).scheduled, 0);
});

test('a Python producer, a Node worker and a Python worker on one queue: nothing lost, nothing run twice', async () => {
  requirePython();
  const name = uniqueName('py-mixed');
  const n = 120;
  const runs = new Map<string, number>();
  const node = fx.track(
    new Worker(
      name,
      async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        // Slow enough that the Node worker alone cannot keep up: the Python worker gets a share.
        await new Promise((r) => setTimeout(r, 20));
      },
      { connection: fx.redis.url, concurrency: 3 },
    ),
  );
  const [produced, worked] = await within(
    Promise.all([py('produce_many.py', [fx.redis.url, name, String(n)]), py('work.py', [fx.redis.url, name, '1500'])]),
    40_000,
    'the Python producer and worker',
  );
  assert.equal(ok(produced, 'produce_many.py').at(-1)?.added, n);
  const pyRuns = ok(worked, 'work.py').filter((l) => 'ran' in l && !('done' in l));
  for (const r of pyRuns) runs.set(r.ran as string, (runs.get(r.ran as string) ?? 0) + 1);
  await until(() => [...runs.values()].reduce((a, b) => a + b, 0) >= n, `${n} runs`, 10_000);
  await node.close();
  const twice = [...runs].filter(([, c]) => c !== 1);
  assert.deepEqual(twice, [], 'no job ran twice');
  assert.equal(runs.size, n, 'every job ran');
  assert.ok(pyRuns.length > 0, 'the Python worker ran some');
  assert.ok(pyRuns.length < n, 'the Node worker ran some');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
  const stats = await queue.stats();
  assert.equal(stats.scheduled + stats.active + stats.dead, 0);
});

test("an add whose reply was lost is re-sent with the same request id: added once, and the answer is 'added'", async () => {
  requirePython();
  const name = uniqueName('py-resend');
  const proxy = await startProxy(fx.redis.port);
  fx.after(() => proxy.close());
  const cut = proxy.cutOnNextReply();
  const run = py('add_resend.py', [proxy.url, fx.redis.url, name], 20_000);
  await within(cut, 10_000, 'the proxy cutting the add reply');
  proxy.release();
  const lines = ok(await run, 'add_resend.py');
  assert.equal(lines[0]?.result, 'added', 'the re-send answers as the first run did');
  const sends = lines[0]?.sends as string[];
  assert.equal(sends.length, 2, 'sent, then re-sent once');
  assert.equal(sends[0], sends[1], 'with the same request id');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const job = await queue.get('resent');
  assert.equal(job?.state, 'scheduled');
  assert.deepEqual(job?.data, { once: true });
  assert.equal((await queue.stats()).scheduled, 1, 'added once');
  assert.equal(await jobFields(fx.client, `dq:{${name}}:jobs`), 1);
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('fenced: a Python worker whose lease ran out cannot complete, fail or extend the job handed to another', async () => {
  requirePython();
  const name = uniqueName('py-fence');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.setRetention({ completed: { count: 10 } });
  const lines = ok(await py('fence.py', [fx.redis.url, name]), 'fence.py');
  const seen = Object.assign({}, ...lines) as Record<string, unknown>;
  assert.deepEqual(seen, {
    stale_attempt: 1,
    fresh_attempt: 2,
    same_token: false,
    stale_complete: 'lease_lost',
    stale_fail: 'lease_lost',
    stale_extend_lost: true,
    fresh_complete: 'ok',
  });
  const job = await queue.get('fenced');
  assert.equal(job?.state, 'completed');
  assert.deepEqual(job?.result, { by: 'fresh' });
  assert.equal(job?.errors, undefined, 'the stale fail wrote no error');
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('bad input raises ValueError naming the field, and writes nothing', async () => {
  requirePython();
  const name = uniqueName('py-bad');
  const lines = ok(await py('bad_input.py', [fx.redis.url, name]), 'bad_input.py');
  assert.ok(lines.length >= 50, `${lines.length} cases`);
  for (const l of lines) assert.equal(l.named, true, `${l.field}: ${l.error ?? 'no ValueError'}`);
  assert.deepEqual(await fx.client.keys(`dq:{${name}}:*`), []);
  assert.equal(await fx.client.zscore('dq:queues', name), null);
});

/** Every key of the queue with its DUMP (type and content), to show that a refused call wrote nothing. */
async function snapshot(name: string): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {};
  for (const key of (await fx.client.keys(`dq:{${name}}:*`)).sort()) {
    const dump = await fx.client.dumpBuffer(key);
    out[key] = dump === null ? null : dump.toString('hex');
  }
  return out;
}

async function counts(queue: Queue): Promise<Record<string, number>> {
  const s = await queue.stats();
  return { scheduled: s.scheduled, ready: s.ready, active: s.active, dead: s.dead, completedTotal: s.completedTotal };
}

/** Resolves once the queue holds no job waiting or running. */
async function settled(queue: Queue): Promise<void> {
  await until(
    async () => {
      const s = await queue.stats();
      return s.scheduled + s.active === 0;
    },
    'the queue to hold no scheduled or active job',
    15_000,
  );
}

const TOO_COSTLY = "is above the max of a rate limit that applies to the job (the queue's, or its group's)";

test('Python adds with a cost take that many of a Node rate limit’s tokens; a cost above its max raises TooCostlyError and writes nothing', async () => {
  requirePython();
  const name = uniqueName('py-cost');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.setLimits({ rateLimit: { max: 3, perMs: 60_000 } });
  const added = ok(await py('add_options.py', [fx.redis.url, name, 'cost']), 'add_options.py cost');
  assert.deepEqual(
    added.map((l) => [l.id, l.result]),
    [
      ['a', 'added'],
      ['b', 'added'],
      ['c', 'added'],
    ],
  );
  // The cost went out as the item field (flow '1' without a group); a cost of 1 is not stored.
  const flowOf = await fx.client.hgetall(`dq:{${name}}:flow-of`);
  delete flowOf[HASHTABLE_FIELD];
  assert.deepEqual(flowOf, { a: '2:', c: '2:' });

  const before = await snapshot(name);
  const countsBefore = await counts(queue);
  const refused = ok(await py('add_options.py', [fx.redis.url, name, 'too_costly']), 'add_options.py too_costly');
  assert.deepEqual(refused, [
    { error: `cost ${TOO_COSTLY} (got 4)`, too_costly: true, value_error: true },
    { error: `jobs[1].cost ${TOO_COSTLY} (got 5)`, too_costly: true, value_error: true },
  ]);
  assert.deepEqual(await snapshot(name), before, 'the refused adds wrote nothing');
  assert.deepEqual(await counts(queue), countsBefore);
  for (const id of ['x', 'd', 'e']) assert.equal(await queue.get(id), null, `${id} was not added`);

  const ran: string[] = [];
  errors.watch(fx.track(new Worker(name, async (job) => void ran.push(job.id), { connection: fx.redis.url, concurrency: 3 })));
  await until(() => ran.length >= 2, 'a and b run', 10_000);
  const rate = await queue.rateStatus();
  assert.equal(rate.queue.used, 3, 'a took 2 tokens and b 1');
  assert.ok(rate.queue.nextRefillMs !== undefined && rate.queue.nextRefillMs > rate.nowMs);
  assert.deepEqual([...ran].sort(), ['a', 'b']);
  // 3 of 3 tokens are taken for a minute: c (cost 2) cannot start, whatever the worker does.
  assert.equal((await queue.get('c'))?.state, 'scheduled', 'c waits for 2 tokens');
  assert.equal((await queue.stats()).active, 0);
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('Python debounced adds with one key fold into one job (the burst’s id answered), which a Node worker runs once with the last data', async () => {
  requirePython();
  const name = uniqueName('py-debounce');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const lines = ok(await py('add_options.py', [fx.redis.url, name, 'debounce']), 'add_options.py debounce');
  const id = lines[0]?.id as string;
  assert.match(id, /^[0-9a-f-]{36}$/);
  assert.deepEqual(
    lines.map((l) => [l.id, l.result, l.state]),
    [
      [id, 'added', 'scheduled'],
      [id, 'debounced', 'scheduled'],
      [id, 'debounced', 'scheduled'],
      [id, 'debounced', 'scheduled'],
    ],
    'every add answers with the burst job’s id',
  );
  const dues = lines.map((l) => l.due_ms as number);
  for (let i = 1; i < dues.length; i++) assert.ok(dues[i]! >= dues[i - 1]!, `each add moves the due time later: ${dues.join(', ')}`);
  assert.equal(await jobFields(fx.client, `dq:{${name}}:jobs`), 1, 'one job');
  const job = await queue.get(id);
  assert.deepEqual(job?.data, { n: 4 }, 'the last add’s data');
  assert.equal(job?.dueAtMs, dues[3]);

  const runs: { id: string; data: unknown }[] = [];
  errors.watch(fx.track(new Worker(name, async (j) => void runs.push({ id: j.id, data: j.data }), { connection: fx.redis.url })));
  await settled(queue);
  assert.deepEqual(runs, [{ id, data: { n: 4 } }], 'run once, with the last data');
});

test('Python debounce max_wait_ms: the burst job is due no later than max_wait after the first add, however long the delay', async () => {
  requirePython();
  const name = uniqueName('py-debounce-bound');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const lines = ok(await py('add_options.py', [fx.redis.url, name, 'bound']), 'add_options.py bound');
  const t0 = lines.find((l) => 't0' in l)?.t0 as number;
  const t1 = lines.find((l) => 't1' in l)?.t1 as number;
  const rows = lines.filter((l) => 'result' in l);
  const id = rows[0]?.id as string;
  assert.deepEqual(
    rows.map((l) => [l.id, l.result]),
    [
      [id, 'added'],
      [id, 'debounced'],
      [id, 'debounced'],
    ],
  );
  // Each add asks for 60 s from its own now; the bound holds all of them at first add + 1500 ms.
  const due = rows[0]?.due_ms as number;
  for (const r of rows) assert.equal(r.due_ms, due);
  assert.ok(due >= t0 + 1500 && due <= t1 + 1500, `due ${due} is the first add (between ${t0} and ${t1}) + 1500 ms`);
  assert.equal((await queue.get(id))?.dueAtMs, due);

  const runs: { id: string; data: unknown; at: number }[] = [];
  errors.watch(
    fx.track(new Worker(name, async (j) => void runs.push({ id: j.id, data: j.data, at: await serverTimeMs(fx.client) }), { connection: fx.redis.url })),
  );
  await settled(queue); // within 15 s: the unbounded delay would be 60 s
  assert.deepEqual(
    runs.map((r) => [r.id, r.data]),
    [[id, { n: 3 }]],
  );
  assert.ok(runs[0]!.at >= due, 'not before its due time');
});

test('a Python debounced add while the burst’s job runs starts a new burst: a new job, the running one untouched', async () => {
  requirePython();
  const name = uniqueName('py-debounce-again');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const [first] = ok(await py('add_options.py', [fx.redis.url, name, 'debounce_one', 'doc', '1']), 'first add');
  assert.equal(first?.result, 'added');
  const runs: { id: string; data: unknown }[] = [];
  const started = deferred<string>();
  const release = deferred();
  errors.watch(
    fx.track(
      new Worker(
        name,
        async (j) => {
          runs.push({ id: j.id, data: j.data });
          if ((j.data as { n: number }).n === 1) {
            started.resolve(j.id);
            await release.promise;
          }
        },
        { connection: fx.redis.url, concurrency: 2 },
      ),
    ),
  );
  fx.after(() => release.resolve());
  assert.equal(await within(started.promise, 10_000, 'the first burst’s job starting'), first?.id);
  const [second] = ok(await py('add_options.py', [fx.redis.url, name, 'debounce_one', 'doc', '2']), 'second add');
  assert.equal(second?.result, 'added', 'a new burst, not folded into the running job');
  assert.notEqual(second?.id, first?.id);
  const running = await queue.get(first?.id as string);
  assert.equal(running?.state, 'active');
  assert.deepEqual(running?.data, { n: 1 }, 'the running job is not touched');
  release.resolve();
  await settled(queue);
  assert.deepEqual(
    [...runs].sort((x, y) => (x.data as { n: number }).n - (y.data as { n: number }).n),
    [
      { id: first?.id, data: { n: 1 } },
      { id: second?.id, data: { n: 2 } },
    ],
  );
});

test('Python dedup: a second add with the key answers deduplicated with the holder’s id; Node and Python see each other’s keys', async () => {
  requirePython();
  const name = uniqueName('py-dedup');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.add({ n: 'N' }, { id: 'N', dedup: { key: 'n-key', windowMs: 60_000 } });
  const lines = ok(await py('add_options.py', [fx.redis.url, name, 'dedup']), 'add_options.py dedup');
  const due = lines[0]?.due_ms;
  assert.deepEqual(lines[0], { id: 'a', result: 'added', state: 'scheduled', due_ms: due });
  assert.deepEqual(lines[1], { id: 'b', result: 'deduplicated', state: 'scheduled', due_ms: due, duplicate_of: 'a' });
  assert.equal(lines[2]?.result, 'deduplicated', 'the key Node took holds for Python');
  assert.equal(lines[2]?.duplicate_of, 'N');
  // Python sent the key as Node does: add.lua keeps it under the queue's dedup: prefix.
  const ttl = await fx.client.pttl(`dq:{${name}}:dedup:rem`);
  assert.ok(ttl > 0 && ttl <= 60_000, `the window's key expires (pttl ${ttl})`);
  const z = await queue.add({ n: 'z' }, { id: 'z', dedup: { key: 'rem', windowMs: 60_000 } });
  assert.equal(z.added, false);
  assert.equal(z.duplicateOf, 'a', 'the key Python took holds for Node');
  for (const id of ['b', 'p', 'z']) assert.equal(await queue.get(id), null, `${id} was not added`);
  assert.equal((await queue.stats()).scheduled, 2);
});

test("a debounced add that started a burst, its reply lost, is re-sent: 'added' with its id, not folded into itself", async () => {
  requirePython();
  const name = uniqueName('py-resend-debounce');
  const proxy = await startProxy(fx.redis.port);
  fx.after(() => proxy.close());
  const cut = proxy.cutOnNextReply();
  const run = py('add_resend.py', [proxy.url, fx.redis.url, name, 'debounce'], 20_000);
  await within(cut, 10_000, 'the proxy cutting the add reply');
  proxy.release();
  const line = ok(await run, 'add_resend.py debounce')[0] ?? {};
  assert.equal((line.sends as string[]).length, 2, 'sent, then re-sent once');
  assert.deepEqual([line.id, line.result], ['resent', 'added'], 'the re-send answers as the first run did');
  assert.equal(await jobFields(fx.client, `dq:{${name}}:jobs`), 1, 'one job');
  assert.match((await fx.client.hget(`dq:{${name}}:debounce`, 'doc')) ?? '', /^resent:\d+$/, 'the burst is the job’s');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('Python adds with attempts_made: a Node worker counts on from them (attempts 5 with 2 made: runs 3, 4, 5); bad counts raise ValueError naming the field and write nothing', async () => {
  requirePython();
  const name = uniqueName('py-made');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const lines = ok(await py('add_options.py', [fx.redis.url, name, 'attempts_made']), 'add_options.py attempts_made');
  assert.deepEqual(
    lines.filter((l) => 'result' in l).map((l) => [l.id, l.result]),
    [
      ['m', 'added'],
      ['n', 'added'],
      ['p', 'added'],
    ],
  );
  assert.deepEqual(
    lines.filter((l) => 'error' in l).map((l) => [l.value_error, l.error]),
    [
      [true, 'attempts_made must be below attempts (5) (got 5)'],
      [true, 'jobs[1].attempts_made must not be negative (got -1)'],
    ],
  );
  assert.deepEqual(
    lines.filter((l) => 'got' in l),
    [{ got: 'm', attempts: 2, max_attempts: 5 }],
  );
  assert.deepEqual([await queue.get('bad'), await queue.get('bad2'), await queue.get('ok2')], [null, null, null], 'a refused add writes nothing');
  const seen: string[] = [];
  const done = deferred();
  const w = new Worker(
    name,
    (job) => {
      seen.push(`${job.id}:${job.attempt}/${job.maxAttempts}`);
      throw new Error('no');
    },
    { connection: fx.redis.url, attempts: 3, backoff: { type: 'fixed', delay: 1 } },
  );
  errors.watch(w);
  w.on('dead', () => void queue.stats().then((s) => s.dead === 3 && done.resolve()));
  try {
    await within(done.promise, 10_000, 'the three jobs dead');
  } finally {
    await w.close();
  }
  assert.deepEqual(seen.sort(), ['m:3/5', 'm:4/5', 'm:5/5', 'n:2/3', 'n:3/3', 'p:1/3', 'p:2/3', 'p:3/3']);
});

/** A parity table in a file for parity.py (a payload at the size limit is too long for argv). */
function tableFile(cases: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'dq-parity-')), 'cases.json');
  writeFileSync(file, JSON.stringify(cases));
  return file;
}

/** One add of the parity table, as Python's Queue.add takes it (kwargs) and the Node library's opts. */
interface AddCase {
  data?: unknown;
  kwargs?: Record<string, unknown>;
}
const ADD_CASES: AddCase[] = [
  { data: { a: 1 } },
  { kwargs: { id: 'x'.repeat(256) } },
  { kwargs: { id: 'x'.repeat(257) } },
  { kwargs: { id: '' } },
  { kwargs: { id: 'a\u0001b' } },
  { kwargs: { id: 'a\u0085b' } },
  { kwargs: { delay_ms: 0 } },
  { kwargs: { delay_ms: 1.5 } },
  { kwargs: { delay_ms: -1 } },
  { kwargs: { delay_ms: 315_360_000_000 } },
  { kwargs: { delay_ms: 315_360_000_001 } },
  { kwargs: { run_at: 1_767_225_600 } },
  { kwargs: { run_at: 1_767_225_600_000 } },
  { kwargs: { run_at: 1_767_225_600_000.5 } },
  { kwargs: { run_at: 978_307_200_000 } },
  { kwargs: { run_at: 978_307_199_999 } },
  { kwargs: { run_at: 253_402_300_800_000 } },
  { kwargs: { run_at: -5 } },
  { kwargs: { delay_ms: 1, run_at: 1_767_225_600_000 } },
  { kwargs: { priority: 1_000_000 } },
  { kwargs: { priority: -1_000_000 } },
  { kwargs: { priority: 1_000_001 } },
  { kwargs: { priority: -1_000_001 } },
  { kwargs: { priority: 1.5 } },
  { kwargs: { attempts: 0 } },
  { kwargs: { attempts: 1 } },
  { kwargs: { attempts: 1_000_000 } },
  { kwargs: { attempts: 1_000_001 } },
  { data: 'x'.repeat(512 * 1024 - 2) },
  { data: 'x'.repeat(512 * 1024 - 1) },
  { data: { n: Number.NaN } },
  { kwargs: { group: 'g1' } },
  { kwargs: { group: '' } },
  { kwargs: { dedup: { key: 'k', window_ms: 0 } } },
  { kwargs: { dedup: { key: 'k', window_ms: 1000 } } },
  { kwargs: { dedup: { key: '', window_ms: 1000 } } },
  { kwargs: { debounce: { key: 'd', delay_ms: -1 } } },
  { kwargs: { debounce: { key: 'd', delay_ms: 10, max_wait_ms: 0 } } },
  { kwargs: { debounce: { key: 'd', delay_ms: 10, max_wait_ms: 100 } } },
  { kwargs: { debounce: { key: 'e', delay_ms: 10 }, delay_ms: 5 } },
  { kwargs: { cost: 0 } },
  { kwargs: { cost: 2 } },
  { kwargs: { cost: 1_000_001 } },
  { kwargs: { replace: 1 } },
  { kwargs: { attempts_made: 0 } },
  { kwargs: { attempts_made: 2 } },
  { kwargs: { attempts_made: 999_999 } },
  { kwargs: { attempts_made: 1_000_000 } },
  { kwargs: { attempts_made: -1 } },
  { kwargs: { attempts_made: 1.5 } },
  { kwargs: { attempts: 3, attempts_made: 2 } },
  { kwargs: { attempts: 3, attempts_made: 3 } },
];

/** Python's names of add's options and fields, as the Node library names them (a nested delay_ms is delayMs). */
const NODE_NAME: Record<string, string> = { delay_ms: 'delay', run_at: 'runAt', attempts_made: 'attemptsMade' };
const NESTED_NAME: Record<string, string> = { delay_ms: 'delayMs', window_ms: 'windowMs', max_wait_ms: 'maxWaitMs' };
const nodeName = (field: string) =>
  field
    .split('.')
    .map((p, i) => (i === 0 ? NODE_NAME : NESTED_NAME)[p] ?? p)
    .join('.');
function nodeOpts(kwargs: Record<string, unknown>, nested = false): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(kwargs)) {
    out[(nested ? NESTED_NAME : NODE_NAME)[k] ?? k] = v !== null && typeof v === 'object' ? nodeOpts(v as Record<string, unknown>, true) : v;
  }
  return out;
}

test('parity: the Python client and the Node library refuse the same adds, naming the same field, and store the same jobs', async () => {
  requirePython();
  const cases = ADD_CASES.map((c, i) => ({ data: c.data ?? { case: i }, kwargs: { id: `c${i}`, ...c.kwargs } as Record<string, unknown> }));
  const pyName = uniqueName('parity-py');
  const nodeQueue = fx.track(new Queue(uniqueName('parity-node'), { connection: fx.redis.url }));
  const pyQueue = fx.track(new Queue(pyName, { connection: fx.redis.url }));
  const lines = ok(await py('parity.py', [fx.redis.url, pyName, 'add', tableFile(cases)]), 'parity.py add');
  assert.equal(lines.length, cases.length);
  const differ: string[] = [];
  for (const [i, c] of cases.entries()) {
    const p = lines[i]!;
    const shown = `${i} ${JSON.stringify(c.kwargs).slice(0, 80)}`;
    let node: { ok: true; id: string; result: string } | { ok: false; field: string; error: string };
    try {
      const r = await nodeQueue.add(c.data, nodeOpts(c.kwargs));
      node = { ok: true, id: r.id, result: r.added ? 'added' : r.debounced ? 'debounced' : r.duplicateOf ? 'deduplicated' : 'exists' };
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      node = { ok: false, field: err.field, error: err.message };
    }
    if (node.ok !== p.ok) {
      differ.push(
        `${shown}: Node ${node.ok ? 'accepts' : `refuses (${(node as { error: string }).error})`}, Python ${p.ok ? 'accepts' : `refuses (${p.error})`}`,
      );
      continue;
    }
    if (!node.ok) {
      if (nodeName(p.field as string) !== node.field) differ.push(`${shown}: Node names ${node.field}, Python ${p.field as string} (${p.error})`);
      continue;
    }
    const job = (await nodeQueue.get(node.id))!;
    const pj = p.job as Record<string, unknown>;
    const stored = {
      data: job.data,
      priority: job.priority,
      maxAttempts: job.maxAttempts ?? null,
      attempt: job.attempt,
      group: job.group ?? null,
      result: node.result,
    };
    const pyStored = { data: pj.data, priority: pj.priority, maxAttempts: pj.max_attempts, attempt: pj.attempts, group: pj.group, result: p.result };
    if (JSON.stringify(stored) !== JSON.stringify(pyStored)) differ.push(`${shown}: Node stored ${JSON.stringify(stored)}, Python ${JSON.stringify(pyStored)}`);
    // An absolute due time is stored as given (rounded up); a delay is from each add's own now.
    if (c.kwargs.run_at !== undefined && job.dueAtMs !== pj.due_ms) differ.push(`${shown}: due ${job.dueAtMs} (Node), ${String(pj.due_ms)} (Python)`);
  }
  assert.deepEqual(differ, []);
  assert.ok(lines.filter((l) => l.ok).length >= 15 && lines.filter((l) => !l.ok).length >= 20, 'the table holds accepted and refused adds');
  for (const q of [nodeQueue, pyQueue]) {
    const report = await q.verify();
    assert.equal(report.ok, true, report.problems.join('; '));
  }
});

/** A handler result of the parity table: `py` names the Python value (parity.py RESULTS), `node` is the Node one. */
const RESULT_CASES: { py?: string; value?: unknown; node: () => unknown; note?: true }[] = [
  { value: { n: 1, s: 'é' }, node: () => ({ n: 1, s: 'é' }) },
  { value: [1, 'two', null], node: () => [1, 'two', null] },
  { py: 'nan', node: () => Number.NaN },
  { py: 'nested_inf', node: () => ({ a: Number.POSITIVE_INFINITY, b: [1, Number.NEGATIVE_INFINITY] }) },
  { py: 'set', node: () => 1n, note: true },
  { py: 'datetime', node: () => ({ at: 1n }), note: true },
  { py: 'decimal', node: () => [1n], note: true },
  {
    py: 'circular',
    node: () => {
      const a: unknown[] = [];
      a.push(a);
      return a;
    },
    note: true,
  },
  { py: 'big', node: () => 'x'.repeat(20_000) },
  { py: 'big_unicode', node: () => 'é'.repeat(9000) },
  { py: 'just_under', node: () => 'y'.repeat(16_382) },
];

test('parity: a handler result JSON cannot hold, or over 16 KiB, is acked with the same note by the Python worker as by the Node one', async () => {
  requirePython();
  const pyName = uniqueName('results-py');
  const nodeName_ = uniqueName('results-node');
  const pyQueue = fx.track(new Queue(pyName, { connection: fx.redis.url }));
  const nodeQueue = fx.track(new Queue(nodeName_, { connection: fx.redis.url }));
  for (const q of [pyQueue, nodeQueue]) await q.setRetention({ completed: { count: 100 } });
  const cases = RESULT_CASES.map(({ py: p, value }) => (p ? { py: p } : { value }));
  ok(await py('parity.py', [fx.redis.url, pyName, 'results', tableFile(cases)], 40_000), 'parity.py results');
  for (const [i] of RESULT_CASES.entries()) await nodeQueue.add({ case: i }, { id: `r${i}` });
  errors.watch(
    fx.track(new Worker<{ case: number }>(nodeName_, async (job) => RESULT_CASES[job.data.case]!.node(), { connection: fx.redis.url, concurrency: 4 })),
  );
  await settled(nodeQueue);
  const differ: string[] = [];
  for (const [i, c] of RESULT_CASES.entries()) {
    const [n, p] = [await nodeQueue.get(`r${i}`), await pyQueue.get(`r${i}`)];
    const shown = `${i} ${c.py ?? JSON.stringify(c.value)}`;
    if (n?.state !== 'completed' || p?.state !== 'completed') {
      differ.push(`${shown}: Node ${n?.state} (attempt ${n?.attempt}), Python ${p?.state} (attempt ${p?.attempt})`);
      continue;
    }
    // A note for a value JSON cannot hold names the language's own error after this prefix.
    const cut = (r: unknown) => (c.note && typeof r === 'string' ? r.slice(0, r.indexOf('(')) : r);
    if (JSON.stringify(cut(n.result)) !== JSON.stringify(cut(p.result)) || p.attempt !== 1) {
      differ.push(`${shown}: Node kept ${JSON.stringify(n.result).slice(0, 80)}, Python ${JSON.stringify(p.result).slice(0, 80)} (attempt ${p.attempt})`);
    }
  }
  assert.deepEqual(differ, []);
  assert.match(String((await pyQueue.get('r4'))?.result), /^\[result not kept: not JSON \(/);
  assert.equal((await pyQueue.get('r8'))?.result, '[result not kept: 20002 bytes, over the 16384-byte limit]');
});

test('job control: a Python worker honours a per-job timeout and a cancel of a running job; a Python producer adds with a timeout, cancels a running job and fails one now', async () => {
  requirePython();
  const name = uniqueName('py-jc');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.add({}, { id: 'slow', timeoutMs: 200 });
  await queue.add({}, { id: 'hang' });
  await queue.add({}, { id: 'quick' });
  const run = py('job_control.py', [fx.redis.url, name, 'work'], 30_000);
  await until(async () => (await queue.get('hang'))?.state === 'active', 'the Python worker runs hang', 10_000);
  assert.deepEqual(await queue.cancel('hang', { running: true }), { id: 'hang', cancelled: true, state: 'active' });
  const ran = await run;
  const lines = ok(ran, 'job_control.py work');
  const reasons = Object.fromEntries(lines.filter((l) => 'aborted' in l).map((l) => [l.aborted, l.reason]));
  assert.deepEqual(reasons, { slow: 'timeout', hang: 'cancelled' }, ran.stderr);
  assert.equal(lines.find((l) => l.started === 'slow')?.timeout_ms, 200);
  const slow = await queue.get('slow');
  assert.equal(slow?.state, 'dead', 'one attempt, timed out');
  assert.match(slow?.lastError ?? '', /^HandlerTimeoutError: handler did not finish within 200 ms/);
  assert.equal(await queue.get('hang'), null);
  assert.equal(await queue.get('quick'), null, 'quick ran and was acked');
  assert.equal((await queue.stats()).active, 0);

  // A Python producer: a timeout in the add, a cancel and a fail of jobs a Node worker holds.
  const name2 = uniqueName('py-jc2');
  const q2 = fx.track(new Queue(name2, { connection: fx.redis.url }));
  await q2.add({}, { id: 'held' });
  await q2.add({}, { id: 'failing', attempts: 5 });
  const seen = new Map<string, { timeoutMs: number | undefined; reason?: unknown }>();
  const w = fx.track(
    new Worker(
      name2,
      async (job) => {
        seen.set(job.id, { timeoutMs: job.timeoutMs });
        if (job.id === 'timed') return 'ok';
        await new Promise((resolve) => job.signal.addEventListener('abort', resolve, { once: true }));
        seen.get(job.id)!.reason = job.signal.reason;
        return 'late';
      },
      { connection: fx.redis.url, concurrency: 4 },
    ),
  );
  errors.watch(w);
  const lines2 = ok(await py('job_control.py', [fx.redis.url, name2, 'produce'], 30_000), 'job_control.py produce');
  assert.deepEqual(lines2.find((l) => 'done' in l)?.pending, []);
  assert.match(String(lines2.find((l) => 'refused' in l)?.refused), /timeout_ms/);
  assert.equal(lines2.find((l) => 'cancelled' in l)?.cancelled && (lines2.find((l) => 'cancelled' in l)!.cancelled as { result: string }).result, 'done');
  assert.equal((lines2.find((l) => 'failed' in l)!.failed as { result: string }).result, 'dead');
  await until(() => seen.get('held')?.reason !== undefined && seen.get('failing')?.reason !== undefined && seen.has('timed'), 'the Node worker hears', 10_000);
  assert.equal(seen.get('held')?.reason, 'cancelled');
  assert.equal(seen.get('failing')?.reason, 'failed');
  assert.equal(seen.get('timed')?.timeoutMs, 250);
  assert.equal((await q2.get('failing'))?.lastError, 'poison from python');
  assert.equal(await q2.get('bad'), null);
});

test('flows from Python: add_bulk with depends_on holds the parent until its children ran on a Node worker; bad depends_on refused; signal releases a Node job waiting for it', async () => {
  requirePython();
  const name = uniqueName('py-flow');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.add({}, { id: 'waiter' });
  const order: string[] = [];
  const signalled: unknown[] = [];
  const w = fx.track(
    new Worker(
      name,
      async (job) => {
        order.push(job.id);
        if (job.id === 'waiter') {
          if (!job.signalled) job.waitForSignal('payment', { timeoutMs: 60_000 });
          signalled.push(job.signalled);
        }
        return job.id;
      },
      { connection: fx.redis.url, concurrency: 1 },
    ),
  );
  errors.watch(w);
  const lines = ok(await py('flows.py', [fx.redis.url, name], 30_000), 'flows.py');
  assert.deepEqual(lines.find((l) => 'states' in l)?.states, ['scheduled', 'scheduled', 'held']);
  assert.deepEqual(lines.find((l) => 'tree' in l)?.tree, [
    'tree',
    'held',
    [
      ['tree/0', 'scheduled'],
      ['tree/1', 'held'],
    ],
    'tree/1/0',
  ]);
  assert.deepEqual(lines.find((l) => 'again' in l)?.again, ['exists', 'exists', 'exists']);
  const refused = lines.filter((l) => 'refused' in l).map((l) => String(l.refused));
  assert.equal(refused.length, 4);
  assert.ok(
    refused.every((r) => r !== 'null' && /depends_on/.test(r)),
    refused.join('\n'),
  );
  const sent = lines.find((l) => 'signalled' in l)!;
  assert.equal((sent.signalled as { result: string }).result, 'released');
  assert.equal((sent.nobody as { result: string }).result, 'not_found');
  await until(
    async () => (await queue.get('parent')) === null && (await queue.get('tree')) === null && signalled.length === 1,
    'the parents and the waiter ran',
    10_000,
  );
  assert.ok(order.indexOf('tree') > order.indexOf('tree/1') && order.indexOf('tree/1') > order.indexOf('tree/1/0'));
  assert.ok(order.indexOf('parent') > order.indexOf('child-a') && order.indexOf('parent') > order.indexOf('child-b'));
  assert.deepEqual(signalled, [{ name: 'payment', timedOut: false, data: { paid: true } }]);
  assert.equal(await queue.get('bad'), null);
});

test('a Python worker beats like the Node one: listed by workers() with its language and host while idle and while busy (extend carries the beat), counted by stats and `delayq workers`, gone when it closes', async () => {
  requirePython();
  const name = uniqueName('py-beat');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const release = `${name}:release`;
  await queue.add({ n: 1 }, { id: 'busy' });
  await queue.add({ n: 2 }, { id: 'behind' });
  const run = py('beat.py', [fx.redis.url, name, release], 60_000);
  // The worker runs 'busy' (concurrency 1) and blocks; 'behind' is due and waits.
  await until(async () => (await queue.get('busy'))?.state === 'active', 'the Python worker to start the job');
  const listed = await until(async () => (await queue.workers()).find((w) => w.language === 'python'), 'the Python worker to be listed');
  assert.equal(listed.host, hostname());
  assert.equal(listed.queue, name);
  assert.equal(listed.concurrency, 1);
  assert.match(listed.id, /^py-/);
  assert.ok(listed.pid > 0 && listed.pid !== process.pid, 'the Python process id');
  assert.ok(listed.expiresAtMs - listed.lastSeenAtMs >= 29_000, 'kept for three beats');
  // Busy: its lease renewals (every 300 ms) carry the beat, so its entry stays fresh (its own beat
  // comes only every 10 s).
  const busy = await until(async () => {
    const w = (await queue.workers()).find((x) => x.id === listed.id);
    return w && w.running === 1 && w.lastSeenAtMs > listed.lastSeenAtMs ? w : undefined;
  }, 'a beat carried by a lease renewal while the handler runs');
  assert.equal(busy.running, 1);
  const stats = await queue.stats();
  assert.equal(stats.workers, 1);
  assert.ok(stats.ready >= 1, 'a job is due behind the busy one');
  const cli = spawnSync(
    process.execPath,
    [fileURLToPath(new URL('../../src/cli/main.js', import.meta.url)), '--redis', fx.redis.url, '--queue', name, 'workers'],
    {
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...process.env, NO_COLOR: '1' },
    },
  );
  assert.equal(cli.status, 0, cli.stderr);
  assert.match(
    cli.stdout,
    new RegExp(`^${listed.id}  ${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} pid ${listed.pid}  running 1/1 .* python v0\\.1\\.0$`, 'm'),
  );
  assert.doesNotMatch(cli.stdout, /no live worker/);
  // Released: both jobs run, the worker goes idle and closes, taking itself off the list at once.
  await fx.client.rpush(release, '1', '1');
  const lines = ok(await run, 'beat.py');
  assert.deepEqual(
    lines.filter((l) => typeof l.ran === 'string').map((l) => l.ran),
    ['busy', 'behind'],
  );
  assert.deepEqual(await queue.workers(), [], 'a closed Python worker is off the list at once');
  assert.equal((await queue.stats()).workers, 0);
});

test('delayq_client.asyncio (redis.asyncio): the Queue adds, reads, reschedules and cancels as the blocking one does, refusing bad input before any write; the Worker acks, retries, renews leases, beats, and really stops a handler past its timeout or cancelled from outside', async () => {
  requirePython();
  const name = uniqueName('py-async');
  const queue = fx.track(new Queue<unknown>(name, { connection: fx.redis.url }));
  const lines = ok(await py('async_client.py', [fx.redis.url, name, 'produce']), 'async_client.py produce');
  const by = (k: string) => lines.filter((l) => k in l).map((l) => l[k]);
  const added = by('added')[0] as { id: string; result: string; state: string; due_ms: number };
  assert.deepEqual([added.id, added.result, added.state, typeof added.due_ms], ['mail-1', 'added', 'scheduled', 'number']);
  assert.ok((await queue.get('mail-1'))!.dueAtMs >= added.due_ms + 60_000 - 1, 'rescheduled 2 min out');
  assert.deepEqual(
    (by('bulk')[0] as { result: string }[]).map((r) => r.result),
    ['added', 'added'],
  );
  assert.equal((by('again')[0] as { result: string }).result, 'exists');
  const got = by('got')[0] as { name?: string; data: unknown; state: string };
  assert.deepEqual([got.data, got.state], [{ to: 'ada' }, 'scheduled']);
  assert.equal((by('moved')[0] as { result: string }).result, 'done');
  assert.deepEqual(by('cancelled')[0], { result: 'done', state: 'scheduled' });
  assert.deepEqual(by('missing'), [null]);
  assert.deepEqual(by('refused'), [
    'delay_ms must not be negative (got -1)',
    'id must be 1-256 characters (got 0)',
    'name must not contain control characters (U+0009)',
    'priority must be a whole number (got 1.5)',
    'jobs[1].debounce.delay_ms must be given',
  ]);
  const mail = await queue.get('mail-1');
  assert.equal(mail?.name, 'send-email');
  assert.equal((await queue.get('b1'))?.data && (await queue.get('b1'))?.state, 'scheduled');
  assert.equal(await queue.get('ok'), null, 'a refused bulk writes nothing');
  assert.equal(await queue.get('b2'), null);
  assert.equal((await queue.stats()).scheduled, 2);

  const wname = uniqueName('py-async-w');
  const wq = fx.track(new Queue<unknown>(wname, { connection: fx.redis.url }));
  await wq.setRetention({ completed: { count: 100 } });
  await wq.add({}, { id: 'ok-1' });
  await wq.add({}, { id: 'slow' }); // 700 ms, longer than a third of the 900 ms lease: renewed
  await wq.add({}, { id: 'fail-1' });
  await wq.add({}, { id: 'hang-t', timeoutMs: 300, attempts: 1 });
  await wq.add({}, { id: 'hang-c' });
  await wq.add({}, { id: 'hang-swallow', timeoutMs: 300, attempts: 1 });
  const run = py('async_client.py', [fx.redis.url, wname, 'work'], 40_000);
  await until(async () => (await wq.get('hang-c'))?.state === 'active', 'the asyncio worker runs hang-c');
  const listed = await until(async () => (await wq.workers()).find((w) => w.language === 'python'), 'the asyncio worker listed');
  assert.equal(listed.host, hostname());
  assert.deepEqual(await wq.cancel('hang-c', { running: true }), { id: 'hang-c', cancelled: true, state: 'active' });
  const worked = ok(await run, 'async_client.py work');
  const wby = (k: string) => worked.filter((l) => k in l && !('done' in l));
  assert.deepEqual(Object.fromEntries(wby('handler_cancelled').map((l) => [l.handler_cancelled, l.reason])), {
    'hang-t': 'timeout',
    'hang-c': 'cancelled',
    'hang-swallow': 'timeout',
  });
  assert.deepEqual(
    wby('started')
      .filter((l) => l.started === 'fail-1')
      .map((l) => l.attempt),
    [1, 2],
  );
  assert.equal(wby('started').filter((l) => l.started === 'slow').length, 1, 'a renewed lease is not handed out again');
  for (const id of ['ok-1', 'slow']) assert.deepEqual((await wq.get(id))?.result, { by: 'python-asyncio', id });
  for (const id of ['hang-t', 'hang-swallow']) {
    const timedOut = await wq.get(id);
    assert.equal(timedOut?.state, 'dead', `${id}: one attempt, timed out (a swallowed cancellation too)`);
    assert.match(timedOut?.lastError ?? '', /^HandlerTimeoutError: handler did not finish within 300 ms/);
  }
  assert.equal((await wq.get('fail-1'))?.state, 'dead');
  assert.match((await wq.get('fail-1'))?.lastError ?? '', /RuntimeError: planned failure 2/);
  assert.equal(await wq.get('hang-c'), null);
  assert.deepEqual(await wq.workers(), [], 'off the list once closed');
  const report = await wq.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
});

test('a Python worker stopped while a job runs (a deploy) keeps renewing its lease until the job ends and is acked: no other worker gets it', async () => {
  requirePython();
  const name = uniqueName('py-drain');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  await queue.setRetention({ completed: { count: 10 } });
  await queue.add({}, { id: 'long' });
  const run = py('drain.py', [fx.redis.url, name], 30_000);
  await until(async () => (await queue.get('long'))?.state === 'active', 'the Python worker to start the job');
  // A Node worker on the same queue takes any job whose lease runs out.
  const ranByNode: string[] = [];
  const w = fx.track(new Worker(name, (job) => void ranByNode.push(job.id), { connection: fx.redis.url }));
  errors.watch(w);
  const lines = ok(await run, 'drain.py');
  const done = lines.find((l) => l.done === true)!;
  assert.deepEqual([done.ran, done.warnings], [1, []], JSON.stringify(lines));
  assert.equal((await queue.get('long'))?.state, 'completed');
  assert.deepEqual((await queue.get('long'))?.result, 'done');
  assert.deepEqual(ranByNode, [], 'the job was not handed out again');
  await w.close();
});
