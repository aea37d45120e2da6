/** The entry of an isolated handler's worker thread: serves jobs from its pool (slot-runtime.ts). */
import { parentPort, workerData } from 'node:worker_threads';
import type { ToSlot } from './messages.js';
import { serveSlot } from './slot-runtime.js';

const port = parentPort!;
serveSlot(
  (workerData as { moduleUrl: string }).moduleUrl,
  { send: (m) => port.postMessage(m), onMessage: (fn) => port.on('message', (m: ToSlot) => fn(m)) },
  'thread',
);
