import { useRedis } from '../helpers/redis-fixture.js';
import { serverTimeMs } from '../helpers/wait.js';
import { attemptsConformance } from './attempts.js';
import { groupConformance } from './groups.js';
import { jobControlConformance } from './job-control.js';
import { nameConformance } from './names.js';
import { flowConformance } from './flows.js';
import { historyConformance } from './history.js';
import { rateConformance } from './rates.js';
import { conformance, type StoreKind } from './suite.js';

const fx = useRedis();
const kind1: StoreKind = {
  name: 'redis',
  // The file's server (useRedis) is up before the suite and stopped after it.
  async start() {},
  async stop() {},
  options: () => ({ connection: fx.redis.url }),
  now: () => serverTimeMs(fx.client),
};
conformance(kind1);
groupConformance(kind1);
rateConformance(kind1);
nameConformance(kind1);
flowConformance(kind1);
historyConformance(kind1);
jobControlConformance(kind1);
attemptsConformance(kind1);
