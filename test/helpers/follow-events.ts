/**
 * A separate process that follows a queue's event stream and prints each event as one JSON
 * line, so tests can prove the feed crosses processes. Usage: node follow-events.js <url> <queue>
 */
import { Queue } from '../../src/index.js';

const [url, name] = process.argv.slice(2);
const queue = new Queue(name!, { connection: url! });
const stop = new AbortController();
process.on('SIGTERM', () => {
  stop.abort();
  // If the server is already gone, closing cannot finish cleanly; do not linger as an orphan.
  setTimeout(() => process.exit(1), 3_000).unref();
});
for await (const e of queue.events.follow({ after: '0', signal: stop.signal })) {
  process.stdout.write(`${JSON.stringify(e)}\n`);
}
await queue.close();
