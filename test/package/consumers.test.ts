/**
 * The packed package from a user's side: what it holds, a CommonJS consumer that require()s it,
 * a strict TypeScript consumer (skipLibCheck: false) without the optional peers, and the README's
 * order-timeout snippet compiled and run in a consumer project on the embedded store, and the
 * published protocol as this build makes it (its scripts are built, not kept in git). No Redis.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parsePage } from '../docs/snippets.js';
import { protocolManifest, protocolScript } from '../../src/store/redis/protocol.js';
import { SCRIPT_NAMES } from '../../src/store/redis/wire.js';
import { packedProject, root, type PackedProject } from './packed.js';

const run = promisify(execFile);
let project: PackedProject;

before(() => {
  // typescript and @types/node only: what a fresh TypeScript project has beside delayq.
  project = packedProject(['typescript', '@types/node']);
});
after(() => project?.remove());

/** Runs a command in the consumer project; on failure the error carries its output. */
async function inProject(file: string, args: string[], timeout = 30_000): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd: project.dir, timeout, encoding: 'utf8' });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${[file, ...args].join(' ')} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

describe('the packed package', () => {
  test('holds what a user needs and nothing built for us', () => {
    const files = project.files;
    for (const f of [
      'package.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/cli/main.js',
      'dist/src/server/index.js',
      // The dashboard's pages ship ready to serve: no build step for the user.
      'dist/src/server/public/index.html',
    ]) {
      assert.ok(files.includes(f), `${f} is in the package`);
    }
    assert.deepEqual(
      files.filter((f) => f.startsWith('dist/') && !f.startsWith('dist/src/')),
      [],
      'no compiled tests or benchmark',
    );
    // docs/protocol.md tells clients in other languages where the published protocol is.
    assert.match(readFileSync(join(project.pkgDir, 'docs/protocol.md'), 'utf8'), /node_modules\/delayq\/protocol/);
  });

  test('ships the published protocol as the build makes it: the manifest and every script, nothing else', () => {
    // The scripts are not in git: the build writes them (npm pack builds first), so what ships is
    // what this build's protocol.ts makes, byte for byte.
    assert.deepEqual(
      project.files.filter((f) => f.startsWith('protocol/')).sort(),
      ['protocol/manifest.json', ...SCRIPT_NAMES.map((n) => `protocol/scripts/${n}.lua`)].sort(),
    );
    const shipped = (f: string) => readFileSync(join(project.pkgDir, 'protocol', f), 'utf8');
    assert.deepEqual(JSON.parse(shipped('manifest.json')), JSON.parse(JSON.stringify(protocolManifest())), 'manifest.json');
    for (const name of SCRIPT_NAMES) assert.equal(shipped(`scripts/${name}.lua`), protocolScript(name), `scripts/${name}.lua`);
  });

  test('every source map points at sources that ship', () => {
    const maps = project.files.filter((f) => f.endsWith('.map'));
    assert.ok(maps.length > 0);
    for (const m of maps) {
      const { sources } = JSON.parse(readFileSync(join(project.pkgDir, m), 'utf8')) as { sources: string[] };
      for (const s of sources) {
        const target = new URL(s, `file:///${m}`).pathname.slice(1);
        assert.ok(project.files.includes(target), `${m} points at ${s}, which ships`);
      }
    }
  });

  test('no type declaration imports an optional peer', () => {
    for (const f of project.files.filter((x) => x.endsWith('.d.ts'))) {
      const text = readFileSync(join(project.pkgDir, f), 'utf8');
      assert.doesNotMatch(text, /(from|import\()\s*['"]@opentelemetry\//, f);
    }
  });

  test('the CLI runs from the package, and `delayq bench` says where the benchmark is', async () => {
    const main = join(project.pkgDir, 'dist/src/cli/main.js');
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    assert.equal((await inProject(process.execPath, [main, '--version'])).trim(), version);
    await assert.rejects(inProject(process.execPath, [main, 'bench']), /git clone https:\/\/github\.com\/delayq\/delayq/);
  });

  test('require() from a CommonJS file: a Queue on memory:// adds a job and counts it, without the optional peer; the dashboard answers', async () => {
    writeFileSync(
      join(project.dir, 'consumer.cjs'),
      `'use strict';
const { Queue, VERSION } = require('delayq');
const { createDashboard } = require('delayq/dashboard');
for (const peer of ['@opentelemetry/api']) {
  let found = true;
  try { require.resolve(peer); } catch { found = false; }
  if (found) throw new Error(peer + ' is installed: this check needs it absent');
}
let tracingError = '';
try { new Queue('traced', { connection: 'memory://', tracing: true }); } catch (err) { tracingError = err.message; }
(async () => {
  const queue = new Queue('orders', { connection: 'memory://' });
  const added = await queue.add({ orderId: '123' }, { id: 'order:123', delay: 60000 });
  const again = await queue.add({ orderId: '123' }, { id: 'order:123', delay: 60000 });
  const stats = await queue.stats();
  await queue.close();
  const dashboard = createDashboard({ connection: 'memory://' });
  const page = await dashboard.fetch(new Request('http://127.0.0.1/'));
  const job = await dashboard.fetch(new Request('http://127.0.0.1/api/queues/orders/jobs/order:123'));
  if (page.status !== 200 || (await job.json()).id !== 'order:123') throw new Error('the dashboard did not answer');
  await dashboard.close();
  console.log(JSON.stringify({ VERSION, added: added.added, again: again.added, scheduled: stats.scheduled, tracingError }));
})().catch((err) => { console.error(err); process.exit(1); });
`,
    );
    const out = await inProject(process.execPath, ['consumer.cjs']);
    const r = JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
    const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    assert.deepEqual({ ...r, tracingError: undefined }, { VERSION: version, added: true, again: false, scheduled: 1, tracingError: undefined });
    assert.match(String(r.tracingError), /npm install @opentelemetry\/api/, 'tracing without the peer says what to install');
  });

  test('a strict TypeScript project compiles against the published types (skipLibCheck: false, no optional peers)', async () => {
    writeFileSync(join(project.dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    writeFileSync(
      join(project.dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          skipLibCheck: false,
          noEmit: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          noImplicitOverride: true,
          noPropertyAccessFromIndexSignature: true,
          verbatimModuleSyntax: true,
        },
        files: ['consumer.ts', 'consumer-cjs.cts'],
      }),
    );
    writeFileSync(
      join(project.dir, 'consumer.ts'),
      `import { DelayqMetrics, Queue, ValidationError, Worker, type Job, type MetricsRegistry, type QueueStats, type TracerLike } from 'delayq';
import { createDashboard, type AuthorizeHook } from 'delayq/dashboard';

interface Order { orderId: string }
const queue = new Queue<Order>('orders', { connection: 'memory://' });
const { added } = await queue.add({ orderId: '123' }, { id: 'order:123', delay: 30 * 60_000 });
const stats: QueueStats = await queue.stats();
// @ts-expect-error data is typed
await queue.add({ orderId: 123 });
const worker = new Worker<Order>('orders', async (job: Job<Order>) => { job.data.orderId.toUpperCase(); }, { connection: 'memory://', concurrency: 2 });
const tracer: TracerLike = { startSpan: () => ({ end() {}, recordException() {}, setStatus() { return undefined; } }) };
const traced = new Queue<Order>('traced', { connection: 'memory://', tracing: tracer });
const registry: MetricsRegistry = { contentType: 'text/plain', metrics: async () => '' };
const create: (opts?: { registry?: MetricsRegistry }) => Promise<DelayqMetrics> = DelayqMetrics.create;
const err: boolean = new Error('x') instanceof ValidationError;
console.log(added, stats.scheduled, registry.contentType, typeof create, err);
const authorize: AuthorizeHook = (req, action) => action === 'read' || req.headers.get('x-role') === 'ops';
const dashboard = createDashboard({ connection: 'memory://', basePath: '/admin/queues', authorize, readOnly: false });
await Promise.all([worker.close(), traced.close(), queue.close(), dashboard.close()]);
`,
    );
    writeFileSync(
      join(project.dir, 'consumer-cjs.cts'),
      `import delayq = require('delayq');
const queue: delayq.Queue<{ n: number }> = new delayq.Queue<{ n: number }>('cjs', { connection: 'memory://' });
void queue.add({ n: 1 });
export {};
`,
    );
    const tsc = join(project.dir, 'node_modules/typescript/bin/tsc');
    await inProject(process.execPath, [tsc, '-p', 'tsconfig.json'], 60_000);
  });

  test("the README's order-timeout snippet, compiled in a consumer project and run on the embedded store (REDIS_URL=memory://): the paid order is never cancelled, an unpaid one is, and SIGTERM ends the process", async () => {
    const readme = parsePage('README.md', readFileSync(join(root, 'README.md'), 'utf8'));
    const block = readme.blocks.find((b) => b.tag?.kind === 'snippet' && b.tag.value === 'readme-order-timeout');
    assert.ok(block, 'the README has the readme-order-timeout snippet');
    writeFileSync(join(project.dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    writeFileSync(join(project.dir, 'order-timeout.ts'), block.code);
    writeFileSync(
      join(project.dir, 'tsconfig.snippet.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023'],
          types: ['node'],
          strict: true,
          skipLibCheck: false,
          outDir: 'out',
        },
        files: ['order-timeout.ts'],
      }),
    );
    await inProject(process.execPath, [join(project.dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.snippet.json'], 60_000);
    // The snippet as the app; beside it, in the same process (one embedded store), what a person
    // would then do: look at the paid order, place an unpaid one, and deploy (SIGTERM).
    writeFileSync(
      join(project.dir, 'run-order-timeout.mjs'),
      `await import('./out/order-timeout.js');
const { Queue } = await import('delayq');
const q = new Queue('order-timeouts');
const until = async (check, what) => {
  for (const deadline = Date.now() + 10000; !(await check()); await new Promise((r) => setTimeout(r, 5))) {
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
  }
};
const paid = await q.get('order:123');
await until(async () => (await q.workers()).length === 1, 'the worker to be live');
await q.add({ orderId: '456' }, { id: 'order:456' });
await until(async () => (await q.get('order:456')) === null, 'the unpaid order to be handled');
const live = (await q.workers()).length;
await q.close();
console.log(JSON.stringify({ paid, live }));
process.kill(process.pid, 'SIGTERM');
`,
    );
    const { stdout, stderr } = await run(process.execPath, ['run-order-timeout.mjs'], {
      cwd: project.dir,
      timeout: 30_000,
      encoding: 'utf8',
      env: { ...process.env, REDIS_URL: 'memory://' },
    });
    assert.equal(stderr, '');
    const lines = stdout.trim().split('\n');
    assert.deepEqual(lines, ['order 456 cancelled', JSON.stringify({ paid: null, live: 1 })], 'order:123 was cancelled before it ran; order:456 ran once');
  });
});
