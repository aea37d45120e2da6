import { MemoryStore } from '../../src/index.js';
import { conformance } from './suite.js';

let store: MemoryStore;
conformance({
  name: 'memory',
  async start() {
    store = new MemoryStore();
  },
  async stop() {},
  options: () => ({ store }),
  now: async () => Date.now(),
});
