/**
 * Reads a BullMQ queue straight from its Redis keys (bullmq is not a dependency): which jobs are
 * in which state, each job's hash turned into what delayq needs, and which BullMQ workers are
 * connected. Written against bullmq 6.7's layout (dist/esm/classes/queue-keys.js, its Lua):
 *
 *   <prefix>:<queue>:<id>           hash: name, data (JSON), opts (JSON), timestamp, delay,
 *                                   priority, atm (attempts made; older: attemptsMade), …
 *   <prefix>:<queue>:delayed        ZSET, score = dueAtMs * 0x1000 + a tie-break (< 0x1000)
 *   <prefix>:<queue>:wait, :paused  LISTs, LPUSHed and taken from the right (RPOPLPUSH)
 *   <prefix>:<queue>:prioritized    ZSET, score = priority * 2^32 + an add counter
 *   <prefix>:<queue>:failed         ZSET, score = time of failure
 *   <prefix>:<queue>:meta           hash (opts.maxLenEvents, paused, version, …)
 *
 * A worker's blocking connection is named `<prefix>:<base64(queue)>` or
 * `<prefix>:<base64(queue)>:w:<worker name>` (utils/create-backend.js); Queue.getWorkers()
 * finds them in CLIENT LIST, and so does liveWorkers() here.
 */
import type { Redis } from 'ioredis';

/** The BullMQ states the importer reads, in the order it imports them. */
export const BULLMQ_STATES = ['waiting', 'prioritized', 'delayed', 'failed'] as const;
export type BullmqState = (typeof BULLMQ_STATES)[number];

/** The 0x1000 of getDelayedScore.lua: a delayed job's score is its due time times this, plus a tie-break. */
const DELAY_SCORE_FACTOR = 0x1000;

export interface BullmqRef {
  /** The id, and the key of the list or set it was found in. */
  id: string;
  state: BullmqState;
  /** The key it sits in (wait and paused are both "waiting"). */
  key: string;
  /** delayed: the due time the score encodes. */
  dueAtMs?: number;
}

export function keyOf(prefix: string, queue: string, suffix: string): string {
  return `${prefix}:${queue}:${suffix}`;
}

/** Whether anything of the queue is there: its meta hash, id counter or any state key. */
export async function queueExists(client: Redis, prefix: string, queue: string): Promise<boolean> {
  const suffixes = ['meta', 'id', 'wait', 'paused', 'delayed', 'prioritized', 'failed', 'active', 'completed', 'events'];
  const n = await client.exists(...suffixes.map((s) => keyOf(prefix, queue, s)));
  return n > 0;
}

/**
 * The ids of every job in the states asked for, in the order BullMQ would run them: a list from
 * its right end, a priority set by score (priority, then add order), delayed by due time.
 */
export async function listRefs(client: Redis, prefix: string, queue: string, withFailed: boolean): Promise<BullmqRef[]> {
  const refs: BullmqRef[] = [];
  for (const list of ['wait', 'paused']) {
    const key = keyOf(prefix, queue, list);
    const ids = await client.lrange(key, 0, -1);
    for (const id of ids.reverse()) refs.push({ id, state: 'waiting', key });
  }
  const prioritized = keyOf(prefix, queue, 'prioritized');
  for (const id of await client.zrange(prioritized, '0', '-1')) refs.push({ id, state: 'prioritized', key: prioritized });
  const delayed = keyOf(prefix, queue, 'delayed');
  const withScores = await client.zrange(delayed, '0', '-1', 'WITHSCORES');
  for (let i = 0; i < withScores.length; i += 2) {
    refs.push({ id: withScores[i]!, state: 'delayed', key: delayed, dueAtMs: Math.floor(Number(withScores[i + 1]) / DELAY_SCORE_FACTOR) });
  }
  if (withFailed) {
    const failed = keyOf(prefix, queue, 'failed');
    for (const id of await client.zrange(failed, '0', '-1')) refs.push({ id, state: 'failed', key: failed });
  }
  return refs;
}

/** What the importer keeps of a BullMQ job hash. */
export interface BullmqJob {
  name: string | undefined;
  data: unknown;
  /** 0 = none (BullMQ: lower runs first, none before any). */
  priority: number;
  /** opts.attempts, 1 when absent (BullMQ's default). */
  attempts: number;
  attemptsMade: number;
  backoff: { type: 'fixed' | 'exponential'; delay: number } | undefined;
}

function wholeField(hash: Record<string, string>, field: string): number | undefined {
  const v = hash[field];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`field ${field} is not a whole number (${JSON.stringify(v.slice(0, 40))})`);
  return n;
}

/** A job hash → what delayq keeps of it; throws an Error saying why a job cannot be read. */
export function readJobHash(hash: Record<string, string>): BullmqJob {
  if (Object.keys(hash).length === 0) throw new Error('its hash is gone (removed since it was listed?)');
  let data: unknown;
  try {
    // Job.fromJSON reads a missing data field as {}.
    data = JSON.parse(hash.data ?? '{}');
  } catch (err) {
    throw new Error(`data is not valid JSON (${(err as Error).message})`);
  }
  let opts: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(hash.opts ?? '{}');
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    opts = parsed as Record<string, unknown>;
  } catch (err) {
    throw new Error(`opts is not a JSON object (${(err as Error).message})`);
  }
  const priority = wholeField(hash, 'priority') ?? (typeof opts.priority === 'number' ? opts.priority : 0);
  // As bullmq reads it (raw.attemptsMade || raw.atm): a legacy field, where there is one, first.
  const attemptsMade = wholeField(hash, 'attemptsMade') ?? wholeField(hash, 'atm') ?? 0;
  const attempts = typeof opts.attempts === 'number' && Number.isInteger(opts.attempts) && opts.attempts >= 1 ? opts.attempts : 1;
  return { name: hash.name || undefined, data, priority, attempts, attemptsMade, backoff: backoffOf(opts.backoff) };
}

/** BullMQ's backoff (a number = fixed, or { type, delay }) when delayq has the same strategy; else none. */
function backoffOf(b: unknown): BullmqJob['backoff'] {
  if (typeof b === 'number' && Number.isInteger(b) && b >= 0) return { type: 'fixed', delay: b };
  if (typeof b !== 'object' || b === null) return undefined;
  const { type, delay } = b as { type?: unknown; delay?: unknown };
  if ((type === 'fixed' || type === 'exponential') && typeof delay === 'number' && Number.isInteger(delay) && delay >= 0) return { type, delay };
  return undefined;
}

/** The connection names of the BullMQ workers of `queue` (CLIENT LIST, as Queue.getWorkers() reads it). */
export async function liveWorkers(client: Redis, prefix: string, queue: string): Promise<string[]> {
  const base = `${prefix}:${Buffer.from(queue).toString('base64')}`;
  const list = (await client.call('CLIENT', 'LIST')) as string;
  const names: string[] = [];
  for (const line of list.split('\n')) {
    const name = /(?:^| )name=(\S*)/.exec(line)?.[1];
    if (name !== undefined && (name === base || name.startsWith(`${base}:w:`))) names.push(name);
  }
  return names;
}
