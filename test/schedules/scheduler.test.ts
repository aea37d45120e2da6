import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { MemoryStore, occurrenceJobId, Queue, Scheduler, ValidationError, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { RedisStore } from '../../src/store/redis/redis-store.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs, until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

const { track } = fx;

/** Occurrence times of the jobs the store recorded as added, from the event stream. */
async function addedOccurrences(queue: string, schedule: string): Promise<number[]> {
  const raw = (await fx.client.xrange(queueKeys('dq', queue).events, '-', '+')) as [string, string[]][];
  const prefix = `schedule:${schedule}:`;
  return raw
    .filter(([, f]) => f[1] === 'added' && f[3]!.startsWith(prefix))
    .map(([, f]) => Number(f[3]!.slice(prefix.length)))
    .sort((a, b) => a - b);
}

describe('recurring schedules on Redis', () => {
  test('two schedulers (own connections) enqueue each occurrence exactly once; workers run them on time', async () => {
    const queue = track(new Queue<{ n: number }>(uniqueName('s'), { connection: fx.redis.url }));
    await queue.events.enable({ maxLen: 100_000 });
    const ran: { id: string; late: number }[] = [];
    const w = track(
      new Worker<{ n: number }>(queue.name, (job) => void ran.push({ id: job.id, late: Date.now() - job.dueAtMs }), { connection: fx.redis.url }),
    );
    errorLog.watch(w);
    await queue.schedules.upsert('tick', { every: 200, data: { n: 1 } });
    const a = track(new Scheduler(queue.name, { connection: fx.redis.url, leadMs: 100 }));
    const b = track(new Scheduler(queue.name, { connection: fx.redis.url, leadMs: 100 }));
    await until(() => ran.length >= 6, 'six occurrences to run', 10_000);
    const occ = await addedOccurrences(queue.name, 'tick');
    assert.equal(new Set(occ).size, occ.length, 'no occurrence added twice');
    for (let i = 1; i < occ.length; i++) assert.equal(occ[i]! - occ[i - 1]!, 200, 'no occurrence skipped');
    assert.equal(new Set(ran.map((r) => r.id)).size, ran.length, 'no occurrence ran twice');
    assert.ok(a.enqueued + b.enqueued >= occ.length);
    assert.ok(
      ran.every((r) => r.late < 1000),
      `on time: ${ran.map((r) => r.late).join(',')}`,
    );
    const info = await queue.schedules.get('tick');
    assert.equal(info?.every, 200);
    assert.ok(info!.lastRunAtMs! >= occ.at(-1)!);
    assert.ok(info!.nextRunAtMs! > info!.lastRunAtMs!);
  });

  test('two scheduler processes: each occurrence enqueued once, none skipped', async () => {
    const queue = track(new Queue(uniqueName('s'), { connection: fx.redis.url }));
    await queue.events.enable({ maxLen: 100_000 });
    await queue.schedules.upsert('proc', { every: 150 });
    const program = fileURLToPath(new URL('../helpers/scheduler-process.js', import.meta.url));
    const children = [0, 1].map(() => fork(program, [fx.redis.url, queue.name], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }));
    try {
      await within(Promise.all(children.map((c) => new Promise((r) => c.once('message', r)))), 10_000, 'both scheduler processes to start');
      await until(async () => (await addedOccurrences(queue.name, 'proc')).length >= 8, 'eight occurrences', 15_000);
      const occ = await addedOccurrences(queue.name, 'proc');
      assert.equal(new Set(occ).size, occ.length, 'no occurrence added twice');
      for (let i = 1; i < occ.length; i++) assert.equal(occ[i]! - occ[i - 1]!, 150, 'none skipped');
    } finally {
      await within(
        Promise.all(
          children.map((c) => {
            const exited = new Promise((r) => c.once('exit', r));
            c.kill('SIGTERM');
            return exited;
          }),
        ),
        5_000,
        'both scheduler processes to exit on SIGTERM',
      );
    }
  });

  test("a scheduler on a host whose clock is 2 minutes fast skips no occurrence and never moves schedule-last ahead of the server's clock", async () => {
    // The regression: occurrences were decided by the host's clock. The fast host saw every
    // occurrence of the last two minutes as missed, enqueued only the latest (2 minutes ahead),
    // and the correct scheduler then waited two minutes for the server to catch up.
    const queue = track(new Queue(uniqueName('s'), { connection: fx.redis.url }));
    await queue.events.enable({ maxLen: 100_000 });
    await queue.schedules.upsert('skew', { every: 200 });
    const lead = 100;
    track(new Scheduler(queue.name, { connection: fx.redis.url, leadMs: lead }));
    const program = fileURLToPath(new URL('../helpers/scheduler-process.js', import.meta.url));
    const fast = fork(program, [fx.redis.url, queue.name, '120000'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    try {
      const hello = (await within(new Promise((r) => fast.once('message', r)), 10_000, 'the fast-clock scheduler process to start')) as { now: number };
      assert.ok(hello.now - Date.now() > 100_000, 'the child runs 2 minutes fast');
      const lastKey = queueKeys('dq', queue.name).scheduleLast;
      const from = performance.now();
      let samples = 0;
      while (performance.now() - from < 2000) {
        const [last, now] = await Promise.all([fx.client.hget(lastKey, 'skew'), serverTimeMs(fx.client)]);
        if (last !== null) assert.ok(Number(last) <= now + lead + 50, `schedule-last is ${Number(last) - now} ms ahead of the server's clock`);
        samples++;
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(samples > 10);
      const occ = await addedOccurrences(queue.name, 'skew');
      assert.ok(occ.length >= 7, `occurrences kept coming: ${occ.length}`);
      assert.equal(new Set(occ).size, occ.length, 'no occurrence added twice');
      for (let i = 1; i < occ.length; i++) assert.equal(occ[i]! - occ[i - 1]!, 200, `none skipped: ${occ.join(',')}`);
    } finally {
      const exited = new Promise((r) => fast.once('exit', r));
      fast.kill('SIGTERM');
      await within(exited, 5_000, 'the fast-clock scheduler process to exit on SIGTERM');
    }
  });

  test('a per-second cron run by two schedulers fires once a second', async () => {
    const queue = track(new Queue(uniqueName('s'), { connection: fx.redis.url }));
    await queue.events.enable({ maxLen: 100_000 });
    await queue.schedules.upsert('every-second', { cron: '* * * * * *' });
    track(new Scheduler(queue.name, { connection: fx.redis.url }));
    track(new Scheduler(queue.name, { connection: fx.redis.url }));
    await until(async () => (await addedOccurrences(queue.name, 'every-second')).length >= 3, 'three occurrences', 10_000);
    const occ = await addedOccurrences(queue.name, 'every-second');
    for (let i = 1; i < occ.length; i++) assert.equal(occ[i]! - occ[i - 1]!, 1000);
    assert.ok(
      occ.every((t) => t % 1000 === 0),
      'on whole seconds',
    );
  });

  test('a change applies from the next occurrence; remove stops it', async () => {
    const queue = track(new Queue(uniqueName('s'), { connection: fx.redis.url }));
    await queue.events.enable({ maxLen: 100_000 });
    await queue.schedules.upsert('t', { every: 150 });
    track(new Scheduler(queue.name, { connection: fx.redis.url, leadMs: 50 }));
    await until(async () => (await addedOccurrences(queue.name, 't')).length >= 2, 'two at 150 ms');
    assert.equal(await queue.schedules.upsert('t', { every: 400 }), true);
    const changedAt = (await addedOccurrences(queue.name, 't')).at(-1)!;
    await until(async () => (await addedOccurrences(queue.name, 't')).filter((o) => o > changedAt).length >= 2, 'two at 400 ms');
    const later = (await addedOccurrences(queue.name, 't')).filter((o) => o > changedAt);
    assert.equal(later[1]! - later[0]!, 400);
    assert.equal(await queue.schedules.remove('t'), true);
    assert.equal(await queue.schedules.remove('t'), false);
    const count = (await addedOccurrences(queue.name, 't')).length;
    const stoppedAt = Date.now();
    await until(() => Date.now() - stoppedAt > 900, 'two intervals to pass');
    assert.equal((await addedOccurrences(queue.name, 't')).length, count, 'nothing added after remove');
    assert.deepEqual(await queue.schedules.list(), []);
  });

  test("missed occurrences: 'latest' runs the latest once, 'skip' runs none of them", async () => {
    // Timed on the schedules' own anchors, not on when the test happened to start. The scheduler
    // starts 400 ms after the second missed occurrence (missed: more than 300 ms late), and its lead
    // time covers the third occurrence, so its first pass decides everything: it has 1100 ms to
    // run before the third comes due. No later timer is involved: a CI host once fired the wake for
    // the third occurrence over 200 ms late, which made an on-time occurrence "missed".
    const every = 1500;
    const missedAfterMs = 300;
    const leadMs = every - 100;
    const queue = track(new Queue(uniqueName('s'), { connection: fx.redis.url }));
    await queue.events.enable({ maxLen: 100_000 });
    await queue.schedules.upsert('latest', { every, missed: 'latest' });
    await queue.schedules.upsert('skip', { every, missed: 'skip' });
    const anchorLatest = (await queue.schedules.get('latest'))!.anchorMs;
    const anchorSkip = (await queue.schedules.get('skip'))!.anchorMs;
    // No scheduler runs while two occurrences of each pass.
    await until(async () => (await serverTimeMs(fx.client)) >= anchorSkip + 2 * every + 400, 'two occurrences to be missed', 5000);
    track(new Scheduler(queue.name, { connection: fx.redis.url, leadMs, missedAfterMs }));
    await until(async () => (await addedOccurrences(queue.name, 'skip')).length >= 1, 'the first future occurrence of skip', 5000);
    const latest = await addedOccurrences(queue.name, 'latest');
    const skip = await addedOccurrences(queue.name, 'skip');
    assert.equal(latest[0], anchorLatest + 2 * every, `one catch-up run, the latest missed one: ${latest.map((o) => o - anchorLatest)}`);
    assert.equal(skip[0], anchorSkip + 3 * every, `skip runs none of the missed ones: ${skip.map((o) => o - anchorSkip)}`);
    for (const [occ, anchor] of [
      [latest, anchorLatest],
      [skip, anchorSkip],
    ] as const) {
      for (let i = 1; i < occ.length; i++) assert.equal(occ[i]! - occ[i - 1]!, every, `then on rhythm: ${occ.map((o) => o - anchor)}`);
    }
  });

  test('bad definitions are refused by field and nothing is stored', async () => {
    const queue = track(new Queue(uniqueName('s'), { connection: fx.redis.url }));
    const bad: [string, unknown, RegExp][] = [
      ['a', { cron: '61 * * * *' }, /^cron is not a valid cron pattern/],
      ['a', { cron: '* * * * *', tz: 'Mars/Olympus' }, /^tz is not a known IANA time zone/],
      ['a', { cron: '* * * * *', every: 1000 }, /^cron give exactly one of cron and every/],
      ['a', {}, /^cron give exactly one/],
      ['a', { every: 10 }, /^every/],
      ['a', { every: 1000, missed: 'sometimes' }, /^missed/],
      ['a', { every: 1000, opts: { attempts: 0 } }, /^opts\.attempts/],
      ['a', { every: 1000, nope: 1 }, /^nope/],
      ['', { every: 1000 }, /^name/],
    ];
    for (const [name, spec, message] of bad) {
      await assert.rejects(
        queue.schedules.upsert(name, spec as never),
        (e: unknown) => e instanceof ValidationError && message.test(e.message),
        JSON.stringify(spec),
      );
    }
    assert.deepEqual(await queue.schedules.list(), []);
    assert.equal(await fx.client.exists(queueKeys('dq', queue.name).schedules), 0);
  });

  test('a pass still under way when close() gives up on it, answered after the store closed, reports nothing', async () => {
    const queue = new Queue(uniqueName('s'), { connection: fx.redis.url });
    await queue.schedules.upsert('m', { every: 60_000 });
    const late: Promise<unknown>[] = [];
    /** A store whose reads of the schedules answer after close() stopped waiting for them (1 s). */
    class SlowSchedules extends RedisStore {
      override scheduleList(...args: Parameters<RedisStore['scheduleList']>): ReturnType<RedisStore['scheduleList']> {
        const answer = new Promise((r) => setTimeout(r, 1_300)).then(() => super.scheduleList(...args));
        late.push(answer.catch(() => {}));
        return answer;
      }
    }
    const store = new SlowSchedules({ connection: fx.redis.url });
    const errors: Error[] = [];
    const scheduler = new Scheduler(queue.name, { store, onError: (err) => errors.push(err) });
    await until(() => late.length > 0, 'its first pass under way');
    await scheduler.close();
    await store.close();
    await Promise.all(late);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      errors.map((e) => e.message),
      [],
    );
    await queue.close();
  });
});

describe('recurring schedules on the memory store', () => {
  test('two schedulers on one store: each occurrence once', async () => {
    const store = new MemoryStore();
    const queue = new Queue(uniqueName('s'), { store });
    await queue.schedules.upsert('m', { every: 150 });
    const ids: string[] = [];
    const w = track(new Worker(queue.name, (job) => void ids.push(job.id), { store }));
    errorLog.watch(w);
    track(new Scheduler(queue.name, { store, leadMs: 50 }));
    track(new Scheduler(queue.name, { store, leadMs: 50 }));
    await until(() => ids.length >= 4, 'four occurrences');
    assert.equal(new Set(ids).size, ids.length);
    const times = ids.map((id) => Number(id.split(':').at(-1))).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) assert.equal(times[i]! - times[i - 1]!, 150);
    assert.equal(ids[0], occurrenceJobId('m', times[0]!));
  });

  test("anchors, occurrences and the schedule list follow the store's clock, not the host's", async () => {
    // The store's clock (the server's, for Redis) is 2 minutes behind this host's.
    const skew = 120_000;
    const serverNow = () => Date.now() - skew;
    const store = new MemoryStore({ clock: serverNow });
    const queue = new Queue(uniqueName('s'), { store });
    const before = serverNow();
    await queue.schedules.upsert('m', { every: 150 });
    const def = (await queue.schedules.get('m'))!;
    assert.ok(def.anchorMs >= before && def.anchorMs <= serverNow(), `anchored by the store's clock (off by ${def.anchorMs - before} ms)`);
    const ran: { id: string; late: number }[] = [];
    const w = track(new Worker(queue.name, (job) => void ran.push({ id: job.id, late: serverNow() - job.dueAtMs }), { store }));
    errorLog.watch(w);
    const leadMs = 50;
    track(new Scheduler(queue.name, { store, leadMs }));
    await until(() => ran.length >= 4, 'four occurrences to run', 5_000);
    const times = ran.map((r) => Number(r.id.split(':').at(-1))).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) assert.equal(times[i]! - times[i - 1]!, 150);
    assert.ok(
      ran.every((r) => r.late < 1000),
      `on time: ${ran.map((r) => r.late).join(',')}`,
    );
    const info = (await queue.schedules.get('m'))!;
    assert.ok(info.lastRunAtMs! <= serverNow() + leadMs, 'the last occurrence is not ahead of the store clock');
    assert.ok(info.nextRunAtMs! > info.lastRunAtMs! && info.nextRunAtMs! <= serverNow() + 150 + leadMs, 'the next one is the next by the store clock');
  });
});
