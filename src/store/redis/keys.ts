/**
 * The only place a Redis key or channel name is built. Every key of one queue shares the hash
 * tag `{<queue>}`, so each script touches a single Redis Cluster slot.
 *
 *   <prefix>:{<queue>}:scheduled   ZSET  due ms          -> job id
 *   <prefix>:{<queue>}:ready       ZSET  -priority       -> due|seq|id (due, waiting for a worker)
 *   <prefix>:{<queue>}:active      ZSET  lease deadline  -> job id
 *   <prefix>:{<queue>}:dead        ZSET  time of death   -> job id
 *   <prefix>:{<queue>}:seq         STRING counter (FIFO order, lease tokens)
 *   <prefix>:{<queue>}:job:<id>    HASH  the job body
 *   <prefix>:{<queue>}:meta        HASH  paused ('1' while paused), events (the stream's MAXLEN)
 *   <prefix>:{<queue>}:events      STREAM what happened (opt-in, capped)
 *   <prefix>:{<queue>}:dedup:<key> STRING '<due ms>:<job id>' of the add holding a dedup key, expiring with its window
 *   <prefix>:{<queue>}:schedules   HASH  schedule name -> definition JSON
 *   <prefix>:{<queue>}:schedule-last HASH schedule name -> last enqueued occurrence ms
 *   <prefix>:{<queue>}:req:<request id> STRING a non-idempotent call's answer, expiring (see _helpers.lua)
 *   <prefix>:{<queue>}:wake        pub/sub channel: "the earliest due time moved earlier" (a due
 *                                  time in ms), or 's': "a schedule was stored or removed"
 * The scripts build meta, events and dedup keys from the job key prefix (see _helpers.lua).
 */

export interface QueueKeys {
  readonly scheduled: string;
  readonly ready: string;
  readonly active: string;
  readonly dead: string;
  readonly seq: string;
  readonly jobPrefix: string;
  readonly requestPrefix: string;
  readonly wake: string;
  readonly meta: string;
  readonly events: string;
  readonly schedules: string;
  readonly scheduleLast: string;
  /** KEYS[1..5] of every script, in the order the Lua headers give. */
  readonly base: readonly string[];
  /** ARGV[1..2] of every script. */
  readonly baseArgs: readonly string[];
}

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const root = `${prefix}:{${queue}}:`;
  const scheduled = `${root}scheduled`;
  const ready = `${root}ready`;
  const active = `${root}active`;
  const dead = `${root}dead`;
  const seq = `${root}seq`;
  const jobPrefix = `${root}job:`;
  const wake = `${root}wake`;
  return {
    meta: `${root}meta`,
    events: `${root}events`,
    schedules: `${root}schedules`,
    scheduleLast: `${root}schedule-last`,
    scheduled,
    ready,
    active,
    dead,
    seq,
    jobPrefix,
    requestPrefix: `${root}req:`,
    wake,
    base: [scheduled, ready, active, dead, seq],
    baseArgs: [jobPrefix, wake],
  };
}

export function jobKey(keys: QueueKeys, id: string): string {
  return keys.jobPrefix + id;
}

/** Where a script remembers the answer to the call with this request id. */
export function requestKey(keys: QueueKeys, requestId: string): string {
  return keys.requestPrefix + requestId;
}
