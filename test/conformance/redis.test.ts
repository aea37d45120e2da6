import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';
import { conformance } from './suite.js';

const fx = useRedis();
conformance({
  name: 'redis',
  // The file's server (useRedis) is up before the suite and stopped after it.
  async start() {},
  async stop() {},
  options: () => ({ connection: fx.redis.url }),
  now: () => serverTimeMs(fx.client),
});
