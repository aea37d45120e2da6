/**
 * The least privilege a delayq process needs, as Redis ACL rules. Redis checks ACLs on the
 * commands a script runs too, so the list holds every command inside the Lua scripts as well
 * as those the client sends. Tested against a real server (test/redis/acl.test.ts).
 */

/**
 * Sent by the client: the Functions library (FCALL, and FUNCTION LOAD when a server lacks it) and
 * the scripts it falls back to (EVALSHA, EVAL), the wake subscription, the event feed, verify(), ioredis's ready
 * check, scheduleList() (HGETALL), search (HSCAN, HLEN); on a Cluster, ioredis's slot map and ready check (CLUSTER SLOTS,
 * CLUSTER INFO) and shardStats() (CLUSTER KEYSLOT); WAIT,
 * which the operations guide recommends after adds that must survive a failover.
 */
const CLIENT_COMMANDS = [
  'fcall',
  'function|load',
  'evalsha',
  'eval',
  'ping',
  'info',
  'select',
  'quit',
  'subscribe',
  'unsubscribe',
  'xread',
  'xrevrange',
  'zscan',
  'hscan',
  'hlen',
  'hgetall',
  'cluster|slots',
  'cluster|info',
  'cluster|keyslot',
  'wait',
];

/** Run inside the scripts: exactly the commands of their redis.call()s (test/unit/acl-rules.test.ts reads them). */
export const SCRIPT_COMMANDS = [
  'time',
  'publish',
  'zadd',
  'zrem',
  'zrange',
  'zrangebyscore',
  'zrangebylex',
  'zremrangebyrank',
  'zremrangebyscore',
  'zremrangebylex',
  'zunionstore',
  'zcard',
  'zcount',
  'zscore',
  'zmscore',
  'hset',
  'hsetnx',
  'hget',
  'hmget',
  'hdel',
  'hexists',
  'exists',
  'hincrby',
  'hlen',
  'hscan',
  'hgetall',
  'del',
  'unlink',
  'get',
  'set',
  'incrby',
  'persist',
  'xadd',
  'xlen',
];

/** Rules for `ACL SETUSER <name> on >password <rules…>`: only delayq's keys, channels and commands. */
export function aclRules(prefix = 'dq'): string[] {
  const commands = [...new Set([...CLIENT_COMMANDS, ...SCRIPT_COMMANDS])];
  return ['resetkeys', `~${prefix}:*`, 'resetchannels', `&${prefix}:*`, '-@all', ...commands.map((c) => `+${c}`)];
}
