/**
 * node dist/bench/isolation.js: the dispatch rate of an isolated handler (a pool of worker
 * threads, and of child processes) beside the same trivial handler in-process, on the memory
 * store. Per run, one worker: a first batch of 2,000 jobs all due at once ("cold": the pool
 * starts its threads or processes as jobs come), then a second ("warm": the slots are up); each
 * timed from its addBulk to its last 'completed'. Concurrency 8 (the pool's size). Each kind is
 * run --repeat times (default 3), interleaved; prints each run and the median in jobs/s.
 *
 * Options: --jobs <n> (default 2000), --repeat <n> (default 3), --concurrency <n> (default 8).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MemoryStore, Queue, Worker } from '../src/index.js';

const { values } = parseArgs({ options: { jobs: { type: 'string' }, repeat: { type: 'string' }, concurrency: { type: 'string' } } });
const JOBS = Number(values.jobs ?? 2000);
const REPEAT = Number(values.repeat ?? 3);
const CONCURRENCY = Number(values.concurrency ?? 8);

const dir = mkdtempSync(join(tmpdir(), 'delayq-bench-isolation-'));
const MODULE = join(dir, 'handler.mjs');
writeFileSync(MODULE, 'export default (job) => job.data + 1;\n');
const inProcess = (job: { data: number }) => job.data + 1;

type Kind = 'in-process' | 'thread' | 'process';

async function once(kind: Kind, round: number): Promise<{ cold: number; warm: number }> {
  const name = `bench-iso-${kind}-${round}`;
  const connection = `memory://${name}`;
  const queue = new Queue<number>('q', { connection });
  const worker =
    kind === 'in-process'
      ? new Worker<number>('q', inProcess, { connection, concurrency: CONCURRENCY })
      : new Worker<number>('q', MODULE, { connection, concurrency: CONCURRENCY, isolation: kind });
  let done = 0;
  let finished: () => void = () => {};
  worker.on('completed', () => {
    if (++done === JOBS) finished();
  });
  worker.on('failed', (_job, err) => {
    throw err;
  });
  const batch = async () => {
    done = 0;
    const all = new Promise<void>((r) => (finished = r));
    const t0 = performance.now();
    await queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ data: i })));
    await all;
    return (JOBS / (performance.now() - t0)) * 1000;
  };
  const cold = await batch();
  const warm = await batch();
  await worker.close();
  await queue.close();
  MemoryStore.dropShared(name);
  return { cold, warm };
}

const kinds: Kind[] = ['in-process', 'thread', 'process'];
const rates = { cold: new Map<Kind, number[]>(), warm: new Map<Kind, number[]>() };
const n = (x: number) => Math.round(x).toLocaleString('en');
for (let round = 0; round < REPEAT; round++) {
  for (const kind of kinds) {
    const r = await once(kind, round);
    for (const w of ['cold', 'warm'] as const) rates[w].set(kind, [...(rates[w].get(kind) ?? []), r[w]]);
    console.log(`round ${round + 1} ${kind.padEnd(10)} cold ${n(r.cold)} jobs/s, warm ${n(r.warm)} jobs/s`);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const w of ['warm', 'cold'] as const) {
  console.log(`\n${w}: ${JOBS} trivial jobs, concurrency ${CONCURRENCY}, memory store, median of ${REPEAT} (min–max), jobs/s:`);
  for (const kind of kinds) {
    const xs = rates[w].get(kind)!;
    console.log(`  ${kind.padEnd(10)} ${n(median(xs))} (${n(Math.min(...xs))}–${n(Math.max(...xs))})`);
  }
}
rmSync(dir, { recursive: true, force: true });
