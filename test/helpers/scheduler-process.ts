/** A Scheduler in a child process of its own (argv: <redis url> <queue>), until SIGTERM. */
import { Scheduler } from '../../src/index.js';

const [url, queue] = process.argv.slice(2) as [string, string];
const scheduler = new Scheduler(queue, { connection: url, leadMs: 100 });
process.on('SIGTERM', () => {
  void scheduler.close().then(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));
process.send?.({ t: 'ready' });
