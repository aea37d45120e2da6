/**
 * Flow control from the command line: `groups ls | get | pause | resume | limit` (one group's
 * counts, pause and own limit, through queue.groups) and `limits` / `limits set` (the queue's
 * `concurrency` and `groupConcurrency`, through queue.limits and queue.setLimits).
 *
 * Every write first checks that the queue's name was ever used (queueKnown): a typo in --queue
 * would otherwise set a limit or a pause that no worker reads, and say "done". --new-queue sets
 * up a queue before its first job. Reads answer on any name, with a hint when it looks unused.
 */
import type { Command } from 'commander';
import { StoreError, ValidationError } from '../../errors.js';
import { MAX_CONCURRENCY, PAGE_LIMIT_MAX } from '../../limits.js';
import { parseId } from '../../options.js';
import type { GroupInfo, QueueLimitsInfo } from '../../queue/groups-api.js';
import type { Queue } from '../../queue.js';
import { commandLine, DEFAULT_PREFIX, type GlobalOptions, globals, output, paint, withQueue, writes } from '../context.js';
import { hint, notChanged, UsageError } from '../errors.js';
import { table } from '../table.js';
import { limitOption } from './inspect.js';
import { queueKnown } from './job-ops.js';

/**
 * A concurrency limit as typed: a whole number from 1 to MAX_CONCURRENCY, or `none` (null: no
 * limit). Digits only, so `1e3`, `0x10` and `5.0` are refused rather than read as numbers.
 */
export function limitArg(name: string, value: string): number | null {
  if (value === 'none') return null;
  const n = /^\d{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= MAX_CONCURRENCY))
    throw new UsageError(`${name} must be a whole number from 1 to ${MAX_CONCURRENCY}, or none (got ${JSON.stringify(value)})`);
  return n;
}

/** A group id, checked as the library checks it, named as the command line names it. */
function groupArg(id: string): string {
  return parseId(id, 'group');
}

const limitText = (n: number | undefined) => (n === undefined ? 'none' : String(n));

/** The limit a group runs under: its own, else the queue's groupConcurrency, else none. */
function effectiveLimit(g: GroupInfo, limits: QueueLimitsInfo): string {
  if (g.concurrency !== undefined) return String(g.concurrency);
  return limits.groupConcurrency === undefined ? '-' : `${limits.groupConcurrency} (queue)`;
}

/** A group as --json prints it: a limit of none is null (JSON has no undefined). */
const groupJson = (g: GroupInfo) => ({ id: g.id, running: g.running, waiting: g.waiting, concurrency: g.concurrency ?? null, paused: g.paused });
const limitsJson = (l: QueueLimitsInfo) => ({ concurrency: l.concurrency ?? null, groupConcurrency: l.groupConcurrency ?? null });

/** A read on a typo in --queue answers "nothing": when the name looks unused, a hint says so. */
function unknownQueueHint(g: GlobalOptions): void {
  hint(`queue ${JSON.stringify(g.queue)} holds nothing and has no limit or group: is the name right? (--queue, --prefix)`);
}

/** Refuses a write to a queue whose name was never used, unless --new-queue says it is meant. */
async function mustBeKnown(g: GlobalOptions, q: Queue<unknown>, newQueue: boolean | undefined): Promise<void> {
  if (newQueue || (await queueKnown(q))) return;
  throw new UsageError(
    `no queue ${JSON.stringify(g.queue)} under prefix ${g.prefix ?? DEFAULT_PREFIX}: nothing was written`,
    'is the name right? delayq queues lists them; --new-queue sets up a queue before its first job',
  );
}

/** A group that reads as nothing: on a queue never used, the name may be a typo. */
const looksEmpty = (gi: GroupInfo) => gi.running === 0 && gi.waiting === 0 && gi.concurrency === undefined && !gi.paused;

/** A bad --cursor is the caller's input: exit 64 naming --cursor (the library throws a StoreError, or a ValidationError naming opts.cursor). */
async function listPage(q: Queue<unknown>, cursor: string | undefined, limit: number) {
  try {
    return await q.groups.list({ ...(cursor === undefined ? {} : { cursor }), limit });
  } catch (err) {
    const badCursor =
      (err instanceof StoreError && err.message.startsWith('not a groups cursor')) || (err instanceof ValidationError && err.field === 'opts.cursor');
    if (cursor !== undefined && badCursor)
      throw new UsageError(`--cursor is not a cursor that 'delayq groups ls' printed (got ${JSON.stringify(cursor.slice(0, 40))})`);
    throw err;
  }
}

export function groupsCommands(program: Command): void {
  const groups = program.command('groups').description("the queue's groups (add --group): counts, pauses and limits of their own");

  groups
    .command('ls')
    .alias('list')
    .description('one page of the groups with something running or waiting, a limit of their own or a pause')
    .option('--limit <n>', `groups per page, about (1-${PAGE_LIMIT_MAX})`, '100')
    .option('--cursor <cursor>', 'the cursor the previous page printed')
    .action(async (o: { limit: string; cursor?: string }, cmd: Command) => {
      const g = globals(cmd);
      const limit = limitOption(o.limit, PAGE_LIMIT_MAX)!;
      const { page, limits, unknown } = await withQueue(g, async (q) => {
        const page = await listPage(q, o.cursor, limit);
        const limits = await q.limits();
        const unknown = page.groups.length === 0 && page.cursor === undefined && o.cursor === undefined && !(await queueKnown(q));
        return { page, limits, unknown };
      });
      output(g, { groups: page.groups.map(groupJson), cursor: page.cursor ?? null }, () =>
        [
          ...(page.groups.length === 0
            ? [page.cursor === undefined ? 'no groups with anything running or waiting, a limit of their own or a pause' : 'none on this page']
            : table(
                ['GROUP', 'RUNNING', 'WAITING', 'LIMIT', 'PAUSED'],
                page.groups.map((gi) => [gi.id, String(gi.running), String(gi.waiting), effectiveLimit(gi, limits), gi.paused ? 'paused' : '-']),
              )),
          ...(page.cursor ? [paint('dim', `next page: ${commandLine(g, ['groups', 'ls', '--limit', limit, '--cursor', page.cursor])}`)] : []),
        ].join('\n'),
      );
      if (unknown) unknownQueueHint(g);
    });

  groups
    .command('get')
    .description('one group: running, waiting, its limit, paused')
    .argument('<id>', 'the group id')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const group = groupArg(id);
      const { gi, limits, unknown } = await withQueue(g, async (q) => {
        const gi = await q.groups.get(group);
        const limits = await q.limits();
        return { gi, limits, unknown: looksEmpty(gi) && !(await queueKnown(q)) };
      });
      output(g, groupJson(gi), () =>
        [
          `${paint('bold', gi.id)}${gi.paused ? paint('yellow', '  (paused)') : ''}`,
          `running  ${gi.running}`,
          `waiting  ${gi.waiting}`,
          `limit    ${gi.concurrency !== undefined ? `${gi.concurrency} (its own)` : limits.groupConcurrency !== undefined ? `${limits.groupConcurrency} (the queue's groupConcurrency)` : 'none'}`,
          `paused   ${gi.paused ? 'yes' : 'no'}`,
        ].join('\n'),
      );
      if (unknown) unknownQueueHint(g);
    });

  for (const [name, verb] of [
    ['pause', "stop handing out the group's jobs on every worker (running ones finish)"],
    ['resume', "hand out the group's jobs again"],
  ] as const) {
    writes(groups.command(name))
      .description(verb)
      .argument('<id>', 'the group id')
      .option('--new-queue', 'the queue holds nothing yet: set it up before its first job')
      .action(async (id: string, o: { newQueue?: boolean }, cmd: Command) => {
        const g = globals(cmd);
        const group = groupArg(id);
        const changed = await withQueue(g, async (q) => {
          await mustBeKnown(g, q, o.newQueue);
          return name === 'pause' ? q.groups.pause(group) : q.groups.resume(group);
        });
        output(g, { id: group, changed }, () =>
          changed ? `${name}d group ${group} of ${g.queue}` : `group ${group} of ${g.queue} was already ${name === 'pause' ? 'paused' : 'running'}`,
        );
        if (!changed) notChanged();
      });
  }

  writes(groups.command('limit'))
    .description("give a group a concurrency limit of its own (none: the queue's groupConcurrency applies again)")
    .argument('<id>', 'the group id')
    .argument('<limit>', `most jobs of the group running at once: 1-${MAX_CONCURRENCY}, or none`)
    .option('--new-queue', 'the queue holds nothing yet: set it up before its first job')
    .action(async (id: string, n: string, o: { newQueue?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const group = groupArg(id);
      const concurrency = limitArg('limit', n);
      const { changed, limits } = await withQueue(g, async (q) => {
        await mustBeKnown(g, q, o.newQueue);
        const changed = await q.groups.setLimits(group, { concurrency });
        return { changed, limits: concurrency === null ? await q.limits() : undefined };
      });
      output(g, { id: group, concurrency, changed }, () => {
        if (concurrency !== null)
          return changed ? `group ${group} of ${g.queue}: limit ${concurrency}` : `group ${group} of ${g.queue} already had limit ${concurrency}`;
        const applies = `the queue's groupConcurrency applies: ${limitText(limits?.groupConcurrency)}`;
        return changed ? `group ${group} of ${g.queue}: own limit removed (${applies})` : `group ${group} of ${g.queue} had no limit of its own (${applies})`;
      });
      if (!changed) notChanged();
    });

  const limits = program
    .command('limits')
    .description("the queue's concurrency limits: concurrency (the whole queue) and groupConcurrency (each group)")
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const { l, unknown } = await withQueue(g, async (q) => {
        const l = await q.limits();
        const none = l.concurrency === undefined && l.groupConcurrency === undefined;
        return { l, unknown: none && !(await queueKnown(q)) };
      });
      output(g, limitsJson(l), () => limitsText(paint('bold', g.queue), l));
      if (unknown) unknownQueueHint(g);
    });

  writes(limits.command('set'))
    .description("set or remove the queue's limits (a limit not given stays as it is)")
    .option('--concurrency <n>', `most jobs of the queue running at once: 1-${MAX_CONCURRENCY}, or none`)
    .option('--group-concurrency <n>', `most jobs of any one group running at once (unless it has its own limit): 1-${MAX_CONCURRENCY}, or none`)
    .option('--new-queue', 'the queue holds nothing yet: set it up before its first job')
    .action(async (o: { concurrency?: string; groupConcurrency?: string; newQueue?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      if (o.concurrency === undefined && o.groupConcurrency === undefined)
        throw new UsageError('give --concurrency, --group-concurrency or both (a number, or none)');
      const change: { concurrency?: number | null; groupConcurrency?: number | null } = {};
      if (o.concurrency !== undefined) change.concurrency = limitArg('--concurrency', o.concurrency);
      if (o.groupConcurrency !== undefined) change.groupConcurrency = limitArg('--group-concurrency', o.groupConcurrency);
      const { changed, l } = await withQueue(g, async (q) => {
        await mustBeKnown(g, q, o.newQueue);
        const changed = await q.setLimits(change);
        return { changed, l: await q.limits() };
      });
      output(g, { changed, ...limitsJson(l) }, () => limitsText(changed ? `set the limits of ${g.queue}` : `the limits of ${g.queue} already were so`, l));
      if (!changed) notChanged();
    });
}

/** The queue's limits under a title line, one a line, with what each bounds. */
function limitsText(title: string, l: QueueLimitsInfo): string {
  const value = (n: number | undefined) => limitText(n).padEnd(6);
  return [
    title,
    `concurrency       ${value(l.concurrency)}  most jobs of the queue running at once`,
    `groupConcurrency  ${value(l.groupConcurrency)}  most jobs of one group running at once, unless it has a limit of its own`,
  ].join('\n');
}
