/**
 * Seeing what a queue holds and cleaning it up: queues, jobs ls, jobs find, workers, drain,
 * obliterate. Every listing is one bounded library call per page; destructive verbs want --yes.
 */
import type { Command } from 'commander';
import { listQueues } from '../../queue.js';
import { LIST_STATES, type JobInfo, type ListState, type QueueStats } from '../../types.js';
import { describeHeld } from '../../store/held.js';
import { jobsWithError } from '../error-filter.js';
import { commandLine, DEFAULT_PREFIX, globals, instant, ms, upcoming, numberOption, openCliStore, output, paint, when, withQueue, writes } from '../context.js';
import { notChanged, UsageError } from '../errors.js';
import { table } from '../table.js';
import { getCommand, queueKnown } from './job-ops.js';

function firstLine(text: string | undefined): string {
  return (text ?? '').split('\n')[0]!;
}

function short(value: unknown, max = 60): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** One line per job, with what matters in its state. */
function jobLine(j: JobInfo<unknown>, now: number): string {
  const parts = [paint('bold', j.id)];
  if (j.name !== undefined) parts.push(paint('cyan', `[${j.name}]`));
  if (j.state === 'scheduled') parts.push(j.ready ? paint('yellow', `due ${ms(now - j.dueAtMs)} ago`) : `due in ${ms(j.dueAtMs - now)} (${when(j.dueAtMs)})`);
  if (j.state === 'active') {
    if (j.runningSinceMs !== undefined) {
      const ran = Math.max(0, now - j.runningSinceMs);
      const over = j.timeoutMs !== undefined && ran > j.timeoutMs;
      parts.push(over ? paint('yellow', `running ${ms(ran)}, past its ${ms(j.timeoutMs)} timeout`) : `running ${ms(ran)}`);
    }
    parts.push(`lease till ${when(j.leaseExpiresAtMs)}`, `worker ${j.workerId ?? '—'}`);
  }
  if (j.state === 'dead') parts.push(`died ${when(j.finishedAtMs)}`, paint('red', firstLine(j.lastError)));
  if (j.state === 'completed') parts.push(`finished ${when(j.finishedAtMs)}`, `result ${short(j.result, 40)}`);
  if (j.attempt > 0) parts.push(`attempt ${j.attempt}${j.maxAttempts ? `/${j.maxAttempts}` : ''}`);
  if (j.progress !== undefined) parts.push(`progress ${short(j.progress, 30)}`);
  parts.push(paint('dim', short(j.data)));
  return parts.join('  ');
}

/** A --limit: a whole number from 1 to max. */
export function limitOption(value: string | undefined, max: number): number | undefined {
  const n = numberOption('--limit', value);
  if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > max)) throw new UsageError(`--limit must be a whole number from 1 to ${max} (got ${value})`);
  return n;
}

/**
 * The queues in trouble first, as the dashboard's overview orders them: jobs due and no live worker,
 * then the longest wait of a due job (whatever holds it), then the most dead; alike, by name.
 */
export function troubleFirst<T extends { name: string; stats: QueueStats }>(rows: T[]): T[] {
  const key = (s: QueueStats) => [s.ready > 0 && s.workers === 0 ? 1 : 0, s.oldestDueAgeMs ?? 0, s.dead];
  return [...rows].sort((a, b) => {
    const ka = key(a.stats);
    const kb = key(b.stats);
    for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return kb[i]! - ka[i]!;
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  });
}

export function inspectCommands(program: Command): void {
  program
    .command('queues')
    .description('the queues under the prefix, with their counts and live workers')
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const { store, owned } = openCliStore(g);
      const rows = troubleFirst(await listQueues({ store }).finally(() => owned && store.close()));
      output(g, rows, () =>
        rows.length === 0
          ? 'no queues yet (a queue is listed once a job is added to it or a worker runs on it)'
          : rows
              .map(
                ({ name, stats: s }) =>
                  `${paint('bold', name.padEnd(24))} scheduled ${String(s.scheduled).padStart(8)}  ready ${String(s.ready).padStart(7)}  upcoming ${String(upcoming(s)).padStart(7)}  active ${String(s.active).padStart(6)}  dead ${String(s.dead).padStart(6)}${s.heldJobs > 0 ? `  held ${s.heldJobs}` : ''}  completed ${String(s.completed).padStart(6)}  workers ${s.workers}${s.oldestDueAgeMs !== undefined ? `  oldest wait ${ms(s.oldestDueAgeMs)}` : ''}${s.ready > 0 && s.workers === 0 ? paint('red', '  (no live worker)') : ''}${s.paused ? paint('yellow', '  paused') : ''}${describeHeld({ ...s.held, queuePaused: false }).length > 0 ? paint('yellow', `  held: ${describeHeld({ ...s.held, queuePaused: false }).join(' · ')}`) : ''}`,
              )
              .join('\n'),
      );
    });

  const jobs = program.command('jobs').description('list, find and show jobs');
  getCommand(jobs);
  jobs
    .command('ls')
    .description(`one page of the jobs in a state (${LIST_STATES.join(', ')}; upcoming = scheduled: not yet due)`)
    .option('--state <state>', `${LIST_STATES.join(' | ')} | upcoming`, 'scheduled')
    .option('--limit <n>', 'jobs per page (1-1000)', '20')
    .option('--cursor <cursor>', 'the cursor the previous page printed')
    .option('--name <name>', 'only jobs of this name (add --name), reading at most --budget jobs of the state')
    .option('--budget <n>', 'with --name: most jobs to read (default 10000)')
    .action(async (o: { state: string; limit: string; cursor?: string; name?: string; budget?: string }, cmd: Command) => {
      const g = globals(cmd);
      // The listing named `scheduled` holds the jobs not yet due: `upcoming` is its other name.
      if (o.state === 'upcoming') o.state = 'scheduled';
      // Held jobs (docs/flows.md) are not kept in a listing of their own.
      if (o.state === 'held') throw new UsageError('held jobs are not listed: `delayq stats` counts them, `delayq get <id>` shows one and what it waits for');
      if (!LIST_STATES.includes(o.state as ListState))
        throw new UsageError(`--state must be one of ${LIST_STATES.join(', ')} or upcoming (got ${JSON.stringify(o.state)})`);
      const limit = limitOption(o.limit, 1000)!;
      if (o.budget !== undefined && o.name === undefined) throw new UsageError('--budget goes with --name (the most jobs a listing by name reads)');
      const budget = o.budget === undefined ? undefined : numberOption('--budget', o.budget);
      const [page, now] = await withQueue(
        g,
        async (q) => [await q.jobs.list({ state: o.state as ListState, limit, cursor: o.cursor, name: o.name, budget }), (await q.stats()).nowMs] as const,
      );
      const named = o.name === undefined ? [] : ['--name', o.name, ...(budget === undefined ? [] : ['--budget', budget])];
      output(g, page, () =>
        [
          o.name === undefined
            ? `${page.total} ${page.state === 'scheduled' ? 'upcoming (scheduled, not yet due)' : page.state === 'ready' ? 'ready (due)' : page.state}${page.jobs.length < page.total ? `, showing ${page.jobs.length}` : ''}`
            : `${page.jobs.length} ${page.state} named ${JSON.stringify(o.name)} (read ${page.scanned} of ${page.total}${page.cursor ? '' : ', to the end'})`,
          ...page.jobs.map((j) => jobLine(j, now)),
          ...(page.cursor
            ? [paint('dim', `next page: ${commandLine(g, ['jobs', 'ls', '--state', page.state, '--limit', limit, ...named, '--cursor', page.cursor])}`)]
            : []),
        ].join('\n'),
      );
    });

  jobs
    .command('find')
    .description('find jobs by text in their id or data, by a value at a JSON path, and/or by name')
    .argument('[text]', 'text to look for in the id or the data (as JSON text)')
    .option('--path <path>', 'a path into the data, like customer.email or items[0].sku (with --equals)')
    .option('--equals <json>', 'the value at --path, as JSON (a bare word is a string)')
    .option('--name <name>', 'only jobs of this name (add --name), alone or with text or --path')
    .option('--limit <n>', 'most matches', '20')
    .option('--budget <n>', 'most jobs to read', '10000')
    .option('--cursor <cursor>', 'go on from where the previous search stopped')
    .option('--error <text>', 'dead jobs (or --state completed) whose last error contains this text: all of them counted, the first --limit shown')
    .option('--state <state>', 'with --error: dead or completed', 'dead')
    .action(
      async (
        text: string | undefined,
        o: { path?: string; equals?: string; name?: string; limit: string; budget: string; cursor?: string; error?: string; state: string },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        if (o.error !== undefined) {
          if (text !== undefined || o.path !== undefined || o.name !== undefined || o.cursor !== undefined)
            throw new UsageError('--error goes alone (with --state and --limit)');
          if (o.state !== 'dead' && o.state !== 'completed')
            throw new UsageError(`--state must be dead or completed with --error (got ${JSON.stringify(o.state)})`);
          const set = o.state;
          const limit = limitOption(o.limit, 1000)!;
          const [found, now] = await withQueue(g, async (q) => [await jobsWithError(q, set, o.error!, limit), (await q.stats()).nowMs] as const);
          const n = found.ids.length;
          output(g, { count: n, jobs: found.first }, () =>
            [
              `${n} ${set} ${n === 1 ? 'job' : 'jobs'} whose last error contains ${JSON.stringify(o.error)}${n > found.first.length ? ` (the first ${found.first.length} below)` : ''}`,
              ...found.first.map((j) => jobLine(j, now)),
              ...(n > 0 && set === 'dead' ? [paint('dim', `retry them: ${commandLine(g, ['dead', 'retry', '--error', o.error!, '--expect', n])}`)] : []),
            ].join('\n'),
          );
          return;
        }
        if (text !== undefined && o.path !== undefined) throw new UsageError('give text, or --path with --equals, not both');
        if (text === undefined && o.path === undefined && o.name === undefined) throw new UsageError('give text, --path with --equals, or --name');
        if (o.path !== undefined && o.equals === undefined) throw new UsageError('--path needs --equals');
        let equals: unknown;
        if (o.equals !== undefined) {
          try {
            equals = JSON.parse(o.equals);
          } catch {
            equals = o.equals;
          }
        }
        const limit = limitOption(o.limit, 1000)!;
        const budget = numberOption('--budget', o.budget)!;
        const query = {
          ...(text !== undefined ? { text } : o.path !== undefined ? { path: o.path, equals } : {}),
          ...(o.name !== undefined ? { name: o.name } : {}),
        };
        const [r, now] = await withQueue(
          g,
          async (q) => [await q.jobs.search({ ...query, limit, budget, cursor: o.cursor }), (await q.stats()).nowMs] as const,
        );
        output(g, r, () =>
          [
            `${r.jobs.length} found; searched ${r.scanned.toLocaleString('en')} of ${r.total.toLocaleString('en')} jobs`,
            ...r.jobs.map((j) => `${jobLine(j, now)}  ${paint('dim', j.state)}`),
            ...(r.cursor
              ? [
                  paint(
                    'dim',
                    `search on: ${commandLine(g, [
                      'jobs',
                      'find',
                      ...(text !== undefined ? [text] : o.path !== undefined ? ['--path', o.path, '--equals', o.equals!] : []),
                      ...(o.name !== undefined ? ['--name', o.name] : []),
                      '--limit',
                      limit,
                      '--budget',
                      budget,
                      '--cursor',
                      r.cursor,
                    ])}`,
                  ),
                ]
              : []),
          ].join('\n'),
        );
        if (r.jobs.length === 0) notChanged();
      },
    );

  program
    .command('workers')
    .description('the live workers of the queue (heartbeat within the last 30 s)')
    .action(async (_o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const [list, s] = await withQueue(g, async (q) => [await q.workers(), await q.stats()] as const);
      output(g, list, () => {
        if (list.length === 0) return s.ready > 0 ? paint('red', `no live worker, and ${s.ready} jobs are due`) : 'no live worker';
        return list
          .map(
            (w) =>
              `${paint('bold', w.id)}  ${w.host} pid ${w.pid}  running ${w.running}/${w.concurrency}  up ${ms(s.nowMs - w.startedAtMs)}  seen ${ms(s.nowMs - w.lastSeenAtMs)} ago  ${w.language || '?'} v${w.version}`,
          )
          .join('\n');
      });
    });

  writes(program.command('shards'))
    .description('the shards of the queue (hash tags a cluster spreads over its nodes), each with its node, counts and lag, and old shards still draining')
    .option('--set <n>', 'reshard: spread new jobs over n shards from now on; workers drain the old ones (writes)')
    .action(async (o: { set?: string }, cmd: Command) => {
      const g = globals(cmd);
      const n = numberOption('--set', o.set);
      if (n !== undefined && (!Number.isInteger(n) || n < 1 || n > 256)) throw new UsageError(`--set must be a whole number from 1 to 256 (got ${o.set})`);
      const r = await withQueue(g, async (q) => {
        const resharded = n === undefined ? undefined : await q.reshard(n);
        const [status, perShard] = await Promise.all([q.shards(), q.shardStats()]);
        return { ...(resharded ? { resharded } : {}), ...status, perShard };
      });
      output(g, r, () =>
        [
          ...(r.resharded
            ? [r.resharded.changed ? `resharded ${g.queue}: ${r.resharded.from} → ${r.resharded.to} shards` : `${g.queue} already has ${r.shards} shards`]
            : []),
          `${paint('bold', g.queue)}: ${r.shards} shard${r.shards === 1 ? '' : 's'}${r.names.length > 1 || r.names[0] !== g.queue ? `  ${r.names.join(' ')}` : ' (unsharded)'}`,
          ...r.draining.map((d) => `  draining ${d.name}: ${d.jobs} jobs left`),
          '',
          ...table(
            ['SHARD', 'ROLE', 'NODE', 'SCHEDULED', 'READY', 'UPCOMING', 'ACTIVE', 'DEAD', 'COMPLETED', 'LAG'],
            r.perShard.map((f) => [
              f.name,
              f.role,
              f.node ?? '-',
              String(f.scheduled),
              String(f.ready),
              String(upcoming(f)),
              String(f.active),
              String(f.dead),
              String(f.completed),
              f.oldestDueAgeMs === undefined ? '-' : ms(f.oldestDueAgeMs),
            ]),
          ),
        ].join('\n'),
      );
      if (r.resharded && !r.resharded.changed) notChanged();
    });

  writes(program.command('drain'))
    .description('remove every scheduled job (or those due before a time); active, dead and completed jobs stay')
    .option('--due-before <time>', 'only jobs due before this time: ISO 8601 or epoch ms')
    .option('--yes', 'really remove them')
    .action(async (o: { dueBefore?: string; yes?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const dueBefore = instant('--due-before', o.dueBefore);
      if (!o.yes) {
        const s = await withQueue(g, (q) => q.stats());
        throw new UsageError(
          `drain removes ${dueBefore === undefined ? `all ${s.scheduled} scheduled (${s.ready} ready, ${upcoming(s)} upcoming)` : 'the waiting'} jobs of ${g.queue}${dueBefore === undefined ? '' : ` due before ${when(dueBefore)}`}: add --yes`,
        );
      }
      const r = await withQueue(g, (q) => q.drain(dueBefore === undefined ? {} : { dueBefore }));
      output(g, r, () => `drained ${r.removed} waiting jobs from ${g.queue}`);
      if (r.removed === 0) notChanged();
    });

  writes(program.command('obliterate'))
    .description('remove everything of the queue: jobs in every state, settings, schedules, events')
    .option('--force', 'even while jobs are active (their acks will find nothing)')
    .option('--yes', 'really remove it')
    .action(async (o: { force?: boolean; yes?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      if (!o.yes) throw new UsageError(`obliterate removes every job and setting of ${g.queue}: add --yes`);
      const { r, known } = await withQueue(g, async (q) => {
        // Whether the name was ever used, read first: a typo must not read as "obliterated".
        const known = await queueKnown(q);
        return { r: await q.obliterate({ force: Boolean(o.force) }), known };
      });
      const c = r.counts;
      output(g, r, () =>
        !known
          ? `nothing to obliterate: no queue ${g.queue} under prefix ${g.prefix ?? DEFAULT_PREFIX} (is the name right? delayq queues lists them)`
          : r.removed
            ? `obliterated ${g.queue}: ${c.scheduled} scheduled, ${c.active} active, ${c.dead} dead, ${c.completed} completed`
            : `not obliterated: ${c.active} jobs of ${g.queue} are active (wait, or add --force)`,
      );
      if (!r.removed || !known) notChanged();
    });
}
