import type { Command } from 'commander';
import type { StreamEvent } from '../../event-feed.js';
import { globals, numberOption, output, paint, withQueue, writes } from '../context.js';
import { CliError, EXIT, notChanged } from '../errors.js';

/** The stream entry id is `<ms>-<n>`: its ms is when Redis wrote the event. */
export function cursorTime(cursor: string): string {
  return new Date(Number(cursor.split('-')[0])).toISOString();
}

/** One event, one line: time, event, job id, then the other fields (`due` as an ISO time). */
export function eventLine(e: StreamEvent): string {
  const fields = Object.entries(e.fields).map(([k, v]) => `${k}=${k === 'due' && /^\d+$/.test(v) ? new Date(Number(v)).toISOString() : v}`);
  return [cursorTime(e.cursor), e.event.padEnd(11), e.id || '—', ...fields].join('  ').trimEnd();
}

export function eventRecord(e: StreamEvent): Record<string, unknown> {
  return { time: cursorTime(e.cursor), cursor: e.cursor, event: e.event, id: e.id, fields: e.fields };
}

const enableHint = (queue: string) =>
  `turn it on with 'delayq events enable --queue ${queue}' (or queue.events.enable() in code); it costs one XADD per job step`;

/** `events follow`, `events enable`, `events disable`: the queue's cross-process event stream (queue.events). */
export function eventsCommands(program: Command): void {
  const events = program.command('events').description("the queue's event stream: follow it, turn it on or off");

  events
    .command('follow')
    .description('print each event as it is written, until Ctrl-C (the stream must be on: events enable)')
    .option('--after <cursor>', 'start after this cursor; 0 replays every event the stream still keeps (default: new events only)')
    .option('--count <n>', 'stop after this many events (for scripts)')
    .action(async (o: { after?: string; count?: string }, cmd: Command) => {
      const g = globals(cmd);
      const limit = o.count === undefined ? Infinity : numberOption('--count', o.count)!;
      const stopped = new AbortController();
      process.once('SIGINT', () => stopped.abort());
      await withQueue(g, async (q) => {
        // XREAD on a stream that is off would wait forever for events that never come.
        if ((await q.stats({ windowMs: 0 })).eventStreamLength === undefined) {
          throw new CliError(`the event stream of queue ${JSON.stringify(g.queue)} is off`, EXIT.notChanged, enableHint(g.queue));
        }
        if (!g.json) process.stderr.write(paint('dim', `following the events of ${g.queue} (Ctrl-C to stop)\n`, process.stderr));
        let seen = 0;
        // Through a Redis outage the read just waits, and carries on from its cursor when Redis is back.
        for await (const e of q.events.follow({ signal: stopped.signal, ...(o.after !== undefined ? { after: o.after } : {}) })) {
          process.stdout.write(g.json ? `${JSON.stringify(eventRecord(e))}\n` : `${eventLine(e)}\n`);
          if (++seen >= limit) break;
        }
      });
    });

  writes(events.command('enable'))
    .description('turn the event stream on (for every process using the queue)')
    .option('--max-len <n>', 'keep about this many latest events', '10000')
    .action(async (o: { maxLen: string }, cmd: Command) => {
      const g = globals(cmd);
      const maxLen = numberOption('--max-len', o.maxLen)!;
      const changed = await withQueue(g, (q) => q.events.enable({ maxLen }));
      output(g, { changed }, () =>
        changed ? `event stream on for ${g.queue} (keeps about ${maxLen} events)` : `the event stream of ${g.queue} was already on`,
      );
      if (!changed) notChanged();
    });

  writes(events.command('disable'))
    .description('turn the event stream off and delete the events it kept')
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const changed = await withQueue(g, (q) => q.events.disable());
      output(g, { changed }, () => (changed ? `event stream off for ${g.queue}` : `the event stream of ${g.queue} was already off`));
      if (!changed) notChanged();
    });
}
