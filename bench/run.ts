/**
 * npm run bench: delayq beside BullMQ and the seeds' naive poller (10 ms and 1000 ms), one
 * after another on one redis-server of its own, each worker in a child process. Prints one
 * table with the ratio delayq / BullMQ and writes JSON and an SVG chart under bench/results/.
 *
 * Options: --quick (tiny sizes, the smoke test), --only <scenario,…> (limits, load, low,
 * dispatch, dispatch2 (two worker processes), enqueue, cost, scale), --systems <name,…>, --repeat <n> (each scenario n times per
 * system: the table shows the median and min–max, the JSON every run), --json (print the
 * results as JSON on stdout), --cluster (the sharded-queue benchmark on a local Redis Cluster
 * instead: bench/cluster.ts, which takes --quick, --repeat, --shards and --json), --groups
 * (groups and concurrency limits: bench/groups.ts), --rates (rate limits and debounce beside
 * BullMQ: bench/rates.ts; both take --quick, --repeat and --json), --waits (addAndWait beside
 * BullMQ's waitUntilFinished: bench/waits.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';
import { type Limits, physicalLimits } from './limits.js';
import { latenessSvg, type RunResult, summary, table, type SystemResult } from './report.js';
import { cost, dispatch, dispatchWorkers, enqueue, FULL, lateness, QUICK } from './scenarios.js';
import { systems } from './systems/index.js';

const USAGE = `npm run bench -- [options]: delayq beside BullMQ and a naive poller on a redis-server of its own
  --quick              tiny sizes: a smoke run
  --only <scenarios>   limits,load,low,dispatch,dispatch2,enqueue,cost,scale
  --systems <names>    delayq,bullmq,naive10,naive1000
  --repeat <n>         each scenario n times per system (median and min-max)
  --json               the results as JSON on stdout
  --cluster            the sharded-queue benchmark on a local Redis Cluster (takes --quick, --repeat, --shards, --json)
  --groups             groups and concurrency limits beside the ungrouped queue (takes --quick, --repeat, --json)
  --rates              rate limits and debounce, delayq beside BullMQ (takes --quick, --repeat, --json)
  --flows              fan-out / fan-in, delayq beside BullMQ's FlowProducer (takes --quick, --repeat, --json)
  --waits              add and wait for the result: addAndWait beside BullMQ's waitUntilFinished (takes --quick, --repeat, --json)
  --help               this text`;

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}

// npm run bench -- --cluster [--quick] [--repeat n]: 1 shard beside 3 shards on a local Redis Cluster (bench/cluster.ts).
// npm run bench -- --groups [--quick] [--repeat n]: groups and concurrency limits (bench/groups.ts).
if (process.argv.includes('--groups')) {
  const { runGroupsBench } = await import('./groups.js');
  await runGroupsBench(process.argv.slice(2));
  process.exit(0);
}

// npm run bench -- --rates [--quick] [--repeat n]: rate limits and debounce beside BullMQ (bench/rates.ts).
if (process.argv.includes('--rates')) {
  const { runRatesBench } = await import('./rates.js');
  await runRatesBench(process.argv.slice(2));
  process.exit(0);
}

// npm run bench -- --flows [--quick] [--repeat n]: fan-out / fan-in beside BullMQ's FlowProducer (bench/flows.ts).
if (process.argv.includes('--flows')) {
  const { runFlowsBench } = await import('./flows.js');
  await runFlowsBench(process.argv.slice(2));
  process.exit(0);
}

// npm run bench -- --waits [--quick] [--repeat n]: addAndWait beside BullMQ's waitUntilFinished (bench/waits.ts).
if (process.argv.includes('--waits')) {
  const { runWaitsBench } = await import('./waits.js');
  await runWaitsBench(process.argv.slice(2));
  process.exit(0);
}

if (process.argv.includes('--cluster')) {
  const { runClusterBench } = await import('./cluster.js');
  await runClusterBench(process.argv.slice(2));
  process.exit(0);
}

const SCENARIOS = ['limits', 'load', 'low', 'dispatch', 'dispatch2', 'enqueue', 'cost', 'scale'] as const;

function parseOptions() {
  try {
    return parseArgs({
      options: {
        quick: { type: 'boolean', default: false },
        only: { type: 'string' },
        systems: { type: 'string' },
        repeat: { type: 'string', default: '1' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    // A mistyped option: say which, and how to ask for the list (not a stack trace).
    console.error(`error: ${(err as Error).message}\n${USAGE}`);
    process.exit(64);
  }
}
const { values } = parseOptions();
const profile = values.quick ? QUICK : FULL;
const only = new Set(values.only ? values.only.split(',') : SCENARIOS);
for (const s of only) if (!SCENARIOS.includes(s as never)) throw new Error(`unknown scenario ${s} (known: ${SCENARIOS.join(', ')})`);
const chosen = systems().filter((s) => !values.systems || values.systems.split(',').includes(s.name));
if (chosen.length === 0) throw new Error(`no such systems: ${values.systems}`);
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number ≥ 1 (got ${values.repeat})`);

const progress = (text: string) => process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[2K' : ''}${text}${process.stderr.isTTY ? '' : '\n'}`);

// FLUSHALL and DEL free synchronously, so memory is measured with nothing left of earlier runs.
const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no', '--lazyfree-lazy-user-flush', 'no', '--lazyfree-lazy-user-del', 'no'] });
const admin = redis.client();
const results: SystemResult[] = [];
const limits: Limits[] = [];
const started = Date.now();
const elapsed = () => `[${((Date.now() - started) / 1000).toFixed(0)} s]`;
const times = (k: number) => (repeat > 1 ? ` (${k + 1}/${repeat})` : '');
try {
  if (only.has('limits')) {
    for (let k = 0; k < repeat; k++) {
      progress(`${elapsed()} redis-benchmark: ZADD and EVALSHA, pipelined${times(k)}…`);
      await admin.flushall();
      limits.push(await physicalLimits(redis.url, admin, profile.limitRequests));
    }
  }
  for (const system of chosen) {
    const r: SystemResult = { system: system.name, runs: Array.from({ length: repeat }, () => ({})) };
    results.push(r);
    // Each scenario runs `repeat` times in a row for this system; every run is kept.
    const step = async <K extends keyof RunResult>(key: K, scenario: (typeof SCENARIOS)[number], what: string, fn: () => Promise<RunResult[K]>) => {
      if (!only.has(scenario)) return;
      // The 1 s poller cannot be on time by design; its scale run only repeats that.
      if (scenario === 'scale' && system.name === 'naive1000') return;
      for (let k = 0; k < repeat; k++) {
        progress(`${elapsed()} ${system.name}: ${what}${times(k)}…`);
        await admin.flushall();
        r.runs[k]![key] = await fn();
      }
    };
    await step('load', 'load', `lateness, ${profile.loadJobs} jobs over ${profile.loadWindowMs} ms`, () =>
      lateness(system, redis.url, profile.loadJobs, profile.loadWindowMs, { leadMs: profile.leadMs, keepSamples: true, cpu: admin }),
    );
    await step('low', 'low', `lateness, ${profile.lowJobs} jobs over ${profile.lowWindowMs} ms`, () =>
      lateness(system, redis.url, profile.lowJobs, profile.lowWindowMs, { leadMs: profile.leadMs, cpu: admin }),
    );
    await step('dispatch', 'dispatch', `max dispatch, ${profile.dispatchJobs} jobs due now`, () => dispatch(system, redis.url, admin, profile.dispatchJobs));
    await step('dispatch2', 'dispatch2', `max dispatch, ${profile.dispatchJobs} jobs due at once, 2 worker processes`, () =>
      dispatchWorkers(system, redis.url, admin, profile.dispatchJobs, 2, profile.leadMs),
    );
    await step('enqueue', 'enqueue', `bulk enqueue, ${profile.enqueueJobs} jobs`, () => enqueue(system, redis.url, admin, profile.enqueueJobs));
    await step('cost', 'cost', 'commands per job, memory per job, idle commands', () => cost(system, redis.url, admin, profile));
    await step('scale', 'scale', `${profile.scalePending} pending + ${profile.scaleJobs} falling due`, () =>
      lateness(system, redis.url, profile.scaleJobs, profile.scaleWindowMs, { leadMs: profile.leadMs, pending: profile.scalePending, admin }),
    );
  }
} finally {
  admin.disconnect();
  await redis.stop();
}
progress(`done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);

const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const machine = { node: process.version, cpus: (await import('node:os')).cpus().length, profile: values.quick ? 'quick' : 'full', repeat };
const rows = summary(results, limits);
// Every run is kept (lateness samples only in the chart); `table` has each row's median and spread.
const forJson = results.map((r) => ({ ...r, runs: r.runs.map((run) => ({ ...run, load: run.load && { ...run.load, samples: undefined } })) }));
const json = JSON.stringify({ machine, limits, results: forJson, table: rows }, null, 2);
writeFileSync(`${dir}${stamp}.json`, json);
writeFileSync(`${dir}latest.json`, json);
writeFileSync(`${dir}lateness.svg`, latenessSvg(results, `Lateness CDF: ${profile.loadJobs} jobs due over ${profile.loadWindowMs} ms`));
if (values.json) process.stdout.write(`${JSON.stringify({ machine, limits, results: forJson, table: rows })}\n`);
else process.stdout.write(`\n${table(results, limits)}\n\nresults: bench/results/latest.json, bench/results/lateness.svg\n`);
