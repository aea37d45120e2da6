/**
 * Terminology
 *
 * - job: one unit of work, with an id, a JSON payload (`data`) and a due time.
 * - due time (`dueAtMs`): when the job may run, in epoch milliseconds of the Redis server's clock.
 * - scheduled: waiting to run: not due yet ("upcoming"), or due and not running yet ("ready", also
 *   said "due"). The words mean the same in stats(), the CLI, the dashboard and /metrics.
 * - active: handed to a worker under a lease; the worker must ack, nack or extend before
 *   the lease deadline, or the job is handed out again.
 * - lease token: a fresh string per hand-out. Every ack/nack/extend carries it; a stale token
 *   is refused ("lease lost"), which fences off a worker that stalled and woke up late.
 * - dead: out of attempts (or failed with UnrecoverableError, or its stored data is corrupt).
 *   Kept with its last error until a person retries or purges it (or the dead set's retention
 *   rule drops it).
 * - completed: acked. Deleted at once, unless the queue's retention rule for completed jobs
 *   keeps it (with its result) for a while.
 * - attempt: how many times the job has been handed out, counting the current hand-out.
 */

/** The states a job can be in. Each is a sorted set in Redis named after the state. */
export type JobState = 'scheduled' | 'active' | 'dead' | 'completed' | 'held';

/**
 * What a listing can ask for: 'scheduled' = the upcoming jobs, not due yet (the name kept from
 * before the words were settled); 'ready' = due and not running yet (both have the public state
 * 'scheduled'); the others as in JobState.
 */
export type ListState = 'scheduled' | 'ready' | 'active' | 'dead' | 'completed';
export const LIST_STATES: readonly ListState[] = ['scheduled', 'ready', 'active', 'dead', 'completed'];
/** Which way a listing goes: its state's order (`asc`, oldest or soonest first) or the reverse (`desc`, newest or latest first). */
export type ListOrder = 'asc' | 'desc';
export const LIST_ORDERS: readonly ListOrder[] = ['asc', 'desc'];

/** What `Queue.get` returns. */
export interface JobInfo<T = unknown> {
  id: string;
  state: JobState;
  data: T;
  /** When the job is (or was last) due, server clock, epoch ms. */
  dueAtMs: number;
  /** The group it belongs to (`add({ group })`), if any. */
  group: string | undefined;
  /** Its name (`add({ name })`), if any: what a Worker with handlers by name routes by. */
  name: string | undefined;
  /** True when the job is scheduled and its due time has passed (waiting for a worker). */
  ready: boolean;
  priority: number;
  /** Hand-outs so far, the current one included. */
  attempt: number;
  /**
   * The job's own attempt limit, or undefined when the worker's default applies. A dead job that
   * ran out of attempts shows the limit it ran out of: the worker's default when it had none.
   */
  maxAttempts: number | undefined;
  /** The job's own timeout per attempt (`add({ timeoutMs })`), or undefined when the worker's applies. */
  timeoutMs: number | undefined;
  createdAtMs: number;
  /** Lease deadline while active. */
  leaseExpiresAtMs: number | undefined;
  lastError: string | undefined;
  /**
   * When the job was first handed out (server clock), once it ran; a retry from the dead set
   * clears it, so for a dead job `finishedAtMs − startedAtMs` is its last run since it was put back.
   */
  startedAtMs: number | undefined;
  /** While active: when this attempt began (server clock), so how long it has run is `now − runningSinceMs`. */
  runningSinceMs: number | undefined;
  /** When it completed (kept completed jobs) or died (dead jobs). */
  finishedAtMs: number | undefined;
  /** The worker holding its lease (active), or the last one that did. */
  workerId: string | undefined;
  /** A kept completed job's result: what its handler returned, as JSON. */
  result: unknown;
  /** The last value its handler gave job.progress(), if any. */
  progress: unknown;
  /** Its log lines (job.log), oldest first; in `get` only (listings leave them out). */
  logs: string[] | undefined;
  /**
   * Its last failed attempts (at most ERROR_HISTORY_LENGTH = 10), oldest first; in `get` only
   * (listings leave them out), undefined when it never failed. A lease that ran out is not an
   * entry (only `lastError` says so), nor is a snooze past its deadline.
   */
  errors: JobError[] | undefined;
}

/** One failed attempt of a job, as `JobInfo.errors` lists it. */
export interface JobError {
  /** The attempt that failed (attempts start again at 1 after a dead-set retry). */
  attempt: number;
  /** When it failed, server clock, epoch ms. */
  atMs: number;
  /** The error text as the worker sent it (message and stack, bounded by maxErrorLength). */
  error: string;
}

/**
 * How many scheduled jobs fall due in each window of a timeline (`Queue.timeline`): bucket i
 * counts the jobs due in [fromMs + i·bucketMs, fromMs + (i+1)·bucketMs) and after nowMs.
 */
export interface DueTimeline {
  /** The server's clock when the counts were taken. */
  nowMs: number;
  fromMs: number;
  bucketMs: number;
  counts: number[];
}

/** A page of a listing. */
export interface JobPage<T = unknown> {
  state: ListState;
  jobs: JobInfo<T>[];
  /** Jobs in that state now. */
  total: number;
  /** Pass it back for the next page; undefined when this page is the last. */
  cursor: string | undefined;
  /** A filtered listing (by name; the dashboard's by last error): the jobs this call read. */
  scanned?: number;
}

/** A worker of a queue, as its last heartbeat described it. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  queue: string;
  concurrency: number;
  /** Jobs it was running at its last heartbeat. */
  running: number;
  startedAtMs: number;
  lastSeenAtMs: number;
  /** Its entry expires then unless it beats again (a worker that died drops out by itself). */
  expiresAtMs: number;
  /** Its client's version (the delayq package's, for a Node worker). */
  version: string;
  /** Its client's language: 'node', or what a protocol client says ('python'); '' when it said none. */
  language: string;
}

/** How long a queue keeps finished jobs: at most `count` of them, none older than `ageMs`. */
export interface RetentionRule {
  count: number | undefined;
  ageMs: number | undefined;
}

/** A job's hold (Queue.holdOf): what it waits for and how it stands (docs/flows.md). */
export interface HoldInfo {
  /** held: waiting; released: what it waited for happened; timedOut: its deadline came first; failed: buried for a failed dependency. */
  state: 'held' | 'released' | 'timedOut' | 'failed';
  /** The dependencies that have not ended, in the order given. */
  waitingFor: string[];
  /** The signal it waits (or waited) for, if any. */
  signal: string | undefined;
  /** When it runs anyway, while held with a deadline (server clock, epoch ms). */
  deadlineAtMs: number | undefined;
  onChildFailure: 'fail' | 'ignore';
  /** Each dependency, in the order given, and how it ended. */
  children: { id: string; outcome: 'completed' | 'dead' | 'cancelled' | 'pending'; result?: string; reason?: string }[];
}

export interface AddResult {
  id: string;
  /**
   * False when a job with this id already existed and `replace` was not asked for, or when
   * the add was deduplicated.
   */
  added: boolean;
  /** True when an existing job was replaced. */
  replaced: boolean;
  /** The id of the job that holds the dedup key, when this add was deduplicated. */
  duplicateOf?: string;
  /**
   * True when the add joined a pending burst of its debounce key: the burst's job (`id`) took this
   * add's data and options, and its due time moved to `dueAtMs`.
   */
  debounced?: boolean;
  /**
   * The state the job is in after the call. For a deduplicated add, the state of the job that
   * holds the key, or 'finished' when that job has since completed or been removed; for a job of a
   * flow added again while its root is there, 'finished' when it ran and is gone (then `dueAtMs`
   * is 0).
   */
  state: JobState | 'finished';
  /** The job's due time, server clock, epoch ms (the existing job's when not added). */
  dueAtMs: number;
}

export interface CancelResult {
  id: string;
  cancelled: boolean;
  /**
   * The job's state: the one it was cancelled in (`scheduled`, or `active` with `running`), or
   * the one that stopped the cancel; undefined when there is no such job.
   */
  state: JobState | undefined;
}

/** What `queue.fail` did. */
export interface FailNowResult {
  id: string;
  /** retried (back to scheduled, due at dueAtMs), dead, refused (see state) or not_found. */
  outcome: 'retried' | 'dead' | 'refused' | 'not_found';
  /** The job's state before the call; undefined when there is no such job. */
  state: JobState | undefined;
  /** When the retry is due. */
  dueAtMs: number | undefined;
}

export interface RescheduleResult {
  id: string;
  rescheduled: boolean;
  state: JobState | undefined;
  dueAtMs: number | undefined;
}

/**
 * One minute of a queue's history (`queue.history()`), kept in the store for 24 hours by the calls
 * workers make anyway, so charts and the CLI do not start empty when a dashboard restarts.
 */
export interface HistoryMinute {
  /** Start of the minute, epoch ms (server clock). */
  atMs: number;
  /** Jobs completed in it. */
  completed: number;
  /** Failed attempts in it, retried or not (a job that fails three times counts three). */
  failed: number;
  /** Jobs that ended dead in it: out of attempts, failed for good, corrupt, or their last lease lost. */
  dead: number;
  /** Jobs handed to a worker in it (first runs and retries). */
  started: number;
  /** How late after their due time those jobs started, on average and at most (ms); undefined when none started. */
  lateMeanMs: number | undefined;
  lateMaxMs: number | undefined;
}

export interface QueueStats {
  /** Jobs waiting to run, due or not: ready + upcoming (upcoming = scheduled − ready: not due yet). */
  scheduled: number;
  /** Scheduled jobs whose due time has passed ("due"), not running yet. */
  ready: number;
  active: number;
  dead: number;
  /** Milliseconds until the earliest scheduled job is due; 0 when one is ready; undefined when none. */
  nextDueInMs: number | undefined;
  /** Scheduled jobs due within `windowMs` from now (ready ones included). */
  dueWithinWindow: number;
  windowMs: number;
  /** The server's clock when the figures were taken. */
  nowMs: number;
  /** True while the queue is paused: workers claim nothing. */
  paused: boolean;
  /** Entries in the event stream, or undefined when the stream is off. */
  eventStreamLength: number | undefined;
  /** Jobs completed on this queue since it was created (a running total, for throughput). */
  completedTotal: number;
  /** How long the longest-waiting due job has waited (the queue's current lag); undefined when none is due. */
  oldestDueAgeMs: number | undefined;
  /** Completed jobs kept by the retention rule. */
  completed: number;
  /** Workers whose heartbeat is live. 0 while jobs are due means nobody is taking them. */
  workers: number;
  /** What holds due jobs back now (each figure on the server's clock). */
  held: HeldSummary;
  /** Jobs in state 'held': added with dependencies that have not all ended (docs/flows.md). */
  heldJobs: number;
}

/**
 * Why due jobs of a queue are not running: what stats() sees holding them, read without walking
 * every group (the group figures sum at most the first 200 group states a read meets:
 * `groupsComplete` says whether that was all). `describeHeld()` turns it into one line.
 */
export interface HeldSummary {
  /** The queue is paused: workers claim nothing. */
  queuePaused: boolean;
  /** The queue runs as many jobs as its concurrency limit allows while jobs are due. */
  queueAtLimit: boolean;
  /** Groups paused with due jobs in their lines, and those jobs. */
  pausedGroups: number;
  pausedGroupsWaiting: number;
  /** Groups not paused running as many jobs as their limit allows, and the due jobs behind them. */
  groupsAtLimit: number;
  groupsAtLimitWaiting: number;
  /** False when the queue has more group states than one read sums: the group figures are a floor. */
  groupsComplete: boolean;
  /** The queue's rate limiter gives no token until then (a RateLimitSignal's hold, or its window full); undefined when it gives tokens now. */
  rateLimitedUntilMs: number | undefined;
  /**
   * Groups the rate limiter looks at again later (rateStatus().groupsHeld): held back by their
   * rate limit or a RateLimitSignal, or only with tokens still to give back. An upper bound of the
   * groups held, so the one-line summary leaves it out.
   */
  rateLimitedGroups: number;
}
