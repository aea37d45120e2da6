/**
 * The least privilege a delayq process needs, as Redis ACL rules. Redis checks ACLs on the
 * commands a script runs too, so the list holds every command inside the Lua scripts as well
 * as those the client sends. Tested against a real server (test/redis/acl.test.ts).
 */

/**
 * Sent by the client: scripts, the wake subscription, the event feed, verify(), ioredis's ready
 * check, scheduleList() (HGETALL); on a Cluster, ioredis's slot map and ready check (CLUSTER SLOTS, CLUSTER INFO); WAIT,
 * which the operations guide recommends after adds that must survive a failover.
 */
const CLIENT_COMMANDS = [
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
  'hgetall',
  'cluster|slots',
  'cluster|info',
  'wait',
];

/** Run inside the scripts. */
const SCRIPT_COMMANDS = [
  'time',
  'publish',
  'zadd',
  'zrem',
  'zrange',
  'zrangebyscore',
  'zremrangebyrank',
  'zcard',
  'zcount',
  'zscore',
  'hset',
  'hget',
  'hmget',
  'hdel',
  'hexists',
  'hincrby',
  'del',
  'get',
  'set',
  'incrby',
  'zmscore',
  'xadd',
  'xlen',
];

/** Rules for `ACL SETUSER <name> on >password <rules…>`: only delayq's keys, channels and commands. */
export function aclRules(prefix = 'dq'): string[] {
  const commands = [...new Set([...CLIENT_COMMANDS, ...SCRIPT_COMMANDS])];
  return ['resetkeys', `~${prefix}:*`, 'resetchannels', `&${prefix}:*`, '-@all', ...commands.map((c) => `+${c}`)];
}
