/**
 * verify walks one queue's keys and checks the contract's first guarantee: every job body is in
 * exactly one state set, every set entry has a body, every active job holds a live lease token.
 * It reads without a lock, so run it on a quiet queue (tests run it after every fault).
 */
import { Cluster, type Redis } from 'ioredis';
import type { Client } from './connection.js';
import type { VerifyReport } from '../store.js';
import type { QueueKeys } from './keys.js';

const READY_ID_OFFSET = 32;

async function zsetMembers(client: Client, key: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, items] = await client.zscan(key, cursor, 'COUNT', 1000);
    for (let i = 0; i < items.length; i += 2) out.push(items[i]!);
    cursor = next;
  } while (cursor !== '0');
  return out;
}

async function scanNode(node: Redis, keys: QueueKeys, out: string[]): Promise<void> {
  let cursor = '0';
  do {
    // Queue names and prefixes admit no glob characters, so the pattern matches exactly these keys.
    const [next, found] = await node.scan(cursor, 'MATCH', `${keys.jobPrefix}*`, 'COUNT', 1000);
    for (const k of found) out.push(k.slice(keys.jobPrefix.length));
    cursor = next;
  } while (cursor !== '0');
}

async function bodyIds(client: Client, keys: QueueKeys): Promise<string[]> {
  const out: string[] = [];
  // SCAN is per node; the queue's keys all live on the master that owns its hash tag's slot,
  // and scanning every master finds them without computing which one that is.
  if (client instanceof Cluster) await Promise.all(client.nodes('master').map((n) => scanNode(n, keys, out)));
  else await scanNode(client, keys, out);
  return out;
}

export async function verifyQueue(client: Client, keys: QueueKeys): Promise<VerifyReport> {
  const [scheduled, readyMembers, active, dead, bodies] = await Promise.all([
    zsetMembers(client, keys.scheduled),
    zsetMembers(client, keys.ready),
    zsetMembers(client, keys.active),
    zsetMembers(client, keys.dead),
    bodyIds(client, keys),
  ]);
  const problems: string[] = [];
  const states = new Map<string, string[]>();
  const note = (id: string, state: string) => {
    const list = states.get(id);
    if (list) list.push(state);
    else states.set(id, [state]);
  };
  scheduled.forEach((id) => note(id, 'scheduled'));
  readyMembers.forEach((m) => note(m.slice(READY_ID_OFFSET), 'ready'));
  active.forEach((id) => note(id, 'active'));
  dead.forEach((id) => note(id, 'dead'));

  const bodySet = new Set(bodies);
  const readySet = new Set(readyMembers);
  for (const [id, list] of states) {
    if (list.length > 1) problems.push(`job ${id} is in ${list.length} states: ${list.join(', ')}`);
    if (!bodySet.has(id)) problems.push(`job ${id} is ${list.join(', ')} but has no body`);
  }
  const pipe = client.pipeline();
  for (const id of bodies) pipe.hmget(keys.jobPrefix + id, 't', 'q', 'k');
  const fields = bodies.length ? ((await pipe.exec()) ?? []) : [];
  bodies.forEach((id, i) => {
    const list = states.get(id);
    if (!list) {
      problems.push(`job ${id} has a body but is in no state`);
      return;
    }
    const [t, q, k] = (fields[i]?.[1] ?? []) as (string | null)[];
    if (list.includes('active') && (!k || k.startsWith('-'))) problems.push(`job ${id} is active without a live lease token`);
    if (list.includes('ready')) {
      const expected = `${String(Math.max(0, Number(t ?? 0))).padStart(16, '0')}${String(Number(q ?? 0)).padStart(16, '0')}${id}`;
      if (!readySet.has(expected)) problems.push(`job ${id} is ready under a member that does not match its due time and sequence`);
    }
  });
  return {
    ok: problems.length === 0,
    counts: { scheduled: scheduled.length, ready: readyMembers.length, active: active.length, dead: dead.length, bodies: bodies.length },
    problems,
  };
}
