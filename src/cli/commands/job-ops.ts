import { parseData } from '../read-input.js';
import type { Command } from 'commander';
import { duration, globals, heldLine, nextDue, scheduledCounts, instant, ms, output, paint, when, withQueue, writes } from '../context.js';
import type { Queue } from '../../queue.js';
import type { QueueLimitsInfo } from '../../queue/groups-api.js';
import type { RateLimit } from '../../store/store.js';
import type { HoldInfo, QueueStats } from '../../types.js';
import { explainWait } from '../../inspect/why-waiting.js';
import { EXIT, hint, notChanged, UsageError } from '../errors.js';
import { JobCancelledError, JobFailedError, JobNotFoundError, WaitTimeoutError } from '../../errors.js';

/** `get <id>` (also `jobs get <id>`): one job, and why it is not running when it is scheduled. */
export function getCommand(parent: Command): void {
  parent
    .command('get')
    .description('show one job: state, due time, why it is not running yet, attempts, last error, data')
    .argument('<id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      // Its hold (docs/flows.md): one more read, null for a job never held. Why a scheduled job
      // is not running: three more reads, only for a scheduled job.
      const job = await withQueue(g, async (q) => {
        const job = await q.get(id);
        if (!job) return null;
        const hold = await q.holdOf(job.id);
        return { ...job, why: await explainWait(q, job, hold), hold };
      });
      if (!job) {
        output(g, null, () => `no job ${id} (never added, completed, cancelled or purged)`);
        notChanged();
        return;
      }
      output(g, job, () =>
        [
          `${paint('bold', job.id)}  ${job.state}${job.ready ? ' (ready: due, not running yet)' : ''}`,
          `due        ${job.state === 'held' && !Number.isFinite(job.dueAtMs) ? 'once released' : when(job.dueAtMs)}`,
          ...(job.state === 'held'
            ? [`held: ${paint('yellow', job.why.length > 0 ? job.why.map((r) => r.text).join(' · ') : 'settling (ask again)')}`]
            : job.why.length > 0
              ? [`waiting    ${paint('yellow', job.why.map((r) => r.text).join(' · '))}`]
              : []),
          ...holdLines(job.hold),
          `attempt    ${job.attempt}${job.maxAttempts ? ` of ${job.maxAttempts}` : ''}`,
          `priority   ${job.priority}`,
          ...(job.group !== undefined ? [`group      ${job.group}`] : []),
          ...(job.timeoutMs !== undefined ? [`timeout    ${ms(job.timeoutMs)} per attempt`] : []),
          `created    ${when(job.createdAtMs)}`,
          ...(job.startedAtMs !== undefined ? [`started    ${when(job.startedAtMs)} (first hand-out)`] : []),
          ...(job.runningSinceMs !== undefined ? [`running    since ${when(job.runningSinceMs)}`] : []),
          ...(job.leaseExpiresAtMs ? [`lease till ${when(job.leaseExpiresAtMs)}`] : []),
          ...(job.workerId !== undefined ? [`worker     ${job.workerId}${job.state === 'active' ? '' : ' (the last to hold it)'}`] : []),
          ...(job.finishedAtMs !== undefined ? [`finished   ${when(job.finishedAtMs)}`] : []),
          ...(job.lastError ? [`last error ${job.lastError.split('\n')[0]}`] : []),
          ...(job.progress !== undefined ? [`progress   ${JSON.stringify(job.progress)}`] : []),
          `data       ${JSON.stringify(job.data)}`,
          ...(job.logs?.length
            ? ['logs', ...job.logs.slice(-20).map((l) => `  ${l}`), ...(job.logs.length > 20 ? [`  (the last 20 of ${job.logs.length}; --json has all)`] : [])]
            : []),
        ].join('\n'),
      );
    });
}

/** How a settled hold ended, in a phrase. */
const HOLD_ENDS: Record<Exclude<HoldInfo['state'], 'held'>, string> = {
  released: 'released: what it waited for happened',
  timedOut: 'timed out: its deadline came first, it ran anyway',
  failed: 'failed: a dependency died or was cancelled',
};

/**
 * A hold's lines for `get`: how a settled hold ended, and each dependency with how it ended (a
 * result or a reason, first line only); none for a job never held.
 */
export function holdLines(hold: HoldInfo | null): string[] {
  if (!hold) return [];
  const out = hold.state === 'held' ? [] : [`hold       ${HOLD_ENDS[hold.state]}${hold.signal !== undefined ? ` (signal '${hold.signal}')` : ''}`];
  if (hold.children.length === 0) return out;
  const ended = hold.children.length - hold.children.filter((c) => c.outcome === 'pending').length;
  out.push(
    `dependencies  ${ended} of ${hold.children.length} ended; a dead or cancelled one ${hold.onChildFailure === 'fail' ? 'fails the job' : 'counts as ended'}`,
  );
  const shown = hold.children.slice(0, 50);
  const width = Math.max(...shown.map((c) => c.id.length));
  for (const c of shown) {
    const detail = c.outcome === 'completed' ? c.result : c.reason?.split('\n')[0];
    const word = c.outcome === 'completed' ? paint('green', c.outcome) : c.outcome === 'pending' ? c.outcome : paint('red', c.outcome);
    out.push(`  ${c.id.padEnd(width)}  ${word}${detail !== undefined && detail !== '' ? `  ${detail}` : ''}`);
  }
  if (hold.children.length > shown.length) out.push(`  (the first ${shown.length} of ${hold.children.length}; --json has all)`);
  return out;
}

export function jobCommands(program: Command): void {
  getCommand(program);

  writes(program.command('cancel'))
    .description('remove scheduled jobs (running ones too with --running; dead and completed jobs are left alone); a thousand ids per round trip')
    .argument('<ids...>')
    .option('--running', "cancel a running job too: its lease ends now, its handler's signal aborts ('cancelled'), its slot frees")
    .option('--reason <text>', 'why: kept in the cancelled event, told to anyone waiting for the job')
    .addHelpText(
      'after',
      `
Examples:
  $ delayq cancel order:123:timeout
  $ delayq cancel wh:1 --running --reason "upstream is down"`,
    )
    .action(async (ids: string[], o: { running?: boolean; reason?: string }, cmd: Command) => {
      const g = globals(cmd);
      const opts = { running: o.running === true, reason: o.reason };
      if (ids.length === 1) {
        const id = ids[0]!;
        const r = await withQueue(g, (q) => q.cancel(id, opts));
        output(g, r, () =>
          r.cancelled
            ? `${paint('green', 'cancelled')} ${id}${r.state === 'active' ? ' (it was running: its holder was told)' : ''}`
            : `not cancelled: ${r.state ? `${id} is ${r.state}${r.state === 'active' ? ' (add --running to cancel it as it runs)' : ''}` : `no job ${id}`}`,
        );
        if (!r.cancelled) notChanged();
        return;
      }
      const r = await withQueue(g, (q) => q.cancelMany(ids, opts));
      output(g, r, () =>
        [
          `cancelled ${r.cancelled} of ${ids.length}`,
          ...r.results.filter((x) => !x.cancelled).map((x) => `not cancelled: ${x.state ? `${x.id} is ${x.state}` : `no job ${x.id}`}`),
        ].join('\n'),
      );
      if (r.cancelled < ids.length) notChanged();
    });

  writes(program.command('fail'))
    .description(
      "fail a job now, from anywhere: a running attempt ends as failed (retries apply; its handler's signal aborts), or --dead buries it now, running or not",
    )
    .argument('<id>')
    .option('--reason <text>', "the failure's error text, kept as the job's last error", 'failed by delayq fail')
    .option('--dead', 'to the dead set now, whatever attempts are left (also a job that has not started)')
    .option('--retry-delay <duration>', 'when the failed attempt is retried (default: the default backoff for its attempt)')
    .addHelpText(
      'after',
      `
Examples:
  $ delayq fail wh:1 --reason "hung on a dead upstream"
  $ delayq fail wh:1 --dead --reason "poison message"`,
    )
    .action(async (id: string, o: { reason: string; dead?: boolean; retryDelay?: string }, cmd: Command) => {
      const g = globals(cmd);
      const retryDelayMs = duration('--retry-delay', o.retryDelay);
      const r = await withQueue(g, (q) => q.fail(id, { reason: o.reason, dead: o.dead === true, retryDelayMs }));
      output(g, r, () => {
        if (r.outcome === 'retried') return `${paint('green', 'failed')} ${id}: retried ${when(r.dueAtMs)}`;
        if (r.outcome === 'dead') return `${paint('green', 'failed')} ${id}: dead`;
        if (r.outcome === 'not_found') return `not failed: no job ${id}`;
        return `not failed: ${id} is ${r.state}${r.state === 'scheduled' ? ' (it has not started: add --dead to bury it)' : ''}`;
      });
      if (r.outcome === 'refused' || r.outcome === 'not_found') notChanged();
    });

  program
    .command('wait')
    .description(
      'wait for a job to end: prints its result when it completes; exit 1 when it died or was cancelled, 2 when there is no such job or the wait timed out',
    )
    .argument('<id>')
    .option('--timeout <duration>', 'how long to wait', '60s')
    .addHelpText(
      'after',
      `
Examples:
  $ delayq wait report:2026-11-28 --timeout 10m
  $ delayq wait order:123 --json`,
    )
    .action(async (id: string, o: { timeout: string }, cmd: Command) => {
      const g = globals(cmd);
      const timeoutMs = duration('--timeout', o.timeout);
      if (timeoutMs === undefined || timeoutMs < 1) throw new UsageError('--timeout must be at least 1 ms');
      const ended = await withQueue(g, (q) =>
        q.waitFor(id, { timeoutMs }).then(
          (result) => ({ id, outcome: 'completed' as const, result }),
          (err: unknown) => {
            if (err instanceof JobFailedError) return { id, outcome: 'dead' as const, reason: err.reason };
            if (err instanceof JobCancelledError) return { id, outcome: 'cancelled' as const, reason: err.reason };
            if (err instanceof JobNotFoundError) return { id, outcome: 'not_found' as const };
            if (err instanceof WaitTimeoutError) return { id, outcome: 'timeout' as const };
            throw err;
          },
        ),
      );
      output(g, ended, () => {
        if (ended.outcome === 'completed') return ended.result === undefined ? `${paint('green', 'completed')} ${id}` : JSON.stringify(ended.result);
        if (ended.outcome === 'dead') return `${id} died: ${(ended.reason ?? '').split('\n')[0]}`;
        if (ended.outcome === 'cancelled') return `${id} was cancelled${ended.reason ? `: ${ended.reason}` : ''}`;
        if (ended.outcome === 'not_found') return `no job ${id} (never added, or it ended before the wait and was not kept)`;
        return `${id} did not end within ${ms(timeoutMs)}`;
      });
      if (ended.outcome === 'dead' || ended.outcome === 'cancelled') process.exitCode = EXIT.error;
      else if (ended.outcome !== 'completed') notChanged();
    });

  writes(program.command('reschedule'))
    .description('give a scheduled job a new due time')
    .argument('<id>')
    .option('--delay <duration>', 'due this long from now')
    .option('--at <time>', 'due at this time: ISO 8601 or epoch ms')
    .action(async (id: string, o: { delay?: string; at?: string }, cmd: Command) => {
      const g = globals(cmd);
      const delay = duration('--delay', o.delay);
      const at = instant('--at', o.at);
      if ((delay === undefined) === (at === undefined)) throw new UsageError('give exactly one of --delay and --at');
      const r = await withQueue(g, (q) => q.reschedule(id, delay !== undefined ? { delay } : { runAt: at! }));
      output(g, r, () =>
        r.rescheduled
          ? `${paint('green', 'rescheduled')} ${id}, due ${when(r.dueAtMs)}`
          : `not rescheduled: ${r.state ? `${id} is ${r.state}` : `no job ${id}`}`,
      );
      if (!r.rescheduled) notChanged();
    });

  writes(program.command('signal'))
    .description('send a signal to a job (docs/flows.md): a job waiting for it runs now; another that has not ended keeps it for its wait')
    .argument('<id>')
    .argument('<name>', 'the signal, as the handler named it in job.waitForSignal(name)')
    .argument('[data]', "the signal's data: JSON, or plain text")
    .option('--text', 'the data is plain text, even when it looks like JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ delayq signal order:123 payment '{"paidAt":"2026-11-29T10:00:00Z"}'
  $ delayq signal order:123 payment`,
    )
    .action(async (id: string, name: string, data: string | undefined, o: { text?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const value = data === undefined ? undefined : parseData(data, o.text === true);
      const r = await withQueue(g, (q) => q.signal(id, name, value));
      output(g, r, () =>
        r.outcome === 'released'
          ? `${paint('green', 'released')} ${id}: it was waiting for ${name} and runs now`
          : r.outcome === 'kept'
            ? `kept: ${id} is ${r.state} and not waiting for ${name}; its next wait for ${name} ends at once`
            : r.outcome === 'refused'
              ? `not sent: ${id} is ${r.state}${r.state === 'dead' || r.state === 'completed' ? '' : ' and keeps too many signals'}`
              : `not sent: no job ${id}`,
      );
      if (r.outcome === 'refused' || r.outcome === 'not_found') notChanged();
    });

  writes(program.command('promote'))
    .description('make a scheduled job due now')
    .argument('<id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const r = await withQueue(g, (q) => q.promote(id));
      output(g, r, () => (r.rescheduled ? `${paint('green', 'promoted')} ${id}` : `not promoted: ${r.state ? `${id} is ${r.state}` : `no job ${id}`}`));
      if (!r.rescheduled) notChanged();
    });

  writes(program.command('migrate'))
    .description(
      "convert what an older version of delayq stored for the queue to this version's forms; run it once no process of an older version uses the queue",
    )
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const converted = await withQueue(g, (q) => q.migrate());
      output(g, { converted }, () =>
        converted === 0
          ? 'nothing to convert: the queue is of this version'
          : `${paint('green', 'migrated')}: ${converted} ${converted === 1 ? 'entry' : 'entries'} rewritten`,
      );
    });

  program
    .command('stats')
    .description('jobs by state, what is due soon, and when the next job is due')
    .option('--window <duration>', 'count jobs due within this window', '60s')
    .action(async (o: { window: string }, cmd: Command) => {
      const g = globals(cmd);
      const windowMs = duration('--window', o.window)!;
      const { s, unseen, limits } = await withQueue(g, async (q) => {
        const s = await q.stats({ windowMs });
        // The limits only for a person (--json prints QueueStats as they are).
        const limits = g.json ? undefined : await q.limits();
        // Only an empty-looking queue costs the extra round trip.
        return { s, limits, unseen: looksUnseen(s) && (await q.schedules.list()).length === 0 };
      });
      const limited = limits && !noLimit(limits);
      const rate = (r: RateLimit | undefined) => (r ? `${r.max}/${r.perMs}` : 'none');
      output(g, s, () =>
        [
          `${paint('bold', g.queue)}${s.paused ? paint('yellow', '  (paused)') : ''}`,
          `${scheduledCounts(s)}  active ${s.active}  dead ${s.dead}`,
          `due within ${ms(s.windowMs)}: ${s.dueWithinWindow}   next due: ${nextDue(s)}`,
          ...(s.heldJobs > 0 ? [`held jobs: ${s.heldJobs} (waiting for dependencies or a signal: delayq get <id> says which)`] : []),
          ...heldLine(s),
          ...(limited ? [`limits: concurrency ${limits.concurrency ?? 'none'}  groupConcurrency ${limits.groupConcurrency ?? 'none'}`] : []),
          ...(limited && (limits.rateLimit || limits.groupRateLimit)
            ? [`rate limits: rateLimit ${rate(limits.rateLimit)}  groupRateLimit ${rate(limits.groupRateLimit)}`]
            : []),
        ].join('\n'),
      );
      // A typo in --queue (or --prefix) reads as an empty queue; say that it may be one.
      if (unseen && !limited) hint(`queue ${JSON.stringify(g.queue)} holds nothing and has never completed a job: is the name right? (--queue, --prefix)`);
    });

  for (const [name, verb] of [
    ['pause', 'stop every worker of the queue from claiming'],
    ['resume', 'let workers claim again'],
  ] as const) {
    writes(program.command(name))
      .description(verb)
      .action(async (_o: unknown, cmd: Command) => {
        const g = globals(cmd);
        const changed = await withQueue(g, (q) => (name === 'pause' ? q.pause() : q.resume()));
        output(g, { changed }, () => (changed ? `${name}d ${g.queue}` : `${g.queue} was already ${name === 'pause' ? 'paused' : 'running'}`));
        if (!changed) notChanged();
      });
  }
}

/**
 * Nothing in the queue says it was ever used: no job in any state (held too), none ever completed, not
 * paused, no event stream. (Schedules are checked by the caller: they need a second call.)
 */
export function looksUnseen(s: QueueStats): boolean {
  return s.scheduled === 0 && s.active === 0 && s.dead === 0 && s.heldJobs === 0 && s.completedTotal === 0 && !s.paused && s.eventStreamLength === undefined;
}

/** No limit of any kind set on the queue: concurrency, groupConcurrency, rateLimit, groupRateLimit. */
export function noLimit(l: QueueLimitsInfo): boolean {
  return l.concurrency === undefined && l.groupConcurrency === undefined && l.rateLimit === undefined && l.groupRateLimit === undefined;
}

/**
 * Whether the queue's name was ever used: registered (a job was added or a worker ran), holding
 * or having completed something, paused, with a schedule, a limit or a group. A typo in --queue
 * or --prefix is none of these. Cheapest reads first; a known queue usually costs one.
 */
export async function queueKnown(q: Queue<unknown>): Promise<boolean> {
  if ((await q.store.queues()).includes(q.name)) return true;
  if (!looksUnseen(await q.stats())) return true;
  if ((await q.schedules.list()).length > 0) return true;
  const l = await q.limits();
  if (!noLimit(l)) return true;
  // An empty first step with a cursor is a walk that goes on: something is there.
  const first = await q.groups.list({ limit: 1 });
  return first.groups.length > 0 || first.cursor !== undefined;
}
