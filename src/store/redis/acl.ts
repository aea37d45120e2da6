/**
 * The least privilege a delayq process needs, as Redis ACL rules. Redis checks ACLs on the
 * commands a script runs too, so the list holds every command inside the Lua scripts as well
 * as those the client sends. Tested against a real server (test/redis/acl.test.ts).
 */

/**
 * Sent by the client: the Functions library (FCALL, and FUNCTION LOAD when a server lacks it) and
 * the scripts it falls back to (EVALSHA, EVAL), the wake subscription, the event feed, verify(), ioredis's ready
 * check, scheduleList() (HGETALL), search (HSCAN, HLEN, HEXISTS); on a Cluster, ioredis's slot map and ready check (CLUSTER SLOTS,
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
  'hexists',
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

/**
 * The whole `ACL SETUSER` command for a delayq user, ready to paste into redis-cli (or to send
 * word by word with `client.call('ACL', ...line.split(' ').slice(1))`): `aclRules` with the
 * user, `on` and its password. A password with a space cannot go on one line: refused.
 * @example aclSetUserLine('delayq', process.env.DQ_PASSWORD) // "ACL SETUSER delayq on >… resetkeys ~dq:* …"
 */
export function aclSetUserLine(user: string, password: string, prefix = 'dq'): string {
  if (!/^[^\s]+$/.test(user)) throw new TypeError('user must be one word (no spaces)');
  if (!/^[^\s]+$/.test(password)) throw new TypeError('password must be one word (no spaces): send the rules with ACL SETUSER word by word instead');
  return ['ACL', 'SETUSER', user, 'on', `>${password}`, ...aclRules(prefix)].join(' ');
}
