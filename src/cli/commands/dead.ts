import type { Command } from 'commander';
import { commandLine, duration, globals, numberOption, output, paint, when, withQueue, writes } from '../context.js';
import { confirmCount, expectOption, jobsWithError } from '../error-filter.js';
import { notChanged, UsageError } from '../errors.js';

export function deadCommands(program: Command): void {
  const dead = program.command('dead').description('the dead set: list, retry, purge');

  dead
    .command('list')
    .description('dead jobs, oldest death first')
    .option('--offset <n>', 'skip this many', '0')
    .option('--limit <n>', 'show at most this many', '20')
    .action(async (o: { offset: string; limit: string }, cmd: Command) => {
      const g = globals(cmd);
      const page = await withQueue(g, (q) => q.dead.list({ offset: numberOption('--offset', o.offset)!, limit: numberOption('--limit', o.limit)! }));
      output(g, page, () =>
        [
          `${page.total} dead`,
          ...page.jobs.map(
            (j) => `${paint('bold', j.id)}  died ${when(j.diedAtMs)}  attempt ${j.attempt}  ${paint('red', (j.lastError ?? '').split('\n')[0]!)}`,
          ),
        ].join('\n'),
      );
    });

  writes(dead.command('retry'))
    .description('put dead jobs back, due now, with fresh attempts')
    .argument('[ids...]')
    .option('--all', 'every dead job')
    .option('--error <text>', 'the dead jobs whose last error contains this text (with --expect)')
    .option('--expect <n>', 'with --error: the number of jobs you confirm; refused when more match')
    .action(async (ids: string[], o: { all?: boolean; error?: string; expect?: string }, cmd: Command) => {
      const g = globals(cmd);
      if (o.error !== undefined) {
        if (o.all || ids.length > 0) throw new UsageError('give ids, --all or --error, one of them');
        const expect = expectOption(o.expect);
        const n = await withQueue(g, async (q) => {
          const { ids: matched } = await jobsWithError(q, 'dead', o.error!);
          confirmCount(matched.length, expect, (m) => commandLine(g, ['dead', 'retry', '--error', o.error!, '--expect', m]));
          return matched.length === 0 ? 0 : q.dead.retry(matched);
        });
        output(g, { retried: n }, () => `retried ${n} whose last error contains ${JSON.stringify(o.error)}`);
        if (n === 0) notChanged();
        return;
      }
      if (o.expect !== undefined) throw new UsageError('--expect goes with --error');
      if (!o.all && ids.length === 0) throw new UsageError('give ids, --all or --error <text>');
      if (o.all && ids.length > 0) throw new UsageError('give ids or --all, not both');
      const unique = [...new Set(ids)];
      const { n, skipped } = await withQueue(g, async (q) => {
        // Where the ids not dead are, read first (a retried job is scheduled after), to name them.
        const before = o.all ? [] : await Promise.all(unique.map((id) => q.get(id)));
        const n = await q.dead.retry(o.all ? { all: true } : unique);
        const skipped = unique.flatMap((id, i) => (before[i]?.state === 'dead' ? [] : [{ id, state: before[i]?.state }]));
        return { n, skipped };
      });
      const asked = unique.length;
      output(g, { retried: n }, () =>
        o.all || n === asked
          ? `retried ${n}`
          : [`retried ${n} of ${asked}`, ...skipped.map((s) => `not retried: ${s.state ? `${s.id} is ${s.state}` : `no job ${s.id}`}`)].join('\n'),
      );
      // Not everything asked for was dead (or, with --all, nothing was): see "not changed".
      if (o.all ? n === 0 : n < asked) notChanged();
    });

  writes(dead.command('purge'))
    .description('delete dead jobs for good')
    .argument('[ids...]')
    .option('--all', 'every dead job')
    .option('--older-than <duration>', 'jobs that died longer ago than this')
    .option('--error <text>', 'the dead jobs whose last error contains this text (with --expect)')
    .option('--expect <n>', 'with --error: the number of jobs you confirm; refused when more match')
    .action(async (ids: string[], o: { all?: boolean; olderThan?: string; error?: string; expect?: string }, cmd: Command) => {
      const g = globals(cmd);
      const modes = [ids.length > 0, Boolean(o.all), o.olderThan !== undefined, o.error !== undefined].filter(Boolean).length;
      if (modes !== 1) throw new UsageError('give exactly one of: ids, --all, --older-than, --error');
      if (o.error !== undefined) {
        const expect = expectOption(o.expect);
        const n = await withQueue(g, async (q) => {
          const { ids: matched } = await jobsWithError(q, 'dead', o.error!);
          confirmCount(matched.length, expect, (m) => commandLine(g, ['dead', 'purge', '--error', o.error!, '--expect', m]));
          return matched.length === 0 ? 0 : q.dead.purge(matched);
        });
        output(g, { purged: n }, () => `purged ${n} whose last error contains ${JSON.stringify(o.error)}`);
        if (n === 0) notChanged();
        return;
      }
      if (o.expect !== undefined) throw new UsageError('--expect goes with --error');
      const n = await withQueue(g, (q) =>
        q.dead.purge(o.all ? { all: true } : o.olderThan !== undefined ? { olderThanMs: duration('--older-than', o.olderThan)! } : ids),
      );
      const asked = new Set(ids).size;
      output(g, { purged: n }, () => (ids.length === 0 || n === asked ? `purged ${n}` : `purged ${n} of ${asked} (the others are not dead)`));
      if (ids.length === 0 ? n === 0 : n < asked) notChanged();
    });
}
