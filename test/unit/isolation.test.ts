/**
 * Isolated handlers (worker threads, child processes) on the memory store: results acked, a
 * handler stuck in `while (true) {}` really stopped, crashes and out-of-memory failing only their
 * attempt, delayq's signals keeping their meaning across the boundary, progress and logs proxied,
 * nothing left running after close(), bad options refused.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HandlerTimeoutError, IsolatedHandlerError, MemoryStore, Queue, ValidationError, Worker } from '../../src/index.js';
import type { WorkerOptions } from '../../src/options.js';
import { isolatedHandler } from '../../src/worker/isolation/pool.js';
import { ERRORS_URL, handlerModule, outcomes } from '../helpers/isolation.js';
import { uniqueName } from '../helpers/names.js';
import { until, within } from '../helpers/wait.js';

/** Returns where it ran (thread id, pid) and the job's data; spins for ever on 'spin'; exits on 'exit'. */
const WHERE = handlerModule(
  'where',
  `import { threadId } from 'node:worker_threads';
let loads = (globalThis.__loads ?? 0) + 1;
globalThis.__loads = loads;
export default async (job) => {
  if (job.data === 'spin') { await job.log('spinning in ' + threadId + ' ' + process.pid); while (true) {} }
  if (job.data === 'exit') process.exit(3);
  if (job.data === 'throw-later') { setTimeout(() => { throw new Error('thrown from a timer'); }, 0); return new Promise(() => {}); }
  return { threadId, pid: process.pid, data: job.data, loads, isMain: threadId === 0 && !process.send };
};`,
);

function open(kind: 'thread' | 'process', opts: WorkerOptions<unknown> = {}, module = WHERE) {
  const name = uniqueName('iso');
  const connection = `memory://${name}`;
  const queue = new Queue<unknown>('q', { connection });
  const worker = new Worker<unknown>('q', module, { connection, isolation: kind, concurrency: 1, attempts: 1, ...opts });
  const seen = outcomes(worker);
  const close = async () => {
    await within(worker.close({ timeoutMs: 2_000 }), 10_000, 'worker.close()');
    await queue.close();
    MemoryStore.dropShared(name);
  };
  return { queue, worker, seen, close };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

for (const kind of ['thread', 'process'] as const) {
  describe(`isolation: '${kind}'`, () => {
    test('the handler runs outside this thread, its result is acked, and its slot is reused (module loaded once)', async () => {
      const { queue, seen, close } = open(kind);
      try {
        const results = [];
        for (let i = 0; i < 4; i++) {
          await queue.add(i, { id: `j${i}` });
          const o = await seen.next(`j${i}`);
          assert.equal(o.event, 'completed', JSON.stringify(o));
          results.push((o as { result: { threadId: number; pid: number; data: number; loads: number } }).result);
        }
        assert.deepEqual(
          results.map((r) => r.data),
          [0, 1, 2, 3],
        );
        if (kind === 'thread') assert.ok(results[0]!.threadId > 0 && results[0]!.pid === process.pid);
        else assert.ok(results[0]!.pid !== process.pid);
        assert.equal(new Set(results.map((r) => `${r.threadId}/${r.pid}`)).size, 1, 'one slot, reused');
        assert.ok(results.every((r) => r.loads === 1));
      } finally {
        await close();
      }
    });

    test('a handler stuck in while (true) {} is terminated at the timeout; the attempt fails with HandlerTimeoutError and the next job runs on a fresh slot', async () => {
      // A fresh slot's start counts against the next job's timeout (a thread starts in ~50-90 ms
      // here, a process in ~150-250 ms, far more on a busy machine): the jobs that should finish
      // carry a timeout of their own, so only the spinning one runs on the worker's.
      const { queue, seen, close } = open(kind, { timeoutMs: kind === 'thread' ? 200 : 1_000, isolationGraceMs: 100 });
      try {
        await queue.add('ok', { id: 'before', timeoutMs: 10_000 });
        const before = (await seen.next('before')) as { result: { threadId: number; pid: number } };
        const started = Date.now();
        await queue.add('spin', { id: 'spin' });
        await queue.add('ok', { id: 'after', timeoutMs: 10_000 });
        const failed = await seen.next('spin');
        assert.equal(failed.event, 'failed');
        assert.ok((failed as { error: unknown }).error instanceof HandlerTimeoutError);
        assert.equal((await seen.next('spin')).event, 'dead');
        const after = await seen.next('after');
        assert.equal(after.event, 'completed', JSON.stringify(after));
        const r = (after as { result: { threadId: number; pid: number } }).result;
        assert.ok(Date.now() - started < 5_000, 'the next job ran within seconds');
        if (kind === 'thread') assert.notEqual(r.threadId, before.result.threadId, 'a fresh thread');
        else {
          assert.notEqual(r.pid, before.result.pid, 'a fresh process');
          // Killed by now; the kernel takes its time to reap it on a busy machine.
          await until(() => !alive(before.result.pid), 'the spinning process is gone', 5_000);
        }
        const info = await queue.get('spin');
        assert.match(info?.logs?.[0] ?? '', /^spinning in /, 'job.log() from the slot reached the job');
      } finally {
        await close();
      }
    });

    test('a handler that calls process.exit fails its attempt with IsolatedHandlerError; the next job runs', async () => {
      const { queue, seen, close } = open(kind);
      try {
        await queue.add('exit', { id: 'exit' });
        await queue.add('fine', { id: 'fine' });
        const o = await seen.next('exit');
        assert.equal(o.event, 'failed');
        const err = (o as { error: Error }).error;
        assert.ok(err instanceof IsolatedHandlerError, String(err));
        assert.match(err.message, new RegExp(`the handler's ${kind} exited with code 3`));
        assert.equal((await seen.next('fine')).event, 'completed');
      } finally {
        await close();
      }
    });

    test('an uncaught exception in the slot (a throw from a timer) fails the attempt with the thrown message', async () => {
      const { queue, seen, close } = open(kind);
      try {
        await queue.add('throw-later', { id: 'boom' });
        await queue.add('fine', { id: 'fine' });
        const o = await seen.next('boom');
        assert.equal(o.event, 'failed');
        const err = (o as { error: Error }).error;
        assert.ok(err instanceof IsolatedHandlerError);
        assert.match(err.message, /crashed: thrown from a timer/);
        assert.equal((await seen.next('fine')).event, 'completed');
      } finally {
        await close();
      }
    });

    test('a module that throws at load fails each attempt with the reason, and the worker goes on', async () => {
      const bad = handlerModule(`bad-load-${kind}`, `throw new Error('no config for the mailer');\nexport default () => 1;`);
      const { queue, seen, close } = open(kind, {}, bad);
      try {
        for (const id of ['a', 'b']) {
          await queue.add(id, { id });
          const o = await seen.next(id);
          assert.equal(o.event, 'failed');
          assert.match(
            String((o as { error: Error }).error.message),
            /handler module .*bad-load.* failed to load in its (thread|process): no config for the mailer/,
          );
        }
      } finally {
        await close();
      }
    });

    test('SnoozeSignal, UnrecoverableError and RateLimitSignal keep their meaning; errors keep name, message and stack', async () => {
      const mod = handlerModule(
        `signals-${kind}`,
        `import { UnrecoverableError, RateLimitSignal } from ${JSON.stringify(ERRORS_URL)};
class PaymentError extends Error { name = 'PaymentError'; }
export const handlers = {
  snooze: (job) => job.snooze(60_000),
  caught: (job) => { try { job.snooze(30_000); } catch {} return 'returned anyway'; },
  unrecoverable: () => { throw new UnrecoverableError('card refused for good'); },
  limited: () => { throw new RateLimitSignal(5_000); },
  plain: function failsHere() { throw new PaymentError('upstream 502'); },
  unsendable: () => ({ fn: () => 1 }),
  string: () => { throw 'a plain string'; },
};`,
      );
      const { queue, seen, close } = open(kind, { attempts: 3 }, mod);
      try {
        // 'limited' last: it holds the whole queue back for 5 s.
        for (const name of ['snooze', 'caught', 'unrecoverable', 'plain', 'unsendable', 'string', 'unknown-name', 'limited'])
          await queue.add(name, { id: name, name });
        const now = Date.now();
        const snoozed = await seen.next('snooze');
        assert.equal(snoozed.event, 'snoozed');
        assert.ok((snoozed as { dueAtMs: number }).dueAtMs >= now + 59_000);
        assert.equal((await seen.next('caught')).event, 'snoozed', 'a caught snooze is honoured, as in-process');
        assert.equal((await seen.next('unrecoverable')).event, 'failed');
        const dead = await seen.next('unrecoverable');
        assert.equal(dead.event, 'dead', 'UnrecoverableError skips the attempts left');
        const limited = await seen.next('limited');
        assert.deepEqual(limited, { event: 'rateLimited', holdMs: 5_000 });
        const plain = (await seen.next('plain')) as { event: string; error: Error };
        assert.equal(plain.event, 'failed');
        assert.equal(plain.error.name, 'PaymentError');
        assert.equal(plain.error.message, 'upstream 502');
        assert.match(plain.error.stack ?? '', /failsHere/, 'the stack from the slot');
        const unsendable = (await seen.next('unsendable')) as { event: string; error: Error };
        assert.equal(unsendable.event, 'failed');
        assert.match(unsendable.error.message, /result cannot be sent from its (thread|process)/);
        assert.deepEqual(await seen.next('string'), { event: 'failed', error: 'a plain string' }, 'a thrown non-Error crosses as itself');
        const unknown = (await seen.next('unknown-name')) as { event: string; error: Error };
        assert.match(unknown.error.message, /no handler for job name "unknown-name": this worker handles "snooze", .* and has no 'default' handler/);
        assert.equal((await queue.get('limited'))?.attempt ?? 0, 0, 'a rate-limited attempt is unspent');
      } finally {
        await close();
      }
    });

    test('progress() and log() reach the real job; closing aborts the slot signal and a handler that stops hands the job back', async () => {
      const mod = handlerModule(
        `coop-${kind}`,
        // The listener first: an abort that came while the calls were answered would not fire it.
        `export default async (job) => {
  const stopped = new Promise((_, reject) => job.signal.addEventListener('abort', () => reject(job.signal.reason)));
  await job.progress({ pct: 50 });
  await job.log('half way');
  await job.extendLease(60_000);
  await stopped;
};`,
      );
      const { queue, worker, seen, close } = open(kind, { isolationGraceMs: 5_000 }, mod);
      try {
        await queue.add('x', { id: 'x' });
        const deadline = Date.now() + 10_000;
        while (((await queue.get('x'))?.logs?.length ?? 0) === 0) {
          assert.ok(Date.now() < deadline, 'the log line arrived within 10 s');
          await new Promise((r) => setTimeout(r, 10));
        }
        const info = await queue.get('x');
        assert.deepEqual(info?.progress, { pct: 50 });
        assert.deepEqual(info?.logs, ['half way']);
        const started = Date.now();
        await within(worker.close({ timeoutMs: 10_000 }), 10_000, 'close');
        assert.ok(Date.now() - started < 4_000, 'the handler stopped at its signal, not at the grace or close timeout');
        assert.equal((await seen.next('x')).event, 'released');
        assert.equal((await queue.get('x'))?.state, 'scheduled');
      } finally {
        await close();
      }
    });
  });
}

describe('isolation: pool and options', () => {
  for (const kind of ['thread', 'process'] as const) {
    test(`a ${kind} past its heap cap (isolationMemoryMb) fails its attempt as out of memory; other jobs run`, async () => {
      const mod = handlerModule(
        `hog-${kind}`,
        `export default (job) => { if (job.data !== 'hog') return 'fine'; const keep = []; for (;;) keep.push(new Array(1e5).fill(keep.length)); };`,
      );
      const { queue, seen, close } = open(kind, { isolationMemoryMb: 32, concurrency: 2 }, mod);
      try {
        await queue.add('hog', { id: 'hog' });
        await queue.add('ok', { id: 'ok' });
        assert.equal((await seen.next('ok')).event, 'completed');
        const o = (await seen.next('hog', 20_000)) as { event: string; error: Error };
        assert.equal(o.event, 'failed');
        assert.ok(o.error instanceof IsolatedHandlerError);
        // A thread is told why; a process is ended by V8 (SIGABRT, "Reached heap limit" on its stderr).
        const why =
          kind === 'thread'
            ? /thread crashed: ran out of memory \(its heap is capped at 32 MB\)/
            : /process was ended by SIGABRT \(out of memory\? its heap is capped at 32 MB\)/;
        assert.match(o.error.message, why);
        await queue.add('ok', { id: 'ok2' });
        assert.equal((await seen.next('ok2')).event, 'completed');
      } finally {
        await close();
      }
    });
  }

  test('close() terminates every slot: no thread or child process is left, the pool is empty, no listener is left on a signal', async () => {
    for (const kind of ['thread', 'process'] as const) {
      const pool = isolatedHandler(WHERE, { isolation: kind, size: 3 });
      const ac = new AbortController();
      const job = (id: string, data: unknown, signal = ac.signal) =>
        ({
          queue: 'q',
          id,
          data,
          attempt: 1,
          maxAttempts: 1,
          dueAtMs: 0,
          priority: 0,
          group: undefined,
          name: undefined,
          timeoutMs: undefined,
          createdAtMs: 0,
          token: 't',
          hold: undefined,
          childResults: async () => ({}),
          signalled: undefined,
          waitForSignal: () => {
            throw new Error('no');
          },
          signal,
          snooze: () => {
            throw new Error('no');
          },
          progress: async () => {},
          log: async () => {},
          extendLease: async () => {},
        }) as Parameters<typeof pool.handler>[0];
      const results = (await Promise.all([1, 2, 3].map((i) => pool.handler(job(`j${i}`, i))))) as { pid: number }[];
      assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'a finished run leaves no listener');
      // A job waiting for a slot (all 3 busy) whose signal aborts stops waiting, with the reason, and leaves no listener.
      const spinning = [1, 2, 3].map((i) => {
        const own = new AbortController();
        return { own, run: pool.handler(job(`spin${i}`, 'spin', own.signal)).catch((e: unknown) => e) };
      });
      const waiter = new AbortController();
      const waiting = pool.handler(job('waits', 1, waiter.signal)).catch((e: unknown) => e);
      waiter.abort('cancelled');
      assert.equal(await within(waiting, 5_000, 'the waiting job'), 'cancelled');
      assert.equal(getEventListeners(waiter.signal, 'abort').length, 0);
      for (const s of spinning) s.own.abort('timeout');
      for (const s of spinning) assert.equal(await within(s.run, 5_000, 'a spinning job to be stopped'), 'timeout');
      for (const s of spinning) assert.equal(getEventListeners(s.own.signal, 'abort').length, 0);
      const stuck = pool.handler(job('s', 'throw-later')).catch((e: unknown) => e);
      assert.equal(pool.slots().length, 1, 'the stopped slots are gone; the stuck job has a fresh one');
      await within(pool.close(), 5_000, 'pool.close()');
      assert.deepEqual(pool.slots(), []);
      assert.ok((await stuck) instanceof IsolatedHandlerError || (await stuck) instanceof Error);
      if (kind === 'process') for (const r of results) assert.equal(alive(r.pid), false, `process ${r.pid} is gone`);
      await assert.rejects(pool.handler(job('late', 1)), /pool is closed/);
      assert.equal(ac.signal.aborted, false);
    }
  });

  test('a handler that stops by itself within the grace keeps its thread for the next job', async () => {
    const mod = handlerModule(
      'stops',
      `import { threadId } from 'node:worker_threads';
export default async (job) => {
  if (job.data !== 'wait') return threadId;
  const stopped = new Promise((resolve) => job.signal.addEventListener('abort', () => resolve('stopped')));
  await job.log('waiting');
  return stopped;
};`,
    );
    const pool = isolatedHandler(mod, { isolation: 'thread', size: 1, graceMs: 5_000 });
    try {
      let started!: () => void;
      const running = new Promise<void>((r) => (started = r));
      const job = (data: unknown, signal: AbortSignal) =>
        ({ id: 'x', data, signal, log: async () => started() }) as unknown as Parameters<typeof pool.handler>[0];
      const first = await pool.handler(job('id', new AbortController().signal));
      const ac = new AbortController();
      const waiting = pool.handler(job('wait', ac.signal));
      await within(running, 3_000, 'the handler to start');
      ac.abort('timeout');
      assert.equal(await within(waiting, 3_000, 'the handler to stop at its signal'), 'stopped');
      assert.equal(await pool.handler(job('id', new AbortController().signal)), first, 'the same thread');
      assert.equal(pool.slots().length, 1);
    } finally {
      await pool.close();
    }
  });

  test('kill -9 of the worker process: its child process stuck in while (true) {} does not live on as an orphan', async () => {
    const pool = new URL('../../src/worker/isolation/pool.js', import.meta.url).href;
    const script = `
import { isolatedHandler } from ${JSON.stringify(pool)};
const p = isolatedHandler(${JSON.stringify(WHERE)}, { isolation: 'process', size: 1 });
const job = { queue: 'q', id: 'x', data: 'spin', attempt: 1, maxAttempts: 1, dueAtMs: 0, priority: 0, createdAtMs: 0, token: 't',
  signal: new AbortController().signal, log: async (line) => console.log(line), progress: async () => {}, extendLease: async () => {} };
p.handler(job);`;
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    const pid = await within(
      new Promise<number>((resolve) =>
        parent.stdout.on('data', (d) => {
          out += d;
          const m = /spinning in \d+ (\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        }),
      ),
      10_000,
      'the handler to start spinning',
    ).finally(() => parent.kill('SIGKILL'));
    assert.ok(alive(pid));
    const deadline = Date.now() + 5_000;
    while (alive(pid)) {
      assert.ok(Date.now() < deadline, `process ${pid} still spinning 5 s after its parent was killed`);
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  test('a process that used isolated workers exits by itself after close(): nothing keeps it alive', async () => {
    const index = new URL('../../src/index.js', import.meta.url).href;
    for (const kind of ['thread', 'process']) {
      const script = `
import { Queue, Worker } from ${JSON.stringify(index)};
const q = new Queue('q', { connection: 'memory://x' });
const w = new Worker('q', ${JSON.stringify(WHERE)}, { connection: 'memory://x', isolation: '${kind}', concurrency: 2 });
let n = 0;
const done = new Promise((r) => w.on('completed', () => ++n === 3 && r()));
await q.addBulk([{ data: 1 }, { data: 2 }, { data: 3 }]);
await done;
await w.close();
await q.close();
console.log('closed ' + n);`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const code = await within(new Promise<number | null>((r) => child.on('exit', (c) => r(c))), 10_000, `the ${kind} script to exit by itself`).catch(
        (err) => {
          child.kill('SIGKILL');
          throw err;
        },
      );
      assert.equal(code, 0, out);
      assert.match(out, /closed 3/);
    }
  });

  test('bad options are refused at the call, and nothing starts', () => {
    const connection = 'memory://iso-bad';
    assert.throws(
      () => new Worker('q', WHERE, { connection, isolation: 'fiber' as 'thread' }),
      (e: unknown) => e instanceof ValidationError && e.field === 'isolation' && /'thread' or 'process'/.test(e.message),
    );
    assert.throws(
      () => new Worker('q', WHERE, { connection }),
      (e: unknown) => e instanceof TypeError && /needs isolation: 'thread' or 'process'/.test(e.message),
    );
    assert.throws(
      () => new Worker('q', () => 1, { connection, isolation: 'thread' }),
      (e: unknown) => e instanceof TypeError && /needs the handler as a module path/.test(e.message),
    );
    assert.throws(
      () => new Worker('q', '/no/such/handler.mjs', { connection, isolation: 'process' }),
      (e: unknown) => e instanceof TypeError && /no such file/.test(e.message),
    );
    for (const [field, value] of [
      ['isolationPoolSize', 0],
      ['isolationGraceMs', -1],
      ['isolationMemoryMb', 4],
    ] as const) {
      assert.throws(
        () => new Worker('q', WHERE, { connection, isolation: 'thread', [field]: value }),
        (e: unknown) => e instanceof ValidationError && e.field === field,
        field,
      );
    }
    MemoryStore.dropShared('iso-bad');
    assert.ok(fileURLToPath(new URL('../../src/worker/isolation/thread-entry.js', import.meta.url)));
  });
});
