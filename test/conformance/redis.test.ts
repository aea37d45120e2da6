import { conformance } from './suite.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { serverTimeMs } from '../helpers/wait.js';

let redis: RedisServer;
let client: ReturnType<RedisServer['client']>;
conformance({
  name: 'redis',
  async start() {
    redis = await startRedis();
    client = redis.client();
  },
  stop: () => redis.stop(),
  options: () => ({ connection: redis.url }),
  now: () => serverTimeMs(client),
});
