/**
 * npm run bench: delayq beside BullMQ and the seeds' naive poller (10 ms and 1000 ms), one
 * after another on one redis-server of its own, each worker in a child process. Prints one
 * table with the ratio delayq / BullMQ and writes JSON and an SVG chart under bench/results/.
 *
 * Options: --quick (tiny sizes, the smoke test), --only <scenario,…> (load, low, dispatch,
 * enqueue, cost, scale), --systems <name,…>, --json (print the results as JSON on stdout).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';
import { latenessSvg, table, type SystemResult } from './report.js';
import { cost, dispatch, enqueue, FULL, lateness, QUICK } from './scenarios.js';
import { systems } from './systems/index.js';

const SCENARIOS = ['load', 'low', 'dispatch', 'enqueue', 'cost', 'scale'] as const;

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    systems: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const profile = values.quick ? QUICK : FULL;
const only = new Set(values.only ? values.only.split(',') : SCENARIOS);
for (const s of only) if (!SCENARIOS.includes(s as never)) throw new Error(`unknown scenario ${s} (known: ${SCENARIOS.join(', ')})`);
const chosen = systems().filter((s) => !values.systems || values.systems.split(',').includes(s.name));
if (chosen.length === 0) throw new Error(`no such systems: ${values.systems}`);

const progress = (text: string) => process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[2K' : ''}${text}${process.stderr.isTTY ? '' : '\n'}`);

// FLUSHALL and DEL free synchronously, so memory is measured with nothing left of earlier runs.
const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no', '--lazyfree-lazy-user-flush', 'no', '--lazyfree-lazy-user-del', 'no'] });
const admin = redis.client();
const results: SystemResult[] = [];
const started = Date.now();
try {
  for (const system of chosen) {
    const r: SystemResult = { system: system.name };
    results.push(r);
    const step = async <T>(scenario: (typeof SCENARIOS)[number], what: string, fn: () => Promise<T>): Promise<T | undefined> => {
      if (!only.has(scenario)) return undefined;
      // The 1 s poller cannot be on time by design; its scale run only repeats that.
      if (scenario === 'scale' && system.name === 'naive1000') return undefined;
      progress(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${system.name}: ${what}…`);
      await admin.flushall();
      return fn();
    };
    r.load = await step('load', `lateness, ${profile.loadJobs} jobs over ${profile.loadWindowMs} ms`, () =>
      lateness(system, redis.url, profile.loadJobs, profile.loadWindowMs, { leadMs: profile.leadMs, keepSamples: true }),
    );
    r.low = await step('low', `lateness, ${profile.lowJobs} jobs over ${profile.lowWindowMs} ms`, () =>
      lateness(system, redis.url, profile.lowJobs, profile.lowWindowMs, { leadMs: profile.leadMs }),
    );
    r.dispatch = await step('dispatch', `max dispatch, ${profile.dispatchJobs} jobs due now`, () => dispatch(system, redis.url, admin, profile.dispatchJobs));
    r.enqueue = await step('enqueue', `bulk enqueue, ${profile.enqueueJobs} jobs`, () => enqueue(system, redis.url, admin, profile.enqueueJobs));
    r.cost = await step('cost', 'commands per job, memory per job, idle commands', () => cost(system, redis.url, admin, profile));
    r.scale = await step('scale', `${profile.scalePending} pending + ${profile.scaleJobs} falling due`, () =>
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
const machine = { node: process.version, cpus: (await import('node:os')).cpus().length, profile: values.quick ? 'quick' : 'full' };
const forJson = results.map((r) => ({ ...r, load: r.load && { ...r.load, samples: undefined } }));
writeFileSync(`${dir}${stamp}.json`, JSON.stringify({ machine, results: forJson }, null, 2));
writeFileSync(`${dir}latest.json`, JSON.stringify({ machine, results: forJson }, null, 2));
writeFileSync(`${dir}lateness.svg`, latenessSvg(results, `Lateness CDF: ${profile.loadJobs} jobs due over ${profile.loadWindowMs} ms`));
if (values.json) process.stdout.write(`${JSON.stringify({ machine, results: forJson })}\n`);
else process.stdout.write(`\n${table(results)}\n\nresults: bench/results/latest.json, bench/results/lateness.svg\n`);
