/**
 * A sharded queue through a Redis Cluster failover, under load: 3 masters + 3 replicas, AOF
 * always, cluster-node-timeout 1.5 s; a 3-shard queue whose shards sit on the 3 masters; 2 worker processes; a producer
 * adding jobs steadily (a third due now, the rest in 200–2000 ms), most of them followed by
 * WAIT 1 on the node that took the add. Acknowledged = the add resolved and WAIT said a replica
 * has it. Then one master goes away (kill -9, or a manual CLUSTER FAILOVER on its replica), and:
 * work on its shard resumes within 5 s, work on the other shards goes on, every acknowledged job
 * runs (at least once) or is still there, and verify() is ok. Prints the figures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { shardIndex } from '../../src/store/sharded/layout.js';
import { ClusterWorkerFleet } from '../helpers/cluster-worker-fleet.js';
import { shardTag, spreadQueueName } from '../helpers/cluster-tools.js';
import { type RedisCluster, startCluster } from '../helpers/redis-cluster.js';
import type { RedisServer } from '../helpers/redis-server.js';
import { until, within } from '../helpers/wait.js';

let cluster: RedisCluster | undefined;
before(async () => {
  // A node is failed after 1.5 s of silence (Redis's default is 15 s): the failover itself then
  // takes ~2.5-3.5 s here, and what is measured on top of it is delayq's.
  // As docs/operations.md advises for sharded queues: the masters that are up keep serving
  // their shards while one master's slots fail over.
  cluster = await startCluster(3, { replicas: 1, aof: 'always', nodeTimeoutMs: 1_500, fullCoverage: false });
});
after(async () => {
  await cluster?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SHARDS = 3;
/** The affected shard: shard 0, on the master that goes away. */
const VICTIM_SHARD = 0;
const RESUME_LIMIT_MS = 5_000;

interface Sent {
  id: string;
  shard: number;
  dueNow: boolean;
  /** This add asked for WAIT 1. */
  asked: boolean;
  sentAt: number;
  resolvedAt?: number;
  /** Replicas WAIT counted (asked adds whose WAIT answered). */
  replicas?: number;
  error?: string;
}

interface Figures {
  what: string;
  failoverMs: number;
  resumeShardMs: number;
  resumeAnyMs: number;
  firstAnyAfterMs: number;
  /** The other shards, for jobs added after t0 and due at once: slowest add, first claim (handler start), first completion. */
  othersSlowestAddMs: number;
  othersClaimMs: number;
  othersDoneMs: number;
  /** From add to first claim, for those jobs: median and longest. */
  othersWaitP50Ms: number;
  othersWaitMaxMs: number;
  longestShardPauseMs: number;
  sent: number;
  resolved: number;
  addErrors: number;
  acknowledged: number;
  acknowledgedOnShardBefore: number;
  lostAcknowledged: number;
  lostUnacknowledged: number;
  runTwice: number;
  workerErrors: string[];
}

function report(f: Figures): string {
  return (
    `# ${f.what}: failover ${f.failoverMs} ms; work resumed on its shard ${f.resumeShardMs} ms after${f.resumeShardMs >= f.failoverMs ? ` (${f.resumeShardMs - f.failoverMs} ms after the switch)` : ''}, on any shard ${f.resumeAnyMs} ms ` +
    `(first completion after it: ${f.firstAnyAfterMs} ms; its shard's longest pause ${f.longestShardPauseMs} ms); ` +
    `other shards, jobs added after it: slowest add ${f.othersSlowestAddMs} ms, first claimed after ${f.othersClaimMs} ms, first done after ${f.othersDoneMs} ms, add-to-claim median ${f.othersWaitP50Ms} ms, longest ${f.othersWaitMaxMs} ms; ` +
    `adds ${f.sent} sent, ${f.resolved} resolved, ${f.addErrors} failed; acknowledged (WAIT 1) ${f.acknowledged} ` +
    `(${f.acknowledgedOnShardBefore} on its shard before it); lost: ${f.lostAcknowledged} acknowledged, ${f.lostUnacknowledged} unacknowledged; ` +
    `run twice ${f.runTwice}; worker errors ${f.workerErrors.length}${f.workerErrors.length ? ` (${[...new Set(f.workerErrors)].slice(0, 3).join(' | ')})` : ''}`
  );
}

/**
 * Runs the load, calls `disrupt` once work flows (it returns when the change happened and when
 * the cluster had switched over), and measures. `disrupt` gets the master of the victim shard.
 */
async function underLoad(
  c: RedisCluster,
  what: string,
  disrupt: (victim: RedisServer) => Promise<{ t0: number; switchedAt: number }>,
): Promise<{ figures: Figures; failures: string[] }> {
  // Shard i on master i; the unsharded keys (layout, worker registry) not on the victim.
  const { name, ports } = await spreadQueueName(c, SHARDS, { label: 'fo', avoidBaseOn: (p) => [p[VICTIM_SHARD]!] });
  const victim = (await c.masters()).find((m) => m.port === ports[VICTIM_SHARD])!;
  const connection = { cluster: c.seeds };
  const q = new Queue<{ n: number }>(name, { connection, shards: SHARDS });
  const fleet = new ClusterWorkerFleet({ connection, queue: name, concurrency: 10, leaseMs: 5_000, workMs: 5 });
  const failures: string[] = [];
  try {
    // The layout exists before any worker starts, so the figures are of the failover alone.
    assert.deepEqual(
      (await within(q.shards(), 10_000, 'the layout')).names,
      Array.from({ length: SHARDS }, (_, i) => shardTag(name, i)),
    );
    await Promise.all([fleet.start(), fleet.start()]);
    // WAIT 1 after the adds, per shard: a marker written to the shard's slot, then WAIT, on a
    // client of the test's own (a WAIT that blocks must not hold up the queue's connection).
    // The master's replication stream is in order, so a replica that has the marker has every
    // add that resolved before it was written on that node. One WAIT covers the adds that
    // resolved since the last one ("group commit"); an add is acknowledged once a WAIT that
    // started after it resolved counted a replica.
    const waiter = c.client({ retryDelayOnFailover: 300, maxRedirections: 64 });
    const toWait: Sent[][] = Array.from({ length: SHARDS }, () => []);
    let stopWaiting = false;
    const waiting = toWait.map(async (list, shard) => {
      while (!stopWaiting || list.length > 0) {
        if (list.length === 0) {
          await sleep(2);
          continue;
        }
        const batch = list.splice(0);
        try {
          const res = await within(
            waiter
              .pipeline()
              .set(`fo-wait:{${shardTag(name, shard)}}`, String(Date.now()))
              .call('WAIT', 1, 500)
              .exec(),
            5_000,
            'WAIT 1',
          );
          const [setErr] = res?.[0] ?? [new Error('no reply')];
          const [waitErr, replicas] = res?.[1] ?? [new Error('no reply')];
          for (const s of batch) {
            if (setErr || waitErr) s.error = String(setErr ?? waitErr);
            else s.replicas = Number(replicas);
          }
        } catch (err) {
          for (const s of batch) s.error = (err as Error).message;
        }
      }
    });

    const sent = new Map<string, Sent>();
    let stop = false;
    const inflight = new Set<Promise<void>>();
    const addOne = async (n: number) => {
      const id = `${what.split(' ')[0]}-${n}`;
      const s: Sent = { id, shard: shardIndex(id, SHARDS), dueNow: n % 3 === 0, asked: n % 4 !== 0, sentAt: Date.now() };
      sent.set(id, s);
      try {
        await q.add({ n }, { id, delay: s.dueNow ? 0 : 200 + ((n * 7919) % 1800) });
        s.resolvedAt = Date.now();
        if (s.asked) toWait[s.shard]!.push(s);
      } catch (err) {
        s.error = (err as Error).message;
      }
    };
    const producing = (async () => {
      for (let n = 0; !stop; n++) {
        if (inflight.size < 200) {
          const p = addOne(n);
          inflight.add(p);
          void p.finally(() => inflight.delete(p));
        }
        await sleep(5);
      }
      await Promise.all(inflight);
    })();

    const completed = () => fleet.of('completed');
    try {
      await until(() => completed().filter((r) => sent.get(r.id!)?.shard === VICTIM_SHARD).length >= 30, 'work to flow on the victim shard', 15_000);
      const { t0, switchedAt } = await disrupt(victim);
      // Work resumed: a job added after t0 (so not taken by a master that is gone) completed.
      const firstDone = (shard?: number) =>
        completed().find((r) => {
          const s = sent.get(r.id!);
          return s !== undefined && s.sentAt >= t0 && (shard === undefined || s.shard === shard);
        });
      await until(() => firstDone(VICTIM_SHARD) && firstDone(), `work to resume after the ${what}`, 15_000).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${await c.describe()}`);
      });
      const resumedAt = Math.max(firstDone(VICTIM_SHARD)!.at, firstDone()!.at);
      // A second of load after it, then the producer stops.
      await sleep(Math.max(0, resumedAt + 1000 - Date.now()));
      stop = true;
      await within(producing, 15_000, 'the producer to stop');
      stopWaiting = true;
      await within(Promise.all(waiting), 15_000, 'the last WAITs');

      const all = [...sent.values()];
      const acked = all.filter((s) => s.resolvedAt !== undefined && (s.replicas ?? 0) >= 1);
      const done = () => new Set(completed().map((r) => r.id!));
      await until(() => acked.every((s) => done().has(s.id)), 'every acknowledged job to run', 25_000).catch((err: Error) => {
        failures.push(`${err.message}: ${acked.filter((s) => !done().has(s.id)).length} of ${acked.length} did not`);
      });
      // Unacknowledged adds that resolved get the same chance (they are due within 2 s too).
      await until(() => all.filter((s) => s.resolvedAt !== undefined).every((s) => done().has(s.id)), 'every resolved add to run', 3_000).catch(() => {});
      await within(fleet.stopAll(), 20_000, 'the workers to stop');

      const ran = done();
      const missing = async (list: Sent[]) => {
        const out: string[] = [];
        for (const s of list) if (!ran.has(s.id) && (await within(q.get(s.id), 15_000, `get(${s.id})`)) === null) out.push(s.id);
        return out;
      };
      const lostAcked = await missing(acked);
      const lostUnacked = await missing(all.filter((s) => s.resolvedAt !== undefined && !acked.includes(s)));
      const counts = new Map<string, number>();
      for (const r of completed()) counts.set(r.id!, (counts.get(r.id!) ?? 0) + 1);
      const shardDone = completed()
        .filter((r) => sent.get(r.id!)?.shard === VICTIM_SHARD)
        .map((r) => r.at)
        .sort((a, b) => a - b);
      let longest = 0;
      for (let i = 1; i < shardDone.length; i++) if (shardDone[i]! >= t0 - 1000) longest = Math.max(longest, shardDone[i]! - shardDone[i - 1]!);
      // Jobs of the healthy shards added (and due) after t0, until the affected one switched over.
      const others = all.filter((s) => s.shard !== VICTIM_SHARD && s.dueNow && s.sentAt >= t0 && s.sentAt < switchedAt);
      const firstStart = new Map<string, number>();
      for (const r of fleet.of('start')) if (!firstStart.has(r.id!)) firstStart.set(r.id!, r.at);
      const othersWaits = others.map((s) => (firstStart.get(s.id) ?? Date.now()) - s.sentAt).sort((a, b) => a - b);
      const figures: Figures = {
        what,
        failoverMs: switchedAt - t0,
        resumeShardMs: firstDone(VICTIM_SHARD)!.at - t0,
        resumeAnyMs: firstDone()!.at - t0,
        firstAnyAfterMs: completed().find((r) => r.at >= t0)!.at - t0,
        othersSlowestAddMs: Math.max(0, ...others.map((s) => (s.resolvedAt ?? Date.now()) - s.sentAt)),
        othersClaimMs: (fleet.of('start').find((r) => others.some((s) => s.id === r.id))?.at ?? Number.NaN) - t0,
        othersDoneMs: (completed().find((r) => others.some((s) => s.id === r.id))?.at ?? Number.NaN) - t0,
        othersWaitP50Ms: othersWaits[Math.floor(othersWaits.length / 2)] ?? Number.NaN,
        othersWaitMaxMs: othersWaits[othersWaits.length - 1] ?? Number.NaN,
        longestShardPauseMs: longest,
        sent: all.length,
        resolved: all.filter((s) => s.resolvedAt !== undefined).length,
        addErrors: all.filter((s) => s.error !== undefined && s.resolvedAt === undefined).length,
        acknowledged: acked.length,
        acknowledgedOnShardBefore: acked.filter((s) => s.shard === VICTIM_SHARD && s.resolvedAt! < t0).length,
        lostAcknowledged: lostAcked.length,
        lostUnacknowledged: lostUnacked.length,
        runTwice: [...counts.values()].filter((n) => n > 1).length,
        workerErrors: fleet.reports.filter((r) => r.t === 'error' || r.t === 'settleFailed').map((r) => r.message ?? ''),
      };
      console.log(report(figures));
      if (lostAcked.length > 0) failures.push(`acknowledged jobs lost: ${lostAcked.slice(0, 20).join(', ')}`);
      const v = await within(q.verify(), 20_000, 'verify()');
      if (!v.ok) failures.push(`verify: ${v.problems.slice(0, 10).join('; ')}`);
      return { figures, failures };
    } finally {
      stop = true;
      stopWaiting = true;
      await producing.catch(() => {});
      await Promise.all(waiting).catch(() => {});
    }
  } finally {
    await fleet.stopAll();
    await q.close();
  }
}

function check(f: Figures, failures: string[]): void {
  assert.deepEqual(failures, []);
  assert.equal(f.lostAcknowledged, 0, 'no acknowledged job is lost');
  assert.ok(f.acknowledgedOnShardBefore > 0, 'some acknowledged jobs sat on the shard that failed over');
  assert.ok(f.resumeShardMs <= RESUME_LIMIT_MS, `work on the failed-over shard resumed after ${f.resumeShardMs} ms (limit ${RESUME_LIMIT_MS})`);
  assert.ok(f.resumeAnyMs <= RESUME_LIMIT_MS, `work resumed after ${f.resumeAnyMs} ms (limit ${RESUME_LIMIT_MS})`);
}

describe('a 3-shard queue through a Redis Cluster failover (3 masters + 3 replicas, AOF always, WAIT 1)', () => {
  let killRun: Figures | undefined;

  test('kill -9 of a master under load: work resumes within 5 s and no acknowledged job is lost', async () => {
    const c = cluster!;
    const { figures, failures } = await underLoad(c, 'kill -9 of a master', async (victim) => {
      await c.killMaster(victim);
      const t0 = Date.now();
      await c.waitForFailover(victim.port, 15_000);
      return { t0, switchedAt: Date.now() };
    });
    killRun = figures;
    check(figures, failures);
  });

  test("the other shards' jobs are claimed while one master fails over (kill -9 run above)", (t) => {
    // The claim sent to the dead master's shard does not fail: ioredis retries it every
    // retryDelayOnFailover until a replica takes the slots. A claim round waits for it at most
    // SLOW_SHARD_MS (200 ms; its jobs, if it brings any, go out with the next claim), so the
    // healthy shards' jobs are not held up by the failover (with cluster-require-full-coverage
    // no, as above; otherwise every master refuses commands for part of it).
    if (!killRun) return t.skip('the kill -9 run did not finish');
    // Held up by the failover, they would wait as long as it (at least cluster-node-timeout,
    // 1.5 s); 1 s leaves a loaded machine room (503 ms seen beside a valgrind run and a second
    // suite) and still tells the two apart.
    assert.ok(
      killRun.othersWaitMaxMs <= 1_000,
      `due jobs of the healthy shards added during the failover waited up to ${killRun.othersWaitMaxMs} ms for a worker (median ${killRun.othersWaitP50Ms} ms; the failover took ${killRun.failoverMs} ms)`,
    );
  });

  test('a manual CLUSTER FAILOVER under load: work resumes within 5 s and no acknowledged job is lost', async () => {
    const c = cluster!;
    // A node killed before comes back (as a replica), so every master has one.
    for (const n of c.nodes) if (!c.live().includes(n)) await c.restart(n);
    const { figures, failures } = await underLoad(c, 'manual CLUSTER FAILOVER', async (victim) => {
      const replica = await c.replicaOf(victim);
      const t0 = Date.now();
      await c.manualFailover(replica, 15_000);
      return { t0, switchedAt: Date.now() };
    });
    check(figures, failures);
  });
});
