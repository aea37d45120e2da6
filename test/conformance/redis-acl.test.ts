/**
 * The whole conformance suite (adds, claims, listings, search, bulk actions, dead set,
 * retention, events, obliterate, workers) as a Redis user made from aclRules() alone: a
 * command the library or a script needs and the list lacks fails here with NOPERM.
 */
import { aclRules } from '../../src/index.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { serverTimeMs } from '../helpers/wait.js';
import { conformance } from './suite.js';

let redis: RedisServer;
let admin: ReturnType<RedisServer['client']>;
conformance({
  name: 'redis, as the aclRules() user',
  async start() {
    redis = await startRedis();
    admin = redis.client();
    await admin.call('ACL', 'SETUSER', 'jobs', 'on', '>s3cret', ...aclRules('dq'));
  },
  stop: () => redis.stop(),
  options: () => ({ connection: `redis://jobs:s3cret@127.0.0.1:${redis.port}` }),
  now: () => serverTimeMs(admin),
});
