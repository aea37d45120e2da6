/** The CLI's inspection and clean-up verbs against a real redis-server: queues, jobs ls, jobs find, workers, cancel many, drain, obliterate. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

const BIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** A printed command line as a shell would split it (words, and '…' quoted ones). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]!));
}

describe('delayq CLI: see and clean up', () => {
  test('queues, jobs ls with a cursor, jobs find, cancel of many ids', async () => {
    const name = uniqueName('cli-insp');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<{ email: string }>(name, { connection: fx.redis.url });
    try {
      for (let i = 0; i < 5; i++) await q.add({ email: `u${i}@shop.test` }, { id: `o${i}`, delay: 60_000 + i * 1000 });
      const queues = JSON.parse((await run([...g, 'queues', '--json'])).stdout) as { name: string; stats: { scheduled: number } }[];
      assert.equal(queues.find((x) => x.name === name)?.stats.scheduled, 5);
      assert.match((await run([...g, 'queues'])).stdout, new RegExp(`${name}\\s+scheduled\\s+5`));

      const first = JSON.parse((await run([...g, 'jobs', 'ls', '--state', 'scheduled', '--limit', '2', '--json'])).stdout) as {
        jobs: { id: string }[];
        cursor: string;
        total: number;
      };
      assert.deepEqual([first.total, first.jobs.map((j) => j.id)], [5, ['o0', 'o1']]);
      const second = await run([...g, 'jobs', 'ls', '--state', 'scheduled', '--limit', '2', '--cursor', first.cursor]);
      assert.equal(second.code, 0, second.stderr);
      assert.match(
        second.stdout,
        /^5 upcoming \(scheduled, not yet due\), showing 2\no2 .*\no3 .*\nnext page: delayq --redis \S+ --queue \S+ jobs ls --state scheduled --limit 2 --cursor \S+$/m,
      );
      // The hint pastes: run as printed, it gives the next page of the same queue and limit.
      const hint = /^next page: (delayq .*)$/m.exec(second.stdout)![1]!;
      const third = await run(shellWords(hint).slice(1));
      assert.equal(third.code, 0, third.stderr);
      assert.match(third.stdout, /^5 upcoming \(scheduled, not yet due\), showing 1\no4 /);
      assert.doesNotMatch(third.stdout, /next page/);
      const bad = await run([...g, 'jobs', 'ls', '--state', 'nope']);
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /--state must be one of/);

      const found = await run([...g, 'jobs', 'find', 'u3@']);
      assert.match(found.stdout, /^1 found; searched 5 of 5 jobs\no3 /);
      // A search that stops early prints the command that goes on, whole.
      const partial = await run([...g, 'jobs', 'find', 'shop.test', '--limit', '2', '--budget', '3']);
      const on = /^search on: (delayq .*)$/m.exec(partial.stdout)?.[1];
      assert.ok(on, partial.stdout);
      assert.doesNotMatch(on, /…/);
      const rest = await run(shellWords(on).slice(1));
      assert.equal(rest.code, 0, rest.stderr);
      assert.match(rest.stdout, /found; searched \d+ of 5 jobs/);
      const byPath = JSON.parse((await run([...g, 'jobs', 'find', '--path', 'email', '--equals', 'u4@shop.test', '--json'])).stdout) as {
        jobs: { id: string }[];
      };
      assert.deepEqual(
        byPath.jobs.map((j) => j.id),
        ['o4'],
      );
      assert.equal((await run([...g, 'jobs', 'find', 'nothing-like-this'])).code, 2);

      const cancelled = await run([...g, 'cancel', 'o0', 'o1', 'nope', '--json']);
      const answers = JSON.parse(cancelled.stdout) as { cancelled: number };
      assert.equal(answers.cancelled, 2);
      assert.equal(cancelled.code, 2, 'one of them was not cancelled');
    } finally {
      await q.close();
    }
  });

  test('add --name, NDJSON names, jobs ls shows names, jobs find --name; a bad --name is refused and writes nothing', async () => {
    const name = uniqueName('cli-names');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue(name, { connection: fx.redis.url });
    try {
      const added = await run([...g, 'add', '{"to":"ada"}', '--id', 'e1', '--name', 'send-email', '--delay', '1h']);
      assert.equal(added.code, 0, added.stderr);
      assert.equal((await q.get('e1'))?.name, 'send-email');
      const nd = spawn(process.execPath, [BIN, ...g, 'add', '--ndjson'], { stdio: ['pipe', 'pipe', 'pipe'] });
      nd.stdin.end(
        `${JSON.stringify({ data: 1, opts: { id: 'c1', name: 'charge', delay: 3_600_000 } })}\n${JSON.stringify({ data: 2, opts: { id: 'p1', delay: 3_600_000 } })}\n`,
      );
      assert.equal(await new Promise((r) => nd.on('close', r)), 0);
      assert.equal((await q.get('c1'))?.name, 'charge');

      const ls = await run([...g, 'jobs', 'ls']);
      assert.match(ls.stdout, /^e1 {2}\[send-email\] {2}due in/m);
      assert.match(ls.stdout, /^c1 {2}\[charge\] {2}due in/m);
      assert.match(ls.stdout, /^p1 {2}due in/m);
      const found = JSON.parse((await run([...g, 'jobs', 'find', '--name', 'charge', '--json'])).stdout) as { jobs: { id: string; name: string }[] };
      assert.deepEqual(
        found.jobs.map((j) => [j.id, j.name]),
        [['c1', 'charge']],
      );
      // jobs ls --name: that name only, in the state's order; a small budget pages on.
      const lsNamed = await run([...g, 'jobs', 'ls', '--name', 'charge']);
      assert.equal(lsNamed.code, 0, lsNamed.stderr);
      assert.match(lsNamed.stdout, /^1 scheduled named "charge" \(read 3 of 3, to the end\)\nc1 {2}\[charge\] {2}due in/);
      assert.doesNotMatch(lsNamed.stdout, /^(e1|p1) /m);
      const small = await run([...g, 'jobs', 'ls', '--name', 'charge', '--budget', '1', '--limit', '1']);
      assert.match(
        small.stdout,
        /^0 scheduled named "charge" \(read 1 of 3\)\n.*next page: delayq .*jobs ls --state scheduled --limit 1 --name charge --budget 1 --cursor /s,
      );
      const lsJson = JSON.parse((await run([...g, 'jobs', 'ls', '--name', 'send-email', '--json'])).stdout) as {
        jobs: { id: string; name: string }[];
        scanned: number;
      };
      assert.deepEqual([lsJson.jobs.map((j) => [j.id, j.name]), lsJson.scanned], [[['e1', 'send-email']], 3]);
      const lsBad = await run([...g, 'jobs', 'ls', '--name', 'a\tb']);
      assert.notEqual(lsBad.code, 0);
      assert.match(lsBad.stderr, /name must not contain control characters/);
      const budgetAlone = await run([...g, 'jobs', 'ls', '--budget', '5']);
      assert.notEqual(budgetAlone.code, 0);
      assert.match(budgetAlone.stderr, /--budget goes with --name/);

      for (const bad of ['', 'x'.repeat(257), 'a\tb']) {
        const r = await run([...g, 'add', '1', '--id', 'bad', '--name', bad]);
        assert.notEqual(r.code, 0);
        assert.match(r.stderr, /name must/);
      }
      const badLine = spawn(process.execPath, [BIN, ...g, 'add', '--ndjson'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let err = '';
      badLine.stderr.on('data', (d) => (err += d));
      badLine.stdin.end(`${JSON.stringify({ data: 1, opts: { id: 'ok' } })}\n${JSON.stringify({ data: 2, opts: { id: 'x', name: 7 } })}\n`);
      assert.notEqual(await new Promise((r) => badLine.on('close', r)), 0);
      assert.match(err, /line 2: opts\.name/);
      assert.equal(await q.get('bad'), null);
      assert.equal(await q.get('ok'), null);
      assert.equal((await q.stats()).scheduled, 3);
    } finally {
      await q.close();
    }
  });

  test('workers shows a live worker; drain and obliterate want --yes and report what they did', async () => {
    const name = uniqueName('cli-clean');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<number>(name, { connection: fx.redis.url });
    const w = new Worker<number>(name, () => {}, { connection: fx.redis.url, concurrency: 2 });
    try {
      await until(async () => (await q.workers()).length === 1, 'the worker to register');
      const listed = await run([...g, 'workers']);
      assert.match(listed.stdout, new RegExp(`^${w.id}  .* pid ${process.pid}  running 0/2`));
      await w.close();
      assert.match((await run([...g, 'workers'])).stdout, /^no live worker/);

      for (let i = 0; i < 4; i++) await q.add(i, { delay: 60_000 });
      const refused = await run([...g, 'drain']);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /drain removes all 4 scheduled \(0 ready, 4 upcoming\) jobs .*add --yes/);
      assert.equal((await q.stats()).scheduled, 4, 'nothing removed without --yes');
      const drained = await run([...g, 'drain', '--yes']);
      assert.equal(drained.code, 0, drained.stderr);
      assert.match(drained.stdout, /drained 4 waiting jobs/);

      await q.add(1, { id: 'x', delay: 60_000 });
      const gone = await run([...g, 'obliterate', '--yes', '--json']);
      assert.deepEqual((JSON.parse(gone.stdout) as { removed: boolean }).removed, true);
      assert.equal(await q.get('x'), null);
    } finally {
      await w.close();
      await q.close();
    }
  });
});
