/**
 * A producer in another language, with nothing but docs/protocol.md and the published protocol
 * (protocol/manifest.json, protocol/scripts/*.lua): it enqueues and cancels by running the
 * self-contained scripts with EVAL, its KEYS and ARGV built by name from the manifest (no delayq
 * code), reschedules with reschedule.lua, re-sends calls as a client does after
 * a lost reply, and a delayq worker runs what is left, on time, in order, once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Redis } from 'ioredis';
import { listQueues, Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();

const protocolDir = new URL('../../../protocol/', import.meta.url);
interface Named {
  name: string;
}
interface ScriptEntry {
  file: string;
  keys: (Named & { key: string })[];
  args: Named[];
  items?: { itemsFrom: number; fields: Named[] };
  reply: { fields?: string[]; each?: string[] };
  codes?: Record<string, number>;
}
const manifest = JSON.parse(readFileSync(new URL('manifest.json', protocolDir), 'utf8')) as { scripts: Record<string, ScriptEntry> };

/** The recipes of docs/protocol.md, call by call: a client knows nothing but the manifest. */
class ProtocolProducer {
  readonly #r: Redis;
  readonly #prefix = 'dq';
  readonly #queue: string;
  constructor(r: Redis, queue: string) {
    this.#r = r;
    this.#queue = queue;
  }

  /** "now" is the Redis server's clock, never the producer's. */
  async now(): Promise<number> {
    const [s, us] = await this.#r.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }

  key(template: string, requestId = ''): string {
    return template
      .replace('<prefix>', this.#prefix)
      .replace('<queue>', this.#queue)
      .replace(/req:<request id>.*$/, `req:${requestId}`);
  }

  /** Runs a script by name: KEYS and ARGV in the manifest's order, values by name. */
  async run(name: string, values: Record<string, string | number>, items: Record<string, string | number>[] = [], requestId = ''): Promise<unknown[]> {
    const s = manifest.scripts[name]!;
    const source = readFileSync(new URL(s.file, protocolDir), 'utf8');
    const keys = s.keys.map((k) => this.key(k.key, requestId));
    const root = `${this.#prefix}:{${this.#queue}}:`;
    const argv = s.args.map((a) => (a.name === 'root' ? root : a.name === 'wake' ? `${root}wake` : String(values[a.name] ?? '')));
    for (const item of items) for (const f of s.items!.fields) argv.push(String(item[f.name] ?? ''));
    return (await this.#r.eval(source, keys.length, ...keys, ...argv)) as unknown[];
  }

  /** add.lua, one job: its code by name, and whether the add made the queue (then it registers it). */
  async enqueue(id: string, data: unknown, runAt: number, priority = 0, requestId: string = randomUUID()): Promise<string> {
    const s = manifest.scripts.add!;
    const reply = await this.run(
      'add',
      // Every item carries every field (group, cost, debounce, hold; '' for none): item_fields = 'holds'.
      { request_id: requestId, memo_ms: 60_000, item_fields: 'holds' },
      [{ id, data: JSON.stringify(data), run_at: runAt, priority, replace: '0' }].map((j) => ({ ...j, delay_ms: '' })),
      requestId,
    );
    const fields = s.reply.fields!.length;
    if (reply[0] === 1) await this.#r.zadd(`${this.#prefix}:queues`, 'NX', await this.now(), this.#queue);
    const code = reply[fields + s.reply.each!.indexOf('code')];
    return Object.entries(s.codes!).find(([, v]) => v === code)![0];
  }

  async cancel(id: string, requestId: string = randomUUID()): Promise<string> {
    const s = manifest.scripts.cancel!;
    const reply = await this.run('cancel', { request_id: requestId, memo_ms: 60_000 }, [{ id }], requestId);
    return Object.entries(s.codes!).find(([, v]) => v === reply[s.reply.each!.indexOf('code')])![0];
  }

  /** reschedule.lua: whether the job moved (`done`); a re-send after its reply was lost answers the same from its memo. */
  async reschedule(id: string, dueMs: number, requestId: string = randomUUID()): Promise<boolean> {
    const s = manifest.scripts.reschedule!;
    const reply = await this.run('reschedule', { id, delay_ms: '', run_at: dueMs, request_id: requestId, memo_ms: 60_000 }, [], requestId);
    return reply[s.reply.fields!.indexOf('code')] === s.codes!.done;
  }
}

test('a producer that runs the published scripts enqueues, cancels and reschedules; a delayq worker runs the jobs on time, in order, once; re-sent calls answer as the first', async () => {
  const name = uniqueName('foreign');
  const p = new ProtocolProducer(fx.client, name);
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
  assert.equal(await p.enqueue('a', { n: 1 }, now + 300, 0, 'req-a'), 'added');
  assert.equal(await p.enqueue('b', { n: 2 }, now + 300), 'added');
  assert.equal(await p.enqueue('urgent', { n: 3 }, now + 300, 5), 'added');
  assert.equal(await p.enqueue('gone', { n: 4 }, now + 300), 'added');
  assert.equal(await p.enqueue('later', { n: 5 }, now + 60_000), 'added');
  assert.equal(await p.enqueue('a', { n: 99 }, now + 300), 'exists', 'an existing id is left alone');
  assert.equal(await p.cancel('gone', 'req-gone'), 'done');
  assert.equal(await p.reschedule('later', now + 700), true);

  await until(() => ran.length === 4, 'four jobs run', 5000);
  // Re-sent after the jobs ran (a reply lost, the same request id): the first answers again, and
  // neither the job nor the cancelled one comes back.
  assert.equal(await p.enqueue('a', { n: 1 }, now + 300, 0, 'req-a'), 'added');
  assert.equal(await p.cancel('gone', 'req-gone'), 'done');
  assert.equal(await p.reschedule('later', now + 700), false, 'a reschedule re-sent after the job ran moves nothing');
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
  assert.ok(
    (await listQueues({ connection: fx.redis.url })).some((q) => q.name === name),
    'the add named the queue in the registry',
  );
});
