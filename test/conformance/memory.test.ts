import { MemoryStore } from '../../src/index.js';
import { attemptsConformance } from './attempts.js';
import { groupConformance } from './groups.js';
import { jobControlConformance } from './job-control.js';
import { nameConformance } from './names.js';
import { flowConformance } from './flows.js';
import { historyConformance } from './history.js';
import { rateConformance } from './rates.js';
import { conformance, type StoreKind } from './suite.js';

let store: MemoryStore;
const kind1: StoreKind = {
  name: 'memory',
  async start() {
    store = new MemoryStore();
  },
  async stop() {},
  options: () => ({ store }),
  now: async () => Date.now(),
};
conformance(kind1);
groupConformance(kind1);
rateConformance(kind1);
nameConformance(kind1);
flowConformance(kind1);
historyConformance(kind1);
jobControlConformance(kind1);
attemptsConformance(kind1);
