/**
 * npm run bench -- --cluster: one delayq queue with 1 shard beside the same queue with 3 shards,
 * on a local Redis Cluster of 3 masters (no replicas, AOF off; test/helpers/redis-cluster.ts),
 * drained by 2 worker child processes (bench/worker-child.ts, the cluster seeds passed as a
 * `redis-cluster://` url). The 3 shards are placed on 3 different masters (queue names are tried
 * until they are). Per run:
 *
 *  (a) dispatch: a backlog all due at one instant T (enqueued before, workers started and idle
 *      before T), no-op handler: jobs / (last handler start − T);
 *  (b) lateness p50/p99/max at a fixed rate: jobs spread evenly over a window, measured in the
 *      workers as Date.now() − due;
 *  (c) Redis CPU per node over (a): `used_cpu_user + used_cpu_sys` of each master before and
 *      after, less that node's idle rate, per job of the queue and per job the node held; the
 *      busiest node's figure gives the dispatch one node can carry (1e6 / µs per job it held)
 *      and what this cluster carries (1e6 / µs per job of the queue). docs/benchmarks.md,
 *      "Sharded queues on a Redis Cluster", explains the arithmetic.
 *
 * Options: --quick (small sizes), --repeat <n> (each configuration n times, interleaved: the
 * table shows median (min–max)), --shards <a,b> (default 1,3), --json (print the JSON).
 * Writes bench/results/cluster-latest.json and a timestamped copy.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Cluster, Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { HASHTABLE_FIELD } from '../src/store/redis/wire.js';
import { type RedisCluster, startCluster } from '../test/helpers/redis-cluster.js';
import { WorkerChild } from './child.js';
import { scriptCalls } from './heap-measure.js';
import { fmt, markdownTable, type Spread, spread } from './report.js';
import { clusterUrl } from './systems/delayq.js';
import { type BenchJob, payload } from './systems/system.js';

export interface ClusterProfile {
  dispatchJobs: number;
  latenessJobs: number;
  latenessWindowMs: number;
  /** Head start before jobs fall due, on top of the enqueue time (n / 8 ms) and the workers' start. */
  leadMs: number;
  /** How long each master's idle CPU rate is measured, once, before the runs. */
  idleMs: number;
  /** Bound on waiting for a backlog to drain. */
  drainTimeoutMs: number;
}

export const CLUSTER_FULL: ClusterProfile = {
  dispatchJobs: 50_000,
  latenessJobs: 20_000,
  latenessWindowMs: 5000,
  leadMs: 1500,
  idleMs: 2000,
  drainTimeoutMs: 300_000,
};
export const CLUSTER_QUICK: ClusterProfile = {
  dispatchJobs: 2000,
  latenessJobs: 1000,
  latenessWindowMs: 500,
  leadMs: 1000,
  idleMs: 300,
  drainTimeoutMs: 60_000,
};

const MASTERS = 3;
const WORKERS = 2;
const PREFIX = 'dq';

/** One master's share of a dispatch run. */
export interface NodeCpu {
  port: number;
  /** Shards of the queue on this node. */
  shards: number[];
  /** Jobs of the backlog this node held (HLEN of its shards' jobs hashes before T). */
  heldJobs: number;
  /** Redis CPU over the drain less the node's idle rate, µs. */
  cpuUs: number;
  /** cpuUs / all jobs of the queue. */
  usPerJob: number;
  /** cpuUs / heldJobs (absent when the node held none). */
  usPerHeldJob?: number;
  /** heldJobs / script calls over the drain (claims, acks, and the empty claims between). */
  jobsPerScriptCall?: number;
}

export interface ClusterRun {
  shards: number;
  queue: string;
  /** The master of each shard (shard i at index i). */
  placement: number[];
  dispatch: {
    jobs: number;
    perSec: number;
    drainMs: number;
    enqueuePerSec: number;
    /** > 0 when the workers were not ready (or the enqueue not done) before T: the figures are suspect. */
    lateStartMs: number;
    /** Handler starts beyond the jobs (at-least-once re-deliveries). */
    duplicates: number;
    /** Busiest first. */
    nodes: NodeCpu[];
    redisCpuSumUsPerJob: number;
    /** 1e6 / the busiest node's µs per job it held: jobs/s one node can carry of its shards' jobs. */
    oneNodeCarries?: number;
    /** 1e6 / the busiest node's µs per job of the queue: jobs/s this queue can get from this cluster. */
    clusterCarries: number;
    workerCpuUsPerJob: number;
  };
  lateness: { jobs: number; windowMs: number; p50: number; p95: number; p99: number; max: number; enqueueOverrunMs: number; duplicates: number };
}

export interface ClusterResult {
  shards: number;
  runs: ClusterRun[];
  /** Why this configuration did not run (e.g. the library refused the shards option). */
  unavailable?: string;
}

const round = (v: number, digits = 2) => Math.round(v * 10 ** digits) / 10 ** digits;
const tagOf = (name: string, shards: number, i: number) => (shards > 1 ? `${name}#${i}` : name);
const keyOf = (tag: string, what: string) => `${PREFIX}:{${tag}}:${what}`;

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** A queue name whose shards land on `shards` different masters (as many as there are, when shards > masters). */
async function placeQueue(cluster: RedisCluster, shards: number, masters: number): Promise<{ name: string; placement: number[] }> {
  for (let tries = 0; tries < 500; tries++) {
    const name = `bench-cluster-${shards}s-${randomBytes(4).toString('hex')}`;
    const placement: number[] = [];
    for (let i = 0; i < shards; i++) placement.push((await cluster.nodeFor(keyOf(tagOf(name, shards, i), 'scheduled'))).port);
    if (new Set(placement).size === Math.min(shards, masters)) return { name, placement };
  }
  throw new Error(`no queue name in 500 tries puts ${shards} shards on ${Math.min(shards, masters)} different masters`);
}

class ShardsUnavailable extends Error {}

function openQueue(name: string, shards: number, seeds: { host: string; port: number }[]): Queue<Record<string, unknown>> {
  const options: Record<string, unknown> = { connection: { cluster: seeds } };
  // An unsharded queue is the 1-shard case: no option, keys dq:{name}:…
  if (shards > 1) options.shards = shards;
  try {
    return new Queue<Record<string, unknown>>(name, options as ConstructorParameters<typeof Queue>[1]);
  } catch (err) {
    if (shards > 1 && /shards/.test(String(err))) throw new ShardsUnavailable(String(err));
    throw err;
  }
}

async function enqueue(q: Queue<Record<string, unknown>>, jobs: BenchJob[]): Promise<void> {
  for (let i = 0; i < jobs.length; i += 10_000) {
    const results = await q.addBulk(jobs.slice(i, i + 10_000).map((j) => ({ data: payload(j), opts: { id: j.id, runAt: j.due } })));
    const notAdded = results.filter((r) => !r.added).length;
    if (notAdded) throw new Error(`addBulk: ${notAdded} of ${results.length} jobs not added (ids already there?)`);
  }
}

/** µs of Redis CPU (user + sys, every thread) of each master so far. */
async function cpuByNode(admins: Map<number, Redis>): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  await Promise.all(
    [...admins].map(async ([port, r]) => {
      const info = await r.info('cpu');
      const num = (f: string) => Number(new RegExp(`^${f}:([\\d.]+)`, 'm').exec(info)?.[1]);
      out.set(port, (num('used_cpu_user') + num('used_cpu_sys')) * 1e6);
    }),
  );
  return out;
}

/** Each node's script calls so far (heap-measure.ts scriptCalls): how many jobs a call carried. */
async function scriptCallsByNode(admins: Map<number, Redis>): Promise<Map<number, number>> {
  return new Map(await Promise.all([...admins].map(async ([port, r]) => [port, await scriptCalls(r)] as const)));
}

/** Jobs in each shard's jobs hash: its fields, less the one that keeps it a hashtable (wire.ts HASHTABLE_FIELD). */
async function jobsLeft(client: Cluster, tags: string[]): Promise<number[]> {
  return Promise.all(
    tags.map(async (t) => {
      const key = keyOf(t, 'jobs');
      const [fields, marked] = await Promise.all([client.hlen(key), client.hexists(key, HASHTABLE_FIELD)]);
      return fields - marked;
    }),
  );
}

async function drained(client: Cluster, tags: string[], timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await jobsLeft(client, tags);
    if (left.every((n) => n === 0)) return;
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: jobs still there after ${timeoutMs} ms: ${tags.map((t, i) => `${t} ${left[i]}`).join(', ')} (did the workers find every shard?)`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

const spreadJobs = (n: number, firstDue: number, windowMs: number, tag: string): BenchJob[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}`, due: firstDue + Math.floor((i * windowMs) / n) }));

async function runOnce(
  cluster: RedisCluster,
  client: Cluster,
  admins: Map<number, Redis>,
  idleUsPerMs: Map<number, number>,
  shards: number,
  p: ClusterProfile,
  progress: (s: string) => void,
): Promise<ClusterRun> {
  const { name, placement } = await placeQueue(cluster, shards, admins.size);
  const tags = Array.from({ length: shards }, (_, i) => tagOf(name, shards, i));
  const q = openQueue(name, shards, cluster.seeds);
  const children: WorkerChild[] = [];
  try {
    // (a) The backlog first (so the queue's layout exists when the workers start), all due at T.
    const n = p.dispatchJobs;
    progress(`${shards} shard(s): enqueue ${n} jobs due at once`);
    const t0 = Date.now();
    const T = t0 + p.leadMs + Math.ceil(n / 8);
    await enqueue(q, spreadJobs(n, T, 0, 'd'));
    const enqueuePerSec = (n / Math.max(1, Date.now() - t0)) * 1000;
    const held = await jobsLeft(client, tags);
    if (held.reduce((a, b) => a + b, 0) !== n) throw new Error(`the shards hold ${held.join('+')} jobs, not ${n}`);
    for (let i = 0; i < WORKERS; i++) children.push(new WorkerChild('delayq', clusterUrl(cluster.seeds), name));
    await Promise.all(children.map((c) => c.ready));
    const w0 = await Promise.all(children.map((c) => c.cpuMicros()));
    const [cpu0, cmd0] = await Promise.all([cpuByNode(admins), scriptCallsByNode(admins)]);
    const at0 = Date.now();
    const lateStartMs = Math.max(0, at0 - T);
    progress(`${shards} shard(s): ${WORKERS} workers drain ${n} jobs`);
    await drained(client, tags, p.drainTimeoutMs + Math.max(0, T - Date.now()), 'dispatch');
    const [cpu1, cmd1] = await Promise.all([cpuByNode(admins), scriptCallsByNode(admins)]);
    const at1 = Date.now();
    const w1 = await Promise.all(children.map((c) => c.cpuMicros()));
    const afterA = await Promise.all(children.map((c) => c.samples()));
    const samplesA = afterA.flat();
    if (samplesA.length < n) throw new Error(`dispatch: ${samplesA.length} handler starts for ${n} jobs`);
    const drainMs = Math.max(1, Math.max(...samplesA));
    const nodes: NodeCpu[] = [...admins.keys()].map((port) => {
      const mine = placement.flatMap((pt, i) => (pt === port ? [i] : []));
      const heldJobs = mine.reduce((a, i) => a + held[i]!, 0);
      const cpuUs = Math.max(0, cpu1.get(port)! - cpu0.get(port)! - idleUsPerMs.get(port)! * (at1 - at0));
      const node: NodeCpu = { port, shards: mine, heldJobs, cpuUs: Math.round(cpuUs), usPerJob: round(cpuUs / n) };
      if (heldJobs > 0) {
        node.usPerHeldJob = round(cpuUs / heldJobs);
        const calls = cmd1.get(port)! - cmd0.get(port)!;
        if (calls > 0) node.jobsPerScriptCall = round(heldJobs / calls);
      }
      return node;
    });
    nodes.sort((a, b) => b.usPerJob - a.usPerJob);
    const busiest = nodes[0]!;
    const dispatch: ClusterRun['dispatch'] = {
      jobs: n,
      perSec: Math.round((n / drainMs) * 1000),
      drainMs,
      enqueuePerSec: Math.round(enqueuePerSec),
      lateStartMs,
      duplicates: samplesA.length - n,
      nodes,
      redisCpuSumUsPerJob: round(nodes.reduce((a, x) => a + x.usPerJob, 0)),
      clusterCarries: Math.round(1e6 / busiest.usPerJob),
      workerCpuUsPerJob: round(w1.reduce((a, x, i) => a + x - w0[i]!, 0) / n),
    };
    if (busiest.usPerHeldJob) dispatch.oneNodeCarries = Math.round(1e6 / busiest.usPerHeldJob);

    // (b) Lateness at a fixed rate, the same workers.
    const m = p.latenessJobs;
    progress(`${shards} shard(s): lateness, ${m} jobs over ${p.latenessWindowMs} ms`);
    const opensAt = Date.now() + p.leadMs + Math.ceil(m / 8);
    await enqueue(q, spreadJobs(m, opensAt, p.latenessWindowMs, 'l'));
    const enqueueOverrunMs = Math.max(0, Date.now() - opensAt);
    await drained(client, tags, p.drainTimeoutMs + p.latenessWindowMs + Math.max(0, opensAt - Date.now()), 'lateness');
    const samplesB = (await Promise.all(children.map((c) => c.samples()))).flatMap((s, i) => s.slice(afterA[i]!.length)).sort((a, b) => a - b);
    if (samplesB.length < m) throw new Error(`lateness: ${samplesB.length} handler starts for ${m} jobs`);
    return {
      shards,
      queue: name,
      placement,
      dispatch,
      lateness: {
        jobs: m,
        windowMs: p.latenessWindowMs,
        p50: percentile(samplesB, 0.5),
        p95: percentile(samplesB, 0.95),
        p99: percentile(samplesB, 0.99),
        max: samplesB.at(-1)!,
        enqueueOverrunMs,
        duplicates: samplesB.length - m,
      },
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await q.close();
  }
}

const cell = (s: Spread | undefined) => (!s ? '—' : s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median));

interface Row {
  label: string;
  unit: string;
  value: (r: ClusterRun) => number | undefined;
}

function rows(p: ClusterProfile): Row[] {
  const nth = ['busiest node', '2nd node', '3rd node'];
  return [
    { label: `dispatch, ${fmt(p.dispatchJobs)} jobs due at once, ${WORKERS} worker processes`, unit: 'jobs/s', value: (r) => r.dispatch.perSec },
    { label: `lateness p50, ${fmt(p.latenessJobs)} jobs over ${fmt(p.latenessWindowMs)} ms`, unit: 'ms', value: (r) => r.lateness.p50 },
    { label: 'lateness p99', unit: 'ms', value: (r) => r.lateness.p99 },
    { label: 'lateness max', unit: 'ms', value: (r) => r.lateness.max },
    ...nth.map((label, i) => ({ label: `Redis CPU per job of the queue, ${label}`, unit: 'µs', value: (r: ClusterRun) => r.dispatch.nodes[i]?.usPerJob })),
    { label: 'Redis CPU per job, sum of the nodes', unit: 'µs', value: (r) => r.dispatch.redisCpuSumUsPerJob },
    { label: 'busiest node: Redis CPU per job it held', unit: 'µs', value: (r) => r.dispatch.nodes[0]?.usPerHeldJob },
    { label: '  jobs it held per script call (claims and acks)', unit: 'jobs', value: (r) => r.dispatch.nodes[0]?.jobsPerScriptCall },
    { label: 'dispatch one node can carry (1e6 / µs per job it held)', unit: 'jobs/s', value: (r) => r.dispatch.oneNodeCarries },
    { label: 'dispatch the queue can get from these nodes (1e6 / busiest µs per job)', unit: 'jobs/s', value: (r) => r.dispatch.clusterCarries },
    { label: 'worker CPU per job, both processes', unit: 'µs', value: (r) => r.dispatch.workerCpuUsPerJob },
    { label: 'bulk enqueue of the backlog (addBulk)', unit: 'jobs/s', value: (r) => r.dispatch.enqueuePerSec },
  ];
}

export interface ClusterTableRow {
  label: string;
  unit: string;
  values: Record<string, Spread | undefined>;
  /** Last configuration / first (e.g. 3 shards / 1 shard), of the medians. */
  ratio?: number;
}

export function clusterSummary(results: ClusterResult[], p: ClusterProfile): ClusterTableRow[] {
  return rows(p).map((row) => {
    const values: Record<string, Spread | undefined> = {};
    for (const r of results) values[`${r.shards}`] = spread(r.runs.map(row.value));
    const first = values[`${results[0]?.shards}`]?.median;
    const last = values[`${results.at(-1)?.shards}`]?.median;
    const out: ClusterTableRow = { label: row.label, unit: row.unit, values };
    if (results.length > 1 && first !== undefined && last !== undefined && first !== 0) out.ratio = last / first;
    return out;
  });
}

function clusterTable(results: ClusterResult[], summary: ClusterTableRow[]): string {
  const col = (s: number) => (s === 1 ? '1 shard' : `${s} shards`);
  const header = ['figure', ...results.map((r) => col(r.shards))];
  if (results.length > 1) header.push(`${col(results.at(-1)!.shards)} / ${col(results[0]!.shards)}`);
  const lines = [header];
  for (const row of summary) {
    const line = [`${row.label}${row.unit ? ` (${row.unit})` : ''}`, ...results.map((r) => (r.unavailable ? 'n/a' : cell(row.values[`${r.shards}`])))];
    if (results.length > 1) line.push(row.ratio === undefined ? '—' : `${row.ratio.toFixed(2)}×`);
    lines.push(line);
  }
  return markdownTable(lines);
}

/** What the table cannot say in a cell: where the shards were, and the ceiling arithmetic. */
function notes(results: ClusterResult[], masters: number[]): string[] {
  const out: string[] = [];
  for (const r of results) {
    if (r.unavailable) {
      out.push(`${r.shards} shards: not run — ${r.unavailable}`);
      continue;
    }
    const run = r.runs[0];
    if (!run) continue;
    const where = run.placement.map((port, i) => (r.shards > 1 ? `#${i} on :${port}` : `on :${port}`)).join(', ');
    const distinct = new Set(run.placement).size;
    out.push(
      `${r.shards === 1 ? '1 shard' : `${r.shards} shards`} (first run, queue ${run.queue}): ${where}` +
        (r.shards > 1 ? ` — ${distinct} different masters of ${masters.length}` : ''),
    );
    const late = r.runs.filter((x) => x.dispatch.lateStartMs > 0 || x.lateness.enqueueOverrunMs > 0).length;
    if (late) out.push(`  warning: in ${late} run(s) the workers or the enqueue were not ready before the jobs fell due; those figures are suspect`);
    const dup = r.runs.reduce((a, x) => a + x.dispatch.duplicates + x.lateness.duplicates, 0);
    if (dup) out.push(`  note: ${dup} handler start(s) beyond the jobs (re-deliveries)`);
  }
  const sharded = results.find((r) => r.shards > 1 && !r.unavailable && r.runs.length);
  if (sharded) {
    const one = spread(sharded.runs.map((x) => x.dispatch.oneNodeCarries))?.median;
    const all = spread(sharded.runs.map((x) => x.dispatch.clusterCarries))?.median;
    const share = spread(sharded.runs.map((x) => x.dispatch.nodes[0]!.heldJobs / x.dispatch.jobs))?.median;
    const nodes = Math.min(sharded.shards, masters.length);
    if (one !== undefined && all !== undefined && share !== undefined) {
      out.push(
        `${sharded.shards} shards on ${nodes} masters: one node carries ${fmt(one)} jobs/s of its shard's jobs; ${nodes} such nodes carry ${nodes} × ${fmt(one)} = ${fmt(nodes * one)} jobs/s ` +
          `with an even split; as split here (the busiest node held ${(share * 100).toFixed(1)} %), 1e6 / its µs per job = ${fmt(all)} jobs/s.`,
      );
    }
  }
  return out;
}

export async function runClusterBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      cluster: { type: 'boolean', default: true },
      quick: { type: 'boolean', default: false },
      repeat: { type: 'string', default: '1' },
      shards: { type: 'string', default: '1,3' },
      json: { type: 'boolean', default: false },
    },
  });
  const profile = values.quick ? CLUSTER_QUICK : CLUSTER_FULL;
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number ≥ 1 (got ${values.repeat})`);
  const shardCounts = values.shards.split(',').map(Number);
  if (shardCounts.some((s) => !Number.isInteger(s) || s < 1 || s > 64)) throw new Error(`--shards must be whole numbers 1–64 (got ${values.shards})`);

  const started = Date.now();
  const progress = (text: string) =>
    process.stderr.write(
      `${process.stderr.isTTY ? '\r\x1b[2K' : ''}[${((Date.now() - started) / 1000).toFixed(0)} s] ${text}…${process.stderr.isTTY ? '' : '\n'}`,
    );
  progress(`starting a Redis Cluster of ${MASTERS} masters`);
  const cluster = await startCluster(MASTERS);
  const masters = (await cluster.masters()).map((m) => m.port);
  const admins = new Map(masters.map((port) => [port, new Redis({ host: '127.0.0.1', port })]));
  const client = cluster.client();
  const results: ClusterResult[] = shardCounts.map((shards) => ({ shards, runs: [] }));
  const idleUsPerMs = new Map<number, number>();
  try {
    // Each master's CPU with nothing running (cluster bus, cron), subtracted from the runs.
    progress(`idle CPU of each master over ${profile.idleMs} ms`);
    const c0 = await cpuByNode(admins);
    const i0 = Date.now();
    await new Promise((r) => setTimeout(r, profile.idleMs));
    const c1 = await cpuByNode(admins);
    const i1 = Date.now();
    for (const port of masters) idleUsPerMs.set(port, (c1.get(port)! - c0.get(port)!) / (i1 - i0));
    // Configurations interleaved, so drift on the machine hits both alike.
    for (let k = 0; k < repeat; k++) {
      for (const r of results) {
        if (r.unavailable) continue;
        try {
          progress(`run ${k + 1}/${repeat}, ${r.shards} shard(s)`);
          r.runs.push(await runOnce(cluster, client, admins, idleUsPerMs, r.shards, profile, progress));
        } catch (err) {
          if (!(err instanceof ShardsUnavailable)) throw err;
          r.unavailable = `the library refused shards: ${r.shards} (${err.message})`;
        }
        await Promise.all([...admins.values()].map((a) => a.flushall()));
      }
    }
  } finally {
    for (const a of admins.values()) a.disconnect();
    await cluster.stop();
  }
  process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[2K' : ''}done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);

  const summary = clusterSummary(results, profile);
  const machine = { node: process.version, cpus: cpus().length, profile: values.quick ? 'quick' : 'full', repeat };
  const json = JSON.stringify(
    {
      machine,
      profile,
      cluster: {
        masters,
        replicas: 0,
        aof: 'no',
        workers: WORKERS,
        idleCpuUsPerSec: Object.fromEntries([...idleUsPerMs].map(([p, v]) => [p, round(v * 1000)])),
      },
      results,
      table: summary,
    },
    null,
    2,
  );
  const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}cluster-${new Date().toISOString().replace(/[:.]/g, '-')}.json`, json);
  writeFileSync(`${dir}cluster-latest.json`, json);
  if (values.json) process.stdout.write(`${json}\n`);
  else {
    process.stdout.write(`\n${clusterTable(results, summary)}\n\n${notes(results, masters).join('\n')}\n\nresults: bench/results/cluster-latest.json\n`);
  }
}

// Also runs on its own: node dist/bench/cluster.js --quick
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await runClusterBench(process.argv.slice(2));
