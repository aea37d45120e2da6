/**
 * The entry of an isolated handler's child process: serves jobs from its pool (slot-runtime.ts).
 * Its module URL is argv[2]. It exits when its parent goes, and says why before an uncaught
 * exception ends it, so the attempt fails with the reason.
 */
import { Worker as Thread } from 'node:worker_threads';
import type { ToSlot } from './messages.js';
import { toWire } from './messages.js';
import { serveSlot } from './slot-runtime.js';

process.on('disconnect', () => process.exit(0));
// A handler stuck in `while (true) {}` never sees 'disconnect': when the parent is killed (kill -9)
// this process would spin on as an orphan. A watchdog thread, which runs whatever the main thread
// does, ends it once its parent is gone (the parent pid changes when a process is orphaned).
new Thread(
  `const { workerData } = require('node:worker_threads');
setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 250);`,
  { eval: true, workerData: process.ppid },
).unref();
process.on('uncaughtException', (err) => {
  try {
    process.send?.({ type: 'crashed', error: toWire(err) }, () => process.exit(1));
  } catch {
    process.exit(1);
  }
  // The report may not get out (the channel is gone): exit all the same.
  setTimeout(() => process.exit(1), 1_000).unref();
});
serveSlot(process.argv[2]!, { send: (m) => void process.send!(m), onMessage: (fn) => process.on('message', (m) => fn(m as ToSlot)) }, 'process');
