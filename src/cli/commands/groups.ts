/**
 * Flow control from the command line: `groups ls | get | pause | resume | limit` (one group's
 * counts, pause, own limit and own rate limit, through queue.groups) and `limits` / `limits set`
 * (the queue's `concurrency`, `groupConcurrency`, `rateLimit` and `groupRateLimit`, through
 * queue.limits and queue.setLimits, with the rate limiter's figures from queue.rateStatus).
 *
 * Every write first checks that the queue's name was ever used (queueKnown): a typo in --queue
 * would otherwise set a limit or a pause that no worker reads, and say "done". --new-queue sets
 * up a queue before its first job. Reads answer on any name, with a hint when it looks unused.
 */
import type { Command } from 'commander';
import { StoreError, ValidationError } from '../../errors.js';
import { MAX_CONCURRENCY, MAX_RATE_TOKENS, MAX_RATE_WINDOW_MS, PAGE_LIMIT_MAX } from '../../limits.js';
import { parseId } from '../../options.js';
import type { GroupInfo, QueueLimitsInfo } from '../../queue/groups-api.js';
import type { Queue } from '../../queue.js';
import type { RateLimit, RateStatus, RateUse } from '../../store/store.js';
import { commandLine, DEFAULT_PREFIX, duration, type GlobalOptions, globals, ms, output, paint, withQueue, writes } from '../context.js';
import { hint, notChanged, UsageError } from '../errors.js';
import { table } from '../table.js';
import { limitOption } from './inspect.js';
import { noLimit, queueKnown } from './job-ops.js';

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

/**
 * A rate limit as typed: `<max>/<perMs>`, at most `max` tokens (a job takes 1, or its cost) in any
 * window of `perMs` milliseconds, or `none` (null: no limit). Digits only, as limitArg.
 */
export function rateArg(name: string, value: string): RateLimit | null {
  if (value === 'none') return null;
  // The window as every other duration flag takes it: 1000, 1500ms, 30s, 1m, 2h, 1d.
  const m = /^(\d{1,7})\/(\d{1,9}(?:\.\d+)?(?:ms|s|m|h|d)?)$/.exec(value);
  const max = m ? Number(m[1]) : Number.NaN;
  let perMs = Number.NaN;
  if (m) {
    try {
      perMs = duration(name, m[2])!;
    } catch {}
  }
  if (!(max >= 1 && max <= MAX_RATE_TOKENS && Number.isInteger(perMs) && perMs >= 1 && perMs <= MAX_RATE_WINDOW_MS))
    throw new UsageError(
      `${name} must be <max>/<window>: 1-${MAX_RATE_TOKENS} tokens per window of 1-${MAX_RATE_WINDOW_MS} ms (a week), the window in ms or with a unit, e.g. 100/1000, 100/1s or 6000/1m, or none (got ${JSON.stringify(value)})`,
    );
  return { max, perMs };
}

/** A group id, checked as the library checks it, named as the command line names it. */
function groupArg(id: string): string {
  return parseId(id, 'group');
}

const limitText = (n: number | undefined) => (n === undefined ? 'none' : String(n));
/** A rate limit as `--rate` takes it back: `max/perMs`, or none. */
const rateText = (r: RateLimit | undefined | null) => (r ? `${r.max}/${r.perMs}` : 'none');

/** The limit a group runs under: its own, else the queue's groupConcurrency, else none. */
function effectiveLimit(g: GroupInfo, limits: QueueLimitsInfo): string {
  if (g.concurrency !== undefined) return String(g.concurrency);
  return limits.groupConcurrency === undefined ? '-' : `${limits.groupConcurrency} (queue)`;
}

/** The rate limit a group runs under: its own, else the queue's groupRateLimit, else none. */
function effectiveRate(g: GroupInfo, limits: QueueLimitsInfo): string {
  if (g.rateLimit !== undefined) return rateText(g.rateLimit);
  return limits.groupRateLimit === undefined ? '-' : `${rateText(limits.groupRateLimit)} (queue)`;
}

/** Tokens taken in the window, and a hold still to run (server clock: `nowMs` from rateStatus). */
function useText(u: RateUse, nowMs: number): string {
  const held = u.heldUntilMs !== undefined && u.heldUntilMs > nowMs ? `, held ${ms(u.heldUntilMs - nowMs)}` : '';
  return `${u.used}${held}`;
}

/** Tokens taken, a hold and the next refill, for a person: `3 tokens in the window, held 2.0 s, next back in 400 ms`. */
function rateUseText(u: RateUse, nowMs: number): string {
  const parts = [`${u.used} token${u.used === 1 ? '' : 's'} in the window`];
  if (u.heldUntilMs !== undefined && u.heldUntilMs > nowMs) parts.push(`held ${ms(u.heldUntilMs - nowMs)} more`);
  if (u.nextRefillMs !== undefined) parts.push(`next back in ${ms(Math.max(0, u.nextRefillMs - nowMs))}`);
  return parts.join(', ');
}

/** A rate use as --json prints it: null for no hold or refill. */
const useJson = (u: RateUse) => ({ used: u.used, heldUntilMs: u.heldUntilMs ?? null, nextRefillMs: u.nextRefillMs ?? null });
/** A group as --json prints it: a limit of none is null (JSON has no undefined). */
const groupJson = (g: GroupInfo) => ({
  id: g.id,
  running: g.running,
  waiting: g.waiting,
  concurrency: g.concurrency ?? null,
  rateLimit: g.rateLimit ?? null,
  rate: useJson(g.rate),
  paused: g.paused,
});
const limitsJson = (l: QueueLimitsInfo) => ({
  concurrency: l.concurrency ?? null,
  groupConcurrency: l.groupConcurrency ?? null,
  rateLimit: l.rateLimit ?? null,
  groupRateLimit: l.groupRateLimit ?? null,
});
const rateStatusJson = (r: RateStatus) => ({ nowMs: r.nowMs, queue: useJson(r.queue), groupsHeld: r.groupsHeld });

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
const looksEmpty = (gi: GroupInfo) =>
  gi.running === 0 && gi.waiting === 0 && gi.concurrency === undefined && gi.rateLimit === undefined && gi.rate.used === 0 && !gi.paused;

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
    .description(
      'one page of the groups with something running or waiting, a limit of their own or a pause (RATE: the rate limit; USED: tokens taken in its window, and a hold)',
    )
    .option('--limit <n>', `groups per page, about (1-${PAGE_LIMIT_MAX})`, '100')
    .option('--cursor <cursor>', 'the cursor the previous page printed')
    .action(async (o: { limit: string; cursor?: string }, cmd: Command) => {
      const g = globals(cmd);
      const limit = limitOption(o.limit, PAGE_LIMIT_MAX)!;
      const { page, limits, nowMs, unknown } = await withQueue(g, async (q) => {
        const page = await listPage(q, o.cursor, limit);
        const limits = await q.limits();
        // The server's clock, which a hold is counted on (for the text only).
        const nowMs = g.json ? 0 : (await q.rateStatus()).nowMs;
        const unknown = page.groups.length === 0 && page.cursor === undefined && o.cursor === undefined && !(await queueKnown(q));
        return { page, limits, nowMs, unknown };
      });
      output(g, { groups: page.groups.map(groupJson), cursor: page.cursor ?? null }, () =>
        [
          ...(page.groups.length === 0
            ? [page.cursor === undefined ? 'no groups with anything running or waiting, a limit of their own or a pause' : 'none on this page']
            : table(
                ['GROUP', 'RUNNING', 'WAITING', 'LIMIT', 'RATE', 'USED', 'PAUSED'],
                page.groups.map((gi) => [
                  gi.id,
                  String(gi.running),
                  String(gi.waiting),
                  effectiveLimit(gi, limits),
                  effectiveRate(gi, limits),
                  useText(gi.rate, nowMs),
                  gi.paused ? 'paused' : '-',
                ]),
              )),
          ...(page.cursor ? [paint('dim', `next page: ${commandLine(g, ['groups', 'ls', '--limit', limit, '--cursor', page.cursor])}`)] : []),
        ].join('\n'),
      );
      if (unknown) unknownQueueHint(g);
    });

  groups
    .command('get')
    .description('one group: running, waiting, its limit, its rate limit and tokens used, paused')
    .argument('<id>', 'the group id')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const group = groupArg(id);
      const { gi, limits, nowMs, unknown } = await withQueue(g, async (q) => {
        const gi = await q.groups.get(group);
        const limits = await q.limits();
        const nowMs = g.json ? 0 : (await q.rateStatus()).nowMs;
        return { gi, limits, nowMs, unknown: looksEmpty(gi) && !(await queueKnown(q)) };
      });
      output(g, groupJson(gi), () =>
        [
          `${paint('bold', gi.id)}${gi.paused ? paint('yellow', '  (paused)') : ''}`,
          `running  ${gi.running}`,
          `waiting  ${gi.waiting}`,
          `limit    ${gi.concurrency !== undefined ? `${gi.concurrency} (its own)` : limits.groupConcurrency !== undefined ? `${limits.groupConcurrency} (the queue's groupConcurrency)` : 'none'}`,
          `rate     ${gi.rateLimit !== undefined ? `${rateText(gi.rateLimit)} (its own)` : limits.groupRateLimit !== undefined ? `${rateText(limits.groupRateLimit)} (the queue's groupRateLimit)` : 'none'}`,
          `used     ${rateUseText(gi.rate, nowMs)}`,
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
    .description("give a group a concurrency limit or a rate limit of its own (none: the queue's groupConcurrency / groupRateLimit applies again)")
    .argument('<id>', 'the group id')
    .argument('[limit]', `most jobs of the group running at once: 1-${MAX_CONCURRENCY}, or none`)
    .option('--rate <max/window>', 'most tokens its jobs take in any window (ms, or with a unit: 10/60000, 10/1m), or none')
    .option('--new-queue', 'the queue holds nothing yet: set it up before its first job')
    .action(async (id: string, n: string | undefined, o: { rate?: string; newQueue?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const group = groupArg(id);
      if (n === undefined && o.rate === undefined) throw new UsageError('give a limit, --rate or both (a number or max/perMs, or none)');
      const change: { concurrency?: number | null; rateLimit?: RateLimit | null } = {};
      if (n !== undefined) change.concurrency = limitArg('limit', n);
      if (o.rate !== undefined) change.rateLimit = rateArg('--rate', o.rate);
      const { changed, limits } = await withQueue(g, async (q) => {
        await mustBeKnown(g, q, o.newQueue);
        const changed = await q.groups.setLimits(group, change);
        return { changed, limits: change.concurrency === null || change.rateLimit === null ? await q.limits() : undefined };
      });
      output(g, { id: group, ...change, changed }, () => {
        const said: string[] = [];
        const { concurrency, rateLimit } = change;
        if (concurrency !== undefined) {
          const applies = `the queue's groupConcurrency applies: ${limitText(limits?.groupConcurrency)}`;
          if (concurrency !== null) said.push(changed ? `limit ${concurrency}` : `already had limit ${concurrency}`);
          else said.push(changed ? `own limit removed (${applies})` : `had no limit of its own (${applies})`);
        }
        if (rateLimit !== undefined) {
          const applies = `the queue's groupRateLimit applies: ${rateText(limits?.groupRateLimit)}`;
          if (rateLimit !== null) said.push(changed ? `rate limit ${rateText(rateLimit)}` : `already had rate limit ${rateText(rateLimit)}`);
          else said.push(changed ? `own rate limit removed (${applies})` : `had no rate limit of its own (${applies})`);
        }
        return `group ${group} of ${g.queue}${changed ? ':' : ''} ${said.join(', ')}`;
      });
      if (!changed) notChanged();
    });

  const limits = program
    .command('limits')
    .description(
      "the queue's limits: concurrency (the whole queue), groupConcurrency (each group), rateLimit and groupRateLimit (tokens per window), and the rate limiter now",
    )
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const { l, rate, unknown } = await withQueue(g, async (q) => {
        const [l, rate] = await Promise.all([q.limits(), q.rateStatus()]);
        return { l, rate, unknown: noLimit(l) && !(await queueKnown(q)) };
      });
      output(g, { ...limitsJson(l), rateStatus: rateStatusJson(rate) }, () => limitsText(paint('bold', g.queue), l, rate));
      if (unknown) unknownQueueHint(g);
    });

  writes(limits.command('set'))
    .description("set or remove the queue's limits (a limit not given stays as it is)")
    .option('--concurrency <n>', `most jobs of the queue running at once: 1-${MAX_CONCURRENCY}, or none`)
    .option('--group-concurrency <n>', `most jobs of any one group running at once (unless it has its own limit): 1-${MAX_CONCURRENCY}, or none`)
    .option(
      '--rate <max/window>',
      "most tokens the queue's jobs take in any window (a job takes 1, or its cost), the window in ms or with a unit: 100/1000, 100/1s, 6000/1m, or none",
    )
    .option('--group-rate <max/window>', 'most tokens any one group takes in any window (unless it has its own rate limit), e.g. 10/60000 or 10/1m, or none')
    .option('--new-queue', 'the queue holds nothing yet: set it up before its first job')
    .action(async (o: { concurrency?: string; groupConcurrency?: string; rate?: string; groupRate?: string; newQueue?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      if (o.concurrency === undefined && o.groupConcurrency === undefined && o.rate === undefined && o.groupRate === undefined)
        throw new UsageError('give --concurrency, --group-concurrency, --rate, --group-rate or several (a number or max/perMs, or none)');
      // Every value is checked before anything is written: a bad one beside good ones writes nothing.
      const change: { concurrency?: number | null; groupConcurrency?: number | null; rateLimit?: RateLimit | null; groupRateLimit?: RateLimit | null } = {};
      if (o.concurrency !== undefined) change.concurrency = limitArg('--concurrency', o.concurrency);
      if (o.groupConcurrency !== undefined) change.groupConcurrency = limitArg('--group-concurrency', o.groupConcurrency);
      if (o.rate !== undefined) change.rateLimit = rateArg('--rate', o.rate);
      if (o.groupRate !== undefined) change.groupRateLimit = rateArg('--group-rate', o.groupRate);
      const { changed, l } = await withQueue(g, async (q) => {
        await mustBeKnown(g, q, o.newQueue);
        const changed = await q.setLimits(change);
        return { changed, l: await q.limits() };
      });
      output(g, { changed, ...limitsJson(l) }, () => limitsText(changed ? `set the limits of ${g.queue}` : `the limits of ${g.queue} already were so`, l));
      if (!changed) notChanged();
    });
}

/** The queue's limits under a title line, one a line, with what each bounds; with `rate`, the limiter's figures now. */
function limitsText(title: string, l: QueueLimitsInfo, rate?: RateStatus): string {
  const value = (v: string) => v.padEnd(8);
  return [
    title,
    `concurrency       ${value(limitText(l.concurrency))}  most jobs of the queue running at once`,
    `groupConcurrency  ${value(limitText(l.groupConcurrency))}  most jobs of one group running at once, unless it has a limit of its own`,
    `rateLimit         ${value(rateText(l.rateLimit))}  most tokens (max/perMs) the queue's jobs take in any window of perMs ms`,
    `groupRateLimit    ${value(rateText(l.groupRateLimit))}  most tokens (max/perMs) one group takes in any window, unless it has a rate limit of its own`,
    ...(rate ? [`rate now          ${rateUseText(rate.queue, rate.nowMs)}; ${rate.groupsHeld} group${rate.groupsHeld === 1 ? '' : 's'} held back`] : []),
  ].join('\n');
}
