/**
 * What the memory store reads without changing anything: listings, scans, counts, the dead set,
 * the consistency check and the event reader, each the twin of a read-only Lua script.
 */
import { handedOutAtMs } from '../lease-token.js';
import type { DueTimeline, HeldSummary, JobInfo, JobState, ListOrder, ListState, QueueStats } from '../../types.js';
import { NOTHING_HELD, rateLimitedUntil } from '../held.js';
import type { DeadJob, EventReader, ListCursor, ScanStep, StoredPage, VerifyReport } from '../store.js';
import { MARK } from '../lifecycle.js';
import { timerDelay } from '../../timers.js';
import { byteOrder, readyMember, scheduledMember, waitingMember } from '../zset-order.js';
import { pageAfter } from './listing.js';
import type { MemJob, MemoryQueue } from './memory-queue.js';

/** A page of one state's jobs in listing order (as list.lua): sorted per call, O(n log n) in that state's jobs. */
export function listPage(q: MemoryQueue, now: number, state: ListState, cursor: ListCursor | undefined, limit: number, order: ListOrder): StoredPage {
  // Sorted per call: O(n log n) in the jobs of that state (the Redis store is O(log n + limit)).
  type Entry = { phase: string; score: number; member: string; job: MemJob };
  const phases: { name: string; entries: Entry[] }[] = [];
  // A phase is one place's jobs in the order of its set: by score, then member bytes (as Redis).
  const of = (where: MemJob['where'], score: (j: MemJob) => number, member: (j: MemJob) => string, keep = (_j: MemJob) => true) => {
    const out: Entry[] = [];
    for (const j of q.jobs.values()) if (j.where === where && keep(j)) out.push({ phase: where, score: score(j), member: member(j), job: j });
    return { name: where, entries: out.sort((a, b) => a.score - b.score || byteOrder(a.member, b.member)) };
  };
  const byId = (j: MemJob) => j.id;
  // As the Redis store's scheduled members: due time, then add order.
  const scheduledWhere = (keep: (j: MemJob) => boolean) =>
    of(
      'scheduled',
      (j) => j.due,
      (j) => scheduledMember(j.seq, j.id),
      keep,
    );
  // A cursor that names a scheduled job by its id (a sharded listing knows its jobs by id): that
  // job's member, as list.lua takes it.
  if (cursor?.phase === 'scheduled' && cursor.member.charCodeAt(0) !== 1) {
    const job = q.jobs.get(cursor.member);
    if (job) cursor = { ...cursor, member: scheduledMember(job.seq, job.id) };
  }
  if (state === 'scheduled') phases.push(scheduledWhere((j) => j.due > now));
  else if (state === 'ready')
    phases.push(
      of(
        'ready',
        (j) => -j.priority,
        (j) => readyMember(j.due, j.seq, j.id),
      ),
      of(
        'waiting',
        () => 0,
        (j) => waitingMember(j.group!, j.priority, j.due, j.seq, j.id),
      ),
      scheduledWhere((j) => j.due <= now),
    );
  else if (state === 'active') phases.push(of('active', (j) => j.leaseDeadline, byId));
  else phases.push(of(state, (j) => j.diedAt, byId));
  const total = phases.reduce((n, p) => n + p.entries.length, 0);
  const { page, next } = pageAfter(phases, cursor, limit, order);
  return {
    nowMs: now,
    total,
    jobs: page.map((e) => jobInfo(e.job, now, false)),
    next: next && { phase: next.phase, score: String(next.score), member: next.member },
  };
}

/** One step of a scan of every job (as HSCAN over the jobs hash). */
export function scanStep(q: MemoryQueue, cursor: string, count: number, until?: string): ScanStep {
  // The cursor is the add sequence number of the last job returned: the map holds jobs in
  // that order, so a job removed in between shifts nothing (a position would, and skip one),
  // and, as with HSCAN, a job there from start to end is returned. With `until`, the step
  // returns the jobs up to that number: at most the `count` it returned before (a job added
  // since has a higher number), so a cursor made up to lead far ahead stops at `count` too.
  const from = Number(cursor) || 0;
  const to = until === undefined ? undefined : Number(until) || Infinity;
  const entries: ScanStep['entries'] = [];
  let last = from;
  let more = false;
  let short = false;
  for (const job of q.jobs.values()) {
    if (job.seq <= from) continue;
    if (to !== undefined && job.seq > to) {
      more = true;
      break;
    }
    if (entries.length >= count) {
      more = true;
      short = to !== undefined;
      break;
    }
    entries.push({ id: job.id, data: job.data, name: job.name });
    last = job.seq;
  }
  if (until !== undefined && !short) return { cursor: until, total: q.jobs.size, entries };
  return { cursor: more ? String(last) : '0', total: q.jobs.size, entries };
}

/** The queue's counts (as stats.lua): O(n) in its jobs. */
export function queueStats(q: MemoryQueue, now: number, windowMs: number): QueueStats {
  let scheduled = 0;
  let ready = 0;
  let active = 0;
  let dead = 0;
  let within = 0;
  let oldestDue = Infinity;
  for (const job of q.jobs.values()) {
    if (job.where === 'active') active++;
    else if (job.where === 'dead') dead++;
    else if (job.where === 'completed' || job.where === 'held') continue;
    else {
      scheduled++;
      if (job.where === 'ready' || job.where === 'waiting' || job.due <= now) {
        ready++;
        // Every due job, whatever holds it (a paused queue or group, a full group, a rate limit).
        oldestDue = Math.min(oldestDue, job.due);
      }
      if (job.where === 'ready' || job.due <= now + windowMs) within++;
    }
  }
  const head = q.headDue();
  return {
    scheduled,
    ready,
    active,
    dead,
    nextDueInMs: ready > 0 ? 0 : head === undefined ? undefined : Math.max(0, head - now),
    dueWithinWindow: within,
    windowMs,
    nowMs: now,
    paused: q.paused,
    eventStreamLength: q.eventsMax > 0 ? q.events.length : undefined,
    completedTotal: q.completed,
    oldestDueAgeMs: ready === 0 ? undefined : Math.max(0, now - oldestDue),
    completed: q.completedKept.size,
    workers: [...q.workers.values()].filter((w) => w.expiresAt > now).length,
    heldJobs: q.heldCount(),
    held: heldSummary(q, now, ready, active),
  };
}

/** What holds due jobs (as stats.lua, which sums at most the first 200 group states; here all). */
function heldSummary(q: MemoryQueue, now: number, due: number, active: number): HeldSummary {
  const h = { ...NOTHING_HELD, queuePaused: q.paused, queueAtLimit: q.concurrency !== undefined && due > 0 && active >= q.concurrency };
  for (const g of q.groups.values()) {
    if (g.paused) {
      // As stats.lua: a paused group holds something only with jobs in its line.
      if (g.waiting > 0) h.pausedGroups++;
      h.pausedGroupsWaiting += g.waiting;
    } else if (g.waiting > 0 && q.groupRoom(g) <= 0) {
      h.groupsAtLimit++;
      h.groupsAtLimitWaiting += g.waiting;
    }
  }
  const until = q.rated ? rateLimitedUntil(q.rates.peek('', now), q.rateLimit?.max) : undefined;
  h.rateLimitedUntilMs = until !== undefined && until > now ? until : undefined;
  h.rateLimitedGroups = q.rates.wake.size;
  return h;
}

/** Scheduled jobs not yet due, counted per bucket (as timeline.lua). */
export function dueTimeline(q: MemoryQueue, now: number, fromMs: number | undefined, bucketMs: number, buckets: number): DueTimeline {
  const from = fromMs ?? now;
  const counts = new Array<number>(buckets).fill(0);
  // As timeline.lua: scheduled jobs not yet due, by due time; O(n) here, like stats().
  for (const job of q.jobs.values()) {
    if (job.where !== 'scheduled' || job.due <= now || job.due < from) continue;
    const i = Math.floor((job.due - from) / bucketMs);
    if (i < buckets) counts[i]!++;
  }
  return { nowMs: now, fromMs: from, bucketMs, counts };
}

/** A page of the dead set in death order (as dead-list.lua). */
export function deadPage(q: MemoryQueue, offset: number, limit: number): { total: number; jobs: DeadJob[] } {
  const dead = q.deadInOrder();
  const page = limit <= 0 ? [] : dead.slice(offset, offset + limit);
  return {
    total: dead.length,
    jobs: page.map((j) => ({
      id: j.id,
      diedAtMs: j.diedAt,
      data: j.data,
      attempt: j.attempts,
      maxAttempts: j.spentMaxAttempts ?? j.maxAttempts,
      lastError: j.lastError,
      name: j.name,
      dueAtMs: j.due,
      createdAtMs: j.created,
    })),
  };
}

/** The queue's own consistency check (verify.ts is Redis's). */
export function verifyMemoryQueue(q: MemoryQueue): VerifyReport {
  const problems: string[] = [];
  const counts = { scheduled: 0, ready: 0, waiting: 0, active: 0, dead: 0, completed: 0, held: 0, bodies: q.jobs.size };
  const groups = new Map<string, { running: number; waiting: number }>();
  for (const job of q.jobs.values()) {
    counts[job.where]++;
    if (job.group !== undefined && (job.where === 'active' || job.where === 'waiting')) {
      const g = groups.get(job.group) ?? { running: 0, waiting: 0 };
      if (job.where === 'active') g.running++;
      else g.waiting++;
      groups.set(job.group, g);
    }
    if (job.where === 'active' && (!job.token || job.token.startsWith(MARK.given_up))) problems.push(`job ${job.id} is active without a live lease token`);
    if (job.where === 'dead' && !q.dead.has(job.id)) problems.push(`job ${job.id} is dead but not in the dead list`);
  }
  for (const id of q.dead.keys()) if (q.jobs.get(id)?.where !== 'dead') problems.push(`job ${id} is in the dead list but not dead`);
  // As redis/verify.ts: a debounce key names its burst's job only while that job waits with the key.
  for (const [key, b] of q.debounce) {
    const job = q.jobs.get(b.id);
    const waits = job !== undefined && (job.where === 'scheduled' || job.where === 'ready' || job.where === 'waiting');
    if (!waits || job.debounceKey !== key)
      problems.push(`debounce key ${JSON.stringify(key)} names job ${b.id}, which ${waits ? 'does not carry it' : 'does not wait'}: stale`);
  }
  // Every group's counts are what its jobs are: no slot leaked, none counted twice.
  for (const id of new Set([...groups.keys(), ...q.groups.keys()])) {
    const want = groups.get(id) ?? { running: 0, waiting: 0 };
    const g = q.groups.get(id);
    if ((g?.running ?? 0) !== want.running) problems.push(`group ${id} counts ${g?.running ?? 0} running, but ${want.running} of its jobs are active`);
    if ((g?.waiting ?? 0) !== want.waiting) problems.push(`group ${id} counts ${g?.waiting ?? 0} waiting, but ${want.waiting} of its jobs are in its line`);
  }
  problems.push(...q.holds.problems(q.jobs));
  return { ok: problems.length === 0, counts, problems };
}

/** A reader of the queue's event list that waits for new events as XREAD BLOCK does. */
export function memoryEventReader(q: MemoryQueue): EventReader {
  let closed = false;
  let wakeReader: (() => void) | undefined;
  return {
    lastCursor: async () => q.events.at(-1)?.cursor ?? '0-0',
    read: async (cursor, count, blockMs) => {
      const after = cursor === '$' ? (q.events.at(-1)?.cursor ?? '0-0') : cursor;
      let found = q.eventsAfter(after, count);
      if (found.length > 0 || closed || blockMs <= 0) return found;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timerDelay(blockMs));
        function done() {
          clearTimeout(timer);
          q.eventWaiters.delete(done);
          wakeReader = undefined;
          resolve();
        }
        wakeReader = done;
        q.eventWaiters.add(done);
      });
      if (closed) throw new Error('event reader closed');
      found = q.eventsAfter(after, count);
      return found;
    },
    close: async () => {
      closed = true;
      wakeReader?.();
    },
  };
}

/** A job as get and listings show it (raw text in data, result and progress, as the Redis store gives). */
export function jobInfo(job: MemJob, now: number, withLogs: boolean): JobInfo<string> {
  return {
    id: job.id,
    state: publicState(job),
    data: job.data,
    dueAtMs: job.due,
    group: job.group,
    name: job.name,
    ready: job.where === 'ready' || job.where === 'waiting' || (job.where === 'scheduled' && job.due <= now),
    priority: job.priority,
    attempt: job.attempts,
    // A job that ran out of attempts: the max that applied (the worker's default when it had none).
    maxAttempts: job.spentMaxAttempts ?? job.maxAttempts,
    timeoutMs: job.timeoutMs,
    createdAtMs: job.created,
    leaseExpiresAtMs: job.where === 'active' ? job.leaseDeadline : undefined,
    lastError: job.lastError,
    startedAtMs: job.startedAt,
    runningSinceMs: job.where === 'active' ? handedOutAtMs(job.token) : undefined,
    finishedAtMs: job.where === 'dead' || job.where === 'completed' ? job.diedAt : undefined,
    workerId: job.workerId || undefined,
    result: job.result,
    progress: job.progress,
    logs: withLogs ? job.logs && [...job.logs] : undefined,
    // Copies (logs too): the caller may change what it got without changing the stored history.
    errors: withLogs ? job.errors?.map((e) => ({ ...e })) : undefined,
  };
}

export function publicState(job: MemJob): JobState {
  return job.where === 'ready' || job.where === 'waiting' ? 'scheduled' : job.where;
}
