/**
 * A parent whose Node flags a thread cannot take (per-process ones: Node 24's test runner gives
 * its children --secure-heap, --use-largepages, --tls-cipher-list…) still runs isolated handlers
 * in threads: the pool leaves the refused flags out. Run in a child process started with such
 * flags, on every Node the suite runs on.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { handlerModule } from '../helpers/isolation.js';

const POOL = fileURLToPath(new URL('../../src/worker/isolation/pool.js', import.meta.url));

test('a thread slot starts under per-process Node flags (--secure-heap, --use-largepages), leaving them out', () => {
  const module = handlerModule('flags-handler', 'export default (job) => ({ doubled: job.data * 2 });');
  const script = handlerModule(
    'flags-parent',
    `import { isolatedHandler } from ${JSON.stringify(POOL)};
const pool = isolatedHandler(${JSON.stringify(module)}, { isolation: 'thread', size: 1 });
const job = { queue: 'q', id: 'j', data: 21, attempt: 1, maxAttempts: 1, dueAtMs: 0, priority: 0, group: undefined, name: undefined,
  timeoutMs: undefined, createdAtMs: 0, token: 't', signal: new AbortController().signal, snooze() { throw new Error('no'); },
  progress: async () => {}, log: async () => {}, extendLease: async () => {} };
try {
  console.log(JSON.stringify(await pool.handler(job)));
} finally {
  await pool.close();
}`,
  );
  const r = spawnSync(process.execPath, ['--secure-heap=0', '--use-largepages=off', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout.trim()), { doubled: 42 });
});
