/**
 * The entry of an isolated handler's child process: serves jobs from its pool (slot-runtime.ts).
 * Its module URL is argv[2]. It exits when its parent goes (the IPC channel closes), and says
 * why before an uncaught exception ends it, so the attempt fails with the reason.
 */
import type { ToSlot } from './messages.js';
import { toWire } from './messages.js';
import { serveSlot } from './slot-runtime.js';

process.on('disconnect', () => process.exit(0));
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
