/**
 * The differential test: random sequences of store calls (add, addBulk, cancel, reschedule,
 * promote, claim, ack, fail, snooze, release, extend, lease expiry through clock steps,
 * pause/resume, dead retry/purge, the due timeline, obliterate) run against the Redis store, the memory
 * store and the reference model, with every answer compared, then every job's state (its error
 * history included) and verify() on both stores. Calls with old tokens come for free: a call
 * names any hand-out made so far.
 *
 * Both stores run on one frozen clock that only the test moves (the Redis scripts read it from
 * a key: RedisStore's testClockKey), so lease expiry and due times are exact, not raced.
 * Seeded and bounded here (DQ_DIFF_RUNS, DQ_DIFF_SEED to repeat a failure); `npm run soak`
 * runs it longer.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { RedisStore } from '../../src/store/redis/redis-store.js';
import type { ListCursor, NewJob, Store, StreamEvent } from '../../src/store/store.js';
import type { CancelResult } from '../../src/types.js';
import { ValidationError } from '../../src/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { DEDUP_WINDOW_MS, ModelRefusal, QueueModel, type ModelAdd } from './queue-model.js';

const fx = useRedis();

const RUNS = Number(process.env.DQ_DIFF_RUNS ?? 400);
const SEED = process.env.DQ_DIFF_SEED === undefined ? undefined : Number(process.env.DQ_DIFF_SEED);
const IDS = ['a', 'b', 'c', 'd', 'e', 'f'];
const DEFAULT_MAX = 2;
const T0 = 1_900_000_000_000;

const addArb = fc
  .record({
    id: fc.constantFrom(...IDS),
    delayMs: fc.constantFrom(0, 0, 500, 1000, 60_000),
    priority: fc.constantFrom(0, 0, 1, -1),
    maxAttempts: fc.constantFrom(undefined, 1, 3),
    replace: fc.boolean(),
    dedupKey: fc.constantFrom(undefined, undefined, undefined, 'k1', 'k2'),
    group: fc.constantFrom(undefined, undefined, 'g1', 'g2'),
    // A name of several bytes a character: the body counts its length in bytes.
    name: fc.constantFrom(undefined, undefined, 'send-email', 'é名🙂'),
    timeoutMs: fc.constantFrom(undefined, undefined, 250),
    cost: fc.constantFrom(1, 1, 1, 2),
    debounce: fc.constantFrom(undefined, undefined, undefined, { key: 'd1', delayMs: 500, maxWaitMs: undefined }, { key: 'd1', delayMs: 1000, maxWaitMs: 700 }),
    // Holds (docs/flows.md): ids of IDS (an earlier item of the call, an existing job, or none:
    // refused), now and then one named twice; deadlines the clock steps cross.
    // One item in four: a refused one refuses its whole call, so most calls must be good.
    hold: fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      {
        arbitrary: fc.record({
          dependsOn: fc.oneof(
            { arbitrary: fc.uniqueArray(fc.constantFrom(...IDS), { minLength: 1, maxLength: 1 }), weight: 6 },
            { arbitrary: fc.uniqueArray(fc.constantFrom(...IDS), { minLength: 2, maxLength: 3 }), weight: 3 },
            fc.array(fc.constantFrom(...IDS), { minLength: 2, maxLength: 3 }),
          ),
          // Mostly, its first dependency is the item before it in the call, when there is one.
          chain: fc.constantFrom(true, true, true, false),
          waitMs: fc.constantFrom(undefined, undefined, 500, 1000, 30_000),
          policy: fc.constantFrom('fail' as const, 'ignore' as const),
          // Mostly as Queue.add allows: not the job itself, no replace, dedup or debounce.
          lawful: fc.constantFrom(true, true, true, true, true, true, true, false),
        }),
        weight: 1,
      },
    ),
  })
  // As Queue.add allows: debounce without dedup or replace.
  .map((a) => (a.debounce ? { ...a, dedupKey: undefined, replace: false } : a))
  .map(({ hold, ...a }): ModelAdd & { chain?: boolean } => {
    if (!hold) return a;
    const { lawful, chain, ...h } = hold;
    if (!lawful) return { ...a, hold: h };
    const dependsOn = h.dependsOn.filter((d) => d !== a.id);
    return dependsOn.length === 0 ? a : { ...a, replace: false, dedupKey: undefined, debounce: undefined, hold: { ...h, dependsOn }, chain };
  });
/** An add call: items whose hold chains wait for the item before them (as a flow's do). */
const addsArb = fc.array(addArb, { minLength: 1, maxLength: 4 }).map((adds) =>
  adds.map(({ chain, ...a }, i): ModelAdd => {
    const before = adds[i - 1]?.id;
    if (!chain || !a.hold || before === undefined || before === a.id) return a;
    return { ...a, hold: { ...a.hold, dependsOn: [before, ...a.hold.dependsOn.filter((d) => d !== before)].slice(0, 3) } };
  }),
);
const rateArb = fc.constantFrom(undefined, undefined, null, { max: 2, perMs: 1000 }, { max: 3, perMs: 500 });
const GROUPS = ['g1', 'g2'];
const limitArb = fc.constantFrom(undefined, null, 1, 2);

const handout = fc.nat(50);
const command = fc.oneof(
  { arbitrary: fc.record({ c: fc.constant('add' as const), adds: addsArb }), weight: 5 },
  { arbitrary: fc.record({ c: fc.constant('claim' as const), n: fc.integer({ min: 1, max: 3 }), leaseMs: fc.constantFrom(1000, 30_000) }), weight: 5 },
  { arbitrary: fc.record({ c: fc.constant('ack' as const), h: handout }), weight: 3 },
  {
    arbitrary: fc.record({ c: fc.constant('fail' as const), h: handout, retryDelayMs: fc.constantFrom(0, 700), dead: fc.boolean() }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      c: fc.constant('snooze' as const),
      h: handout,
      delayMs: fc.constantFrom(0, 2000),
      deadline: fc.constantFrom(undefined, 1000, 5000),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ c: fc.constant('release' as const), h: handout, holdMs: fc.constantFrom(0, 0, 700) }), weight: 1 },
  { arbitrary: fc.record({ c: fc.constant('extend' as const), h: handout, ms: fc.constantFrom(1000, 30_000) }), weight: 1 },
  {
    arbitrary: fc.record({ c: fc.constant('cancel' as const), ids: fc.array(fc.constantFrom(...IDS), { minLength: 1, maxLength: 3 }), running: fc.boolean() }),
    weight: 2,
  },
  {
    arbitrary: fc.record({ c: fc.constant('failNow' as const), id: fc.constantFrom(...IDS), dead: fc.boolean(), retryDelayMs: fc.constantFrom(0, 700) }),
    weight: 2,
  },
  { arbitrary: fc.record({ c: fc.constant('drain' as const), before: fc.constantFrom(undefined, 0, 1000) }), weight: 1 },
  {
    arbitrary: fc.record({ c: fc.constant('retain' as const), count: fc.constantFrom(0, 0, 1, 2), ageMs: fc.constantFrom(0, 0, 1000) }),
    weight: 1,
  },
  { arbitrary: fc.record({ c: fc.constant('reschedule' as const), id: fc.constantFrom(...IDS), delayMs: fc.constantFrom(0, 300, 60_000) }), weight: 2 },
  { arbitrary: fc.record({ c: fc.constant('step' as const), ms: fc.constantFrom(1, 500, 1000, 30_001, 70_000) }), weight: 4 },
  {
    arbitrary: fc.record({
      c: fc.constant('timeline' as const),
      // From now, or relative to it: before it (buckets partly past), and on a bucket's edge.
      from: fc.constantFrom(undefined, -1000, 0, 500),
      bucketMs: fc.constantFrom(1000, 60_000),
      buckets: fc.constantFrom(1, 3, 70),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ c: fc.constant('pause' as const), paused: fc.boolean() }), weight: 1 },
  {
    arbitrary: fc.record({
      c: fc.constant('limits' as const),
      concurrency: limitArb,
      groupConcurrency: limitArb,
      rateLimit: rateArb,
      groupRateLimit: rateArb,
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ c: fc.constant('rateStatus' as const) }), weight: 1 },
  {
    arbitrary: fc.record({
      c: fc.constant('group' as const),
      group: fc.constantFrom(...GROUPS),
      concurrency: limitArb,
      rateLimit: rateArb,
      paused: fc.constantFrom(undefined, true, false),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ c: fc.constant('groups' as const) }), weight: 1 },
  { arbitrary: fc.record({ c: fc.constant('obliterate' as const), force: fc.boolean() }), weight: 1 },
  {
    arbitrary: fc.record({
      c: fc.constant('deadRetry' as const),
      ids: fc.oneof(fc.constant('all' as const), fc.array(fc.constantFrom(...IDS), { maxLength: 2 })),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      c: fc.constant('deadPurge' as const),
      ids: fc.oneof(fc.constant('all' as const), fc.array(fc.constantFrom(...IDS), { maxLength: 2 })),
    }),
    weight: 1,
  },
);
type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

function newJob(a: ModelAdd): NewJob {
  return {
    id: a.id,
    data: JSON.stringify({ id: a.id }),
    delayMs: a.delayMs,
    runAtMs: undefined,
    priority: a.priority,
    maxAttempts: a.maxAttempts,
    backoff: undefined,
    replace: a.replace,
    dedup: a.dedupKey === undefined ? undefined : { key: a.dedupKey, windowMs: DEDUP_WINDOW_MS },
    traceContext: undefined,
    group: a.group,
    name: a.name,
    timeoutMs: a.timeoutMs,
    cost: a.cost ?? 1,
    debounce: a.debounce,
    hold: a.hold && { dependsOn: a.hold.dependsOn, deadlineMs: a.hold.waitMs, onChildFailure: a.hold.policy },
  };
}

/** One store under test, with the tokens of its hand-outs by hand-out index. */
interface Subject {
  name: string;
  store: Store;
  tokens: string[];
}

/** Runs one command on one store and returns its answer in the model's terms. */
async function runOn(s: Subject, queue: string, cmd: Command, model: QueueModel): Promise<unknown> {
  const token = (h: number) => s.tokens[h % s.tokens.length]!;
  const h = 'h' in cmd ? cmd.h % Math.max(1, model.handouts.length) : 0;
  const id = (i: number) => model.handouts[i]!;
  switch (cmd.c) {
    case 'add':
      try {
        return (await s.store.add(queue, cmd.adds.map(newJob))).map((r) => ({ code: r.code, state: r.state, dueAtMs: r.dueAtMs, duplicateOf: r.duplicateOf }));
      } catch (err) {
        if (err instanceof ValidationError && /cost is above/.test(err.message)) return 'too_costly';
        if (err instanceof ValidationError && err.field === 'dependsOn') return { refused: err.message };
        throw err;
      }
    case 'claim': {
      const r = await s.store.claim(queue, cmd.n, cmd.leaseMs, DEFAULT_MAX, 'w1');
      assert.deepEqual(r.unreadable, [], `${s.name}: unreadable jobs`);
      for (const j of r.jobs) s.tokens.push(j.token);
      return {
        jobs: r.jobs.map((j) => ({
          id: j.id,
          attempt: j.attempt,
          dueAtMs: j.dueAtMs,
          priority: j.priority,
          leaseExpiresAtMs: j.leaseExpiresAtMs,
          name: j.name,
          timeoutMs: j.timeoutMs,
          hold: j.hold,
        })),
        more: r.more,
      };
    }
    case 'ack':
      if (model.handouts.length === 0) return 'skip';
      return (await s.store.complete(queue, [{ id: id(h), token: token(h), result: `"r${h}"` }]))[0];
    case 'fail':
      if (model.handouts.length === 0) return 'skip';
      return s.store.fail(queue, {
        id: id(h),
        token: token(h),
        error: `boom ${h}`,
        retryDelayMs: cmd.retryDelayMs,
        dead: cmd.dead,
        defaultMaxAttempts: DEFAULT_MAX,
      });
    case 'snooze':
      if (model.handouts.length === 0) return 'skip';
      return s.store.snooze(queue, {
        id: id(h),
        token: token(h),
        delayMs: cmd.delayMs,
        deadlineAtMs: cmd.deadline === undefined ? undefined : model.now + cmd.deadline,
      });
    case 'release':
      if (model.handouts.length === 0) return 'skip';
      return (await s.store.release(queue, [{ id: id(h), token: token(h) }], cmd.holdMs))[0];
    case 'extend':
      if (model.handouts.length === 0) return 'skip';
      return (await s.store.extend(queue, [{ id: id(h), token: token(h) }], cmd.ms))[0];
    case 'cancel':
      return (await s.store.cancel(queue, cmd.ids, { running: cmd.running, reason: 'r' })).map((r: CancelResult) => ({
        cancelled: r.cancelled,
        state: r.state,
      }));
    case 'failNow':
      return s.store.failNow(queue, { id: cmd.id, reason: 'from outside', dead: cmd.dead, retryDelayMs: cmd.retryDelayMs, defaultMaxAttempts: DEFAULT_MAX });
    case 'drain':
      return s.store.drain(queue, cmd.before === undefined ? undefined : model.now + cmd.before);
    case 'retain':
      await s.store.setRetention(queue, 'completed', cmd.count, cmd.ageMs);
      return 'done';
    case 'reschedule': {
      const r = await s.store.reschedule(queue, cmd.id, cmd.delayMs, undefined);
      return { rescheduled: r.rescheduled, state: r.state, dueAtMs: r.dueAtMs };
    }
    case 'pause':
      await s.store.setPaused(queue, cmd.paused);
      return 'done';
    case 'limits':
      return s.store.setLimits(queue, {
        concurrency: cmd.concurrency,
        groupConcurrency: cmd.groupConcurrency,
        rateLimit: cmd.rateLimit,
        groupRateLimit: cmd.groupRateLimit,
      });
    case 'rateStatus': {
      const r = await s.store.rateStatus(queue);
      return { queue: r.queue, groupsHeld: r.groupsHeld };
    }
    case 'group':
      return s.store.setGroup(queue, cmd.group, { concurrency: cmd.concurrency, rateLimit: cmd.rateLimit, paused: cmd.paused });
    case 'groups':
      return s.store.groups(queue, GROUPS);
    case 'obliterate':
      return s.store.obliterate(queue, cmd.force);
    case 'deadRetry':
      return s.store.deadRetry(queue, cmd.ids);
    case 'deadPurge':
      return s.store.purge(queue, 'dead', cmd.ids === 'all' ? { all: true } : { ids: cmd.ids });
    case 'timeline':
      return s.store.timeline(queue, cmd.from === undefined ? undefined : model.now + cmd.from, cmd.bucketMs, cmd.buckets);
    case 'step':
      return 'done';
  }
}

function runOnModel(model: QueueModel, cmd: Command): unknown {
  const h = 'h' in cmd ? cmd.h % Math.max(1, model.handouts.length) : 0;
  const none = model.handouts.length === 0;
  switch (cmd.c) {
    case 'add': {
      const r = model.add(cmd.adds);
      return r instanceof ModelRefusal ? { refused: r.message } : r;
    }
    case 'claim':
      return model.claim(cmd.n, cmd.leaseMs);
    case 'ack':
      return none ? 'skip' : model.complete(h, `"r${h}"`);
    case 'fail':
      return none ? 'skip' : model.fail(h, cmd.retryDelayMs, cmd.dead, `boom ${h}`);
    case 'snooze':
      return none ? 'skip' : model.snooze(h, cmd.delayMs, cmd.deadline === undefined ? undefined : model.now + cmd.deadline);
    case 'release':
      return none ? 'skip' : model.release(h, cmd.holdMs);
    case 'extend':
      return none ? 'skip' : model.extend(h, cmd.ms);
    case 'cancel':
      return cmd.ids.map((id) => model.cancel(id, cmd.running, 'r'));
    case 'failNow':
      return model.failNow(cmd.id, 'from outside', cmd.dead, cmd.retryDelayMs);
    case 'drain':
      return model.drain(cmd.before === undefined ? undefined : model.now + cmd.before);
    case 'retain':
      model.setRetention(cmd.count, cmd.ageMs);
      return 'done';
    case 'reschedule':
      return model.reschedule(cmd.id, cmd.delayMs);
    case 'pause':
      model.paused = cmd.paused;
      return 'done';
    case 'limits':
      return model.setLimits(cmd.concurrency, cmd.groupConcurrency, cmd.rateLimit, cmd.groupRateLimit);
    case 'rateStatus':
      return { queue: model.rateUse(''), groupsHeld: model.rateWake.size };
    case 'group':
      return model.setGroup(cmd.group, cmd.concurrency, cmd.paused, cmd.rateLimit);
    case 'groups':
      return GROUPS.map((g) => model.group(g));
    case 'obliterate':
      return model.obliterate(cmd.force);
    case 'deadRetry':
      return model.deadRetry(cmd.ids);
    case 'deadPurge':
      return model.deadPurge(cmd.ids);
    case 'timeline':
      return model.timeline(model.now + (cmd.from ?? 0), cmd.bucketMs, cmd.buckets);
    case 'step':
      model.now += cmd.ms;
      return 'done';
  }
}

/** What every store must agree on about one job. */
async function snapshot(store: Store, queue: string, id: string) {
  const j = await store.get(queue, id);
  if (!j) return null;
  return {
    state: j.state,
    dueAtMs: j.dueAtMs,
    ready: j.ready,
    priority: j.priority,
    attempt: j.attempt,
    maxAttempts: j.maxAttempts,
    leaseExpiresAtMs: j.leaseExpiresAtMs,
    lastError: j.lastError,
    finishedAtMs: j.finishedAtMs,
    result: j.result,
    errors: j.errors,
    group: j.group,
    name: j.name,
    timeoutMs: j.timeoutMs,
  };
}

/** Events a bulk removal reports in no promised order (drain.lua walks its sets in their own order). */
const UNORDERED = new Set(['drained', 'purged']);

/**
 * The queue's whole event feed, without the cursors (each store takes its own stream ids), each
 * run of one unordered event sorted.
 */
async function feed(store: Store, queue: string): Promise<string[]> {
  const reader = store.eventReader(queue);
  let events: StreamEvent[];
  try {
    events = await reader.read('0', 10_000, 0);
  } finally {
    await reader.close();
  }
  const lines = events.map((e) => `${e.event} ${e.id} ${JSON.stringify(e.fields)}`);
  // A held job buried as a drained dependency goes (docs/flows.md) is told amid the drain's own events.
  const byHold = (e: StreamEvent) => e.event === 'dead' && String(e.fields.error ?? '').startsWith('dependency ');
  for (let i = 0; i < events.length; ) {
    const kind = events.slice(i).find((e) => !byHold(e))?.event;
    let end = i;
    for (;;) {
      let j = end;
      while (j < events.length && byHold(events[j]!)) j++;
      if (j < events.length && events[j]!.event === kind) {
        end = j + 1;
        continue;
      }
      // Hold deaths between two kinds go with the bulk removal they are part of: the run before
      // when it is one, else the next (a drain's first end may bury held jobs before its own event).
      if (kind !== undefined && UNORDERED.has(kind)) end = j;
      break;
    }
    if (kind !== undefined && UNORDERED.has(kind)) lines.splice(i, end - i, ...lines.slice(i, end).sort());
    i = Math.max(end, i + 1);
  }
  // A claim's recovered leases end together on Redis (what their ends cause comes after all of
  // them), one by one in the memory store: held jobs buried so go to the end of the run, in order.
  const recovery = new Set(['leaseExpired', 'dead']);
  for (let i = 0; i < lines.length; ) {
    let end = i;
    while (end < lines.length && recovery.has(lines[end]!.split(' ')[0]!)) end++;
    if (end > i) {
      const run = lines.slice(i, end);
      const caused = run.filter((l) => l.startsWith('dead ') && l.includes('"error":"dependency '));
      lines.splice(i, end - i, ...run.filter((l) => !caused.includes(l)), ...caused);
    }
    i = Math.max(end, i + 1);
  }
  return lines;
}

/** Every page of a listing, two jobs a page (so cursors are used), as ids. */
async function listed(store: Store, queue: string, state: 'scheduled' | 'active' | 'dead' | 'completed'): Promise<string[]> {
  const ids: string[] = [];
  let cursor: ListCursor | undefined;
  do {
    const page = await store.list(queue, state, cursor, 2);
    ids.push(...page.jobs.map((j) => j.id));
    cursor = page.next;
  } while (cursor);
  return ids;
}

describe('differential: Redis store, memory store and the reference model', () => {
  test(`random call sequences give the same answers and states (${RUNS} runs)`, { timeout: Math.max(170_000, RUNS * 2000) }, async () => {
    const clockKey = `dqtest:clock:${uniqueName('diff')}`;
    let now = T0;
    const redisStore = new RedisStore({ connection: fx.redis.url, testClockKey: clockKey });
    const memoryStore = new MemoryStore({ clock: () => now });
    let rounds = 0;
    let commands = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60, size: 'large' }), async (cmds) => {
          rounds++;
          const queue = uniqueName('diff');
          now = T0;
          await fx.client.set(clockKey, String(now));
          const model = new QueueModel(now, DEFAULT_MAX);
          const subjects: Subject[] = [
            { name: 'redis', store: redisStore, tokens: [] },
            { name: 'memory', store: memoryStore, tokens: [] },
          ];
          // Both stores report each step on their event feeds, compared at the end of the run.
          for (const s of subjects) await s.store.setEventStream(queue, 10_000);
          const log: string[] = [];
          for (const cmd of cmds) {
            commands++;
            log.push(JSON.stringify(cmd));
            const expected = runOnModel(model, cmd);
            if (cmd.c === 'step') {
              now = model.now;
              await fx.client.set(clockKey, String(now));
            }
            for (const s of subjects) {
              const got = await runOn(s, queue, cmd, model);
              assert.deepEqual(got, expected, `${s.name} differs from the model at step ${log.length}:\n${log.join('\n')}`);
            }
            // Holds after each step: the held count, and two jobs' states and dependencies' ends (all six in turn).
            const look = [IDS[log.length % IDS.length]!, IDS[(log.length + 3) % IDS.length]!];
            const want = { held: model.heldJobs(), jobs: look.map((id) => ({ state: model.get(id)?.state, children: model.childResults(id) })) };
            for (const s of subjects) {
              const got = {
                held: (await s.store.stats(queue, 60_000)).heldJobs,
                jobs: await Promise.all(
                  look.map(async (id) => ({ state: (await s.store.get(queue, id))?.state, children: (await s.store.holdOf(queue, id))?.children })),
                ),
              };
              assert.deepEqual(got, want, `${s.name}: holds differ from the model's after step ${log.length}:\n${log.join('\n')}`);
            }
          }
          for (const id of IDS) {
            const want = model.get(id);
            for (const s of subjects) assert.deepEqual(await snapshot(s.store, queue, id), want, `${s.name}: job ${id} after\n${log.join('\n')}`);
            const children = model.childResults(id);
            for (const s of subjects)
              assert.deepEqual((await s.store.holdOf(queue, id))?.children, children, `${s.name}: childResults of ${id} after\n${log.join('\n')}`);
          }
          const orders = {
            scheduled: model
              .inOrder('scheduled', (j) => j.due)
              .filter((j) => j.due > model.now)
              .map((j) => j.id),
            active: model.inOrder('active', (j) => j.leaseDeadline).map((j) => j.id),
            dead: model.inOrder('dead', (j) => j.finishedAt).map((j) => j.id),
            completed: model.inOrder('completed', (j) => j.finishedAt).map((j) => j.id),
          };
          for (const [state, want] of Object.entries(orders)) {
            for (const s of subjects)
              assert.deepEqual(await listed(s.store, queue, state as keyof typeof orders), want, `${s.name}: ${state} listing after\n${log.join('\n')}`);
          }
          const [redisFeed, memoryFeed] = await Promise.all(subjects.map((s) => feed(s.store, queue)));
          assert.deepEqual(memoryFeed, redisFeed, `the memory store's event feed differs from Redis's after\n${log.join('\n')}`);
          for (const s of subjects) {
            const report = await s.store.verify(queue);
            assert.equal(report.ok, true, `${s.name}: verify: ${report.problems.join('; ')}\n${log.join('\n')}`);
          }
        }),
        { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }), endOnFailure: false },
      );
    } catch (err) {
      // The shrunk counterexample's own assertion says what differed.
      const cause = (err as { cause?: Error }).cause;
      throw new Error(`${(err as Error).message}\n${cause?.message ?? ''}`);
    } finally {
      console.log(`differential: ${rounds} rounds, ${commands} commands, on both stores and the model`);
      await redisStore.close();
    }
  });
});
