/**
 * npm run bench:scripts: what each script costs Redis per job, in CPU instructions counted by
 * valgrind's callgrind on a redis-server of its own. Unlike CPU time, the count is the same
 * from run to run whatever else the machine is doing, so a change to a script can be weighed
 * on a busy, shared machine in one run (CPU time here varies ±15% between runs). Slow (Redis
 * runs ~50× slower under valgrind), so the sizes are small; Linux and valgrind only.
 *
 * Each scenario zeroes the counters, runs one kind of call, and reads the total:
 * - add: addBulk of jobs due later (the bench's bulk enqueue);
 * - claim + complete of a backlog all due at one millisecond (the bench's dispatch: every job
 *   passes through the ready set, as ties in one millisecond are ordered by add order there);
 * - the same for a backlog due over many milliseconds;
 * - claims that find no more due jobs than they take (a worker that keeps up: no ready set);
 * - a worker's cycle: each claim of a backlog followed by the ack of the batch before (the run
 *   states of one to two batches alive, as a Worker has them);
 * - single adds and claims of one job (a call's fixed cost on every job);
 * - a backlog in which one job in ten has a priority (those through the ready set);
 * - a backlog beside a job with a priority (the ready set, and acks that count such jobs off), on
 *   a queue whose jobs with a priority all ended (the one pass), and under an older version's
 *   mark before and after migrate;
 * - a backlog on a queue whose one job of a group, or with a debounce key, ended (the one pass),
 *   on one whose flow ended (no hold left) and one whose rate limit was removed (the one pass);
 * - a backlog spread over 1,000 groups (grouped dispatch).
 *
 * Options: --jobs <n> (5,000), --batch <n> (100), --json, --only <word> (only the scenarios
 * whose name holds it: 'groups', 'one ms', ...), --keep (keeps the callgrind dumps, one per
 * phase, and prints their folder), --top <n> (under the table, each row's n costliest functions by
 * the instructions they ran themselves, per job: bench/callgrind-self.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';
import { type AddOptions, Queue, RedisStore } from '../src/index.js';
import type { CompleteRef } from '../src/store/store.js';
import { functionNames, selfCosts, topFunctions } from './callgrind-self.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '5000' },
    batch: { type: 'string', default: '100' },
    json: { type: 'boolean', default: false },
    only: { type: 'string', default: '' },
    keep: { type: 'boolean', default: false },
    top: { type: 'string', default: '0' },
  },
});
const N = Number(values.jobs);
const BATCH = Number(values.batch);
const TOP = Number(values.top);
for (const [name, v, given, min] of [
  ['--jobs', N, values.jobs, 1],
  ['--batch', BATCH, values.batch, 1],
  ['--top', TOP, values.top, 0],
] as const) {
  if (!Number.isInteger(v) || v < min) {
    console.error(`${name} must be a whole number ≥ ${min} (got ${given})`);
    process.exit(64);
  }
}

try {
  execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
} catch {
  console.error('bench:scripts needs valgrind (apt-get install valgrind)');
  process.exit(69);
}

const dumpDir = mkdtempSync(join(tmpdir(), 'delayq-callgrind-'));
// Only the instructions of reading, running and answering commands are counted: the event
// loop's read handler (readQueryFromClient: parsing, the script and its calls) and beforeSleep
// (writing the replies). Left out is serverCron, which runs 10 times a second of wall time:
// under valgrind a call lasts ~50x longer, so the timer's work (jemalloc's statistics, ~120k
// instructions a run) landed in the figures ~50x out of proportion (~120k on a one-job claim
// of ~490k, 2-8% of a batch's per-job figure).
const collect = ['readQueryFromClient', 'beforeSleep'].map((fn) => `--toggle-collect=${fn}`);
const server = await startRedis({
  wrapper: ['valgrind', '--tool=callgrind', ...collect, `--callgrind-out-file=${join(dumpDir, 'callgrind.out.%p')}`],
  startMs: 60_000,
});
const pid = String(server.process.pid);
// Interrupted (Ctrl-C, a timeout's SIGTERM), the valgrind'ed server would outlive this process
// and keep a core busy: stop it first.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.process.kill('SIGKILL');
    rmSync(dumpDir, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

/**
 * Instructions Redis ran since the last call (callgrind_control dumps and zeroes the counters).
 * `dumps`, when given, gets the dump's file name (--top reads it).
 */
function instructions(dumps?: string[]): number {
  execFileSync('callgrind_control', ['--dump', pid], { stdio: 'ignore' });
  const files = readdirSync(dumpDir).filter((f) => /^callgrind\.out\.\d+\.\d+$/.test(f));
  const last = files.sort((a, b) => Number(a.split('.').at(-1)) - Number(b.split('.').at(-1))).at(-1);
  if (!last) throw new Error('callgrind wrote no dump');
  const total = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dumpDir, last), 'utf8'));
  if (!total) throw new Error(`no totals in ${last}`);
  dumps?.push(join(dumpDir, last));
  return Number(total[1]);
}

const store = new RedisStore({ connection: server.url });
/** `dumps`: the callgrind dumps the figure sums (--top reads them). */
const rows: { scenario: string; script: string; instructionsPerJob: number; jobs: number; dumps: string[] }[] = [];
let queueNo = 0;
/** Whether a scenario runs (--only). */
const wanted = (scenario: string): boolean => scenario.includes(values.only ?? '');

async function addJobs(queue: Queue, firstDue: number, spreadMs: number, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const k = Math.min(1000, n - i);
    await queue.addBulk(
      Array.from({ length: k }, (_, j) => ({ data: { n: i + j }, opts: { id: `job-${i + j}`, runAt: firstDue + Math.floor(((i + j) * spreadMs) / n) } })),
    );
  }
}

/** `n` jobs added in bulks of 1,000, job `i` with the options `opts(i)` (data `{ n: i }`). */
async function addEach(queue: Queue, n: number, opts: (i: number) => AddOptions): Promise<void> {
  for (let i = 0; i < n; i += 1000) {
    const k = Math.min(1000, n - i);
    await queue.addBulk(Array.from({ length: k }, (_, j) => ({ data: { n: i + j }, opts: opts(i + j) })));
  }
}

/** `n` rounds of a claim of one job and its ack (a worker that keeps up): instructions per job for each. */
async function oneAtATime(name: string, n: number, scenario: string): Promise<void> {
  let claimed = 0;
  let completed = 0;
  const claimDumps: string[] = [];
  const completeDumps: string[] = [];
  for (let i = 0; i < n; i++) {
    instructions();
    const res = await store.claim(name, 1, 600_000, 3, 'cost');
    claimed += instructions(claimDumps);
    await store.complete(
      name,
      res.jobs.map((j) => ({ id: j.id, token: j.token })),
    );
    completed += instructions(completeDumps);
  }
  rows.push({ scenario, script: 'claim', instructionsPerJob: claimed / n, jobs: n, dumps: claimDumps });
  rows.push({ scenario, script: 'complete', instructionsPerJob: completed / n, jobs: n, dumps: completeDumps });
}

/** Claims until nothing is left, then acks every job in batches; instructions per job for each. */
async function drain(name: string, scenario: string): Promise<void> {
  instructions();
  const claimDumps: string[] = [];
  const completeDumps: string[] = [];
  const leases: CompleteRef[] = [];
  for (;;) {
    const res = await store.claim(name, BATCH, 600_000, 3, 'cost');
    for (const j of res.jobs) leases.push({ id: j.id, token: j.token });
    if (res.jobs.length === 0) break;
  }
  const claimed = instructions(claimDumps);
  for (let i = 0; i < leases.length; i += BATCH) await store.complete(name, leases.slice(i, i + BATCH));
  const completed = instructions(completeDumps);
  rows.push({ scenario, script: 'claim', instructionsPerJob: claimed / leases.length, jobs: leases.length, dumps: claimDumps });
  rows.push({ scenario, script: 'complete', instructionsPerJob: completed / leases.length, jobs: leases.length, dumps: completeDumps });
}

async function backlog(scenario: string, spreadMs: number): Promise<void> {
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  const due = (await server.client().time()).map(Number);
  await addJobs(queue, due[0]! * 1000 - spreadMs - 1000, spreadMs, N);
  await drain(name, scenario);
}

// The library loaded and a queue registered before anything is counted: the first call of a
// store loads the Functions library (compiling it cost ~20M instructions, counted in the first
// scenario's figure until this warm-up: ~4k of a bulk add's per-job figure).
await new Queue(`cost-warm-up`, { store }).add({}, { id: 'warm-up', delay: 3_600_000 });

// Bulk add of delayed jobs.
if (wanted(`addBulk of ${N} delayed jobs`)) {
  const queue = new Queue(`cost-${++queueNo}`, { store });
  instructions();
  await addJobs(queue, Date.now() + 3_600_000, 60_000, N);
  const dumps: string[] = [];
  rows.push({ scenario: `addBulk of ${N} delayed jobs`, script: 'add', instructionsPerJob: instructions(dumps) / N, jobs: N, dumps });
}
if (wanted(`backlog of ${N} due at one ms`)) await backlog(`backlog of ${N} due at one ms`, 0);
if (wanted(`backlog of ${N} due over ${N} ms`)) await backlog(`backlog of ${N} due over ${N} ms`, N);
// A worker that keeps up: each claim finds half a batch due.
if (wanted(`claims finding ${Math.floor(BATCH / 2)} due (a worker that keeps up)`)) {
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  let claimed = 0;
  let completed = 0;
  let jobs = 0;
  const claimDumps: string[] = [];
  const completeDumps: string[] = [];
  for (let round = 0; jobs < N; round++) {
    const k = Math.max(1, Math.floor(BATCH / 2));
    await queue.addBulk(Array.from({ length: k }, (_, j) => ({ data: { n: j }, opts: { id: `r${round}-${j}` } })));
    instructions();
    const res = await store.claim(name, BATCH, 600_000, 3, 'cost');
    claimed += instructions(claimDumps);
    await store.complete(
      name,
      res.jobs.map((j) => ({ id: j.id, token: j.token })),
    );
    completed += instructions(completeDumps);
    jobs += res.jobs.length;
  }
  const scenario = `claims finding ${Math.floor(BATCH / 2)} due (a worker that keeps up)`;
  rows.push({ scenario, script: 'claim', instructionsPerJob: claimed / jobs, jobs, dumps: claimDumps });
  rows.push({ scenario, script: 'complete', instructionsPerJob: completed / jobs, jobs, dumps: completeDumps });
}

// A worker's cycle, as the Worker runs one: each claim is followed by the ack of the batch before,
// so one to two batches are in flight (their run states and active entries live while others
// are written and read). A warm-up of 10 claims first, then the figures of the rest.
if (wanted(`a worker's cycle`)) {
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  const due = (await server.client().time()).map(Number);
  await addJobs(queue, due[0]! * 1000 - 10_000, 0, N + 10 * BATCH);
  let held: CompleteRef[] = [];
  let claimed = 0;
  let completed = 0;
  let jobs = 0;
  let acked = 0;
  const claimDumps: string[] = [];
  const completeDumps: string[] = [];
  for (let round = 0; ; round++) {
    if (round === 10) instructions();
    const res = await store.claim(name, BATCH, 600_000, 3, 'cost');
    if (round >= 10) claimed += instructions(claimDumps);
    await store.complete(name, held);
    if (round >= 10) {
      completed += instructions(completeDumps);
      acked += held.length;
      jobs += res.jobs.length;
    }
    held = res.jobs.map((j) => ({ id: j.id, token: j.token }));
    if (res.jobs.length === 0) break;
  }
  const scenario = `a worker's cycle (claims of ${BATCH}, each then acking the batch before)`;
  rows.push({ scenario, script: 'claim', instructionsPerJob: claimed / jobs, jobs, dumps: claimDumps });
  rows.push({ scenario, script: 'complete', instructionsPerJob: completed / acked, jobs: acked, dumps: completeDumps });
}

// One job a call: what a call costs whatever its size (the library's per-call setup, the
// command's own work) weighs on every job. Single adds awaited one by one (no batching), and a
// worker that finds one job at a time.
if (wanted('single adds, one at a time') || wanted('claims and acks of one job')) {
  const SINGLE = Math.min(N, 200);
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  await queue.add({ warm: 1 }, { id: 'warm', delay: 3_600_000 });
  instructions();
  for (let i = 0; i < SINGLE; i++) await queue.add({ n: i }, { id: `one-${i}`, delay: 3_600_000 });
  const addDumps: string[] = [];
  rows.push({
    scenario: `${SINGLE} single adds, one at a time`,
    script: 'add',
    instructionsPerJob: instructions(addDumps) / SINGLE,
    jobs: SINGLE,
    dumps: addDumps,
  });
  const due = `cost-${++queueNo}`;
  await new Queue(due, { store }).addBulk(Array.from({ length: SINGLE }, (_, j) => ({ data: { n: j }, opts: { id: `d${j}` } })));
  await oneAtATime(due, SINGLE, 'claims and acks of one job');
}
// Priorities and the mark (meta `prioritized`, counted in `ranked`): with a job with a priority
// waiting (far ahead), backlogs go through the ready set and each ack reads its jobs' bodies for
// the count; once every such job ended the mark is off (the one pass). A mark an older version
// left (no count) stays until migrate takes it off.
const PRIORITY_CASES = {
  pending: 'a job with a priority waiting',
  ended: "the queue's jobs with a priority ended",
  legacy: "the queue's jobs with a priority ended under an older version's mark",
  migrated: "the queue's jobs with a priority ended under an older version's mark, after migrate",
} as const;
for (const [kind, what] of Object.entries(PRIORITY_CASES)) {
  const scenario = `backlog of ${N} due at one ms, ${what}`;
  if (!wanted(scenario)) continue;
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  if (kind === 'pending') await queue.add({}, { id: 'urgent', priority: 5, delay: 3_600_000 });
  else {
    await queue.add({}, { id: 'urgent', priority: 5 });
    const [urgent] = (await store.claim(name, 1, 600_000, 3, 'cost')).jobs;
    await store.complete(name, [{ id: urgent!.id, token: urgent!.token }]);
  }
  if (kind === 'legacy' || kind === 'migrated') await server.client().hset(`dq:{${name}}:meta`, 'prioritized', '1');
  if (kind === 'migrated') await queue.migrate();
  const due = (await server.client().time()).map(Number);
  await addJobs(queue, due[0]! * 1000 - 1000, 0, N);
  await drain(name, scenario);
}
// A backlog in which one job in ten has a priority: those go through the ready set (found by the
// index of such jobs), the rest are claimed in the scheduled set's order.
if (wanted(`backlog of ${N} due at one ms, one job in ten with a priority`)) {
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  const due = (await server.client().time()).map(Number);
  await addEach(queue, N, (n) => ({ id: `job-${n}`, runAt: due[0]! * 1000 - 1000, priority: n % 10 === 0 ? 1 : 0 }));
  await drain(name, `backlog of ${N} due at one ms, one job in ten with a priority`);
}
// A queue whose one job of a group (or with a debounce key) ended: it claims as a plain queue
// (meta groupJobs / flowJobs 0).
for (const [what, opts] of [
  ['of a group', { group: 'tenant' }],
  ['with a debounce key', { debounce: { key: 'user-1', delayMs: 0 } }],
] as const) {
  const scenario = `backlog of ${N} due at one ms, the queue's jobs ${what} ended`;
  if (!wanted(scenario)) continue;
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  await queue.add({}, { id: 'once', ...opts });
  const [once] = (await store.claim(name, 1, 600_000, 3, 'cost')).jobs;
  await store.complete(name, [{ id: once!.id, token: once!.token }]);
  const due = (await server.client().time()).map(Number);
  await addJobs(queue, due[0]! * 1000 - 1000, 0, N);
  await drain(name, scenario);
}
// A queue whose one flow ended (a parent held for its child, both acked): meta `holds` stays,
// but with no hold left its claims take the one pass and its acks settle no hold (HOLDS.live).
if (wanted(`backlog of ${N} due at one ms, the queue's flow ended`)) {
  const scenario = `backlog of ${N} due at one ms, the queue's flow ended`;
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  await queue.add({}, { id: 'child' });
  await queue.add({}, { id: 'parent', dependsOn: ['child'] });
  for (const id of ['child', 'parent']) {
    const [job] = (await store.claim(name, 1, 600_000, 3, 'cost')).jobs;
    if (job?.id !== id) throw new Error(`the flow ran ${job?.id ?? 'nothing'} where ${id} was due`);
    await store.complete(name, [{ id: job.id, token: job.token }]);
  }
  const due = (await server.client().time()).map(Number);
  await addJobs(queue, due[0]! * 1000 - 1000, 0, N);
  await drain(name, scenario);
}
// A queue whose rate limit was removed: meta `rated` stays, but with no limit or hold in force
// its claims take the one pass (RL().live).
if (wanted(`backlog of ${N} due at one ms, the queue's rate limit removed`)) {
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  await store.setLimits(name, { rateLimit: { max: 10, perMs: 1_000 } });
  await store.setLimits(name, { rateLimit: null });
  const due = (await server.client().time()).map(Number);
  await addJobs(queue, due[0]! * 1000 - 1000, 0, N);
  await drain(name, `backlog of ${N} due at one ms, the queue's rate limit removed`);
}
// Grouped dispatch: the backlog spread over 1,000 groups (turns between them in every claim).
if (wanted(`backlog of ${N} in 1,000 groups`)) {
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  const due = (await server.client().time()).map(Number);
  await addEach(queue, N, (n) => ({ id: `g${n}`, runAt: due[0]! * 1000 - 1000, group: `t${n % 1000}` }));
  await drain(name, `backlog of ${N} in 1,000 groups`);
}

// One job of a group a call: a grouped queue whose worker keeps up (each claim finds one job,
// each ack gives its group's slot back), 200 jobs in 100 groups.
if (wanted('claims and acks of one job of a group')) {
  const SINGLE = Math.min(N, 200);
  const name = `cost-${++queueNo}`;
  const queue = new Queue(name, { store });
  const due = (await server.client().time()).map(Number);
  await addEach(queue, SINGLE, (n) => ({ id: `g${n}`, runAt: due[0]! * 1000 - 1000, group: `t${n % 100}` }));
  await oneAtATime(name, SINGLE, 'claims and acks of one job of a group');
}

await store.close();
await server.stop();
// --top: each row's costliest functions, per job (names from every dump of the run).
const names = TOP > 0 ? functionNames(readdirSync(dumpDir).map((f) => join(dumpDir, f))) : new Map<string, string>();
const tops = rows.map((r) => (TOP > 0 ? topFunctions(selfCosts(r.dumps, names), TOP) : []));
if (values.keep) console.error(`callgrind dumps kept in ${dumpDir}`);
else rmSync(dumpDir, { recursive: true, force: true });

const perJob = (n: number) => Math.round(n).toLocaleString('en-US');
if (values.json) {
  const out = rows.map(({ dumps: _, ...r }, i) =>
    TOP > 0 ? { ...r, top: tops[i]!.map((t) => ({ fn: t.fn, instructionsPerJob: Math.round(t.instructions / r.jobs), share: t.share })) } : r,
  );
  console.log(JSON.stringify({ batch: BATCH, rows: out }, null, 2));
} else {
  console.log(`Redis instructions per job (callgrind; claims and acks of ${BATCH})\n`);
  console.log(`| scenario | script | instructions per job |\n|---|---|---:|`);
  for (const r of rows) console.log(`| ${r.scenario} | ${r.script} | ${perJob(r.instructionsPerJob)} |`);
  if (TOP > 0) {
    rows.forEach((r, i) => {
      console.log(`\n${r.scenario}, ${r.script}: the ${TOP} costliest functions by their own instructions, per job\n`);
      for (const t of tops[i]!) console.log(`${perJob(t.instructions / r.jobs).padStart(9)}  ${(t.share * 100).toFixed(1).padStart(5)}%  ${t.fn}`);
    });
  }
}
