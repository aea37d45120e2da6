import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import logUpdate from 'log-update';
import { ConnectionError } from '../../errors.js';
import { colourOn, duration, globals, numberOption, withQueue } from '../context.js';
import { UsageError } from '../errors.js';
import { type MonitorState, monitorRecord, renderMonitor, withSample } from '../monitor-screen.js';
import { timerDelay } from '../../timers.js';

/** How often the screen is redrawn while a stats call is slow or failing: the clock must move. */
const TICK_MS = 1000;
/**
 * A refresh gives up after this long (the other commands wait 5 s): a live view should say
 * "reconnecting" within a couple of seconds of Redis going away, not stay quiet for five.
 */
const MONITOR_TIMEOUTS = { connectTimeoutMs: 2000, commandTimeoutMs: 2000 };

/**
 * A live view of the queue. On a terminal the screen is redrawn in place (log-update rewrites
 * only the lines it drew, so nothing flickers); off a terminal one line per refresh; with --json
 * one JSON object per refresh. What is drawn comes from monitor-screen.ts.
 */
export function monitorCommand(program: Command): void {
  program
    .command('monitor')
    .description('live view: states, due soon, next due, completed/s, lag, reconnecting (Ctrl-C to stop)')
    .option('--interval <duration>', 'refresh every', '1s')
    .option('--count <n>', 'stop after this many refreshes (for scripts)')
    .action(async (o: { interval: string; count?: string }, cmd: Command) => {
      const g = globals(cmd);
      const every = duration('--interval', o.interval)!;
      if (every < 10) throw new UsageError('--interval must be at least 10 ms');
      const limit = o.count === undefined ? Infinity : numberOption('--count', o.count)!;
      const live = Boolean(process.stdout.isTTY) && process.env.TERM !== 'dumb' && !g.json;
      const colour = colourOn();
      const stopped = new AbortController();
      process.once('SIGINT', () => stopped.abort());

      const state: MonitorState = { queue: g.queue, nowMs: Date.now(), history: [] };
      const render = live ? logUpdate : undefined;
      const draw = () => render?.(renderMonitor({ ...state, nowMs: Date.now() }, { colour }).join('\n'));
      // The ticker redraws between answers: while Redis is away a stats call can take seconds,
      // and a screen that waits for it freezes on a stale clock.
      const ticker = live ? setInterval(draw, timerDelay(Math.min(every, TICK_MS))) : undefined;
      draw();
      try {
        await withQueue(
          g,
          async (q) => {
            for (let i = 0; i < limit && !stopped.signal.aborted; i++) {
              const askedAt = Date.now();
              state.askingSinceMs = askedAt;
              try {
                const [stats, next, workers] = await Promise.all([q.stats({ windowMs: 60_000 }), q.jobs.list({ state: 'scheduled', limit: 3 }), q.workers()]);
                state.history = withSample(state.history, { stats, atMs: Date.now(), next: next.jobs, workers });
                delete state.outage;
              } catch (err) {
                if (!(err instanceof ConnectionError)) throw err;
                // Say so and keep trying: a frozen screen looks like a quiet queue. The outage
                // began when the first failing call was sent, not when it gave up.
                state.outage = { sinceMs: state.outage?.sinceMs ?? askedAt, error: err.message, address: err.address };
              }
              delete state.askingSinceMs;
              state.nowMs = Date.now();
              if (g.json) process.stdout.write(`${JSON.stringify(monitorRecord(state))}\n`);
              else if (live) draw();
              else process.stdout.write(`${plainLine(state)}\n`);
              if (i + 1 < limit) await sleep(every, undefined, { signal: stopped.signal }).catch(() => {});
            }
          },
          MONITOR_TIMEOUTS,
        );
      } finally {
        if (ticker) clearInterval(ticker);
        // Leaves the last screen in place, and the cursor shown again.
        render?.done();
      }
    });
}

/** Off a terminal: the screen as one line per refresh, its column padding squeezed out (logs, pipes). */
function plainLine(state: MonitorState): string {
  return renderMonitor(state, { colour: false })
    .map((line) => line.replace(/ {2,}/g, ' '))
    .join(' | ');
}
