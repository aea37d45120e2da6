/**
 * Every code block of the README and docs/*.md that is meant to run, runs (test/docs/snippets.ts
 * reads them and their tags). Each snippet runs as a reader would run it, in a directory of its
 * own where `delayq` is this package (node_modules/delayq links to the checkout, whose
 * package.json exports point at dist/) and the command `delayq` is the built CLI, with REDIS_URL
 * naming a database of its own on a redis-server this file starts (which has one replica, for
 * the WAIT recipe):
 *
 * - TypeScript is type-checked against the built package, then transpiled
 *   (ts.transpileModule) and run with node; JavaScript is run as it is (.mjs).
 * - A shell block runs with bash (`set -e -o pipefail`), or line by line where SPECS says so.
 * - A console block (`$ command` lines and their output) runs each command and compares what it
 *   printed with the lines that follow it.
 *
 * Each run has a deadline: a snippet that should end and does not fails in seconds. A snippet
 * that runs until it is stopped (a worker, a server) is sent SIGTERM (or SIGINT) once it is up,
 * and must then exit by itself, with code 0 for TypeScript and JavaScript.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { Queue } from '../../src/index.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { canConnect } from '../helpers/redis-server.js';
import { until } from '../helpers/wait.js';
import { type Block, needsTag, parsePage, readPages, runsCli } from './snippets.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const pages = readPages(root);
const blocks = pages.flatMap((p) => p.blocks);
const snippets = blocks.filter((b) => b.tag?.kind === 'snippet');
const byName = new Map(snippets.map((b) => [b.tag!.value, b]));

/** What a run printed and how it ended. */
interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** What a snippet's checks get: its own database on the test's server, and its directory. */
interface Ctx {
  url: string;
  dir: string;
}

interface Spec {
  /** Runs until stopped: each of these signals is tried in a run of its own, once `ready`. */
  signals?: NodeJS.Signals[];
  /** Up and ready to be stopped (polled; default: 1.5 s have passed). */
  ready?: (ctx: Ctx, out: Run) => Promise<boolean> | boolean;
  /** Files the snippet expects beside it: text, or the code of another snippet. */
  files?: Record<string, string | { snippet: string }>;
  /** A shell block that is a list of commands: each line runs on its own; these run until stopped. */
  lines?: { untilStopped: RegExp };
  /** A fixed port the snippet listens on: a run that finds it taken by another process is skipped. */
  port?: number;
  /** Runs before the snippet (e.g. a queue it expects). */
  before?: (ctx: Ctx) => Promise<void>;
  /** Checks after the run. */
  check?: (ctx: Ctx, out: Run) => Promise<void> | void;
}

/** What the tests know of each snippet beyond its code; a snippet without an entry must just run and exit 0. */
const SPECS: Record<string, Spec> = {
  // Each job ran once, on the handler of its name.
  'bullmq-migration-names': { check: (_ctx, out) => assert.equal(out.stdout.trim(), 'receipt ada@example.com\nsend-email ada@example.com') },
  'readme-order-timeout': {
    signals: ['SIGTERM', 'SIGINT'],
    // Up once its worker is live; by then the add and the cancel have run.
    ready: async (ctx) => (await queueIn(ctx, 'order-timeouts', (q) => q.workers())).length === 1,
    check: async (ctx) => {
      assert.equal(await queueIn(ctx, 'order-timeouts', (q) => q.get('order:123')), null, 'the paid order’s timeout was cancelled');
      // Its worker closed on the signal: no live worker is left behind.
      assert.deepEqual(await queueIn(ctx, 'order-timeouts', (q) => q.workers()), []);
    },
  },
  'readme-serve': { signals: ['SIGTERM'], port: 8787, ready: (_ctx, out) => out.stdout.includes('http://127.0.0.1:8787/') },
  'dashboard-serve': { signals: ['SIGTERM'], port: 8787, ready: (_ctx, out) => out.stdout.includes('http://127.0.0.1:8787/') },
  'operations-wait': {
    // The server has one replica: WAIT counts it, so the add went out on the client WAIT asked.
    check: (_ctx, out) => assert.equal(out.stdout, 'order:123 is on a replica\n'),
  },
  'data-model-routing': {
    // The reference lines route as the library does.
    check: async (ctx, out) => {
      const m = /^order:123 → orders#(\d+)\n$/.exec(out.stdout);
      assert.ok(m, out.stdout);
      const queue = new Queue('routing-check', { connection: ctx.url, shards: 3 });
      try {
        await queue.add({}, { id: 'order:123', delay: 60_000 });
        const holder = (await queue.shardStats()).find((s) => s.scheduled === 1);
        assert.equal(holder?.name, `routing-check#${m[1]}`);
      } finally {
        await queue.close();
      }
    },
  },
  'groups-shop': {
    // The limits, the group's own limit and its job are in the store for every process to see.
    check: async (ctx) => {
      assert.deepEqual(await queueIn(ctx, 'order-timeouts', (q) => q.limits()), {
        concurrency: 200,
        groupConcurrency: 5,
        rateLimit: undefined,
        groupRateLimit: undefined,
      });
      assert.equal((await queueIn(ctx, 'order-timeouts', (q) => q.groups.get('merchant:m-1'))).concurrency, 20);
      assert.equal((await queueIn(ctx, 'order-timeouts', (q) => q.get('order:123')))?.group, 'merchant:m-42');
    },
  },
  'memory-store': { check: (_ctx, out) => assert.equal(out.stdout, 'mail to ada@example.com\n') },
  metrics: {
    signals: ['SIGTERM'],
    port: 9464,
    ready: async () =>
      (
        await fetch('http://127.0.0.1:9464/')
          .then((r) => r.text())
          .catch(() => '')
      ).includes('delayq_jobs{'),
  },
  'recurring-jobs': {
    signals: ['SIGTERM'],
    ready: async (ctx) => (await queueIn(ctx, 'reports', (q) => q.workers())).length === 1,
    check: async (ctx) => {
      const names = (await queueIn(ctx, 'reports', (q) => q.schedules.list())).map((s) => s.name).sort();
      assert.deepEqual(names, ['heartbeat', 'nightly-sales']);
    },
  },
  'cli-help': { check: (_ctx, out) => assert.match(out.stdout, /^Usage: delayq /m) },
  'cli-errors': {
    files: {
      // Line 1201 is the one with a bad delay.
      'jobs.ndjson': `${Array.from({ length: 1200 }, (_, i) => JSON.stringify({ data: { n: i } })).join('\n')}\n${JSON.stringify({ data: {}, opts: { delay: -5 } })}\n`,
    },
    // The transcript's refused port must be one nothing listens on.
    before: async () => assert.equal(await canConnect(6390), false, 'something listens on 127.0.0.1:6390'),
  },
  'cli-examples': {
    files: {
      'jobs.ndjson': `${JSON.stringify({ data: { to: 'ada@example.com' }, opts: { delay: 60_000 } })}\n${JSON.stringify({ to: 'bob@example.com' })}\n`,
      'cancel-order.mjs': { snippet: 'cancel-order.mjs' },
      'shop.mjs': 'export const shop = { cancelIfUnpaid: async () => {} };\n',
    },
    lines: { untilStopped: /^delayq (monitor|events follow|worker) / },
    check: async (ctx) => {
      assert.equal((await queueIn(ctx, 'emails', (q) => q.stats())).scheduled, 2, 'the NDJSON import added both jobs');
      assert.equal(await queueIn(ctx, 'order-timeouts', (q) => q.get('order:123:timeout')), null);
    },
  },
  'cancel-order.mjs': { files: { 'shop.mjs': 'export const shop = { cancelIfUnpaid: async () => {} };\n' } },
};

/** Runs `fn` on a Queue of the snippet's database. */
async function queueIn<R>(ctx: Ctx, name: string, fn: (q: Queue) => Promise<R>): Promise<R> {
  const q = new Queue(name, { connection: ctx.url });
  try {
    return await fn(q);
  } finally {
    await q.close();
  }
}

describe('code blocks of the README and docs/ are tagged', () => {
  test('the extractor reads tags, fences, languages and indented blocks', () => {
    const page = parsePage(
      'x.md',
      [
        '<!-- snippet: one -->',
        '```ts',
        'a();',
        '```',
        '- item:',
        '',
        '  <!-- fragment: part of an app -->',
        '  ```js',
        '  b();',
        '  ```',
        '```',
        '$ delayq stats',
        '```',
        '<!-- snippet: lost -->',
        'prose',
        '```sh',
        'npm test',
        '```',
      ].join('\n'),
    );
    assert.deepEqual(
      page.blocks.map((b) => [b.where, b.lang, b.code, b.tag?.kind, b.tag?.value]),
      [
        ['x.md:2', 'ts', 'a();\n', 'snippet', 'one'],
        ['x.md:8', 'js', 'b();\n', 'fragment', 'part of an app'],
        ['x.md:11', 'other', '$ delayq stats\n', undefined, undefined],
        ['x.md:16', 'sh', 'npm test\n', undefined, undefined],
      ],
    );
    assert.deepEqual(page.strayTags, ['x.md:14']);
    assert.equal(runsCli('$ delayq stats\n'), true);
    assert.equal(runsCli('cat f | delayq add --ndjson\n'), true);
    assert.equal(runsCli('ACL SETUSER delayq on\n'), false);
    assert.equal(needsTag(page.blocks[3]!), false);
  });

  test('every TypeScript or JavaScript block, and every block that runs delayq, is a snippet or a fragment', () => {
    const untagged = blocks.filter((b) => needsTag(b) && !b.tag).map((b) => `${b.where} (${b.info || 'no language'})`);
    assert.deepEqual(untagged, [], 'tag each with <!-- snippet: name --> (it runs in this test) or <!-- fragment: why it cannot run -->');
  });

  test('every fragment says why it does not run, and every tag sits on the line before a code block', () => {
    assert.deepEqual(
      blocks.filter((b) => b.tag?.kind === 'fragment' && b.tag.value.length < 10).map((b) => b.where),
      [],
    );
    assert.deepEqual(
      pages.flatMap((p) => p.strayTags),
      [],
    );
  });

  test('snippet names are unique, and each entry of SPECS names a snippet', () => {
    const names = snippets.map((b) => b.tag!.value);
    assert.deepEqual(
      names.filter((n, i) => names.indexOf(n) !== i),
      [],
    );
    assert.deepEqual(
      Object.keys(SPECS).filter((n) => !byName.has(n)),
      [],
    );
    for (const b of snippets) assert.ok(b.lang !== 'other' || b.info === 'console', `${b.where}: a snippet is ts, js, sh or console`);
  });
});

const fx = useRedis({ args: ['--databases', '64'] });

describe('the snippets run, against a real redis-server', () => {
  let work: string;
  let bin: string;
  let nextDb = 1;
  let typeErrors: Map<string, string[]>;

  before(async () => {
    const replica = await fx.another({ args: ['--databases', '64', '--replicaof', '127.0.0.1', String(fx.redis.port)] });
    const probe = replica.client();
    await until(async () => (await probe.info('replication')).includes('master_link_status:up'), 'the replica to sync', 10_000, 50);
    work = mkdtempSync(join(tmpdir(), 'delayq-snippets-'));
    writeFileSync(join(work, 'package.json'), JSON.stringify({ name: 'snippets', private: true, type: 'module' }));
    // `delayq` is this checkout, as npm would install it; other packages a snippet imports come
    // from this checkout's node_modules.
    const modules = join(work, 'node_modules');
    mkdirSync(modules);
    symlinkSync(root, join(modules, 'delayq'), 'dir');
    for (const name of imports()) {
      if (name === 'delayq' || !existsSync(join(root, 'node_modules', name))) continue;
      mkdirSync(dirname(join(modules, name)), { recursive: true });
      symlinkSync(join(root, 'node_modules', name), join(modules, name), 'dir');
    }
    // `delayq` and `npx delayq` run the built CLI.
    bin = join(work, '.bin');
    mkdirSync(bin);
    const cli = join(root, 'dist/src/cli/main.js');
    writeFileSync(join(bin, 'delayq'), `#!/bin/sh\nexec "${process.execPath}" "${cli}" "$@"\n`);
    writeFileSync(
      join(bin, 'npx'),
      '#!/bin/sh\n[ "$1" = delayq ] || { echo "snippets run npx delayq only, not npx $1" >&2; exit 127; }\nshift\nexec delayq "$@"\n',
    );
    chmodSync(join(bin, 'delayq'), 0o755);
    chmodSync(join(bin, 'npx'), 0o755);
    typeErrors = typeCheck();
  });

  after(async () => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /** Every package the snippets import by name. */
  function imports(): Set<string> {
    const names = new Set<string>();
    for (const b of snippets) {
      for (const m of b.code.matchAll(/(?:from\s+|import\s*\(\s*)['"]([^'"./][^'"]*)['"]/g)) {
        const spec = m[1]!;
        if (spec.startsWith('node:')) continue;
        names.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
    }
    return names;
  }

  /** The directory of a snippet, with its files and its code written out. */
  function dirOf(name: string): string {
    return join(work, name.replace(/[^\w.-]/g, '_'));
  }

  function fileOf(b: Block): string {
    const name = b.tag!.value;
    if (b.lang === 'js') return name.endsWith('.mjs') ? name : `${name}.mjs`;
    if (b.lang === 'ts') return `${name}.ts`;
    return `${name}.sh`;
  }

  /** Type-checks every TypeScript snippet against the built package (strict, as a user's project would). */
  function typeCheck(): Map<string, string[]> {
    const files: string[] = [];
    for (const b of snippets.filter((s) => s.lang === 'ts')) {
      const dir = dirOf(b.tag!.value);
      mkdirSync(dir, { recursive: true });
      const file = join(dir, fileOf(b));
      writeFileSync(file, b.code);
      files.push(file);
    }
    const program = ts.createProgram(files, {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2023.d.ts'],
      types: ['node'],
      typeRoots: [join(root, 'node_modules/@types')],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
    });
    const errors = new Map<string, string[]>();
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const file = d.file?.fileName ?? '(no file)';
      const where = d.file && d.start !== undefined ? `:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}` : '';
      errors.set(file, [...(errors.get(file) ?? []), `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`]);
    }
    return errors;
  }

  function newCtx(b: Block): Ctx {
    return { url: `${fx.redis.url}/${nextDb++}`, dir: dirOf(b.tag!.value) };
  }

  function prepare(b: Block, spec: Spec): string {
    const dir = dirOf(b.tag!.value);
    mkdirSync(dir, { recursive: true });
    for (const [name, content] of Object.entries(spec.files ?? {})) {
      writeFileSync(join(dir, name), typeof content === 'string' ? content : byName.get(content.snippet)!.code);
    }
    const file = join(dir, fileOf(b));
    if (b.lang === 'ts') {
      const js = ts.transpileModule(b.code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, fileName: file }).outputText;
      writeFileSync(file.replace(/\.ts$/, '.mjs'), js);
      return file.replace(/\.ts$/, '.mjs');
    }
    writeFileSync(file, b.code);
    return file;
  }

  /** Starts `cmd` in a process group of its own (so that a signal or a kill reaches a pipeline whole). */
  function launch(cmd: string[], ctx: Ctx): { child: ChildProcess; out: Run; done: Promise<Run> } {
    const child = spawn(cmd[0]!, cmd.slice(1), {
      cwd: ctx.dir,
      env: { ...process.env, REDIS_URL: ctx.url, PATH: `${bin}:${process.env.PATH ?? ''}`, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Run = { code: null, signal: null, stdout: '', stderr: '' };
    child.stdout!.on('data', (d) => (out.stdout += d));
    child.stderr!.on('data', (d) => (out.stderr += d));
    const done = new Promise<Run>((resolve) =>
      child.on('close', (code, signal) => {
        out.code = code;
        out.signal = signal;
        resolve(out);
      }),
    );
    return { child, out, done };
  }

  /** The run, or undefined when it did not end within `ms` (then its process group is killed). */
  async function within(done: Promise<Run>, child: ChildProcess, ms: number): Promise<Run | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    const r = await Promise.race([done, late]);
    clearTimeout(timer);
    if (r === undefined) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Gone meanwhile.
      }
      await done;
    }
    return r;
  }

  const describeRun = (r: Run) => `exit ${r.code ?? r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

  /** Runs a command that ends by itself: within `ms`, else it fails as hanging. */
  async function runToEnd(cmd: string[], ctx: Ctx, what: string, ms = 15_000): Promise<Run> {
    const { child, out, done } = launch(cmd, ctx);
    const r = await within(done, child, ms);
    assert.ok(r, `${what} did not end within ${ms / 1000} s (it hangs)\n${describeRun(out)}`);
    return r;
  }

  /** Runs a command until it is ready, sends `signal` to its group, and answers how it ended. */
  async function runUntilStopped(cmd: string[], ctx: Ctx, what: string, signal: NodeJS.Signals, spec: Spec): Promise<Run> {
    const { child, out, done } = launch(cmd, ctx);
    let ended: Run | undefined;
    void done.then((r) => (ended = r));
    const started = Date.now();
    for (;;) {
      if (ended) return ended;
      if (spec.ready ? await spec.ready(ctx, out) : Date.now() - started >= 1500) break;
      if (Date.now() - started > 15_000) {
        await within(done, child, 0);
        assert.fail(`${what} was not up within 15 s\n${describeRun(out)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    stop(child.pid!, signal);
    const r = await within(done, child, 10_000);
    assert.ok(r, `${what} did not exit within 10 s of ${signal}\n${describeRun(out)}`);
    return r;
  }

  /**
   * Sends `signal` to what runs in the group of `leader`, as a terminal sends Ctrl-C to the job
   * in front: every process of it, but not a shell that only waits for its commands (it would
   * die of it, where an interactive shell ignores it).
   */
  function stop(leader: number, signal: NodeJS.Signals): void {
    const members = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .flatMap((pid) => {
        try {
          // pid (comm) state ppid pgrp …: comm may hold spaces, so read after its last ')'.
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          const [, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
          return Number(pgrp) === leader ? [{ pid: Number(pid), comm }] : [];
        } catch {
          return [];
        }
      });
    const targets = members.filter((m) => !(m.pid === leader && m.comm === 'bash'));
    for (const m of targets.length > 0 ? targets : members) {
      try {
        process.kill(m.pid, signal);
      } catch {
        // Ended meanwhile.
      }
    }
  }

  const heldElsewhere = (r: Run) => /EADDRINUSE|already in use/i.test(r.stderr);

  for (const b of snippets) {
    const name = b.tag!.value;
    const spec = SPECS[name] ?? {};
    test(`${name} (${b.where})`, async (t) => {
      if (spec.port !== undefined && (await canConnect(spec.port))) {
        t.skip(`port ${spec.port} is taken by another process`);
        return;
      }
      const ctx = newCtx(b);
      const file = prepare(b, spec);
      await spec.before?.(ctx);
      if (b.lang === 'ts') {
        const errors = typeErrors.get(join(ctx.dir, fileOf(b))) ?? [];
        assert.deepEqual(errors, [], `${b.where} type-checks`);
      }

      if (b.info === 'console') await transcript(b, ctx);
      else if (spec.lines) await lineByLine(b, ctx, spec.lines.untilStopped);
      else {
        const cmd = b.lang === 'sh' ? ['bash', '-e', '-o', 'pipefail', file] : [process.execPath, file];
        for (const signal of spec.signals ?? [undefined]) {
          const r = signal ? await runUntilStopped(cmd, ctx, b.where, signal, spec) : await runToEnd(cmd, ctx, b.where);
          if (spec.port !== undefined && heldElsewhere(r)) {
            t.skip(`port ${spec.port} was taken by another process`);
            return;
          }
          // Stopped by its signal, a script must end by itself (its handlers close what it opened).
          assert.equal(r.code, 0, `${b.where}${signal ? ` on ${signal}` : ''}: ${describeRun(r)}`);
          await spec.check?.(ctx, r);
        }
        return;
      }
      await spec.check?.(ctx, { code: 0, signal: null, stdout: '', stderr: '' });
    });
  }

  /** `$ command` lines: each runs, and prints exactly the lines that follow it. */
  async function transcript(b: Block, ctx: Ctx): Promise<void> {
    const steps: { cmd: string; expected: string[] }[] = [];
    for (const line of b.code.replace(/\n$/, '').split('\n')) {
      if (line.startsWith('$ ')) steps.push({ cmd: line.slice(2), expected: [] });
      else steps.at(-1)!.expected.push(line);
    }
    for (const { cmd, expected } of steps) {
      const r = await runToEnd(['bash', '-c', cmd], ctx, `${b.where}: ${cmd}`);
      assert.equal(r.stdout + r.stderr, expected.map((l) => `${l}\n`).join(''), `${b.where}: what \`${cmd}\` prints`);
    }
  }

  /** A list of commands: each line on its own; those that run until stopped get SIGTERM once up. */
  async function lineByLine(b: Block, ctx: Ctx, untilStopped: RegExp): Promise<void> {
    const lines = b.code.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
    for (const line of lines) {
      const what = `${b.where}: ${line}`;
      if (untilStopped.test(line)) {
        const r = await runUntilStopped(['bash', '-o', 'pipefail', '-c', line], ctx, what, 'SIGTERM', {});
        // A command that runs until stopped ends on SIGTERM, by itself or by the signal's default action.
        assert.ok(r.code === 0 || r.signal === 'SIGTERM' || r.code === 143, `${what}: ${describeRun(r)}`);
        assert.doesNotMatch(r.stderr, /^error:/m, `${what}: ${describeRun(r)}`);
      } else {
        const r = await runToEnd(['bash', '-o', 'pipefail', '-c', line], ctx, what);
        assert.equal(r.code, 0, `${what}: ${describeRun(r)}`);
      }
    }
  }
});
