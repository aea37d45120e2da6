/**
 * `delayq history`: the queue's last minutes as the store keeps them (queue.history()): jobs
 * completed, failed attempts, jobs gone dead, starts and how late, a line a minute. The same
 * figures the dashboard's charts read, so they agree and neither starts empty after a restart.
 */
import type { Command } from 'commander';
import type { HistoryMinute } from '../../types.js';
import { globals, ms, output, withQueue } from '../context.js';
import { UsageError } from '../errors.js';
import { table } from '../table.js';

/** HH:MM of a minute, UTC, as the rest of the CLI prints times. */
const minuteOf = (atMs: number) => new Date(atMs).toISOString().slice(11, 16);

export function historyCommand(program: Command): void {
  program
    .command('history')
    .description('the last minutes: completed, failed attempts, dead, started and how late (kept 24 h in Redis)')
    .option('--minutes <n>', 'how many minutes, up to 1440 (24 h)', '60')
    .option('--all', 'every minute, also those with nothing in them')
    .action(async (o: { minutes: string; all?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      if (!/^\d{1,4}$/.test(o.minutes)) throw new UsageError(`--minutes must be a whole number from 1 to 1440 (got ${JSON.stringify(o.minutes)})`);
      const minutes = Number(o.minutes);
      const h = await withQueue(g, (q) => q.history({ minutes }));
      output(g, h, () => {
        const sum = (k: 'completed' | 'failed' | 'dead' | 'started') => h.reduce((n, m) => n + m[k], 0);
        const rows = (o.all ? h : h.filter((m) => m.completed + m.failed + m.dead + m.started > 0)).map((m: HistoryMinute) => [
          minuteOf(m.atMs),
          String(m.completed),
          String(m.failed),
          String(m.dead),
          String(m.started),
          ms(m.lateMeanMs),
          ms(m.lateMaxMs),
        ]);
        const worst = Math.max(0, ...h.map((m) => m.lateMaxMs ?? 0));
        return [
          `${g.queue}, the last ${minutes} min (UTC): completed ${sum('completed')}  failed ${sum('failed')}  dead ${sum('dead')}  started ${sum('started')}, at most ${ms(worst)} late`,
          ...(rows.length > 0
            ? table(['minute', 'completed', 'failed', 'dead', 'started', 'late (mean)', 'late (max)'], rows)
            : ['nothing happened in that time']),
        ].join('\n');
      });
    });
}
