/**
 * The whole conformance suite (adds, claims, listings, search, bulk actions, dead set,
 * retention, events, obliterate, workers) as a Redis user made from aclRules() alone: a
 * command the library or a script needs and the list lacks fails here with NOPERM.
 */
import { aclRules } from '../../src/index.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';
import { groupConformance } from './groups.js';
import { rateConformance } from './rates.js';
import { conformance, type StoreKind } from './suite.js';

const fx = useRedis();
const kind: StoreKind = {
  name: 'redis, as the aclRules() user',
  async start() {
    await fx.client.call('ACL', 'SETUSER', 'jobs', 'on', '>s3cret', ...aclRules('dq'));
  },
  async stop() {},
  options: () => ({ connection: `redis://jobs:s3cret@127.0.0.1:${fx.redis.port}` }),
  now: () => serverTimeMs(fx.client),
};
conformance(kind);
groupConformance(kind);
rateConformance(kind);
