/**
 * importFromBullmq copies the jobs of a BullMQ queue into a delayq queue: delayed, waiting,
 * prioritized and (when asked) failed, with their ids, names, data, due times, attempts (and the
 * attempts made) and priorities. It reads BullMQ's keys itself (bullmq-layout.ts) and writes through Queue.addBulk,
 * so the delayq side is one idempotent add per job: run it twice, nothing doubles.
 *
 * Constraints: nothing is written before every check passed (the source answers, the queue is
 * there, no BullMQ worker is live unless forced); with `move`, a job leaves BullMQ only after
 * delayq holds it, so a run cut short is finished by running it again.
 */
import { Redis } from 'ioredis';
import { ConnectionError, DelayqError, ValidationError } from '../errors.js';
import { MAX_ATTEMPTS, MAX_PRIORITY } from '../limits.js';
import type { AddOptions } from '../options.js';
import type { BulkJob, Queue } from '../queue.js';
import { BULLMQ_STATES, type BullmqJob, type BullmqRef, type BullmqState, listRefs, liveWorkers, queueExists, readJobHash } from './bullmq-layout.js';

export type { BullmqState } from './bullmq-layout.js';

export interface BullmqImportOptions {
  /** The BullMQ queue's name. */
  queue: string;
  /** Where the BullMQ queue lives: a redis:// or rediss:// URL, or an ioredis client (left open). */
  from: string | Redis;
  /** BullMQ's key prefix. @default 'bull' */
  bullmqPrefix?: string;
  /** Import the failed jobs too (due now, with the attempts they have left, at least one, as BullMQ's job.retry() brings them back: a job that used all its attempts runs once more, as its last). @default false */
  failed?: boolean;
  /** Read and count, write nothing. @default false */
  dryRun?: boolean;
  /** Remove each job from BullMQ once delayq holds it. @default false */
  move?: boolean;
  /** Run even while BullMQ workers of the queue are connected. @default false */
  force?: boolean;
  /** Called after each chunk (500 jobs) with the jobs handled so far and the total; awaited. */
  onProgress?: (done: number, total: number) => void | Promise<void>;
  /** How long to wait for a URL's server to answer. @default 5000 */
  connectTimeoutMs?: number;
}

export interface BullmqSkippedJob {
  id: string;
  state: BullmqState;
  reason: string;
}

export interface BullmqImportReport {
  /** Jobs found per state (failed only when asked for). */
  found: Record<BullmqState, number>;
  /** Added to delayq by this run (0 on a dry run). */
  imported: number;
  /** Already in delayq with that id (an earlier run): left as they were. */
  existing: number;
  /** Removed from BullMQ (move only). */
  removed: number;
  /** Jobs that could not be read or were refused by delayq, each with why; left in BullMQ. */
  skipped: BullmqSkippedJob[];
  /**
   * How BullMQ priorities (lower first, 0 = none) became delayq's (higher first): 'negated' is
   * `-p` (none stays 0); 'ranked' is -(rank of p among the imported priorities), used when some
   * `p` is over delayq's 1,000,000. Either way the order among imported jobs is BullMQ's.
   */
  priorities: 'negated' | 'ranked';
  /** Connection names of the live BullMQ workers of the queue (the run went on only with force). */
  workers: string[];
  dryRun: boolean;
}

/** A refusal of the import: bad source, unknown queue, live workers. Nothing was written. */
export class BullmqImportError extends DelayqError {
  override name = 'BullmqImportError';
  constructor(
    message: string,
    readonly reason: 'not-found' | 'workers-live',
  ) {
    super(message);
  }
}

const CHUNK = 500;

function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix === '' || /[\s\p{Cc}*?[\]]/u.test(prefix) || prefix.endsWith(':')) {
    throw new ValidationError(
      'bullmqPrefix',
      `must be a key prefix like 'bull' (not empty, no spaces, control or glob characters, no trailing ':'; got ${JSON.stringify(prefix)})`,
    );
  }
  return prefix;
}

function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return url;
  }
}

/** A client of the URL, connected, or a ConnectionError within the timeout. */
async function connect(url: string, timeoutMs: number): Promise<Redis> {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {}
  if (!parsed || !/^rediss?:$/.test(parsed.protocol) || parsed.hostname === '') {
    throw new ValidationError('from', `must be a redis:// or rediss:// URL (got ${JSON.stringify(url)})`);
  }
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // Errors are reported by connect() and the calls; an unheard 'error' event would crash the process.
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return client;
  } catch (err) {
    client.disconnect();
    throw new ConnectionError(hostOf(url), `cannot read the BullMQ queue: ${(err as Error).message || 'connection failed'}`, { cause: err });
  }
}

/** BullMQ priority → delayq priority, keeping the order of every priority in `used`. */
function priorityMap(used: Iterable<number>): { kind: 'negated' | 'ranked'; of: (p: number) => number } {
  const distinct = [...new Set(used)].filter((p) => p > 0).sort((a, b) => a - b);
  if (distinct.length === 0 || distinct[distinct.length - 1]! <= MAX_PRIORITY) return { kind: 'negated', of: (p) => (p > 0 ? -p : 0) };
  const rank = new Map(distinct.map((p, i) => [p, i + 1]));
  return { kind: 'ranked', of: (p) => (p > 0 ? -rank.get(p)! : 0) };
}

function addOptionsOf(ref: BullmqRef, job: BullmqJob, priority: number): AddOptions {
  // The job's own attempts, and the count BullMQ made of them carried (add({ attemptsMade })), so
  // its next run is attempt attemptsMade + 1 and it runs the attempts BullMQ would still make. A
  // failed job too, as BullMQ's job.retry() brings it back: it keeps attemptsMade (unless told
  // resetAttemptsMade), so one that used all its attempts runs once more, as its last.
  const attempts = Math.min(job.attempts, MAX_ATTEMPTS);
  const made = Math.min(job.attemptsMade, attempts - 1);
  const opts: AddOptions = { id: ref.id, priority, attempts };
  if (made > 0) opts.attemptsMade = made;
  if (job.name !== undefined) opts.name = job.name;
  if (job.backoff) opts.backoff = job.backoff;
  // Delayed jobs keep their absolute due time; the others are due now (on the server's clock).
  if (ref.dueAtMs !== undefined) opts.runAt = ref.dueAtMs;
  else opts.delay = 0;
  return opts;
}

interface Read {
  ref: BullmqRef;
  job: BullmqJob;
}

async function readChunk(client: Redis, prefix: string, queue: string, refs: readonly BullmqRef[], skipped: BullmqSkippedJob[]): Promise<Read[]> {
  const pipe = client.pipeline();
  for (const r of refs) pipe.hgetall(`${prefix}:${queue}:${r.id}`);
  const replies = (await pipe.exec()) ?? [];
  const out: Read[] = [];
  refs.forEach((ref, i) => {
    const [err, hash] = replies[i] ?? [new Error('no reply'), undefined];
    try {
      if (err) throw err;
      out.push({ ref, job: readJobHash(hash as Record<string, string>) });
    } catch (e) {
      skipped.push({ id: ref.id, state: ref.state, reason: (e as Error).message });
    }
  });
  return out;
}

/**
 * addBulk validates a chunk whole; a job it refuses (a name or payload delayq does not take) is
 * reported and the rest of the chunk is added without it.
 */
async function addChunk(target: Queue<unknown>, reads: Read[], jobs: BulkJob<unknown>[], skipped: BullmqSkippedJob[]) {
  for (;;) {
    try {
      return { reads, results: jobs.length === 0 ? [] : await target.addBulk(jobs) };
    } catch (err) {
      const m = err instanceof ValidationError ? /^jobs\[(\d+)\]/.exec(err.field) : null;
      if (!m || !(err instanceof ValidationError)) throw err;
      const i = Number(m[1]);
      skipped.push({ id: reads[i]!.ref.id, state: reads[i]!.ref.state, reason: `delayq refused it: ${err.message.slice(m[0].length).replace(/^\.?/, '')}` });
      reads = reads.filter((_, j) => j !== i);
      jobs = jobs.filter((_, j) => j !== i);
    }
  }
}

/**
 * Removes imported jobs from BullMQ, each out of its list or set, and its hash and logs only when
 * it was still there: a job a forced-past BullMQ worker took meanwhile keeps its hash.
 * KEYS: per job, its state key, hash, logs; ARGV: per job, 'l' (list) or 'z' (set), then its id.
 */
const REMOVE_LUA = `
local removed = 0
for i = 1, #KEYS, 3 do
  local j = (i - 1) / 3 * 2
  local kind, id = ARGV[j + 1], ARGV[j + 2]
  local n
  if kind == 'l' then n = redis.call('LREM', KEYS[i], 0, id) else n = redis.call('ZREM', KEYS[i], id) end
  if n > 0 then
    redis.call('DEL', KEYS[i + 1], KEYS[i + 2])
    removed = removed + 1
  end
end
return removed`;

async function removeFromBullmq(client: Redis, prefix: string, queue: string, refs: readonly BullmqRef[]): Promise<number> {
  if (refs.length === 0) return 0;
  const keys = refs.flatMap((r) => [r.key, `${prefix}:${queue}:${r.id}`, `${prefix}:${queue}:${r.id}:logs`]);
  const args = refs.flatMap((r) => [r.state === 'waiting' ? 'l' : 'z', r.id]);
  return Number(await client.eval(REMOVE_LUA, keys.length, ...keys, ...args));
}

/**
 * Copies a BullMQ queue's jobs into `target` (see BullmqImportOptions). Throws ValidationError
 * for bad options, ConnectionError when the source does not answer, BullmqImportError when the
 * queue is not there or BullMQ workers are live: in each case nothing was written.
 */
export async function importFromBullmq(target: Queue<unknown>, options: BullmqImportOptions): Promise<BullmqImportReport> {
  const prefix = checkPrefix(options.bullmqPrefix ?? 'bull');
  const queue = options.queue;
  if (typeof queue !== 'string' || queue === '') throw new ValidationError('queue', `must be the BullMQ queue's name (got ${JSON.stringify(queue)})`);
  const owned = typeof options.from === 'string';
  const client = typeof options.from === 'string' ? await connect(options.from, options.connectTimeoutMs ?? 5_000) : options.from;
  try {
    if (!(await queueExists(client, prefix, queue))) {
      throw new BullmqImportError(
        `no BullMQ queue ${JSON.stringify(queue)} under prefix ${JSON.stringify(prefix)} (no ${prefix}:${queue}:* keys)`,
        'not-found',
      );
    }
    const workers = await liveWorkers(client, prefix, queue);
    if (workers.length > 0 && !options.force && !options.dryRun) {
      throw new BullmqImportError(
        `${workers.length} BullMQ worker(s) are connected to ${JSON.stringify(queue)} (${workers.join(', ')}): stop them first, or force the import`,
        'workers-live',
      );
    }
    const refs = await listRefs(client, prefix, queue, options.failed ?? false);
    const found = Object.fromEntries(BULLMQ_STATES.map((s) => [s, 0])) as Record<BullmqState, number>;
    for (const r of refs) found[r.state]++;
    const report: BullmqImportReport = {
      found,
      imported: 0,
      existing: 0,
      removed: 0,
      skipped: [],
      priorities: 'negated',
      workers,
      dryRun: options.dryRun ?? false,
    };

    // Every hash is read before the first write: the priority map needs all of them.
    const reads: Read[] = [];
    for (let i = 0; i < refs.length; i += CHUNK) reads.push(...(await readChunk(client, prefix, queue, refs.slice(i, i + CHUNK), report.skipped)));
    const map = priorityMap(reads.map((r) => r.job.priority));
    report.priorities = map.kind;
    if (report.dryRun) return report;

    let done = report.skipped.length;
    for (let i = 0; i < reads.length; i += CHUNK) {
      const chunk = reads.slice(i, i + CHUNK);
      const jobs = chunk.map(({ ref, job }) => ({ data: job.data, opts: addOptionsOf(ref, job, map.of(job.priority)) }));
      const added = await addChunk(target, chunk, jobs, report.skipped);
      for (const r of added.results) r.added ? report.imported++ : report.existing++;
      // Only what delayq now holds (added, or there from an earlier run) leaves BullMQ.
      if (options.move)
        report.removed += await removeFromBullmq(
          client,
          prefix,
          queue,
          added.reads.map((r) => r.ref),
        );
      done += chunk.length;
      await options.onProgress?.(Math.min(done, refs.length), refs.length);
    }
    return report;
  } finally {
    if (owned) client.disconnect();
  }
}
