/**
 * The cluster harness itself (test/helpers/redis-cluster.ts), on 3 masters + 3 replicas with
 * AOF always: kill -9 a master, its replica takes over, every write a replica acknowledged
 * (WAIT 1) survives, the killed node comes back as a replica and a manual CLUSTER FAILOVER hands
 * its slots back. Prints the failover times.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Cluster, Redis } from 'ioredis';
import { type RedisCluster, startCluster } from '../helpers/redis-cluster.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { within } from '../helpers/wait.js';

let cluster: RedisCluster | undefined;
before(async () => {
  cluster = await startCluster(3, { replicas: 1, aof: 'always' });
});
after(async () => {
  await cluster?.stop();
});

/** The options a client needs to ride through a failover without errors (see the harness's header). */
const FAILOVER_SAFE = { retryDelayOnFailover: 300, maxRedirections: 64 };

/** SET then WAIT 1 in one pipeline: ioredis sends a pipeline to the node of its keyed command, so WAIT runs where the write did. */
async function setAcked(client: Cluster, key: string, value: string): Promise<number> {
  const res = await client.pipeline().set(key, value).call('WAIT', 1, 2000).exec();
  for (const [err] of res ?? []) if (err) throw err;
  return Number(res![1]![1]);
}

async function readAll(client: Cluster, keys: Map<string, string>, what: string): Promise<void> {
  const got = await within(Promise.all([...keys.keys()].map((k) => client.get(k))), 10_000, what);
  const missing = [...keys].filter(([, v], i) => got[i] !== v).map(([key]) => key);
  assert.deepEqual(missing, [], `${what}: ${missing.length} of ${keys.size} acknowledged keys lost or changed`);
}

describe('the local cluster harness (3 masters + 3 replicas, AOF always)', () => {
  const written = new Map<string, string>();
  let client: Cluster;
  let victim: RedisServer;
  let promoted: RedisServer;

  test('starts 3 masters, each with its own linked replica, all on appendfsync always', async () => {
    const c = cluster!;
    assert.equal(c.nodes.length, 6);
    const masters = await c.masters();
    assert.equal(masters.length, 3);
    const replicas = await Promise.all(masters.map((m) => c.replicaOf(m)));
    assert.equal(new Set(replicas.map((r) => r.port)).size, 3);
    for (const r of replicas) assert.ok(!masters.some((m) => m.port === r.port));
    for (const n of c.nodes) {
      const redis = new Redis({ host: '127.0.0.1', port: n.port });
      try {
        assert.deepEqual(await redis.config('GET', 'appendfsync'), ['appendfsync', 'always']);
        assert.deepEqual(await redis.config('GET', 'appendonly'), ['appendonly', 'yes']);
      } finally {
        redis.disconnect();
      }
    }
  });

  test('kill -9 a master: its replica takes over within 10 s and every write a replica acknowledged is still there', async () => {
    const c = cluster!;
    client = c.client(FAILOVER_SAFE);
    // 300 keys, spread by hash over the 3 masters; each acknowledged by its master's replica.
    const keys = Array.from({ length: 300 }, (_, i) => `harness:${i}`);
    for (let i = 0; i < keys.length; i += 50) {
      const acks = await Promise.all(keys.slice(i, i + 50).map((k) => setAcked(client, k, `v-${k}`)));
      assert.ok(
        acks.every((a) => a >= 1),
        'every write is acknowledged by one replica',
      );
    }
    for (const k of keys) written.set(k, `v-${k}`);
    const masters = await c.masters();
    const owners = new Map<number, number>();
    for (const k of keys) {
      const p = (await c.nodeFor(k)).port;
      owners.set(p, (owners.get(p) ?? 0) + 1);
    }
    assert.deepEqual([...owners.keys()].sort(), masters.map((m) => m.port).sort(), 'keys on every master');

    victim = masters[0]!;
    const expected = await c.replicaOf(victim);
    let onVictim = '';
    for (const k of keys) if ((await c.nodeFor(k)).port === victim.port) onVictim = k;

    // Two writers to a key on the victim's slots while it fails over: one with ioredis's
    // defaults, one with FAILOVER_SAFE. Only the latter must see no error.
    const defaults = c.client();
    let stopWriting = false;
    let killedAt = 0;
    const writer = (cl: Cluster) => {
      const s = { errors: [] as string[], firstOkAfterKill: -1 };
      const done = (async () => {
        while (!stopWriting) {
          // Only a write sent after the master died counts as resumed.
          const sentAfterKill = killedAt > 0;
          try {
            await cl.set(onVictim, `v-${onVictim}`);
            if (sentAfterKill && s.firstOkAfterKill < 0) s.firstOkAfterKill = Date.now() - killedAt;
          } catch (err) {
            s.errors.push((err as Error).message);
          }
          await new Promise((r) => setTimeout(r, 10));
        }
      })();
      return { s, done };
    };
    const safe = writer(client);
    const plain = writer(defaults);
    try {
      await c.killMaster(victim);
      killedAt = Date.now();
      promoted = await c.waitForFailover(victim.port, 10_000);
      const failoverMs = Date.now() - killedAt;
      assert.equal(promoted.port, expected.port, 'the killed master’s own replica is promoted');
      await within(
        (async () => {
          while (safe.s.firstOkAfterKill < 0 || plain.s.firstOkAfterKill < 0) await new Promise((r) => setTimeout(r, 10));
        })(),
        10_000,
        'both writers to resume after the failover',
      );
      console.log(
        `# failover: kill -9 of :${victim.port} → :${promoted.port} master and cluster ok in ${failoverMs} ms (node timeout 2000 ms); ` +
          `writes resumed after ${safe.s.firstOkAfterKill} ms with retryDelayOnFailover 300 / maxRedirections 64 (${safe.s.errors.length} errors), ` +
          `after ${plain.s.firstOkAfterKill} ms with ioredis defaults (${plain.s.errors.length} errors${plain.s.errors[0] ? `: ${plain.s.errors[0]}` : ''})`,
      );
      assert.ok(failoverMs < 10_000);
      assert.deepEqual(safe.s.errors, [], 'a FAILOVER_SAFE client sees no error through the failover');
    } finally {
      stopWriting = true;
      await Promise.all([safe.done, plain.done]);
    }
    // The client connected before the kill follows the slots to the promoted node.
    await readAll(client, written, 'reading back after the failover');
    assert.equal((await c.masters()).length, 3);
  });

  test('the killed node restarts as a replica of the promoted one, and a manual CLUSTER FAILOVER hands its slots back', async (t) => {
    const c = cluster!;
    if (!victim || !promoted) return t.skip('the failover test did not get that far');
    const restarted = await c.restart(victim);
    assert.equal((await c.replicaOf(promoted)).port, restarted.port, 'the old master rejoins as the new master’s replica');
    const t0 = Date.now();
    await c.manualFailover(restarted);
    console.log(`# manual CLUSTER FAILOVER back to :${restarted.port} in ${Date.now() - t0} ms`);
    const masters = (await c.masters()).map((m) => m.port);
    assert.ok(masters.includes(restarted.port) && !masters.includes(promoted.port), `masters now ${masters.join(', ')}`);
    assert.equal((await c.replicaOf(restarted)).port, promoted.port);
    await readAll(client, written, 'reading back after the manual failover');
    // Writes on the handed-back slots are acknowledged by the replica again.
    let onRestarted = '';
    for (const k of written.keys()) if ((await c.nodeFor(k)).port === restarted.port) onRestarted = k;
    assert.equal(await within(setAcked(client, onRestarted, 'again'), 10_000, 'an acknowledged write after the failback'), 1);
  });
});
