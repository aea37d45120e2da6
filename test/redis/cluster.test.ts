import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { aclRules, Queue, type RedisStore, type ShardedStore, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { startCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { until } from '../helpers/wait.js';

const errorLog = useErrorLog();

let cluster: RedisCluster;
const open: { close(): Promise<void> }[] = [];
before(async () => {
  cluster = await startCluster(3);
});
after(async () => {
  await Promise.all(open.map((o) => o.close()));
  await cluster.stop();
});

describe('Redis Cluster', () => {
  test('queues whose slots live on different masters each add, wake, work, retry and verify', async () => {
    const connection = { cluster: cluster.seeds };
    // Two queues on each master.
    const perMaster = new Map<number, string[]>();
    while ([...perMaster.values()].filter((l) => l.length >= 2).length < cluster.nodes.length) {
      const name = uniqueName('c');
      const port = (await cluster.nodeFor(queueKeys('dq', name).scheduled)).port;
      const list = perMaster.get(port) ?? [];
      if (list.length < 2) perMaster.set(port, [...list, name]);
    }
    const names = [...perMaster.values()].flat();

    const ran = new Map<string, string[]>();
    for (const name of names) {
      const queue = new Queue<string>(name, { connection });
      open.push(queue);
      const worker = new Worker<string>(
        name,
        (job) => {
          if (job.data === 'flaky' && job.attempt === 1) throw new Error('once');
          ran.set(name, [...(ran.get(name) ?? []), job.data]);
        },
        { connection, backoff: { type: 'fixed', delay: 20 } },
      );
      errorLog.watch(worker);
      open.push(worker);
      // The worker is asleep on a far job when the near ones are added: the wake signal must cross the cluster.
      await queue.add('far', { id: 'far', delay: 600_000 });
      await until(async () => (await queue.stats()).scheduled === 1, 'the far job');
      await queue.add('flaky', { delay: 30 });
      await queue.addBulk([
        { data: 'a', opts: { delay: 10, priority: 1 } },
        { data: 'b', opts: { delay: 10 } },
      ]);
    }
    await until(() => names.every((n) => (ran.get(n)?.length ?? 0) === 3), 'every queue to run its three near jobs', 15_000);
    for (const name of names) {
      assert.deepEqual([...ran.get(name)!].sort(), ['a', 'b', 'flaky']);
      const queue = new Queue<string>(name, { connection });
      open.push(queue);
      const stats = await queue.stats();
      assert.equal(stats.scheduled, 1);
      assert.equal(stats.active, 0);
      const report = await queue.verify();
      assert.equal(report.ok, true, report.problems.join('; '));
      assert.equal(report.counts.bodies, 1);
    }
  });

  test('pause, resume and the event stream work on a cluster', async () => {
    const connection = { cluster: cluster.seeds };
    const queue = new Queue<string>(uniqueName('c'), { connection });
    open.push(queue);
    await queue.events.enable({ maxLen: 100 });
    await queue.pause();
    const ran: string[] = [];
    const worker = new Worker<string>(queue.name, (job) => void ran.push(job.data), { connection });
    errorLog.watch(worker);
    open.push(worker);
    await queue.add('x');
    await until(async () => (await queue.stats()).ready === 1, 'the job to fall due while paused');
    assert.deepEqual(ran, []);
    await queue.resume();
    await until(() => ran.length === 1, 'the job to run after resume');
    const seen: string[] = [];
    const ac = new AbortController();
    for await (const e of queue.events.follow({ after: '0', signal: ac.signal })) {
      seen.push(e.event);
      if (e.event === 'completed') ac.abort();
    }
    assert.deepEqual(seen, ['paused', 'added', 'resumed', 'claimed', 'completed']);
  });

  test('a master that lost the Functions library (FUNCTION FLUSH, a node that never had it) gets it back: the library is loaded on every master and the call sent again', async () => {
    const connection = { cluster: cluster.seeds };
    // A queue on each master, so each one's loss is met by a call.
    const names = new Map<number, string>();
    while (names.size < cluster.nodes.length) {
      const name = uniqueName('fn');
      names.set((await cluster.nodeFor(queueKeys('dq', name).scheduled)).port, name);
    }
    const ran: string[] = [];
    const queues: Queue<string>[] = [];
    for (const name of names.values()) {
      const queue = new Queue<string>(name, { connection });
      open.push(queue);
      queues.push(queue);
      const worker = new Worker<string>(name, (job) => void ran.push(job.data), { connection });
      errorLog.watch(worker);
      open.push(worker);
      await queue.add(`${name}:before`);
    }
    await until(() => ran.length === names.size, 'a job on each master');
    const libraries = async (port: number) => {
      const admin = new Redis({ host: '127.0.0.1', port });
      try {
        return ((await admin.call('FUNCTION', 'LIST')) as unknown[][]).map((l) => String(l[1]));
      } finally {
        admin.disconnect();
      }
    };
    for (const port of names.keys()) {
      assert.equal((await libraries(port)).filter((n) => n.startsWith('dq_')).length, 1, `the library on ${port}`);
      const admin = new Redis({ host: '127.0.0.1', port });
      await admin.call('FUNCTION', 'FLUSH');
      admin.disconnect();
    }
    for (const queue of queues) await queue.add(`${queue.name}:after`);
    await until(() => ran.length === 2 * names.size, 'a job on each master after the flush');
    for (const port of names.keys()) assert.equal((await libraries(port)).filter((n) => n.startsWith('dq_')).length, 1, `the library back on ${port}`);
  });

  test('a least-privilege user from aclRules() connects to the cluster, works a queue, verifies and WAITs', async () => {
    for (const n of cluster.nodes) {
      const admin = new Redis({ host: '127.0.0.1', port: n.port });
      await admin.call('ACL', 'SETUSER', 'jobs', 'on', '>s3cret', ...aclRules('dq'));
      admin.disconnect();
    }
    const connection = { cluster: cluster.seeds, options: { redisOptions: { username: 'jobs', password: 's3cret' } } };
    const queue = new Queue<string>(uniqueName('acl'), { connection });
    open.push(queue);
    const errors: Error[] = [];
    const ran: string[] = [];
    const worker = new Worker<string>(queue.name, (job) => void ran.push(job.data), { connection });
    worker.on('error', (e) => errors.push(e));
    open.push(worker);
    await queue.add('x', { id: 'x' });
    await queue.add('later', { id: 'later', delay: 600_000 });
    await until(() => ran.length === 1, 'the job to run as the ACL user');
    const replicas = await ((queue.store as ShardedStore).inner as RedisStore).client.call('WAIT', 0, 100);
    assert.equal(replicas, 0);
    assert.equal((await queue.verify()).ok, true);
    assert.deepEqual(errors, []);
  });
});
