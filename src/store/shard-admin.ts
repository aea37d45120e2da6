/**
 * What a Queue (and a Worker) may ask about a queue's shards, beside the Store contract: the
 * shard count it was given, the shards now, their figures, and a reshard. Declared here so that
 * Queue depends on this small interface, not on the sharding view that implements it
 * (sharded/sharded-store.ts), which stays free to change inside.
 */

export interface ShardStatus {
  /** Shards new jobs are spread over. */
  shards: number;
  /** The store queues of the current shard set, in shard order. */
  names: string[];
  /** Shards left by a reshard that still hold jobs, and how many. */
  draining: { name: string; jobs: number }[];
}

/** One store queue of a queue, and its figures now: what `queue.shardStats()` lists. */
export interface ShardFigures {
  /** Its store name: `<queue>#<i>` for a shard, the queue's own name for its unsharded keys. */
  name: string;
  /**
   * 'current': new jobs are spread over it. 'draining': an earlier reshard left it; it holds
   * jobs still and takes no new ones (the queue's own keys, after the first reshard of an
   * unsharded queue, until its jobs are gone). 'home': the queue's own keys of a sharded queue
   * (its layout, worker registry, schedules and their jobs), not a shard of the spread.
   */
  role: 'current' | 'draining' | 'home';
  /** The Redis node that holds it (`host:port`: on a cluster, the master of its slot), when known. */
  node: string | undefined;
  scheduled: number;
  ready: number;
  active: number;
  dead: number;
  completed: number;
  /** How long its longest-waiting due job has waited; undefined when none is due. */
  oldestDueAgeMs: number | undefined;
  /** Milliseconds until its earliest scheduled job is due (0: one is ready); undefined when none. */
  nextDueInMs: number | undefined;
  /**
   * Its limiter of the queue's rate limit gives no token now: all of its share taken in the
   * window (a shard takes floor(max / N) of the queue's max), or held by a RateLimitSignal. Its
   * ready jobs wait for a refill, whatever the other shards have left.
   */
  rateHeld: boolean;
}

export interface ShardAdmin {
  /** The shard count a Queue or Worker was given: used when the queue has no layout yet. */
  declare(queue: string, shards: number | undefined): void;
  /** The queue's shards now, and the old ones still draining. */
  shards(queue: string): Promise<ShardStatus>;
  /** Every store queue of the queue with its figures: how the jobs spread, what still drains, a shard that lags. */
  shardStats(queue: string): Promise<ShardFigures[]>;
  /**
   * Moves the queue to `count` shards: new adds go to the new shards at once; workers drain the
   * old ones. A count that is not a whole number from 1 to MAX_SHARDS is refused first, with a
   * ValidationError naming `shards`.
   */
  reshard(queue: string, count: number): Promise<{ from: number; to: number; changed: boolean }>;
}
