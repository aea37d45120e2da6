/**
 * The kit's virtual clock and a real Redis agree: one random schedule (jobs added with delays,
 * priorities, some failing once or for good with a fixed backoff) runs on the test env's virtual
 * clock and on a real redis-server with the real clock (slots of 300 ms), and the two give the
 * same order of outcomes. Due times are spaced so that no two outcomes fall within 150 ms of each
 * other (a real run is late by a few ms, more on a busy machine; a virtual one never): what the
 * test compares is the engine's order, not the machine's jitter.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Queue, Worker } from '../../src/index.js';
import { createTestEnv } from '../../src/testing/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errors = useErrorLog();

/** One job of a schedule: its slot (due = slot × SLOT), and how its handler behaves. */
interface Planned {
  id: string;
  slot: number;
  behaviour: 'ok' | 'failsOnce' | 'alwaysFails';
}

/** Milliseconds per slot, and the backoff: a retry lands mid-slot, 150 ms from any due time. */
const SLOT = 300;
const BACKOFF = SLOT / 2;

const schedules = fc
  .uniqueArray(fc.integer({ min: 1, max: 14 }), { minLength: 3, maxLength: 8 })
  .chain((slots) =>
    fc.tuple(
      ...slots.map((slot, i) =>
        fc.constantFrom<Planned['behaviour']>('ok', 'ok', 'failsOnce', 'alwaysFails').map((behaviour) => ({ id: `j${i}`, slot, behaviour })),
      ),
    ),
  );

type Outcome = `${string}:${'completed' | 'retried' | 'dead'}`;

function handlerFor(plan: Planned[]) {
  const byId = new Map(plan.map((p) => [p.id, p]));
  return (job: { id: string; attempt: number }) => {
    const p = byId.get(job.id)!;
    if (p.behaviour === 'alwaysFails' || (p.behaviour === 'failsOnce' && job.attempt === 1)) throw new Error(`planned failure ${job.attempt}`);
  };
}

async function onVirtualClock(plan: Planned[]): Promise<Outcome[]> {
  const env = createTestEnv();
  try {
    const queue = env.queue('plan');
    env.worker('plan', handlerFor(plan), { attempts: 2, backoff: { type: 'fixed', delay: BACKOFF } });
    for (const p of plan) await queue.add({}, { id: p.id, delay: p.slot * SLOT });
    await env.advance(16 * SLOT + 4 * BACKOFF);
    return env
      .outcomes()
      .filter((o) => o.outcome === 'completed' || o.outcome === 'retried' || o.outcome === 'dead')
      .map((o) => `${o.id}:${o.outcome}` as Outcome);
  } finally {
    await env.close();
  }
}

async function onRedis(plan: Planned[]): Promise<Outcome[]> {
  const name = uniqueName('vvr');
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  const seen: Outcome[] = [];
  const worker = fx.track(new Worker(name, handlerFor(plan), { connection: fx.redis.url, attempts: 2, backoff: { type: 'fixed', delay: BACKOFF } }));
  errors.watch(worker);
  worker.on('completed', (j) => seen.push(`${j.id}:completed`));
  worker.on('retried', (j) => seen.push(`${j.id}:retried`));
  worker.on('dead', (j) => seen.push(`${j.id}:dead`));
  await queue.addBulk(plan.map((p) => ({ data: {}, opts: { id: p.id, delay: p.slot * SLOT } })));
  const ends = plan.length;
  await until(() => seen.filter((s) => !s.endsWith(':retried')).length === ends, 'every job to end', 10_000);
  await worker.close();
  await queue.close();
  return seen;
}

describe('the virtual clock and a real Redis agree', () => {
  test('a random schedule gives the same order of outcomes on both', async () => {
    await fc.assert(
      fc.asyncProperty(schedules, async (plan) => {
        const virtual = await onVirtualClock(plan);
        const real = await onRedis(plan);
        assert.deepEqual(real, virtual, JSON.stringify(plan));
      }),
      { numRuns: 3 },
    );
  });
});
