/** `delayq import --from-bullmq <queue>`: argument parsing and output for importFromBullmq. */
import type { Command } from 'commander';
import { type BullmqImportReport, BullmqImportError, importFromBullmq } from '../../import/bullmq.js';
import { globals, output, paint, storeUrl, withQueue, writes } from '../context.js';
import { CliError, EXIT, UsageError, warn } from '../errors.js';
import { type Progress, startProgress } from '../progress.js';

const PRIORITY_NOTE = {
  negated: "priorities: BullMQ's p (lower first) became delayq's -p (higher first), none stays 0: the order is BullMQ's",
  ranked: "priorities: BullMQ's p (lower first) became -(its rank among the imported priorities), none stays 0: the order is BullMQ's",
};

function summary(r: BullmqImportReport, from: string, into: string): string {
  const f = r.found;
  const lines = [`found in BullMQ ${from}: ${f.delayed} delayed, ${f.waiting} waiting, ${f.prioritized} prioritized, ${f.failed} failed`];
  if (r.dryRun) {
    const readable = f.delayed + f.waiting + f.prioritized + f.failed - r.skipped.length;
    lines.push(`dry run: ${readable} jobs would be imported into delayq queue ${into}, ${r.skipped.length} skipped; nothing was written`);
  } else {
    lines.push(`${paint('green', 'imported')} ${r.imported} jobs into delayq queue ${into}, ${r.existing} existed already, ${r.skipped.length} skipped`);
    if (r.removed > 0) lines.push(`removed ${r.removed} jobs from BullMQ (--move)`);
  }
  lines.push(PRIORITY_NOTE[r.priorities]);
  return lines.join('\n');
}

export function importCommand(program: Command): void {
  writes(program.command('import'))
    .description("copy a BullMQ queue's delayed, waiting and prioritized jobs (and failed ones with --failed) into a delayq queue")
    .requiredOption('--from-bullmq <queue>', 'the BullMQ queue to read')
    .option('--bullmq-prefix <prefix>', "BullMQ's key prefix", 'bull')
    .option('--from-url <url>', "the BullMQ queue's Redis, when it is not delayq's (--redis)")
    .option('--failed', 'import the failed jobs too (due now, with their attempts back, as job.retry() does)')
    .option('--dry-run', 'count the jobs per state and write nothing')
    .option('--move', 'remove each job from BullMQ once delayq holds it (safe to run again after a crash)')
    .option('--force', 'import even while BullMQ workers are connected to the queue')
    .addHelpText(
      'after',
      `
The delayq queue is --queue when given, else the BullMQ queue's name. Ids, names, data, due
times, attempts and priorities are kept; BullMQ priority p (lower first) becomes -p in delayq
(higher first), so the order is kept. Running it again adds nothing twice.

Examples:
  $ delayq import --from-bullmq orders --dry-run
  $ delayq import --from-bullmq orders --failed
  $ delayq import --from-bullmq orders --from-url redis://old-redis:6379 --redis redis://new-redis:6379 --move`,
    )
    .action(async (o: Record<string, string | boolean | undefined>, cmd: Command) => {
      const g = globals(cmd);
      const bullQueue = o.fromBullmq as string;
      // The global --queue has a default: only one typed on the command line names the target.
      const queueGiven = cmd.parent?.getOptionValueSource('queue') === 'cli' || cmd.getOptionValueSource('queue') === 'cli';
      const into = queueGiven ? g.queue : bullQueue;
      const target = storeUrl(g);
      const from = (o.fromUrl as string | undefined) ?? target ?? 'redis://127.0.0.1:6379';
      if (from.startsWith('memory:')) throw new UsageError('a BullMQ queue lives on Redis: give --from-url redis://… (delayq is on memory://)');
      const prefix = o.bullmqPrefix as string;
      let bar: Progress | undefined;
      const report = await withQueue({ ...g, queue: into }, async (q) => {
        try {
          return await importFromBullmq(q, {
            queue: bullQueue,
            from,
            bullmqPrefix: prefix,
            failed: Boolean(o.failed),
            dryRun: Boolean(o.dryRun),
            move: Boolean(o.move),
            force: Boolean(o.force),
            onProgress: (done, total) => {
              bar ??= startProgress({ label: 'importing', total, unit: 'jobs' });
              bar.set(done);
            },
          });
        } catch (err) {
          if (err instanceof BullmqImportError && err.reason === 'not-found') {
            throw new UsageError(err.message, `check the name and --bullmq-prefix (now ${JSON.stringify(prefix)}); nothing was written`);
          }
          if (err instanceof BullmqImportError)
            throw new CliError(err.message, EXIT.error, 'stop them (or pass --force to import anyway); nothing was written');
          throw err;
        } finally {
          bar?.done();
        }
      });
      for (const s of report.skipped) warn(`skipped BullMQ job ${JSON.stringify(s.id)} (${s.state}): ${s.reason}`);
      if (report.workers.length > 0) warn(`${report.workers.length} BullMQ worker(s) connected to ${JSON.stringify(bullQueue)}: ${report.workers.join(', ')}`);
      output(g, { ...report, queue: into, from: `${prefix}:${bullQueue}` }, () => summary(report, `${prefix}:${bullQueue}`, into));
    });
}
