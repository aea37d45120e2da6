/**
 * `delayq serve` and `delayq worker` stopped the moment they say they are up, as a supervisor
 * or a test does: the SIGTERM must find the graceful close in place. A process that announces
 * itself first and takes the signals after can be descheduled in between (a busy machine), and
 * the signal's default action kills it: exit 143, a worker's jobs left leased. The docs'
 * `delayq serve` snippet failed so now and then under load.
 *
 * To make "descheduled right after the announcement" happen every time, each child runs with a
 * preload that holds the process for 400 ms after it writes its announcement.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { freePort } from '../helpers/redis-server.js';
import { until, within } from '../helpers/wait.js';
import { start } from './run-cli.js';

const fx = useRedis();
const HANDLER = fileURLToPath(new URL('./fixtures/record-handler.js', import.meta.url));

/** A preload that sleeps 400 ms (blocking) after any write of stdout or stderr holding `pattern`. */
function holdAfter(pattern: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'delayq-hold-'));
  const file = join(dir, 'hold.cjs');
  writeFileSync(
    file,
    `const pattern = new RegExp(${JSON.stringify(pattern)});
for (const stream of [process.stdout, process.stderr]) {
  const write = stream.write.bind(stream);
  stream.write = (chunk, ...rest) => {
    const out = write(chunk, ...rest);
    if (pattern.test(String(chunk))) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400);
    return out;
  };
}
`,
  );
  return file;
}

test('serve: a SIGTERM the moment "listening" is out closes it gracefully (exit 0)', async () => {
  const port = await freePort();
  const server = start(['serve', '--redis', fx.redis.url, '--port', String(port), '--json'], {
    env: { NODE_OPTIONS: `--require ${holdAfter('"listening"')}` },
  });
  let stdout = '';
  server.child.stdout!.on('data', (d) => (stdout += d));
  await until(() => stdout.includes('"listening"'), 'the listening line');
  server.child.kill('SIGTERM');
  const r = await within(server.done, 10_000, 'serve to stop');
  assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
});

test('worker: a SIGTERM the moment "started" is out closes it gracefully (exit 0, "stopped")', async () => {
  const q = uniqueName('sigready');
  const queue = new Queue(q, { connection: fx.redis.url });
  const dir = mkdtempSync(join(tmpdir(), 'delayq-sigready-'));
  const record = join(dir, 'done.log');
  writeFileSync(record, '');
  try {
    const w = start(['--redis', fx.redis.url, '--queue', q, 'worker', '--handler', HANDLER, '--json'], {
      env: { NODE_OPTIONS: `--require ${holdAfter('"started"')}`, DELAYQ_TEST_RECORD: record },
    });
    let stdout = '';
    w.child.stdout!.on('data', (d) => (stdout += d));
    await until(() => stdout.includes('"started"'), 'the started line');
    w.child.kill('SIGTERM');
    const r = await within(w.done, 10_000, 'the worker to stop');
    assert.equal(r.code, 0, `exit ${r.code}: ${r.stderr}`);
    assert.match(r.stdout, /"event":"stopped"/);
    assert.deepEqual(await queue.workers(), [], 'its registration went with the close');
  } finally {
    await queue.close();
  }
});
