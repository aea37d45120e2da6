/**
 * The CLI's exit-code table and error format (docs/cli.md): 0 ok, 1 error, 2 not found / not
 * changed, 64 usage; `error:` plus at most one `hint:` line on stderr.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { freePort } from '../helpers/redis-server.js';
import { until, within } from '../helpers/wait.js';
import { assertFailure, run, start } from './run-cli.js';

/** Node 22.18+ and 23.6+ run a .ts module by stripping its types (process.features.typescript: 'strip'). */
const stripsTypes = Boolean((process.features as { typescript?: unknown }).typescript);

const fx = useRedis();

/** Puts `ids` in the queue's dead set through the store, as a worker out of attempts would. */
async function killJobs(queue: Queue, ids: string[]): Promise<void> {
  for (const id of ids) {
    await queue.add(id, { id });
    const c = (await queue.store.claim(queue.name, 1, 30_000, 1)).jobs[0]!;
    await queue.store.fail(queue.name, { id: c.id, token: c.token, error: 'boom', retryDelayMs: 0, dead: true, defaultMaxAttempts: 1 });
  }
}

describe('delayq CLI exit codes and error format', () => {
  test('not found / not changed: exit 2, the answer on stdout, nothing on stderr', async () => {
    const q = uniqueName('cli');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await killJobs(queue, ['d1', 'd2', 'd3']);
      const steps: [string[], number, RegExp][] = [
        [['add', '1', '--id', 'x', '--delay', '1h'], 0, /^added x/],
        [['add', '2', '--id', 'x'], 2, /^not added: x exists \(scheduled/],
        [['add', '2', '--id', 'x', '--replace'], 0, /^added x/],
        [['pause'], 0, /^paused /],
        [['pause'], 2, /was already paused/],
        [['resume'], 0, /^resumed /],
        [['resume'], 2, /was already running/],
        [['dead', 'retry', 'nope'], 2, /^retried 0 of 1\nnot retried: no job nope\n$/],
        [['dead', 'retry', 'x', 'd1', 'nope'], 2, /^retried 1 of 3\nnot retried: x is scheduled\nnot retried: no job nope\n$/],
        [['dead', 'retry', 'd2', 'd2'], 0, /^retried 1\n$/],
        [['dead', 'purge', 'nope', 'd3'], 2, /^purged 1 of 2 \(the others are not dead\)/],
        [['dead', 'purge', '--all'], 2, /^purged 0\n$/],
        [['dead', 'retry', '--all'], 2, /^retried 0\n$/],
        [['cancel', 'nope'], 2, /no job nope/],
        // A queue name that holds nothing and was never used: nothing to remove, and it says so.
        [['--queue', `${q}-typo`, 'obliterate', '--yes'], 2, /^nothing to obliterate: no queue .*-typo/],
      ];
      for (const [args, code, out] of steps) {
        const r = await run([...g, ...args]);
        assert.equal(r.code, code, `${args.join(' ')}: exit ${r.code} ${r.stderr}`);
        assert.match(r.stdout, out, args.join(' '));
        assert.equal(r.stderr, '', args.join(' '));
      }
      // --json gives the same exit code with the result as JSON.
      const dup = await run([...g, 'add', '3', '--id', 'x', '--json']);
      assert.equal(dup.code, 2);
      assert.equal((JSON.parse(dup.stdout) as { added: boolean }).added, false);
    } finally {
      await queue.close();
    }
  });

  test('a --handler that cannot be loaded: exit 64 saying why (no such file, TypeScript, a syntax error)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'delayq-handler-'));
    try {
      writeFileSync(join(dir, 'h.ts'), 'export default (job: unknown) => job;\n');
      writeFileSync(join(dir, 'broken.mjs'), 'export default (\n');
      const cases: [string, RegExp, RegExp | undefined][] = [
        [join(dir, 'nope.mjs'), /no such file/, undefined],
        [join(dir, 'broken.mjs'), /cannot be loaded: .*Unexpected end of input/, undefined],
      ];
      // Node 22.18+ and 24 strip types by themselves: there a .ts handler loads (the next test).
      if (!stripsTypes) cases.push([join(dir, 'h.ts'), /does not run TypeScript by itself/, /compile it to \.js .*--import tsx/]);
      for (const [path, message, hint] of cases) {
        const f = assertFailure(await run(['--redis', 'memory://', 'worker', '--handler', path]), 64, path);
        assert.match(f.message, message);
        if (hint) assert.match(f.hint ?? '', hint);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a .ts --handler runs on a Node that strips types by itself (22.18+, 24)', {
    skip: !stripsTypes && `Node ${process.versions.node} does not`,
  }, async () => {
    const q = uniqueName('cli');
    const dir = mkdtempSync(join(tmpdir(), 'delayq-handler-'));
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      writeFileSync(join(dir, 'h.ts'), 'export default (job: { data: string }): string => job.data;\n');
      await queue.add('typed', { id: 't1' });
      const w = start(['--redis', fx.redis.url, '--queue', q, 'worker', '--handler', join(dir, 'h.ts'), '--json']);
      let out = '';
      w.child.stdout!.on('data', (d) => (out += d));
      await until(() => out.includes('"event":"completed","id":"t1"'), 'the job handled by the .ts handler', 30_000);
      w.child.kill('SIGTERM');
      const r = await within(w.done, 10_000, 'the worker to exit after SIGTERM');
      assert.equal(r.code, 0, r.stderr);
    } finally {
      await queue.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a command group without its subcommand prints its help and exits 64, with no bogus error line', async () => {
    for (const args of [['dead'], []]) {
      const r = await run(args);
      assert.equal(r.code, 64, `delayq ${args.join(' ')}`);
      assert.match(r.stderr, /^Usage: delayq/);
      assert.doesNotMatch(r.stderr, /^error:|outputHelp/m);
    }
    const help = await run(['dead', '--help']);
    assert.deepEqual([help.code, help.stderr], [0, '']);
    assert.match(help.stdout, /retry/);
  });

  test("a mistyped command or option keeps commander's suggestion as the hint", async () => {
    const cmd = assertFailure(await run(['stat']), 64, 'stat');
    assert.deepEqual(cmd, { message: "unknown command 'stat'", hint: 'did you mean stats?' });
    const opt = assertFailure(await run(['stats', '--windw', '5s']), 64, 'stats --windw');
    assert.deepEqual(opt, { message: "unknown option '--windw'", hint: 'did you mean --window?' });
    // With nothing close, the hint points at the command's own help.
    const far = assertFailure(await run(['dead', 'retry', '--zzzzzz']), 64, 'dead retry --zzzzzz');
    assert.equal(far.hint, "see 'delayq dead retry --help'");
  });

  test('Redis unreachable: exit 1, the address in the message, a hint', async () => {
    const port = await freePort();
    const r = await run(['--redis', `redis://127.0.0.1:${port}`, 'stats']);
    const f = assertFailure(r, 1, 'stats on a closed port');
    assert.match(f.message, new RegExp(`^Redis at 127\\.0\\.0\\.1:${port}: `));
    assert.match(f.hint ?? '', /--redis/);
  });

  test('stats on a queue that was never used hints at a typo; a used one does not', async () => {
    const q = uniqueName('cli');
    const typo = await run(['--redis', fx.redis.url, '--queue', q, 'stats']);
    assert.equal(typo.code, 0);
    assert.match(typo.stderr, new RegExp(`^hint: queue "${q}" holds nothing and has never completed a job: is the name right\\?`));
    assert.match(typo.stdout, /scheduled 0/);
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      // A recurring schedule alone makes a queue "seen".
      await queue.schedules.upsert('nightly', { cron: '0 2 * * *' });
      const seen = await run(['--redis', fx.redis.url, '--queue', q, 'stats', '--json']);
      assert.deepEqual([seen.code, seen.stderr], [0, '']);
      assert.equal((JSON.parse(seen.stdout) as { scheduled: number }).scheduled, 0);
    } finally {
      await queue.close();
    }
  });

  test('a write to memory:// warns that it is gone when the command exits; reads and the demo do not', async () => {
    const env = { REDIS_URL: '' };
    const writes = [
      ['--redis', 'memory://', 'add', '1'],
      ['--redis', 'memory://x', 'pause'],
      ['--redis', 'memory://', 'cancel', 'nope'],
      ['--redis', 'memory://', 'dead', 'purge', '--all', '--json'],
    ];
    for (const args of writes) {
      const r = await run(args, { env });
      assert.match(r.stderr, /^warning: memory:\/\/\S* keeps jobs in this process only/, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, args.join(' '));
    }
    // REDIS_URL picks memory:// just as --redis does.
    assert.match((await run(['add', '1'], { env: { REDIS_URL: 'memory://' } })).stderr, /^warning: memory:/);
    for (const args of [
      ['--redis', 'memory://', 'stats', '--json'],
      ['--redis', 'memory://', 'get', 'x'],
      ['--redis', 'memory://', 'demo', '--orders', '10', '--timeout-ms', '200', '--json'],
    ]) {
      assert.doesNotMatch((await run(args, { env })).stderr, /warning/, args.join(' '));
    }
    // On Redis, no warning.
    assert.equal((await run(['--redis', fx.redis.url, '--queue', uniqueName('cli'), 'add', '1'])).stderr, '');
  });
});
