import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { parseRedisBenchmark } from '../bench/limits.js';

const RUN = fileURLToPath(new URL('../bench/run.js', import.meta.url));

interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}
interface Bench {
  machine: { repeat: number };
  limits: { zaddPerSec?: number; evalshaPerSec?: number }[];
  results: { system: string; runs: Record<string, unknown>[] }[];
  table: { label: string; values: Record<string, Spread | undefined> }[];
}

async function bench(args: string[]): Promise<Bench> {
  const { stdout } = await promisify(execFile)(process.execPath, [RUN, ...args, '--json'], { timeout: 170_000, maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as Bench;
}

/** The rows the table must have (their values are timings or depend on redis-benchmark: never asserted). */
const ROWS = [
  /^server limit: ZADD, redis-benchmark /,
  /^server limit: EVALSHA of return 1, redis-benchmark /,
  /^dispatch as a share of the EVALSHA limit$/,
  /^Redis CPU per job, dispatch/,
  /^worker process CPU per job, dispatch$/,
  /^dispatch with ack, 2 worker processes$/,
  /^workers’ CPU per job \(summed\), dispatch, 2 workers$/,
  /^Redis CPU per job, bulk enqueue$/,
  /^producer process CPU per job, bulk enqueue$/,
  /^bytes per pending job \(used_memory Δ \/ 2k, id job-N, 60 B payload\)$/,
  /^ {2}of which keyspace/,
  /^ {2}keys per pending job/,
  /^ {2}plus expiring keys/,
];

describe('benchmark smoke run', () => {
  test('--quick runs every scenario for every system and yields every figure (no timing is asserted)', async () => {
    const { results, table, limits } = await bench(['--quick']);
    assert.deepEqual(
      results.map((r) => r.system),
      ['delayq', 'bullmq', 'naive10', 'naive1000'],
    );
    assert.equal(limits.length, 1);
    for (const { system, runs } of results) {
      assert.equal(runs.length, 1);
      const r = runs[0]!;
      const load = r.load as { p99: number; n: number };
      assert.equal(load.n, 500, `${system}: every job ran`);
      assert.ok(Number.isFinite(load.p99));
      assert.ok(Number.isFinite((r.low as { p99: number }).p99));
      const d = r.dispatch as { perSec: number; redisCpuUsPerJob: number; workerCpuUsPerJob: number };
      assert.ok(d.perSec > 0 && d.redisCpuUsPerJob >= 0 && d.workerCpuUsPerJob > 0);
      const d2 = r.dispatch2 as { perSec: number; redisCpuUsPerJob: number; workerCpuUsPerJob: number };
      assert.ok(d2.perSec > 0 && d2.redisCpuUsPerJob >= 0 && d2.workerCpuUsPerJob > 0, `${system}: two workers dispatched`);
      const e = r.enqueue as { perSec: number; redisCpuUsPerJob: number; producerCpuUsPerJob: number };
      assert.ok(e.perSec > 0 && e.redisCpuUsPerJob >= 0 && e.producerCpuUsPerJob > 0);
      const cost = r.cost as { processCommandsPerJob: number; bytesPerPendingJob: number; keysPerPendingJob: number; idleCommandsPerSec: number };
      assert.ok(cost.processCommandsPerJob > 0 && cost.bytesPerPendingJob > 0 && cost.keysPerPendingJob >= 0 && cost.idleCommandsPerSec >= 0);
      if (system !== 'naive1000') assert.ok(Number.isFinite((r.scale as { p99: number }).p99));
    }
    for (const row of ROWS)
      assert.ok(
        table.some((t) => row.test(t.label)),
        `a row matching ${row}`,
      );
    // Every system's figure is in every row the system ran (the server limits only with redis-benchmark installed).
    const bytes = table.find((t) => t.label.startsWith('bytes per pending job'))!;
    for (const { system } of results) assert.equal(bytes.values[system]?.n, 1);
  });

  test('--repeat keeps every run and the table has each figure over all of them', async () => {
    const { machine, results, table } = await bench(['--quick', '--only', 'enqueue', '--systems', 'delayq,naive10', '--repeat', '3']);
    assert.equal(machine.repeat, 3);
    for (const { runs } of results) {
      assert.equal(runs.length, 3);
      for (const run of runs) assert.ok((run.enqueue as { perSec: number }).perSec > 0);
    }
    const row = table.find((t) => t.label === 'bulk enqueue')!;
    for (const { system } of results) {
      const s = row.values[system]!;
      assert.equal(s.n, 3);
      assert.ok(s.min <= s.median && s.median <= s.max);
    }
  });

  test('--cluster --quick runs 1 and 3 shards on a real Redis Cluster and yields every figure (the jobs hash marker is no job)', async () => {
    const { results, table } = (await bench(['--cluster', '--quick'])) as unknown as {
      results: { shards: number; runs: { dispatch: { jobs: number; perSec: number; duplicates: number; nodes: unknown[] } }[] }[];
      table: { label: string; values: Record<string, Spread | undefined> }[];
    };
    assert.deepEqual(
      results.map((r) => r.shards),
      [1, 3],
    );
    for (const { shards, runs } of results) {
      for (const { dispatch } of runs) {
        assert.ok(dispatch.perSec > 0, `${shards} shard(s): dispatch ran`);
        assert.equal(dispatch.duplicates, 0);
        assert.equal(dispatch.nodes.length, 3);
      }
    }
    for (const label of [/^dispatch, /, /^Redis CPU per job of the queue, busiest node$/, /^bulk enqueue of the backlog/]) {
      const row = table.find((t) => label.test(t.label));
      assert.ok(row, `row ${label}`);
      for (const shards of ['1', '3']) assert.ok(row.values[shards] !== undefined, `${row.label}: ${shards} shard(s)`);
    }
  });

  test("redis-benchmark's --csv and -q outputs both parse; anything else is no figure", () => {
    const csv =
      '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"\n' +
      '"evalsha e0e1f9fabfc9d4800c877a703b823ac0578ff8db 0","862344.88","3.470","0.664","3.439","5.511","7.279","7.719"\n';
    assert.equal(parseRedisBenchmark(csv), 862344.88);
    const quiet =
      'zadd k __rand_int__ m:__rand_int__: rps=0.0 (overall: 0.0) avg_msec=-nan (overall: -nan)\r' +
      'zadd k __rand_int__ m:__rand_int__: rps=373545.8 (overall: 372063.5) avg_msec=8.066 (overall: 8.066)\r' +
      'zadd k __rand_int__ m:__rand_int__: 376060.16 requests per second, p50=8.247 msec\n';
    assert.equal(parseRedisBenchmark(quiet), 376060.16);
    assert.equal(parseRedisBenchmark(''), undefined);
    assert.equal(parseRedisBenchmark('"test","rps"\nError from server: NOSCRIPT No matching script.\n'), undefined);
  });
});

describe('npm run bench -- --help', () => {
  test('prints the options and exits 0; a mistyped option is named, exit 64, no stack trace', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [RUN, '--help']);
    assert.match(stdout, /^npm run bench -- \[options\]/);
    assert.match(stdout, /--repeat <n>/);
    const bad = await promisify(execFile)(process.execPath, [RUN, '--qiuck']).then(
      () => assert.fail('a mistyped option was taken'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(bad.code, 64);
    assert.match(bad.stderr, /^error: Unknown option '--qiuck'/);
    assert.doesNotMatch(bad.stderr, /\n\s+at /);
  });
});
