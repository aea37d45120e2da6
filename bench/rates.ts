/**
 * npm run bench -- --rates: rate limits and debounce, delayq beside BullMQ on one redis-server of
 * their own (both systems' workers in this process, two Worker instances each, concurrency 100, a
 * no-op handler that records its start with Date.now(); Redis runs on this machine, so its clock
 * and this process's agree). Per run, for each system in turn:
 *
 *  (1) rate limit: { max: 1000, perMs: 1000 } with 3,000 jobs all due, and { max: 10, perMs: 1000 }
 *      with 30 jobs all due (delayq: queue.setLimits({ rateLimit }); BullMQ: each worker's
 *      `limiter: { max, duration }`). Figures: total time (last start − first start; a perfect
 *      limiter needs (⌈n / max⌉ − 1) × perMs), the most starts in any window of perMs (slid over
 *      the sorted starts; more than max breaks the limit), and "start vs its refill": for the k-th
 *      start (k > max, sorted), s_k − (s_{k−max} + perMs), p50/p99/max and min (negative: a window
 *      of perMs held more than max starts; positive: a token came back and waited).
 *  (2) debounce: 200 keys, each a burst of 5 adds 20 ms apart, delayMs 200 (delayq:
 *      `debounce: { key, delayMs: 200 }`; BullMQ: `delay: 200, deduplication: { id: key, ttl: 200,
 *      extend: true, replace: true }`). Figures: runs per key (must be 1), keys whose run had the
 *      last add's data, and start − (the last add's return + 200) p50/p99/max.
 *
 * Options: --quick (small sizes), --repeat <n>, --json.
 */
import { Queue as BullQueue, Worker as BullWorker } from 'bullmq';
import { parseArgs } from 'node:util';
import { Queue, Worker } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { fmt, markdownTable, spread } from './report.js';

interface RateCase {
  max: number;
  perMs: number;
  jobs: number;
}
interface Profile {
  rates: RateCase[];
  keys: number;
  burst: number;
  gapMs: number;
  delayMs: number;
}
const FULL: Profile = {
  rates: [
    { max: 1000, perMs: 1000, jobs: 3000 },
    { max: 10, perMs: 1000, jobs: 30 },
  ],
  keys: 200,
  burst: 5,
  gapMs: 20,
  delayMs: 200,
};
const QUICK: Profile = {
  rates: [
    { max: 200, perMs: 500, jobs: 600 },
    { max: 5, perMs: 500, jobs: 15 },
  ],
  keys: 20,
  burst: 5,
  gapMs: 20,
  delayMs: 200,
};

const SYSTEMS = ['delayq', 'bullmq'] as const;
type SystemName = (typeof SYSTEMS)[number];
const WORKERS = 2;
const CONCURRENCY = 100;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function bullConnection(url: string) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };
}

let seq = 0;
const queueName = (what: string) => `bench-rates-${what}-${process.pid}-${seq++}`;

/** A promise resolved by calling `done` `expect` times. */
function counter(expect: number) {
  let n = 0;
  let resolve!: () => void;
  const all = new Promise<void>((r) => (resolve = r));
  return {
    all,
    done() {
      if (++n === expect) resolve();
    },
  };
}

/**
 * Runs n jobs all due through two workers under a rate limit. Returns, sorted, the handler starts
 * (Date.now()) and the claim times: delayq's from the lease token (`<claim's server ms>-<n>`, the
 * clock the limit is decided on), BullMQ's job.processedOn (the worker's Date.now() sent with the
 * moveToActive call that took the job and its limiter count).
 */
async function rateRun(system: SystemName, url: string, c: RateCase): Promise<{ starts: number[]; claims: number[] }> {
  const starts: number[] = [];
  const claims: number[] = [];
  const { all, done } = counter(c.jobs);
  const handler = (claimedAt: number) => {
    starts.push(Date.now());
    claims.push(claimedAt);
    done();
  };
  const name = queueName('limit');
  if (system === 'delayq') {
    const q = new Queue<number>(name, { connection: url });
    await q.setLimits({ rateLimit: { max: c.max, perMs: c.perMs } });
    await q.addBulk(Array.from({ length: c.jobs }, (_, i) => ({ data: i })));
    const workers = Array.from(
      { length: WORKERS },
      () => new Worker<number>(name, (job) => handler(Number.parseInt(job.token, 10)), { connection: url, concurrency: CONCURRENCY }),
    );
    await all;
    await Promise.all(workers.map((w) => w.close()));
    await q.obliterate({ force: true });
    await q.close();
  } else {
    const connection = bullConnection(url);
    const q = new BullQueue(name, { connection });
    await q.addBulk(Array.from({ length: c.jobs }, (_, i) => ({ name: 'job', data: i, opts: { removeOnComplete: true, removeOnFail: true } })));
    const workers = Array.from(
      { length: WORKERS },
      () =>
        new BullWorker(name, async (job) => handler(job.processedOn ?? Number.NaN), {
          connection,
          concurrency: CONCURRENCY,
          limiter: { max: c.max, duration: c.perMs },
        }),
    );
    for (const w of workers) w.on('error', () => {});
    await all;
    await Promise.all(workers.map((w) => w.close()));
    await q.obliterate({ force: true });
    await q.close();
  }
  return { starts: starts.sort((a, b) => a - b), claims: claims.sort((a, b) => a - b) };
}

interface RateFigures {
  totalMs: number;
  /** (⌈n / max⌉ − 1) × perMs: the least a limiter that never exceeds max can take. */
  floorMs: number;
  maxInWindow: number;
  refillP50: number;
  refillP99: number;
  refillMax: number;
  refillMin: number;
  /** Starts whose refill lateness is negative (a window of perMs held more than max). */
  early: number;
}

export function rateFigures(sorted: number[], c: RateCase): RateFigures {
  // The most starts in any window [t, t + perMs): slide a window starting at each start.
  let maxInWindow = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j]! < sorted[i]! + c.perMs) j++;
    maxInWindow = Math.max(maxInWindow, j - i);
  }
  const late: number[] = [];
  for (let k = c.max; k < sorted.length; k++) late.push(sorted[k]! - (sorted[k - c.max]! + c.perMs));
  late.sort((a, b) => a - b);
  return {
    totalMs: sorted.at(-1)! - sorted[0]!,
    floorMs: (Math.ceil(sorted.length / c.max) - 1) * c.perMs,
    maxInWindow,
    refillP50: percentile(late, 0.5),
    refillP99: percentile(late, 0.99),
    refillMax: late.at(-1) ?? Number.NaN,
    refillMin: late[0] ?? Number.NaN,
    early: late.filter((x) => x < 0).length,
  };
}

interface DebounceFigures {
  keys: number;
  /** Keys run exactly once / more than once / never. */
  once: number;
  twice: number;
  never: number;
  /** Largest count of runs of one key. */
  maxRuns: number;
  /** Keys whose (first) run carried the last add's data. */
  lastData: number;
  /** start − the last add's due time as the system reported it (the add's time + delayMs), over each key's first run. */
  lateP50: number;
  lateP99: number;
  lateMax: number;
  lateMin: number;
  /** start − (the last add's return + delayMs): a lower bound of the lateness, as a check. */
  ackLateMin: number;
  /** Keys whose reported due time lies outside [last add sent, last add returned] + delayMs (± 1 ms). */
  dueOutside: number;
  /** The adds' round trips, p99. */
  addRttP99: number;
}

/** The key of the untimed add that warms a producer up (its run is not counted). */
const WARM_KEY = 'warm-up';

/** 200 keys × a burst of 5 adds 20 ms apart; each key must run once, delayMs after its last add, with its data. */
async function debounce(system: SystemName, url: string, p: Profile): Promise<DebounceFigures> {
  const runs = new Map<string, { start: number; seq: number }[]>();
  const { all, done } = counter(p.keys);
  const handler = (data: { key: string; seq: number }) => {
    const start = Date.now();
    if (data.key === WARM_KEY) return;
    const r = runs.get(data.key) ?? [];
    r.push({ start, seq: data.seq });
    runs.set(data.key, r);
    if (r.length === 1) done();
  };
  const keys = Array.from({ length: p.keys }, (_, i) => `k${i}`);
  const lastAdd = new Map<string, { sent: number; back: number; due: number }>();
  const rtts: number[] = [];
  /** `add` answers the due time the system gave the burst's job (ms). */
  const burst = async (add: (key: string, seq: number) => Promise<number>) => {
    // One add first, not timed, for each system: the round trips measured are a warm producer's
    // (connected, scripts loaded), not the first round's ~150 ms of connecting and loading.
    await add(WARM_KEY, -1);
    for (let s = 0; s < p.burst; s++) {
      const round = Date.now();
      await Promise.all(
        keys.map(async (key) => {
          const sent = Date.now();
          const due = await add(key, s);
          const back = Date.now();
          rtts.push(back - sent);
          lastAdd.set(key, { sent, back, due });
        }),
      );
      if (s < p.burst - 1) await new Promise((r) => setTimeout(r, Math.max(0, p.gapMs - (Date.now() - round))));
    }
  };
  // Wait for every key's first run, then long enough for a second run of any key to show.
  const settle = async () => {
    await all;
    await new Promise((r) => setTimeout(r, p.delayMs * 5));
  };
  const name = queueName('debounce');
  if (system === 'delayq') {
    const q = new Queue<{ key: string; seq: number }>(name, { connection: url });
    const workers = Array.from(
      { length: WORKERS },
      () => new Worker<{ key: string; seq: number }>(name, (job) => handler(job.data), { connection: url, concurrency: CONCURRENCY }),
    );
    // The add's answer: the burst job's due time on the server's clock (its add + delayMs).
    await burst(async (key, s) => (await q.add({ key, seq: s }, { debounce: { key, delayMs: p.delayMs } })).dueAtMs);
    await settle();
    await Promise.all(workers.map((w) => w.close()));
    await q.obliterate({ force: true });
    await q.close();
  } else {
    const connection = bullConnection(url);
    const q = new BullQueue(name, { connection });
    const workers = Array.from(
      { length: WORKERS },
      () => new BullWorker(name, async (job) => handler(job.data as { key: string; seq: number }), { connection, concurrency: CONCURRENCY }),
    );
    for (const w of workers) w.on('error', () => {});
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    // The replacing job's due time: its timestamp (the producer's Date.now() at the add) + its delay.
    await burst(async (key, s) => {
      const job = await q.add(
        'job',
        { key, seq: s },
        { delay: p.delayMs, removeOnComplete: true, removeOnFail: true, deduplication: { id: key, ttl: p.delayMs, extend: true, replace: true } },
      );
      return job.timestamp + p.delayMs;
    });
    await settle();
    await Promise.all(workers.map((w) => w.close()));
    await q.obliterate({ force: true });
    await q.close();
  }
  const late: number[] = [];
  const ackLate: number[] = [];
  let dueOutside = 0;
  let once = 0;
  let twice = 0;
  let maxRuns = 0;
  let lastData = 0;
  for (const key of keys) {
    const r = runs.get(key) ?? [];
    maxRuns = Math.max(maxRuns, r.length);
    if (r.length === 1) once++;
    if (r.length > 1) twice++;
    if (r.length === 0) continue;
    if (r[0]!.seq === p.burst - 1) lastData++;
    const add = lastAdd.get(key)!;
    late.push(r[0]!.start - add.due);
    ackLate.push(r[0]!.start - (add.back + p.delayMs));
    if (add.due < add.sent + p.delayMs - 1 || add.due > add.back + p.delayMs + 1) dueOutside++;
  }
  late.sort((a, b) => a - b);
  rtts.sort((a, b) => a - b);
  return {
    keys: p.keys,
    once,
    twice,
    never: p.keys - runs.size,
    maxRuns,
    lastData,
    lateP50: percentile(late, 0.5),
    lateP99: percentile(late, 0.99),
    lateMax: late.at(-1) ?? Number.NaN,
    lateMin: late[0] ?? Number.NaN,
    ackLateMin: Math.min(...ackLate),
    dueOutside,
    addRttP99: percentile(rtts, 0.99),
  };
}

interface RateResult {
  /** Figures of the handler starts. */
  start: RateFigures;
  /** The same figures of the claim times. */
  claim: RateFigures;
}

interface SystemRuns {
  rates: RateResult[][];
  debounce: DebounceFigures[];
}

/** median (min–max), or the value alone of one run. */
function show(xs: number[]): string {
  const v = spread(xs);
  if (!v) return '—';
  return v.n > 1 ? `${fmt(v.median)} (${fmt(v.min)}–${fmt(v.max)})` : fmt(v.median);
}

export async function runRatesBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv.filter((a) => a !== '--rates'),
    options: { quick: { type: 'boolean', default: false }, repeat: { type: 'string', default: '1' }, json: { type: 'boolean', default: false } },
  });
  const p = values.quick ? QUICK : FULL;
  const repeat = Number(values.repeat);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number ≥ 1 (got ${values.repeat})`);
  const redis = await startRedis({ args: ['--save', '', '--appendonly', 'no'] });
  const results: Record<SystemName, SystemRuns> = {
    delayq: { rates: p.rates.map(() => []), debounce: [] },
    bullmq: { rates: p.rates.map(() => []), debounce: [] },
  };
  try {
    for (let k = 0; k < repeat; k++) {
      // Interleaved, so drift on a shared machine spreads over both systems alike.
      for (const [i, c] of p.rates.entries()) {
        for (const system of SYSTEMS) {
          process.stderr.write(`run ${k + 1}/${repeat}: ${system}, rate limit ${c.max} per ${c.perMs} ms, ${c.jobs} jobs\n`);
          const { starts, claims } = await rateRun(system, redis.url, c);
          results[system].rates[i]!.push({ start: rateFigures(starts, c), claim: rateFigures(claims, c) });
        }
      }
      for (const system of SYSTEMS) {
        process.stderr.write(`run ${k + 1}/${repeat}: ${system}, debounce, ${p.keys} keys × ${p.burst} adds\n`);
        results[system].debounce.push(await debounce(system, redis.url, p));
      }
    }
  } finally {
    await redis.stop();
  }
  if (values.json) {
    console.log(JSON.stringify({ profile: p, repeat, results }, null, 2));
    return;
  }
  const col = (system: SystemName, f: (r: SystemRuns) => number[]) => show(f(results[system]));
  const row = (label: string, f: (r: SystemRuns) => number[]) => [label, ...SYSTEMS.map((s) => col(s, f))];
  const header = ['figure', ...SYSTEMS.map((s) => (repeat > 1 ? `${s}, median (min–max) of ${repeat}` : s))];
  for (const [i, c] of p.rates.entries()) {
    const r = (f: (x: RateFigures) => number) => (s: SystemRuns) => s.rates[i]!.map((x) => f(x.start));
    const rc = (f: (x: RateFigures) => number) => (s: SystemRuns) => s.rates[i]!.map((x) => f(x.claim));
    console.log(`\n### Rate limit { max: ${c.max}, perMs: ${c.perMs} }, ${c.jobs} jobs all due, ${WORKERS} workers\n`);
    console.log(
      markdownTable([
        header,
        row(
          `total time, first start → last start (ms; floor ${fmt((Math.ceil(c.jobs / c.max) - 1) * c.perMs)})`,
          r((x) => x.totalMs),
        ),
        row(
          `most starts in any ${c.perMs} ms window (limit ${c.max})`,
          r((x) => x.maxInWindow),
        ),
        row(
          'start vs its refill, p50 (ms)',
          r((x) => x.refillP50),
        ),
        row(
          'start vs its refill, p99 (ms)',
          r((x) => x.refillP99),
        ),
        row(
          'start vs its refill, max (ms)',
          r((x) => x.refillMax),
        ),
        row(
          'start vs its refill, min (ms; < 0: over the limit)',
          r((x) => x.refillMin),
        ),
        row(
          `starts before their refill (of ${c.jobs - c.max})`,
          r((x) => x.early),
        ),
        row(
          `by claim time: most claims in any ${c.perMs} ms window`,
          rc((x) => x.maxInWindow),
        ),
        row(
          'by claim time: claim vs its refill, p50 (ms)',
          rc((x) => x.refillP50),
        ),
        row(
          'by claim time: claim vs its refill, min (ms)',
          rc((x) => x.refillMin),
        ),
        row(
          `by claim time: claims before their refill (of ${c.jobs - c.max})`,
          rc((x) => x.early),
        ),
      ]),
    );
  }
  const d = (f: (x: DebounceFigures) => number) => (s: SystemRuns) => s.debounce.map(f);
  console.log(`\n### Debounce: ${p.keys} keys, each ${p.burst} adds ${p.gapMs} ms apart, delayMs ${p.delayMs}, ${WORKERS} workers\n`);
  console.log(
    markdownTable([
      header,
      row(
        `keys run exactly once (of ${p.keys})`,
        d((x) => x.once),
      ),
      row(
        'keys run more than once',
        d((x) => x.twice),
      ),
      row(
        'keys never run',
        d((x) => x.never),
      ),
      row(
        'most runs of one key',
        d((x) => x.maxRuns),
      ),
      row(
        `keys whose run had the last add's data (of ${p.keys})`,
        d((x) => x.lastData),
      ),
      row(
        `start − (last add + ${p.delayMs}), p50 (ms)`,
        d((x) => x.lateP50),
      ),
      row(
        `start − (last add + ${p.delayMs}), p99 (ms)`,
        d((x) => x.lateP99),
      ),
      row(
        `start − (last add + ${p.delayMs}), max (ms)`,
        d((x) => x.lateMax),
      ),
      row(
        `start − (last add + ${p.delayMs}), min (ms)`,
        d((x) => x.lateMin),
      ),
      row(
        `check: keys whose due time is not in [add sent, add returned] + ${p.delayMs}`,
        d((x) => x.dueOutside),
      ),
      row(
        `check: start − (last add returned + ${p.delayMs}), min (ms)`,
        d((x) => x.ackLateMin),
      ),
      row(
        `add round trip, p99 (ms; ${p.keys} adds in flight)`,
        d((x) => x.addRttP99),
      ),
    ]),
  );
  console.log(`
- total time: the first handler start to the last. A limiter that never lets more than max start in
  a window of perMs needs at least (⌈jobs / max⌉ − 1) × perMs (the floor).
- most starts in any window: a window of perMs slid over the sorted start times (Date.now() at the
  handler's start, ms); above max, the limit was broken as the handlers saw it.
- start vs its refill: for the k-th start (k > max), s_k − (s_{k−max} + perMs): when it started
  after the token of the start max before it came back. Near 0: the limiter wastes no time; below
  0: that window held more than max starts (shown, not hidden; a few ms may be the handler's own
  start jitter behind the claim, since the limit is decided in the claim on the server's clock).
- by claim time: the same figures of the moment each job was taken under the limit: delayq's
  claim time on the Redis server's clock (the ms in the job's lease token, where the limit is
  decided), BullMQ's job.processedOn (the worker's clock when it called moveToActive). Starts
  come after their claim by the batch's hand-out in the worker, so they are jittered by a few ms.
- debounce: each key should run once, with the data of its burst's last add, delayMs after that
  add. "last add + delayMs" is the due time the system gave the burst's job at the last add:
  delayq's dueAtMs (the server's clock when the add ran, + delayMs), BullMQ's job.timestamp
  (the producer's Date.now() at the add) + delay. The checks: that due time lies between the
  add's send and its return (+ delayMs), and the start measured from the return instead (a lower
  bound: with ${p.keys} adds in flight, the server takes an add up to a round trip before it returns).
- BullMQ: limiter { max, duration } on each worker; debounce as delay ${p.delayMs} with
  deduplication { id: key, ttl: ${p.delayMs}, extend: true, replace: true } (BullMQ 6's debounce mode:
  each add replaces the delayed job, with its data, and restarts its delay).`);
}
