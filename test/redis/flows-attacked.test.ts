/**
 * Flows attacked on a real redis-server (docs/flows.md; ../shared/ATTACK.md):
 * - lost replies: an add of a flow, a signal and a child's ack, each re-sent as ioredis re-sends
 *   after a reconnect (the same request id, the same token): one effect, the first answer;
 * - a stale second process: a sharded queue resharded live while flows wait for their children,
 *   another process (its layout read before the reshard) adding flows and signalling: every
 *   parent runs once, after its children, and verify() is clean;
 * - the protocol: a foreign client's bad hold fields are refused before anything is written.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue, RedisStore, Worker, type Job } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { callScript } from '../helpers/protocol-call.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until, within } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

async function verified(q: Queue<unknown>): Promise<void> {
  const report = await q.verify();
  assert.equal(report.ok, true, report.problems.join('; '));
}

describe('flows on Redis, attacked', () => {
  test("lost replies: a flow's add, a signal and a child's ack re-sent answer as the first and count once", async () => {
    const name = uniqueName('fl-resend');
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    const q = fx.track(new Queue<unknown>(name, { connection: fx.redis.url }));
    // The add of a flow (two children and their parent), re-sent with its request id.
    const args = { request_id: 'r-add', memo_ms: 60_000, item_fields: 'holds' };
    const items: Record<string, string | number>[] = [
      { id: 'c1', data: '1', delay_ms: 0, priority: 0, replace: '0' },
      { id: 'c2', data: '2', delay_ms: 0, priority: 0, replace: '0' },
      { id: 'p', data: '3', delay_ms: 0, priority: 0, replace: '0', depends_on: 'c1\tc2' },
    ];
    const first = await callScript(fx.client, 'add', name, args, items);
    const again = await callScript(fx.client, 'add', name, args, items);
    assert.deepEqual(again, first, 'the re-send answers as the first run');
    assert.equal(await fx.client.hget(`dq:{${name}}:dependents`, 'c1'), 'p', 'the edge is written once');
    assert.equal((await q.holdOf('p'))?.waitingFor.length, 2);
    await verified(q);

    // A child's ack re-sent (same token): the parent counts it once.
    const c = await store.claim(name, 2, 60_000, 3);
    const c1 = c.jobs.find((j) => j.id === 'c1')!;
    assert.deepEqual(await store.complete(name, [{ id: 'c1', token: c1.token, result: '"a"' }]), ['ok']);
    await store.complete(name, [{ id: 'c1', token: c1.token, result: '"a"' }]);
    const hold = await q.holdOf('p');
    assert.deepEqual([hold?.state, hold?.waitingFor], ['held', ['c2']], 'one ack of c1, whatever was re-sent');
    await verified(q);

    // A signal re-sent with its request id releases once and is not kept for a later wait.
    await q.add(0, { id: 's' });
    const s = (await store.claim(name, 5, 60_000, 3)).jobs.find((j) => j.id === 's')!;
    assert.equal((await store.waitSignal(name, { id: 's', token: s.token, name: 'payment', timeoutMs: undefined })).outcome, 'waiting');
    const sArgs = { id: 's', name: 'payment', data: '{"paid":1}', request_id: 'r-sig', memo_ms: 60_000 };
    const s1 = await callScript(fx.client, 'signal', name, sArgs);
    const s2 = await callScript(fx.client, 'signal', name, sArgs);
    assert.deepEqual(s2, s1);
    assert.equal(await fx.client.hget(`dq:{${name}}:signals`, 's'), null, 'the re-sent signal was not kept');
    assert.equal((await q.get('s'))?.state, 'scheduled');
    await verified(q);
  });

  test("a foreign client's bad hold fields are refused before anything is written", async () => {
    const name = uniqueName('fl-refuse');
    const q = fx.track(new Queue<unknown>(name, { connection: fx.redis.url }));
    await q.add(0, { id: 'x', delay: 60_000 });
    const base = { id: 'j', data: '1', delay_ms: 0, priority: 0, replace: '0' };
    const bad: [Record<string, string | number>, RegExp][] = [
      [{ depends_on: 'x\tx' }, /names a job twice/],
      [{ depends_on: 'j' }, /itself/],
      [{ depends_on: 'x\tbad\u0001id' }, /depends_on of item 1 must not contain control characters/],
      [{ depends_on: 'x', deadline_ms: 5, deadline_at: 1_900_000_000_000 }, /at most one may be set/],
      [{ deadline_ms: 5 }, /only with depends_on/],
      [{ depends_on: 'x', on_child_failure: 'maybe' }, /on_child_failure of item 1 must be one of fail, ignore/],
      [{ depends_on: 'x', replace: '1' }, /not with replace/],
      [{ depends_on: 'x', deadline_ms: 'inf' }, /deadline_ms of item 1 must be a whole number/],
    ];
    for (const [fields, message] of bad) {
      await assert.rejects(callScript(fx.client, 'add', name, { request_id: '', memo_ms: 60_000, item_fields: 'holds' }, [{ ...base, ...fields }]), message);
    }
    await assert.rejects(
      callScript(fx.client, 'signal', name, { id: 'x', name: 'a\nb', data: '', request_id: '', memo_ms: 60_000 }),
      /name must not contain control characters/,
    );
    assert.equal(await q.get('j'), null);
    assert.equal(await fx.client.exists(`dq:{${name}}:holds`, `dq:{${name}}:held`, `dq:{${name}}:signals`), 0, 'nothing written');
    await verified(q);
  });

  test('a sharded queue resharded while flows wait, and a second process adding flows by a stale layout: every parent runs once, after its children', async () => {
    const name = uniqueName('fl-shard');
    const q = fx.track(new Queue<unknown>(name, { connection: fx.redis.url, shards: 2 }));
    const stale = fx.track(new Queue<unknown>(name, { connection: fx.redis.url, shards: 2 }));
    await stale.stats(); // reads the layout now, before the reshard
    const runs: { id: string; at: number }[] = [];
    const w = errorLog.watch(
      fx.track(
        new Worker<unknown>(
          name,
          async (job: Job<unknown>) => {
            runs.push({ id: job.id, at: performance.now() });
            if (job.id.startsWith('wait-') && !job.signalled) job.waitForSignal('go', { timeoutMs: 30_000 });
          },
          { connection: fx.redis.url, concurrency: 10 },
        ),
      ),
    );
    // Children far ahead: the parents wait through the reshard.
    const flow = (i: number, delay: number) => ({
      data: i,
      opts: { id: `f${i}` },
      children: [
        { data: 0, opts: { delay } },
        { data: 1, opts: { delay } },
      ],
    });
    for (let i = 0; i < 10; i++) await q.addFlow(flow(i, 1_500));
    await q.add(0, { id: 'wait-1' });
    await until(async () => (await q.get('wait-1'))?.state === 'held', 'the waiter to wait');
    await q.reshard(3);
    // The second process, its layout from before the reshard, adds more flows and signals.
    for (let i = 10; i < 20; i++) await stale.addFlow(flow(i, 0));
    assert.equal((await stale.signal('wait-1', 'go')).outcome, 'released');
    await until(async () => (await q.stats()).heldJobs === 0 && runs.filter((r) => /^f\d+$/.test(r.id)).length === 20, 'every parent ran', 20_000);
    await until(async () => (await q.stats()).active === 0, 'the last acks');
    for (let i = 0; i < 20; i++) {
      const parent = runs.filter((r) => r.id === `f${i}`);
      assert.equal(parent.length, 1, `f${i} ran once`);
      const kids = runs.filter((r) => r.id.startsWith(`f${i}/`));
      assert.equal(kids.length, 2);
      assert.ok(
        kids.every((k) => k.at < parent[0]!.at),
        `f${i} ran after its children`,
      );
    }
    assert.equal(runs.filter((r) => r.id === 'wait-1').length, 2, 'the waiter ran, waited, and ran once more');
    await within(w.close(), 5_000, 'close');
    await verified(q);
  });
});
