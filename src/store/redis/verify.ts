/**
 * verify walks one queue's keys and checks the contract's first guarantee: every job body is in
 * exactly one state set, every set entry has a body, every active job holds a live lease token,
 * every ready member matches its job, and no run state or extra (result, progress, logs, error
 * history, group) outlives its body, and no debounce key its burst's waiting job; every group's running and waiting counts equal its jobs in
 * `active` and in its line (no slot leaked, none counted twice); and a counted priority mark (meta
 * `ranked`) counts at least every job with a priority that has not ended (too few would let a
 * claim pass one over; too many only keeps the ready set a while longer), and so do meta
 * `groupJobs` and `flowJobs` every job of a group and every job with a cost or a debounce key.
 * It reads without a lock, so run it on a quiet queue (tests run it after every fault).
 */
import type { Client } from './connection.js';
import type { VerifyReport } from '../store.js';
import { holdKeys, type QueueKeys, rankedKey } from './keys.js';
import { parseRun, tryParseBody } from './packed.js';
import { readyMember } from '../zset-order.js';
import { parseGroupState } from './group-state.js';
import { scheduledMemberId, scheduledMemberSeq } from '../zset-order.js';
import { HASHTABLE_FIELD } from './wire.js';

const READY_ID_OFFSET = 32;

async function zsetMembers(client: Client, key: string): Promise<string[]> {
  return [...(await zsetScores(client, key)).keys()];
}

/** A sorted set's members and their scores (as text). */
async function zsetScores(client: Client, key: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, items] = await client.zscan(key, cursor, 'COUNT', 1000);
    for (let i = 0; i < items.length; i += 2) out.set(items[i]!, items[i + 1]!);
    cursor = next;
  } while (cursor !== '0');
  return out;
}

async function hashEntries(client: Client, key: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, items] = await client.hscan(key, cursor, 'COUNT', 1000);
    for (let i = 0; i < items.length; i += 2) out.set(items[i]!, items[i + 1]!);
    cursor = next;
  } while (cursor !== '0');
  return out;
}

export async function verifyQueue(client: Client, keys: QueueKeys): Promise<VerifyReport> {
  const [scheduledScores, readyMembers, active, dead, completed, bodies, runs, extras, waitingMembers, groupOf, groupStates, flowOf, rates, rateLog, debounce] =
    await Promise.all([
      zsetScores(client, keys.scheduled),
      zsetMembers(client, keys.ready),
      zsetMembers(client, keys.active),
      zsetMembers(client, keys.dead),
      zsetMembers(client, keys.completed),
      hashEntries(client, keys.jobs),
      hashEntries(client, keys.runs),
      Promise.all([keys.results, keys.progress, keys.logs, keys.errors].map((k) => hashEntries(client, k))),
      zsetMembers(client, keys.waiting),
      hashEntries(client, keys.groupOf),
      hashEntries(client, keys.groups),
      hashEntries(client, keys.flowOf),
      hashEntries(client, keys.rate),
      zsetMembers(client, keys.rateLog),
      hashEntries(client, keys.debounce),
    ]);
  const scheduled = [...scheduledScores.keys()];
  // The field that keeps these hashes hashtables is no job, nor group (wire.ts HASHTABLE_FIELD).
  for (const hash of [bodies, runs, groupOf, flowOf, groupStates]) hash.delete(HASHTABLE_FIELD);
  const hk = holdKeys(keys);
  const [held, holds, holdDeps, dependents, childResults, meta, rankedIndex] = await Promise.all([
    zsetMembers(client, hk.held),
    hashEntries(client, hk.holds),
    hashEntries(client, hk.deps),
    hashEntries(client, hk.dependents),
    hashEntries(client, hk.results),
    client.hmget(keys.meta, 'ordered', 'prioritized', 'ranked', 'grouped', 'groupJobs', 'flowed', 'flowJobs', 'rankedSet'),
    zsetScores(client, rankedKey(keys)),
  ]);
  const [ordered, mark, ranked, groupedMark, groupJobs, flowedMark, flowJobs, rankedSet] = meta;
  const problems: string[] = [];
  const states = new Map<string, string[]>();
  const note = (id: string, state: string) => {
    const list = states.get(id);
    if (list) list.push(state);
    else states.set(id, [state]);
  };
  for (const member of scheduled) {
    const id = scheduledMemberId(member);
    note(id, 'scheduled');
    // A member's seq must be its body's: the scripts find a scheduled job by the member its body makes.
    const seq = scheduledMemberSeq(member);
    const body = bodies.get(id);
    if (seq !== undefined && body !== undefined && !body.startsWith(`${seq}:`))
      problems.push(`job ${id}: its scheduled member carries seq ${seq}, its body another`);
  }
  readyMembers.forEach((m) => note(m.slice(READY_ID_OFFSET), 'ready'));
  active.forEach((id) => note(id, 'active'));
  dead.forEach((id) => note(id, 'dead'));
  completed.forEach((id) => note(id, 'completed'));
  held.forEach((id) => note(id, 'held'));
  // Holds (HOLD_STATE): a held job's hold is 'h' and counts as pending exactly its dependencies
  // with no outcome recorded, each of which exists and names it among its dependents.
  for (const id of held) {
    const m = /^(\d+):(\d+):([fi]):(\d+):([hrtd])(?::(.+))?$/.exec(holds.get(id) ?? '');
    if (!m || m[5] !== 'h') {
      problems.push(`job ${id} is held without a hold in phase h`);
      continue;
    }
    // Waiting for a signal (its dependencies, if any, ended before it ran).
    if (m[6] !== undefined) continue;
    const open = (holdDeps.get(id) ?? '').split('\t').filter((d) => d !== '' && !childResults.has(`${id}\t${d}`));
    if (Number(m[1]) !== open.length) problems.push(`held job ${id} counts ${m[1]} pending, but ${open.length} of its dependencies have not ended`);
    for (const d of open) {
      if (!bodies.has(d)) problems.push(`held job ${id} waits for ${d}, which has no body`);
      else if (!(dependents.get(d) ?? '').split('\t').includes(id)) problems.push(`held job ${id} waits for ${d}, which does not name it among its dependents`);
    }
  }
  for (const id of holds.keys()) if (!bodies.has(id)) problems.push(`job ${id} has a hold but no body`);
  // A waiting member: '<group>\0<7-digit priority key><due:16><seq:16><id>'.
  const lines = new Map<string, number>();
  for (const m of waitingMembers) {
    const cut = m.indexOf('\0');
    const group = m.slice(0, cut);
    const id = m.slice(cut + 8 + READY_ID_OFFSET);
    note(id, 'waiting');
    lines.set(group, (lines.get(group) ?? 0) + 1);
    if (groupOf.get(id) !== group) problems.push(`job ${id} waits in the line of group ${group} but belongs to ${groupOf.get(id) ?? 'no group'}`);
  }
  const running = new Map<string, number>();
  for (const id of active) {
    const g = groupOf.get(id);
    if (g !== undefined) running.set(g, (running.get(g) ?? 0) + 1);
  }
  for (const g of new Set([...lines.keys(), ...running.keys(), ...groupStates.keys()])) {
    const s = parseGroupState(g, groupStates.get(g));
    if (s.running !== (running.get(g) ?? 0)) problems.push(`group ${g} counts ${s.running} running, but ${running.get(g) ?? 0} of its jobs are active`);
    if (s.waiting !== (lines.get(g) ?? 0)) problems.push(`group ${g} counts ${s.waiting} waiting, but ${lines.get(g) ?? 0} of its jobs are in its line`);
  }
  for (const id of groupOf.keys()) if (!bodies.has(id)) problems.push(`job ${id} has a group but no body`);
  for (const id of flowOf.keys()) if (!bodies.has(id)) problems.push(`job ${id} has a cost or debounce key but no body`);
  // A debounce key names its burst's job ('<id>:<first add ms>') only while that job waits with
  // the key: a key left by a job that started, or was cancelled, drained, purged or replaced, is stale.
  for (const [key, held] of debounce) {
    const id = held.slice(0, held.lastIndexOf(':'));
    const where = states.get(id) ?? [];
    const waits = where.length === 1 && ['scheduled', 'ready', 'waiting'].includes(where[0]!);
    if (!waits || flowOf.get(id)?.replace(/^\d*:/, '') !== key)
      problems.push(`debounce key ${JSON.stringify(key)} names job ${id}, which ${waits ? 'does not carry it' : 'does not wait'}: stale`);
  }
  // Each limiter's tokens taken equal the tokens of its log entries (RATE_STATE, rate-log members
  // '<limiter>\0<expiry:16>:<claim seq>:<taken at ms>:<tokens>').
  const logged = new Map<string, number>();
  for (const m of rateLog) {
    const cut = m.indexOf('\0');
    const tokens = Number(/:(\d+)$/.exec(m)?.[1] ?? Number.NaN);
    if (cut < 0 || !Number.isFinite(tokens)) problems.push(`rate-log member ${JSON.stringify(m)} does not read`);
    else logged.set(m.slice(0, cut), (logged.get(m.slice(0, cut)) ?? 0) + tokens);
  }
  for (const limiter of new Set([...logged.keys(), ...rates.keys()])) {
    const taken = Number(/^(\d+):/.exec(rates.get(limiter) ?? '0:')?.[1] ?? Number.NaN);
    if (taken !== (logged.get(limiter) ?? 0))
      problems.push(`rate limiter ${limiter === '' ? "''" : limiter} counts ${taken} tokens taken, but its log holds ${logged.get(limiter) ?? 0}`);
  }

  const readySet = new Set(readyMembers);
  for (const [id, list] of states) {
    if (list.length > 1) problems.push(`job ${id} is in ${list.length} states: ${list.join(', ')}`);
    if (!bodies.has(id)) problems.push(`job ${id} is ${list.join(', ')} but has no body`);
  }
  for (const [id, text] of bodies) {
    const list = states.get(id);
    if (!list) {
      problems.push(`job ${id} has a body but is in no state`);
      continue;
    }
    const run = parseRun(runs.get(id));
    if (list.includes('active') && (!run || run.token === '' || run.token.startsWith('-') || run.token.startsWith('~'))) {
      problems.push(`job ${id} is active without a live lease token`);
    }
    if (list.includes('ready')) {
      const seq = tryParseBody(text)?.seq ?? 0;
      const expected = readyMember(run?.dueAtMs ?? 0, seq, id);
      if (!readySet.has(expected)) problems.push(`job ${id} is ready under a member that does not match its due time and sequence`);
    }
  }
  for (const id of runs.keys()) if (!bodies.has(id)) problems.push(`job ${id} has a run state but no body`);
  // The counts of jobs that have not ended kept beside three marks (_helpers.lua SCHED.rank,
  // _groups.lua LIVE): too few would let a claim pass a priority over, or skip a group's turn and
  // slot, or a job's cost and burst (too many only keeps the slower path a while longer). A queue
  // marked without a readable count (an older version's) is not counted; nor is an unmarked
  // queue older than the priority mark (`ordered` not 2: versions before it wrote neither).
  const notEnded = (id: string) => {
    const list = states.get(id);
    return list !== undefined && !list.includes('dead') && !list.includes('completed');
  };
  const checkCount = (what: string, counter: string, counted: number | undefined, ids: Iterable<string>) => {
    if (counted === undefined) return;
    let n = 0;
    for (const id of ids) if (notEnded(id)) n++;
    if (n > counted) problems.push(`${n} ${what} have not ended, but ${counter} counts ${counted}`);
  };
  // A count beside a mark of '1' as the scripts read it (the priority mark's is at least 1: at 0
  // the mark goes); undefined when it does not read.
  const countOf = (count: string | null, min: number) => (count !== null && /^\d{1,16}$/.test(count) && Number(count) >= min ? Number(count) : undefined);
  const withPriority = [...bodies].filter(([, text]) => (tryParseBody(text)?.priority ?? 0) !== 0).map(([id]) => id);
  const priorityCount = mark === null ? (ordered === '2' ? 0 : undefined) : mark === '1' ? countOf(ranked, 1) : undefined;
  checkCount('jobs with a priority', 'the priority mark', priorityCount, withPriority);
  // The index of scheduled jobs with a priority (wire.ts RANKED_SUFFIX): while meta rankedSet is
  // '1' every such job is in it at its due time (a claim would hand one out missing from it as if
  // of priority 0), and it names no other member.
  if (rankedSet === '1') {
    const memberOf = new Map(scheduled.map((member) => [scheduledMemberId(member), member]));
    for (const id of withPriority) {
      const member = memberOf.get(id);
      const score = member === undefined ? undefined : scheduledScores.get(member);
      if (member !== undefined && rankedIndex.get(member) !== score) {
        problems.push(
          `job ${id}: scheduled with a priority at ${score}, but ${rankedIndex.has(member) ? `indexed at ${rankedIndex.get(member)}` : 'not in the index of such jobs'}`,
        );
      }
    }
  }
  for (const member of rankedIndex.keys()) {
    if (!scheduledScores.has(member)) problems.push(`the index of scheduled jobs with a priority names ${scheduledMemberId(member)}, which is not scheduled`);
  }
  checkCount('jobs of a group', 'meta groupJobs', groupedMark !== '1' ? 0 : countOf(groupJobs, 0), groupOf.keys());
  checkCount('jobs with a cost or a debounce key', 'meta flowJobs', flowedMark !== '1' ? 0 : countOf(flowJobs, 0), flowOf.keys());
  // A result, progress, log or error history outliving its job would leak memory for ever.
  extras.forEach((hash, i) => {
    for (const id of hash.keys()) if (!bodies.has(id)) problems.push(`job ${id} has ${['a result', 'progress', 'logs', 'an error history'][i]} but no body`);
  });
  return {
    ok: problems.length === 0,
    counts: {
      scheduled: scheduled.length,
      ready: readyMembers.length,
      waiting: waitingMembers.length,
      active: active.length,
      dead: dead.length,
      completed: completed.length,
      bodies: bodies.size,
    },
    problems,
  };
}
