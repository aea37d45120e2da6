/**
 * The job lifecycle both stores keep, written once: the places a job can be, the events a move
 * writes, the marks a lease token takes when its lease ends, and the per-run bounds of a store
 * call. The Redis store gets them in every script's generated prologue (wire.ts luaPrologue:
 * `PLACE`, `FINISH`, `EVENT`, `MARK`, `LIMIT`), the memory store imports them.
 *
 * To add a rule that spans every transition (a running count per group, a rate limit), go to
 * the one way into and out of `active` on each store: `enter_active` / `leave_active` in
 * `redis/scripts/_lifecycle.lua`, and `MemoryQueue.#enter` / `#leave` beside `#move` in
 * `memory/memory-queue.ts`. test/unit/lifecycle.test.ts holds every script and the memory store
 * to them.
 */

/**
 * Where a job is. `ready` and `waiting` are internal, both shown as `scheduled`: a job whose time
 * has come, moved to be ordered by priority. An ungrouped one goes to the ready set (Redis) or
 * heap (memory); a job of a group goes to its group's line in `waiting`, from which a claim takes
 * it when the group's turn comes and it has room (docs/groups.md). `held`: added with
 * dependencies that have not all ended (docs/flows.md); a public state of its own.
 */
export const PLACES = ['scheduled', 'ready', 'waiting', 'active', 'dead', 'completed', 'held'] as const;
export type Place = (typeof PLACES)[number];

/**
 * How a job's life ends: `completed` (acked; kept by the retention rule or deleted), `dead`
 * (buried in the dead set) or `cancelled` (cancelled or drained before it ran; deleted). Every
 * end goes through one seam per store — `finish` in `redis/scripts/_lifecycle.lua`,
 * `MemoryQueue.finish` in `memory/memory-queue.ts` — where the next rule that must hear of every
 * end (flows: a parent told its child finished) is written once. test/unit/lifecycle.test.ts
 * fails when a script or the memory store ends a job some other way.
 */
export const FINISHES = ['completed', 'dead', 'cancelled'] as const;
export type Finish = (typeof FINISHES)[number];

/** The event stream's entry names (docs/api.md "Events"), one per kind of move. */
export const EVENTS = [
  'added',
  'claimed',
  'completed',
  'retried',
  'dead',
  'leaseExpired',
  'released',
  'snoozed',
  'rescheduled',
  'cancelled',
  'drained',
  'purged',
  'deadRetried',
  'paused',
  'resumed',
] as const;
export type EventName = (typeof EVENTS)[number];

/**
 * What a lease token becomes in the job's run state when its lease ends without the job being
 * deleted, so a re-sent call (ioredis re-sends after a reconnect) can tell its own earlier run
 * from a stale holder's:
 * - `given_up`: its holder ended the attempt (fail, snooze, release); a re-send of that call
 *   finds the mark and answers as the first run did.
 * - `recovered`: a claim took the lease back after it ran out; every later call with the token
 *   is stale (lease lost).
 * - `kept`: completed and kept by retention; a re-sent ack answers ok.
 * - `revoked`: the attempt was ended from outside its holder (`Queue.fail`, or a cancel of a
 *   running job, which deletes the job and remembers it in `revoked` a while); every later call
 *   with the token is stale (lease lost).
 */
export const MARK = { given_up: '-', recovered: '~', kept: '+', revoked: '!' } as const;
export type Mark = (typeof MARK)[keyof typeof MARK];

/**
 * Whether `token` could be a lease token at all: not empty, and not starting with a MARK (a token
 * the store keeps once a lease ended). Without this a caller that sent the marked form of its
 * token (`-<token>` once it gave the job up) passed for the holder and ended a job it did not
 * hold. The memory store asks it before comparing; Redis's twin is `live_token` in _lifecycle.lua.
 */
export function mayHoldLease(token: string): boolean {
  return token !== '' && !MARK_FIRSTS.has(token[0]!);
}
const MARK_FIRSTS: ReadonlySet<string> = new Set(Object.values(MARK));

/**
 * Bounds on one store call's run, so no script holds Redis for long whatever the queue holds
 * (both stores keep them, so they behave alike).
 */
export const LIMIT = {
  /** Due jobs moved into the ready set per claim. */
  promote_per_claim: 1000,
  /** Expired leases recovered per claim. */
  reap_per_claim: 100,
  /** Ids per run of cancel, get, dead retry and purge by ids. */
  ids_per_run: 1000,
  /** Dead jobs retried or purged, and scheduled jobs drained, per run. */
  jobs_per_sweep: 1000,
  /** Least dead or completed jobs a retention trim may remove per run (more when the run added more). */
  trim_per_run: 100,
  /** Groups a limit change looks at per run, to put those it gave room back in the rotation. */
  groups_per_sweep: 1000,
  /** Groups a claim looks at again per run when their tokens come back or their hold ends (rate-wake). */
  rate_visits: 100,
  /** How long past its lease deadline a job cancelled as it ran is remembered (`revoked`), so its holder's calls answer lease lost (ms). */
  revoked_keep_ms: 600_000,
  /** Minutes the queue's per-minute history keeps (24 h): its fields (Redis) or slots (memory) are a minute's number modulo this. */
  history_minutes: 1440,
  /** Bytes of one signal's data (queue.signal), as JSON text. */
  signal_data_bytes: 16_384,
  /** Bytes of the signals kept for one job that was not waiting for them (the JSON object of them). */
  signals_kept_bytes: 65_536,
} as const;

/**
 * The member of the rotation (Redis: the `lanes` ZSET; memory: MemoryQueue.lanes) that stands
 * for the queue's jobs of no group: they take their turn as one lane among the groups. No group
 * id can be empty, so it is never a group's.
 */
export const UNGROUPED_LANE = '';
