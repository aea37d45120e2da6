/** `delayq worker --isolation thread|process`: the handler runs in the pool, a bad value or a missing file is a usage error. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { handlerModule } from '../helpers/isolation.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { assertFailure, run, start } from './run-cli.js';

const fx = useRedis();

/** Answers where it ran: the job's result is stored (--keep-completed is not needed: the log line is). */
const WHERE = handlerModule(
  'cli-where',
  `import { threadId } from 'node:worker_threads';
export default async (job) => { await job.log(JSON.stringify({ threadId, pid: process.pid })); throw new Error('recorded'); };`,
);

describe('delayq worker --isolation', () => {
  for (const kind of ['thread', 'process'] as const) {
    test(`--isolation ${kind}: each job runs in a ${kind} of the pool; SIGTERM stops it cleanly`, async () => {
      const q = uniqueName('cli-iso');
      const queue = new Queue(q, { connection: fx.redis.url });
      try {
        await queue.addBulk(['a', 'b', 'c'].map((id) => ({ data: id, opts: { id, attempts: 1 } })));
        const w = start(['--redis', fx.redis.url, '--queue', q, 'worker', '--handler', WHERE, '--isolation', kind, '--concurrency', '2', '--json']);
        const dead: string[] = [];
        let pid: number | undefined;
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error('three dead jobs within 10 s')), 10_000);
          let buf = '';
          w.child.stdout!.on('data', (d: Buffer) => {
            buf += d;
            for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
              const e = JSON.parse(buf.slice(0, i)) as { event: string; id?: string; pid?: number };
              buf = buf.slice(i + 1);
              if (e.event === 'started') pid = e.pid;
              if (e.event === 'dead') dead.push(e.id!);
              if (dead.length === 3) {
                clearTimeout(timer);
                resolve();
              }
            }
          });
        });
        w.child.kill('SIGTERM');
        const r = await w.done;
        assert.equal(r.code, 0, r.stderr);
        for (const id of ['a', 'b', 'c']) {
          const info = await queue.get(id);
          const where = JSON.parse(info!.logs![0]!) as { threadId: number; pid: number };
          if (kind === 'thread') assert.ok(where.threadId > 0 && where.pid === pid, JSON.stringify(where));
          else assert.ok(where.threadId === 0 && where.pid !== pid, JSON.stringify(where));
        }
        assert.equal((await queue.verify()).ok, true);
      } finally {
        await queue.close();
      }
    });
  }

  test('a bad --isolation, a missing handler file, --isolation-memory alone: usage errors (exit 64), nothing started', async () => {
    const g = ['--redis', fx.redis.url, '--queue', uniqueName('cli-iso')];
    assert.match(
      assertFailure(await run([...g, 'worker', '--handler', WHERE, '--isolation', 'fiber']), 64, '--isolation fiber').message,
      /--isolation must be thread or process \(got "fiber"\)/,
    );
    assert.match(
      assertFailure(await run([...g, 'worker', '--handler', './nope.mjs', '--isolation', 'thread']), 64, 'missing file').message,
      /--handler \.\/nope\.mjs: no such file/,
    );
    assert.match(
      assertFailure(await run([...g, 'worker', '--handler', WHERE, '--isolation-memory', '64']), 64, 'memory alone').message,
      /--isolation-memory needs --isolation/,
    );
    assert.match(
      assertFailure(await run([...g, 'worker', '--handler', WHERE, '--isolation', 'thread', '--isolation-memory', '4']), 64, 'memory 4').message,
      /isolationMemoryMb must be at least 16/,
    );
  });
});
