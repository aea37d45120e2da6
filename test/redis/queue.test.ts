import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore, ValidationError } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { newJob } from '../helpers/new-job.js';
import { scheduledScore } from '../helpers/scheduled.js';
import { serverTimeMs } from '../helpers/wait.js';

const fx = useRedis();

function newQueue<T = unknown>(opts: Record<string, unknown> = {}): Queue<T> {
  return new Queue<T>(uniqueName('q'), { connection: fx.redis.url, ...opts });
}

describe('add', () => {
  test('a delay is measured from the server clock', async () => {
    const q = newQueue();
    const before = await serverTimeMs(fx.client);
    const r = await q.add({ a: 1 }, { delay: 5000 });
    const after = await serverTimeMs(fx.client);
    assert.equal(r.added, true);
    assert.equal(r.state, 'scheduled');
    assert.ok(r.dueAtMs >= before + 5000 && r.dueAtMs <= after + 5000, `due ${r.dueAtMs} not within [${before + 5000}, ${after + 5000}]`);
    assert.equal(await scheduledScore(fx.client, queueKeys('dq', q.name).scheduled, r.id), r.dueAtMs);
    await q.close();
  });

  test('runAt is taken as given, in epoch ms or as a Date', async () => {
    const q = newQueue();
    const at = Date.UTC(2030, 0, 1, 2, 0, 0);
    assert.equal((await q.add(1, { runAt: at })).dueAtMs, at);
    assert.equal((await q.add(2, { runAt: new Date(at + 1) })).dueAtMs, at + 1);
    await q.close();
  });

  test('fractional delays round up, so a job is never early', async () => {
    const q = newQueue();
    const before = await serverTimeMs(fx.client);
    const r = await q.add(1, { delay: 1000.2 });
    assert.ok(r.dueAtMs >= before + 1001);
    await q.close();
  });

  test('adding an existing id changes nothing and says so', async () => {
    const q = newQueue();
    const first = await q.add({ v: 1 }, { id: 'order:1', delay: 60_000 });
    const second = await q.add({ v: 2 }, { id: 'order:1', delay: 1000 });
    assert.deepEqual(second, { id: 'order:1', added: false, replaced: false, state: 'scheduled', dueAtMs: first.dueAtMs });
    const job = await q.get('order:1');
    assert.deepEqual(job?.data, { v: 1 });
    assert.equal(await fx.client.zcard(queueKeys('dq', q.name).scheduled), 1);
    await q.close();
  });

  test('replace overwrites a scheduled job and reschedules it', async () => {
    const q = newQueue();
    await q.add({ v: 1 }, { id: 'order:2', delay: 60_000, priority: 5 });
    const r = await q.add({ v: 2 }, { id: 'order:2', delay: 1000, replace: true });
    assert.equal(r.added, true);
    assert.equal(r.replaced, true);
    const job = await q.get('order:2');
    assert.deepEqual(job?.data, { v: 2 });
    assert.equal(job?.priority, 0);
    assert.equal(job?.dueAtMs, r.dueAtMs);
    assert.equal(await scheduledScore(fx.client, queueKeys('dq', q.name).scheduled, 'order:2'), r.dueAtMs);
    await q.close();
  });

  test('generated ids are unique and an id may hold any printable text', async () => {
    const q = newQueue();
    const a = await q.add(1);
    const b = await q.add(2);
    assert.notEqual(a.id, b.id);
    const odd = await q.add(3, { id: 'weird id {with} braces:and:colons/ü' });
    assert.equal((await q.get(odd.id))?.data, 3);
    await q.close();
  });

  test('single adds made at once go out in script runs of 100, each answered as if made alone', async () => {
    const q = newQueue<number>();
    await q.add(-1, { delay: 60_000 }); // connected, scripts loaded, queue registered
    await fx.client.config('RESETSTAT');
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => q.add(i, { id: `j${i % 150}`, delay: 60_000 })));
    const stats = await fx.client.info('commandstats');
    const runs = [...stats.matchAll(/cmdstat_(?:eval(?:sha)?|fcall):calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    // A run goes out as it fills (add-batcher.test.ts), so Redis writes one while the next is made.
    assert.equal(runs, 2, `200 adds of one turn in ${runs} script runs`);
    assert.deepEqual(
      results.map((r) => r.added),
      Array.from({ length: 200 }, (_, i) => i < 150),
      'the first add of an id holds it, as if each were made alone',
    );
    assert.equal((await q.get('j0'))?.data, 0);
    assert.equal((await q.stats()).scheduled, 151);
    // An add made alone is answered alone: one run, as before.
    await fx.client.config('RESETSTAT');
    await q.add(1, { delay: 60_000 });
    assert.match(await fx.client.info('commandstats'), /cmdstat_fcall:calls=1,/);
    await q.close();
  });

  test('a batch of adds sent at once (a PackedCommand) never overtakes a call made before it and still in the pipeline', async () => {
    const q = newQueue<number>();
    await q.add(-1, { delay: 60_000 }); // connected, scripts loaded, queue registered
    // In one turn: a cancel (in ioredis's auto-pipeline until the turn ends), an add of the id it
    // cancels, and a get that sends the add at once. The cancel finds nothing; the add stays.
    const cancelled = q.cancel('order:9');
    const added = q.add(1, { id: 'order:9', delay: 60_000 });
    const got = q.get('order:9');
    assert.deepEqual(await cancelled, { id: 'order:9', cancelled: false, state: undefined });
    assert.equal((await added).added, true);
    assert.equal((await got)?.data, 1);
    await q.close();
  });

  test("a worker's claim and ack (PackedCommands) never overtake a call made before them and still in the pipeline", async () => {
    const store = new RedisStore({ connection: fx.redis.url });
    const q = new Queue<number>(uniqueName('q'), { store });
    await q.add(1, { id: 'job-1' });
    const claimed = await store.claim(q.name, 1, 60_000, 3, 'w');
    const job = claimed.jobs[0]!;
    // In one turn: a read on the store's own connection (in ioredis's auto-pipeline until the turn
    // ends), then the ack of the job and a claim. The read sees the job's body still there; the
    // claim finds nothing.
    const body = store.client.hget(queueKeys('dq', q.name).jobs, 'job-1');
    assert.ok(store.client.autoPipelineQueueSize > 0, 'the read waits in the auto-pipeline');
    const acked = store.complete(q.name, [{ id: job.id, token: job.token }]);
    const again = store.claim(q.name, 1, 60_000, 3, 'w');
    assert.notEqual(await body, null, 'the read went before the ack');
    assert.deepEqual(await acked, ['ok']);
    assert.equal((await again).jobs.length, 0);
    assert.equal(await q.get('job-1'), null);
    await q.close();
    await store.close();
  });

  test('addBulk writes every job, chunked, and reports each', async () => {
    const q = newQueue();
    const jobs = Array.from({ length: 1234 }, (_, i) => ({ data: { i }, opts: { id: `j${i}`, delay: 60_000 } }));
    const rs = await q.addBulk(jobs);
    assert.equal(rs.length, 1234);
    assert.ok(rs.every((r, i) => r.added && r.id === `j${i}`));
    assert.equal(await fx.client.zcard(queueKeys('dq', q.name).scheduled), 1234);
    const again = await q.addBulk(jobs.slice(0, 3));
    assert.ok(again.every((r) => !r.added));
    await q.close();
  });
});

describe('cancel, reschedule, promote, get, stats', () => {
  test('cancel removes a scheduled job, body and all', async () => {
    const q = newQueue();
    await q.add({}, { id: 'order:3:timeout', delay: 60_000 });
    assert.deepEqual(await q.cancel('order:3:timeout'), { id: 'order:3:timeout', cancelled: true, state: 'scheduled' });
    assert.equal(await q.get('order:3:timeout'), null);
    assert.equal(await fx.client.hexists(queueKeys('dq', q.name).jobs, 'order:3:timeout'), 0);
    assert.equal(await fx.client.hexists(queueKeys('dq', q.name).runs, 'order:3:timeout'), 0);
    assert.deepEqual(await q.cancel('order:3:timeout'), { id: 'order:3:timeout', cancelled: false, state: undefined });
    await q.close();
  });

  test('reschedule moves the due time; promote makes it due now', async () => {
    const q = newQueue();
    await q.add({}, { id: 'r1', delay: 60_000 });
    const at = Date.UTC(2031, 5, 1);
    const r = await q.reschedule('r1', { runAt: at });
    assert.deepEqual(r, { id: 'r1', rescheduled: true, state: 'scheduled', dueAtMs: at });
    const before = await serverTimeMs(fx.client);
    const p = await q.promote('r1');
    assert.ok(p.rescheduled && p.dueAtMs! >= before && p.dueAtMs! < before + 1000);
    const job = await q.get('r1');
    assert.equal(job?.ready, true);
    assert.deepEqual(await q.reschedule('nope', { delay: 5 }), { id: 'nope', rescheduled: false, state: undefined, dueAtMs: undefined });
    await q.close();
  });

  test('stats count by state by the server clock', async () => {
    const q = newQueue();
    await q.add(1, { delay: 0 });
    await q.add(2, { delay: 0 });
    await q.add(3, { delay: 30_000 });
    await q.add(4, { delay: 3_600_000 });
    const s = await q.stats({ windowMs: 60_000 });
    assert.equal(s.scheduled, 4);
    assert.equal(s.ready, 2);
    assert.equal(s.active, 0);
    assert.equal(s.dead, 0);
    assert.equal(s.nextDueInMs, 0);
    assert.equal(s.dueWithinWindow, 3);
    await q.close();
  });
});

describe('bad input is rejected at the call, naming the field, and writes nothing', () => {
  const cases: [string, () => (q: Queue) => Promise<unknown>, string][] = [
    ['negative delay', () => (q) => q.add(1, { delay: -1 }), 'delay'],
    ['NaN delay', () => (q) => q.add(1, { delay: Number.NaN }), 'delay'],
    ['infinite delay', () => (q) => q.add(1, { delay: Infinity }), 'delay'],
    ['huge delay', () => (q) => q.add(1, { delay: 1e15 }), 'delay'],
    ['delay as text', () => (q) => q.add(1, { delay: '5' as unknown as number }), 'delay'],
    ['delay and runAt', () => (q) => q.add(1, { delay: 5, runAt: Date.now() }), 'delay'],
    ['negative runAt', () => (q) => q.add(1, { runAt: -5 }), 'runAt'],
    ['invalid Date', () => (q) => q.add(1, { runAt: new Date('nope') }), 'runAt'],
    ['empty id', () => (q) => q.add(1, { id: '' }), 'id'],
    ['over-long id', () => (q) => q.add(1, { id: 'x'.repeat(257) }), 'id'],
    ['id with a newline', () => (q) => q.add(1, { id: 'a\nb' }), 'id'],
    ['unknown option', () => (q) => q.add(1, { delya: 5 } as never), 'delya'],
    ['fractional priority', () => (q) => q.add(1, { priority: 1.5 }), 'priority'],
    ['zero attempts', () => (q) => q.add(1, { attempts: 0 }), 'attempts'],
    ['bad backoff', () => (q) => q.add(1, { backoff: { type: 'linear' } as never }), 'backoff'],
    ['payload over the limit', () => (q) => q.add('x'.repeat(600 * 1024)), 'data'],
    ['unserialisable payload', () => (q) => q.add({ n: 10n } as never), 'data'],
    ['options not an object', () => (q) => q.add(1, 5 as never), 'options'],
    ['bad job in a bulk', () => (q) => q.addBulk([{ data: 1 }, { data: 2, opts: { delay: -1 } }]), 'jobs[1].opts.delay'],
    ['bad bulk payload', () => (q) => q.addBulk([{ data: 1 }, { data: 'y'.repeat(600 * 1024) }]), 'jobs[1].data'],
    ['reschedule without a time', () => (q) => q.reschedule('a', {}), 'delay'],
    ['cancel with an empty id', () => (q) => q.cancel(''), 'id'],
    ['stats with a negative window', () => (q) => q.stats({ windowMs: -1 }), 'windowMs'],
  ];
  for (const [label, make, field] of cases) {
    test(label, async () => {
      const q = newQueue();
      await assert.rejects(make()(q), (err: unknown) => {
        assert.ok(err instanceof ValidationError, `expected ValidationError, got ${String(err)}`);
        assert.equal(err.field, field);
        assert.ok(err.message.startsWith(field), err.message);
        return true;
      });
      assert.deepEqual(await fx.client.keys(`${queueKeys('dq', q.name).root}*`), []);
      await q.close();
    });
  }

  test('bad queue names and options are rejected by the constructor', () => {
    assert.throws(() => new Queue('a{b}', { connection: fx.redis.url }), { name: 'ValidationError', field: 'queue name' });
    assert.throws(() => new Queue('', { connection: fx.redis.url }), { name: 'ValidationError' });
    assert.throws(() => new Queue('ok', { connection: fx.redis.url, colour: 1 } as never), { field: 'colour' });
    assert.throws(() => new Queue('ok', { connection: 'http://x' }), { field: 'connection' });
  });
});

describe('the store remembers a bounded number of queue names', () => {
  test('key names of 3,000 queues read through one store: the cache holds at most KEY_CACHE_MAX, the latest ones', async () => {
    const { RedisStore, KEY_CACHE_MAX } = await import('../../src/store/redis/redis-store.js');
    const store = new RedisStore({ connection: fx.redis.url });
    try {
      for (let i = 0; i < 3_000; i++) await store.stats(`many-${i}`, 1000);
      assert.ok(store.cachedQueueCount <= KEY_CACHE_MAX, `${store.cachedQueueCount} queues cached`);
      // Still right for a queue whose keys were dropped from the cache.
      await store.add('many-0', [newJob('x', { delayMs: 60_000 })]);
      assert.equal((await store.stats('many-0', 1000)).scheduled, 1);
    } finally {
      await store.close();
    }
  });
});
