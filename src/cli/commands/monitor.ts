import type { Command } from 'commander';
import { colourOn, duration, globals, ms, paint, withQueue } from '../context.js';
import { ConnectionError } from '../../errors.js';
import type { QueueStats } from '../../types.js';

/**
 * A live view, refreshed in place on a terminal (one JSON line per refresh with --json).
 * Throughput is the change of the queue's completed total between refreshes; lag is how long
 * the longest-waiting due job has waited.
 */
export function monitorCommand(program: Command): void {
  program
    .command('monitor')
    .description('live view: states, due soon, next due, throughput, lag (Ctrl-C to stop)')
    .option('--interval <duration>', 'refresh every', '1s')
    .option('--count <n>', 'stop after this many refreshes (for scripts)')
    .action(async (o: { interval: string; count?: string }, cmd: Command) => {
      const g = globals(cmd);
      const every = duration('--interval', o.interval)!;
      const limit = o.count === undefined ? Infinity : Number(o.count);
      const live = colourOn() && !g.json;
      let stop = false;
      process.once('SIGINT', () => (stop = true));
      await withQueue(g, async (q) => {
        let prev: QueueStats | undefined;
        let prevAt = 0;
        for (let i = 0; i < limit && !stop; i++) {
          let s: QueueStats;
          try {
            s = await q.stats({ windowMs: 60_000 });
          } catch (err) {
            if (!(err instanceof ConnectionError)) throw err;
            // Say so and keep trying: a frozen screen looks like a quiet queue.
            const line = `reconnecting: ${err.message}`;
            if (g.json) process.stdout.write(`${JSON.stringify({ reconnecting: true, address: err.address, error: err.message })}\n`);
            else process.stdout.write(live ? `\x1b[H\x1b[2J${paint('bold', `delayq monitor — ${g.queue}`)}\n${paint('yellow', line)}\n` : `${line}\n`);
            prev = undefined;
            if (i + 1 < limit && !stop) await new Promise((r) => setTimeout(r, every));
            continue;
          }
          const at = Date.now();
          const throughput = prev ? (s.completedTotal - prev.completedTotal) / ((at - prevAt) / 1000) : undefined;
          const row = { ...s, throughputPerSec: throughput };
          if (g.json) process.stdout.write(`${JSON.stringify(row)}\n`);
          else {
            const lines = [
              `${paint('bold', `delayq monitor — ${g.queue}`)}${s.paused ? paint('yellow', '  PAUSED') : ''}   ${new Date(s.nowMs).toISOString()}`,
              `scheduled ${String(s.scheduled).padStart(8)}   ready ${String(s.ready).padStart(8)}   active ${String(s.active).padStart(6)}   dead ${paint(s.dead > 0 ? 'red' : 'green', String(s.dead).padStart(6))}`,
              `due in the next minute ${String(s.dueWithinWindow).padStart(8)}   next due in ${ms(s.nextDueInMs)}`,
              `completed ${throughput === undefined ? '—' : `${throughput.toFixed(0)} jobs/s`}   lag ${s.oldestDueAgeMs === undefined ? 'none' : paint(s.oldestDueAgeMs > 1000 ? 'yellow' : 'green', `${ms(s.oldestDueAgeMs)} (oldest due job waiting)`)}`,
            ];
            process.stdout.write(live ? `\x1b[H\x1b[2J${lines.join('\n')}\n` : `${lines.join('  |  ')}\n`);
          }
          prev = s;
          prevAt = at;
          if (i + 1 < limit && !stop) await new Promise((r) => setTimeout(r, every));
        }
      });
    });
}
