/**
 * A producer in another language, with nothing but docs/data-model.md: it enqueues, cancels and
 * reschedules with plain Redis commands (no delayq code, no delayq script), and a delayq worker
 * runs what is left, on time, in order. If the layout changes, this test and the recipes in the
 * docs change together.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Redis } from 'ioredis';
import { Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

/** The recipes of docs/data-model.md ("Producing from another language"), command by command. */
class PlainProducer {
  readonly #r: Redis;
  readonly #root: string;
  constructor(r: Redis, queue: string) {
    this.#r = r;
    this.#root = queueKeys('dq', queue).root;
  }

  /** "now" is the Redis server's clock, never the producer's. */
  async now(): Promise<number> {
    const [s, us] = await this.#r.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  async enqueue(id: string, data: unknown, dueMs: number, priority = 0): Promise<boolean> {
    const now = await this.now();
    const seq = await this.#r.incr(`${this.#root}seq`);
    const body = `${seq}:${now}:${priority}::0:0:${JSON.stringify(data)}`;
    const [[, created]] = (await this.#r.multi().hsetnx(`${this.#root}jobs`, id, body).zadd(`${this.#root}scheduled`, 'NX', dueMs, id).exec()) as [
      [null, number],
      [null, number],
    ];
    await this.#r.publish(`${this.#root}wake`, String(dueMs));
    return created === 1;
  }

  async cancel(id: string): Promise<boolean> {
    if ((await this.#r.zrem(`${this.#root}scheduled`, id)) !== 1) return false;
    await this.#r.multi().hdel(`${this.#root}jobs`, id).hdel(`${this.#root}runs`, id).exec();
    return true;
  }

  async reschedule(id: string, dueMs: number): Promise<boolean> {
    const changed = await this.#r.zadd(`${this.#root}scheduled`, 'XX', 'CH', dueMs, id);
    await this.#r.publish(`${this.#root}wake`, String(dueMs));
    return changed === 1;
  }
}

test('a producer with plain Redis commands enqueues, cancels and reschedules; a delayq worker runs the jobs on time, in order', async () => {
  const name = uniqueName('foreign');
  const p = new PlainProducer(fx.client, name);
  const ran: { id: string; data: unknown; at: number; due: number }[] = [];
  fx.track(
    new Worker<{ n: number }>(
      name,
      async (job) => {
        ran.push({ id: job.id, data: job.data, at: await p.now(), due: job.dueAtMs });
      },
      { connection: fx.redis.url, concurrency: 1 },
    ),
  );
  const now = await p.now();
  // Same due time and priority: FIFO by the seq each add took.
  assert.equal(await p.enqueue('a', { n: 1 }, now + 300), true);
  assert.equal(await p.enqueue('b', { n: 2 }, now + 300), true);
  assert.equal(await p.enqueue('urgent', { n: 3 }, now + 300, 5), true);
  assert.equal(await p.enqueue('gone', { n: 4 }, now + 300), true);
  assert.equal(await p.enqueue('later', { n: 5 }, now + 60_000), true);
  assert.equal(await p.enqueue('a', { n: 99 }, now + 300), false, 'an existing id is left alone');
  assert.equal(await p.cancel('gone'), true);
  assert.equal(await p.reschedule('later', now + 700), true);

  await until(() => ran.length === 4, 'four jobs run', 5000);
  assert.deepEqual(
    ran.map((r) => r.id),
    ['urgent', 'a', 'b', 'later'],
  );
  assert.deepEqual(ran[1]!.data, { n: 1 });
  for (const r of ran) assert.ok(r.at >= r.due, `${r.id} ran ${r.due - r.at} ms early`);
  assert.equal(ran[3]!.due, now + 700);
  const queue = fx.track(new Queue(name, { connection: fx.redis.url }));
  assert.equal(await queue.get('gone'), null);
  const report = await queue.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
  assert.equal((await queue.stats()).scheduled, 0);
});
