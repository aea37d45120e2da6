/**
 * `delayq import --from-bullmq`: jobs made by the real bullmq package on a real redis-server are
 * imported, then run on a delayq Worker with handlers by name: each once, none before its due
 * time, prioritized ones in BullMQ's order. Twice is once; --dry-run writes nothing; a live
 * BullMQ worker stops it unless --force; --move empties what it imported; bad input writes nothing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue as BullQueue, UnrecoverableError, Worker as BullWorker } from 'bullmq';
import type { Redis } from 'ioredis';
import { importFromBullmq, type Job, Queue, Worker } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { freePort } from '../helpers/redis-server.js';
import { until, within } from '../helpers/wait.js';
import { assertFailure, run } from './run-cli.js';

const fx = useRedis();
const bullConnection = () => ({ host: '127.0.0.1', port: fx.redis.port, maxRetriesPerRequest: null });

/** Every key under a delayq prefix: what "writes nothing" is checked against. */
async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  return client.keys(`${prefix}:*`);
}

/** Runs `jobs` through a BullMQ worker that throws, until `n` of them failed (their last attempt or a retry). */
async function failInBullmq(queue: string, n: number): Promise<void> {
  let failed = 0;
  let enough!: () => void;
  const allFailed = new Promise<void>((resolve) => (enough = resolve));
  const w = new BullWorker(
    queue,
    async () => {
      throw new Error('boom');
    },
    { connection: bullConnection() },
  );
  w.on('failed', () => {
    if (++failed === n) enough();
  });
  try {
    await within(allFailed, 10_000, `${n} BullMQ failures`);
  } finally {
    await w.close();
  }
}

interface Made {
  /** id → the due time BullMQ gave it (now for waiting, prioritized and failed). */
  due: Map<string, number>;
  /** Prioritized ids in the order BullMQ would run them. */
  prioritizedOrder: string[];
  corruptId: string;
  total: number;
}

/** ~1,000 jobs in every state the importer reads, made by bullmq itself. */
async function makeBullmqJobs(queue: string): Promise<Made> {
  const bq = new BullQueue(queue, { connection: bullConnection() });
  const due = new Map<string, number>();
  try {
    // Failed (attempts 1) and retried-with-backoff (attempts 3, one made: back in delayed).
    await bq.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'doomed', data: { i }, opts: { jobId: `doomed-${i}` } })));
    await bq.addBulk(
      Array.from({ length: 10 }, (_, i) => ({
        name: 'flaky',
        data: { i },
        opts: { jobId: `flaky-${i}`, attempts: 3, backoff: { type: 'fixed', delay: 4_000 } },
      })),
    );
    await failInBullmq(queue, 30);
    const start = Date.now();
    await bq.addBulk(Array.from({ length: 400 }, (_, i) => ({ name: 'remind', data: { i }, opts: { delay: 7_000 + ((i * 37) % 3_000) } })));
    await bq.addBulk(Array.from({ length: 400 }, (_, i) => ({ name: i % 2 ? 'send-email' : 'receipt', data: { to: `u${i}@example.com` } })));
    // Priorities 1..13 in a scrambled order: several jobs per priority, so FIFO within one counts too.
    const prio = await bq.addBulk(Array.from({ length: 150 }, (_, i) => ({ name: 'charge', data: { i }, opts: { priority: 1 + ((i * 7) % 13) } })));
    // A retried job's hash holds the backoff as its delay, counted from its failure (after processedOn).
    for (const j of await bq.getDelayed(0, -1)) due.set(j.id!, (j.processedOn ?? j.timestamp) + j.delay);
    for (const j of [...(await bq.getWaiting(0, -1)), ...(await bq.getPrioritized(0, -1)), ...(await bq.getFailed(0, -1))]) due.set(j.id!, start);
    const prioritizedOrder = prio
      .map((j, i) => ({ id: j.id!, p: j.opts.priority!, i }))
      .sort((a, b) => a.p - b.p || a.i - b.i)
      .map((j) => j.id);
    // One waiting job whose data is not JSON: reported, not imported.
    const corruptId = (await bq.getWaiting(0, 0))[0]!.id!;
    await fx.client.hset(`bull:${queue}:${corruptId}`, 'data', '{not json');
    due.delete(corruptId);
    const counts = await bq.getJobCounts('delayed', 'wait', 'prioritized', 'failed');
    assert.deepEqual(counts, { delayed: 410, wait: 400, prioritized: 150, failed: 20 });
    assert.equal(due.size, 979);
    return { due, prioritizedOrder, corruptId, total: due.size };
  } finally {
    await bq.close();
  }
}

describe('import --from-bullmq, ~1,000 jobs made by bullmq', () => {
  const queue = uniqueName('bull-import');
  const prefix = uniqueName('dqi');
  let made: Made;
  const cli = (...args: string[]) => run(['--redis', fx.redis.url, '--prefix', prefix, 'import', '--from-bullmq', queue, '--json', ...args]);

  test('refused while a BullMQ worker is connected; --dry-run counts per state and writes nothing; --force imports', async () => {
    made = await makeBullmqJobs(queue);
    const live = new BullWorker(queue, async () => {}, { connection: bullConnection(), autorun: false, name: 'w1' });
    try {
      await live.waitUntilReady();
      const base64 = Buffer.from(queue).toString('base64');
      await until(async () => ((await fx.client.call('CLIENT', 'LIST')) as string).includes(`name=bull:${base64}:w:w1`), 'the BullMQ worker connection');

      const refused = await cli('--failed');
      const { message, hint } = assertFailure(refused, 1, 'live worker');
      assert.match(message, /1 BullMQ worker\(s\) are connected/);
      assert.match(hint ?? '', /--force/);
      assert.deepEqual(await keysUnder(fx.client, prefix), []);

      const dry = await cli('--failed', '--dry-run');
      assert.equal(dry.code, 0, dry.stderr);
      const d = JSON.parse(dry.stdout);
      assert.deepEqual(d.found, { waiting: 400, prioritized: 150, delayed: 410, failed: 20 });
      assert.equal(d.imported, 0);
      assert.deepEqual(
        d.skipped.map((s: { id: string }) => s.id),
        [made.corruptId],
      );
      assert.deepEqual(await keysUnder(fx.client, prefix), []);

      const forced = await cli('--failed', '--force');
      assert.equal(forced.code, 0, forced.stderr);
      const f = JSON.parse(forced.stdout);
      assert.equal(f.imported, made.total);
      assert.equal(f.priorities, 'negated');
      assert.match(forced.stderr, new RegExp(`skipped BullMQ job "${made.corruptId}" \\(waiting\\): data is not valid JSON`));
    } finally {
      await live.close();
    }
  });

  test('run again: nothing doubles; the BullMQ queue is left as it was', async () => {
    const again = await cli('--failed');
    assert.equal(again.code, 0, again.stderr);
    const a = JSON.parse(again.stdout);
    assert.equal(a.imported, 0);
    assert.equal(a.existing, made.total);
    const q = new Queue(queue, { connection: fx.redis.url, prefix });
    try {
      assert.equal((await q.stats()).scheduled, made.total);
      const flaky = await q.get('flaky-0');
      assert.deepEqual([flaky?.maxAttempts, flaky?.attempt], [3, 1], 'attempts 3, one made in BullMQ: carried, two left');
      assert.equal(flaky?.name, 'flaky');
      const charge = await q.get(made.prioritizedOrder[0]!);
      assert.equal(charge?.priority, -1);
    } finally {
      await q.close();
    }
    const bq = new BullQueue(queue, { connection: bullConnection() });
    try {
      assert.deepEqual(await bq.getJobCounts('delayed', 'wait', 'prioritized', 'failed'), { delayed: 410, wait: 400, prioritized: 150, failed: 20 });
    } finally {
      await bq.close();
    }
  });

  test('a delayq Worker routing by name runs each once, none early, prioritized in BullMQ order', async () => {
    const runs = new Map<string, number>();
    const order: string[] = [];
    const early: string[] = [];
    const note = (job: Job<unknown>) => {
      const now = Date.now();
      if (now < made.due.get(job.id)!) early.push(`${job.id} ran ${made.due.get(job.id)! - now} ms early`);
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (job.name === 'charge') order.push(job.id);
    };
    const handlers = { remind: note, 'send-email': note, receipt: note, charge: note, doomed: note, flaky: note };
    // Most delayed jobs are still ahead when the worker starts: "none early" is tested, not given.
    const startedAtMs = Date.now();
    assert.ok([...made.due.values()].filter((d) => d > startedAtMs + 500).length > 300, 'delayed jobs still ahead');
    const worker = new Worker(queue, handlers, { connection: fx.redis.url, prefix, concurrency: 1, batch: 1 });
    const q = new Queue(queue, { connection: fx.redis.url, prefix });
    try {
      await until(() => runs.size === made.total, `${made.total} jobs run`, 20_000);
      await until(async () => {
        const s = await q.stats();
        return s.scheduled === 0 && s.active === 0;
      }, 'an empty queue');
      assert.deepEqual(early, []);
      assert.deepEqual(
        [...runs].filter(([, n]) => n !== 1),
        [],
        'each job once',
      );
      assert.deepEqual([...runs.keys()].sort(), [...made.due.keys()].sort());
      assert.deepEqual(order, made.prioritizedOrder);
      assert.equal((await q.stats()).dead, 0);
    } finally {
      await worker.close();
      await q.close();
    }
  });
});

describe('import --move', () => {
  test('after a plain copy (a crash before the removal), --move finishes: BullMQ states empty, delayq holds every job once', async () => {
    const queue = uniqueName('bull-move');
    const prefix = uniqueName('dqm');
    const bq = new BullQueue(queue, { connection: bullConnection() });
    try {
      await bq.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: 'doomed', data: { i } })));
      await failInBullmq(queue, 5);
      await bq.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'later', data: { i }, opts: { delay: 3_600_000 } })));
      await bq.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'now', data: { i } })));
      await bq.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'urgent', data: { i }, opts: { priority: 1 + (i % 3) } })));
      const ids = (await bq.getJobs(['delayed', 'wait', 'prioritized', 'failed'])).map((j) => j.id!);
      assert.equal(ids.length, 95);

      // The library, as a program would call it: a copy first (the crashed run's first half).
      const q = new Queue(queue, { connection: fx.redis.url, prefix });
      try {
        const copy = await importFromBullmq(q, { queue, from: fx.redis.url, failed: true });
        assert.equal(copy.imported, 95);
        assert.equal(copy.removed, 0);
      } finally {
        await q.close();
      }
      const moved = await run(['--redis', fx.redis.url, '--prefix', prefix, 'import', '--from-bullmq', queue, '--failed', '--move']);
      assert.equal(moved.code, 0, moved.stderr);
      assert.match(moved.stdout, /imported 0 jobs into delayq queue .*, 95 existed already, 0 skipped/);
      assert.match(moved.stdout, /removed 95 jobs from BullMQ/);
      assert.match(moved.stdout, /became delayq's -p/);
      assert.deepEqual(await bq.getJobCounts('delayed', 'wait', 'prioritized', 'failed'), { delayed: 0, wait: 0, prioritized: 0, failed: 0 });
      for (const id of ids) assert.equal(await fx.client.exists(`bull:${queue}:${id}`), 0, `job hash ${id} removed`);

      const q2 = new Queue(queue, { connection: fx.redis.url, prefix });
      try {
        const s = await q2.stats();
        assert.equal(s.scheduled, 95);
        assert.equal((await q2.get(ids.find((id) => id !== undefined)!))?.id !== undefined, true);
      } finally {
        await q2.close();
      }
    } finally {
      await bq.close();
    }
  });
  test('--move leaves the hash of a job a (forced-past) BullMQ worker took between the read and the removal', async () => {
    const queue = uniqueName('bull-race');
    const prefix = uniqueName('dqr');
    const bq = new BullQueue(queue, { connection: bullConnection() });
    const q = new Queue(queue, { connection: fx.redis.url, prefix });
    try {
      await bq.addBulk(Array.from({ length: 600 }, (_, i) => ({ name: 'now', data: { i } })));
      // The newest waiting job is the last BullMQ would run: in the second chunk of 500.
      const taken = (await fx.client.lrange(`bull:${queue}:wait`, 0, 0))[0]!;
      let chunks = 0;
      const report = await importFromBullmq(q, {
        queue,
        from: fx.redis.url,
        move: true,
        onProgress: async () => {
          if (++chunks > 1) return;
          // What a worker's moveToActive does: off the wait list, onto active.
          await fx.client.lrem(`bull:${queue}:wait`, 0, taken);
          await fx.client.lpush(`bull:${queue}:active`, taken);
        },
      });
      assert.equal(chunks, 2);
      assert.equal(report.imported, 600);
      assert.equal(report.removed, 599);
      assert.equal(await fx.client.exists(`bull:${queue}:${taken}`), 1, 'the active job keeps its hash');
      assert.equal(await fx.client.llen(`bull:${queue}:wait`), 0);
    } finally {
      await q.close();
      await bq.close();
    }
  });
});

describe("import: priorities over delayq's range", () => {
  test('BullMQ priorities up to 2,097,152 become minus their rank: the order is kept', async () => {
    const queue = uniqueName('bull-rank');
    const bq = new BullQueue(queue, { connection: bullConnection() });
    const q = new Queue(queue, { connection: fx.redis.url, prefix: uniqueName('dqp') });
    try {
      const jobs = await bq.addBulk([2_000_000, 5, 1_500_000, 5].map((priority, i) => ({ name: 'p', data: { i }, opts: { priority } })));
      const report = await importFromBullmq(q, { queue, from: fx.redis.url });
      assert.equal(report.priorities, 'ranked');
      assert.equal(report.imported, 4);
      const got = await Promise.all(jobs.map(async (j) => (await q.get(j.id!))?.priority));
      assert.deepEqual(got, [-3, -1, -2, -1]);
    } finally {
      await q.close();
      await bq.close();
    }
  });
});

describe('import --from-bullmq: attempts made are carried', () => {
  test('a failed job comes back with its attempts and the count BullMQ made of them (job.retry() keeps it; one that used all runs once more), read as BullMQ reads it; a delayq worker runs what is left', async () => {
    const queue = uniqueName('bull-atm');
    const bq = new BullQueue(queue, { connection: bullConnection() });
    const dqPrefix = uniqueName('dqa');
    const q = new Queue(queue, { connection: fx.redis.url, prefix: dqPrefix });
    try {
      // spent: 3 attempts, all made. early: 4 attempts, given up after the first (unrecoverable).
      await bq.add('spent', {}, { jobId: 'spent', attempts: 3 });
      await bq.add('early', {}, { jobId: 'early', attempts: 4 });
      let failed = 0;
      let done!: () => void;
      const allFailed = new Promise<void>((resolve) => (done = resolve));
      const w = new BullWorker(
        queue,
        async (job) => {
          throw job.name === 'early' ? new UnrecoverableError('no point') : new Error('boom');
        },
        { connection: bullConnection() },
      );
      w.on('failed', (job) => {
        if (job && (job.name === 'early' || job.attemptsMade >= 3) && ++failed === 2) done();
      });
      try {
        await within(allFailed, 10_000, 'both jobs failed for good in BullMQ');
      } finally {
        await w.close();
      }
      assert.deepEqual(await Promise.all(['spent', 'early'].map(async (id) => (await bq.getJob(id))?.attemptsMade)), [3, 1]);
      // A legacy field (bullmq before atm) beside atm: read first, as bullmq does (attemptsMade || atm).
      await bq.add('legacy', {}, { jobId: 'legacy', attempts: 5 });
      await fx.client.hset(`bull:${queue}:legacy`, 'atm', '1', 'attemptsMade', '2');
      assert.equal((await bq.getJob('legacy'))?.attemptsMade, 2);

      const report = await importFromBullmq(q, { queue, from: fx.redis.url, failed: true });
      assert.equal(report.imported, 3);
      assert.deepEqual(
        await Promise.all(['spent', 'early', 'legacy'].map(async (id) => [(await q.get(id))?.attempt, (await q.get(id))?.maxAttempts])),
        [
          [2, 3],
          [1, 4],
          [2, 5],
        ],
        "the job's own attempts and the attempts made; 'spent' (3 of 3 made) keeps one to run, as job.retry() gives it",
      );
      // What BullMQ would still run, counted on from what it made: each run's job.attempt.
      const seen: string[] = [];
      const dw = new Worker(
        q.name,
        (job) => {
          seen.push(`${job.id}:${job.attempt}/${job.maxAttempts}`);
          throw new Error('still failing');
        },
        { connection: fx.redis.url, prefix: dqPrefix, backoff: { type: 'fixed', delay: 1 } },
      );
      try {
        await until(async () => (await q.stats()).dead === 3, 'all three dead again');
      } finally {
        await dw.close();
      }
      assert.deepEqual(seen.sort(), ['early:2/4', 'early:3/4', 'early:4/4', 'legacy:3/5', 'legacy:4/5', 'legacy:5/5', 'spent:3/3']);
    } finally {
      await q.close();
      await bq.close();
    }
  });
});

describe('import --from-bullmq: bad input is loud and writes nothing', () => {
  test('unknown queue, bad or wrong prefix, bad URL, a closed port', async () => {
    const queue = uniqueName('bull-bad');
    const prefix = uniqueName('dqb');
    const bq = new BullQueue(queue, { connection: bullConnection() });
    try {
      await bq.add('x', { a: 1 });
    } finally {
      await bq.close();
    }
    const cli = (...args: string[]) => run(['--redis', fx.redis.url, '--prefix', prefix, 'import', ...args]);

    const unknown = assertFailure(await cli('--from-bullmq', 'no-such-queue'), 64, 'unknown queue');
    assert.match(unknown.message, /no BullMQ queue "no-such-queue" under prefix "bull"/);
    const wrongPrefix = assertFailure(await cli('--from-bullmq', queue, '--bullmq-prefix', 'nope'), 64, 'wrong prefix');
    assert.match(wrongPrefix.message, /under prefix "nope"/);
    for (const bad of ['', 'a b', 'bull:', 'bu*ll']) {
      const r = assertFailure(await cli('--from-bullmq', queue, '--bullmq-prefix', bad), 64, `prefix ${JSON.stringify(bad)}`);
      assert.match(r.message, /bullmqPrefix must be a key prefix/);
    }
    for (const url of ['http://127.0.0.1:6379', 'not a url']) {
      const r = assertFailure(await cli('--from-bullmq', queue, '--from-url', url), 64, `url ${url}`);
      assert.match(r.message, /from must be a redis:\/\/ or rediss:\/\/ URL/);
    }
    const port = await freePort();
    const started = Date.now();
    const closed = assertFailure(await cli('--from-bullmq', queue, '--from-url', `redis://127.0.0.1:${port}`), 1, 'closed port');
    assert.ok(Date.now() - started < 8_000, 'loud within seconds');
    assert.match(closed.message, new RegExp(`Redis at redis://127.0.0.1:${port}: cannot read the BullMQ queue`));
    assert.deepEqual(await keysUnder(fx.client, prefix), []);
    assert.equal(await fx.client.llen(`bull:${queue}:wait`), 1, 'the BullMQ queue as it was');
  });
});
