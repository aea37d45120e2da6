import type { Command } from 'commander';
import type { ScheduleInfo } from '../../schedules/schedules.js';
import { globals, ms, output, when, withQueue } from '../context.js';
import { table } from '../table.js';

/** How a schedule fires, as a person would say it: "cron 0 2 * * *" or "every 5.0 min". */
export function describeWhen(s: Pick<ScheduleInfo, 'cron' | 'every'>): string {
  return s.cron !== undefined ? `cron ${s.cron}` : `every ${ms(s.every)}`;
}

/** `cron ls`: the queue's recurring schedules, read through queue.schedules. */
export function cronCommands(program: Command): void {
  const cron = program.command('cron').description("the queue's recurring schedules (run by a scheduler: worker --schedules)");

  cron
    .command('ls')
    .alias('list')
    .description('each schedule: name, cron pattern or interval, time zone, last and next occurrence')
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const schedules = await withQueue(g, (q) => q.schedules.list());
      schedules.sort((a, b) => a.name.localeCompare(b.name));
      output(g, { schedules }, () =>
        schedules.length === 0
          ? `no recurring schedules on ${g.queue}`
          : table(
              ['NAME', 'WHEN', 'TZ', 'MISSED', 'LAST', 'NEXT'],
              schedules.map((s) => [s.name, describeWhen(s), s.cron !== undefined ? s.tz : '—', s.missed, when(s.lastRunAtMs), when(s.nextRunAtMs)]),
            ).join('\n'),
      );
    });
}
