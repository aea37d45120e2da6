import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';

const RUN = fileURLToPath(new URL('../bench/run.js', import.meta.url));

describe('benchmark smoke run', () => {
  test('--quick runs every scenario for every system and yields every figure (no timing is asserted)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [RUN, '--quick', '--json'], { timeout: 170_000, maxBuffer: 64 * 1024 * 1024 });
    const { results } = JSON.parse(stdout) as { results: Record<string, unknown>[] };
    assert.deepEqual(
      results.map((r) => r.system),
      ['delayq', 'bullmq', 'naive10', 'naive1000'],
    );
    for (const r of results) {
      const load = r.load as { p99: number; n: number };
      assert.equal(load.n, 500, `${String(r.system)}: every job ran`);
      assert.ok(Number.isFinite(load.p99));
      assert.ok(Number.isFinite((r.low as { p99: number }).p99));
      const d = r.dispatch as { perSec: number; redisCpuUsPerJob: number; workerCpuUsPerJob: number };
      assert.ok(d.perSec > 0 && d.redisCpuUsPerJob >= 0 && d.workerCpuUsPerJob > 0);
      const e = r.enqueue as { perSec: number; redisCpuUsPerJob: number; producerCpuUsPerJob: number };
      assert.ok(e.perSec > 0 && e.redisCpuUsPerJob >= 0 && e.producerCpuUsPerJob > 0);
      const cost = r.cost as { processCommandsPerJob: number; bytesPerPendingJob: number; idleCommandsPerSec: number };
      assert.ok(cost.processCommandsPerJob > 0 && cost.bytesPerPendingJob > 0 && cost.idleCommandsPerSec >= 0);
      if (r.system !== 'naive1000') assert.ok(Number.isFinite((r.scale as { p99: number }).p99));
    }
  });
});
