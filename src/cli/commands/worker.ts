import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import type { Handler, Handlers } from '../../worker.js';
import { Scheduler } from '../../schedules/scheduler.js';
import { Worker } from '../../worker.js';
import { WORKER_DEFAULTS } from '../../worker/defaults.js';
import { connectionOf, duration, globals, numberOption, paint } from '../context.js';
import { UsageError } from '../errors.js';

/**
 * Runs a handler module: its default export (or `handler` export) is called for each job, or its
 * `handlers` export (handlers by job name, Worker's Handlers) routes each job by its name. With
 * --isolation thread|process the module is loaded not here but in each thread or child process
 * of a pool (src/worker/isolation/).
 * SIGTERM/SIGINT close the worker gracefully: no new claims, running jobs finish (or are
 * handed back after --close-timeout), then the process exits 0.
 */
export function workerCommand(program: Command): void {
  program
    .command('worker')
    .description('run a handler module on the queue until SIGTERM/SIGINT')
    .requiredOption('--handler <module>', 'a JS module whose default export is (job) => result')
    .option('--concurrency <n>', 'handlers running at once', String(WORKER_DEFAULTS.concurrency))
    .option('--batch <n>', 'jobs claimed per round trip')
    .option('--lease <duration>', 'lease length', seconds(WORKER_DEFAULTS.leaseMs))
    .option('--attempts <n>', 'default hand-outs per job', String(WORKER_DEFAULTS.attempts))
    .option('--close-timeout <duration>', 'on SIGTERM, wait this long for running jobs', seconds(WORKER_DEFAULTS.closeTimeoutMs))
    .option('--schedules', "also run the queue's recurring-schedule scheduler in this process")
    .option('--isolation <kind>', 'run the handler in a pool of worker threads (thread) or child processes (process)')
    .option('--isolation-memory <mb>', 'with --isolation: heap cap of each thread or process, MB')
    .addHelpText(
      'after',
      `
Example:
  $ cat > cancel-order.mjs <<'JS'
  export default async (job) => { await shop.cancelIfUnpaid(job.data.orderId); };
  or handlers by job name (add --name), with an optional default:
  export const handlers = { 'send-email': sendEmail, charge, default: (job) => log(job) };
  JS
  $ delayq worker --queue order-timeouts --handler ./cancel-order.mjs --concurrency 50
  $ delayq worker --queue images --handler ./resize.mjs --isolation thread --concurrency 4`,
    )
    .action(async (o: Record<string, string>, cmd: Command) => {
      const g = globals(cmd);
      const isolation = isolationOption(o.isolation);
      if (o.isolationMemory !== undefined && !isolation) throw new UsageError('--isolation-memory needs --isolation thread or process');
      let handler: Handler<unknown> | Handlers<unknown> | string;
      if (isolation) {
        // The module is loaded by each thread or process, not here (its top level runs there).
        if (!existsSync(resolve(o.handler!))) throw new UsageError(`--handler ${o.handler}: no such file`);
        handler = resolve(o.handler!);
      } else {
        const mod = await loadHandlerModule(o.handler!);
        const h = (typeof mod.default === 'function' ? mod.default : (mod.handlers ?? mod.handler)) as Handler<unknown> | Handlers<unknown> | undefined;
        if (typeof h !== 'function' && (typeof h !== 'object' || h === null))
          throw new UsageError(`${o.handler} has no default export (or 'handler' export) that is a function, nor a 'handlers' export of handlers by job name`);
        handler = h;
      }
      const worker = new Worker<unknown>(g.queue, handler, {
        ...(isolation ? { isolation } : {}),
        ...(o.isolationMemory !== undefined ? { isolationMemoryMb: numberOption('--isolation-memory', o.isolationMemory)! } : {}),
        ...connectionOf(g),
        concurrency: numberOption('--concurrency', o.concurrency)!,
        ...(o.batch !== undefined ? { batch: numberOption('--batch', o.batch)! } : {}),
        leaseMs: duration('--lease', o.lease)!,
        attempts: numberOption('--attempts', o.attempts)!,
        closeTimeoutMs: duration('--close-timeout', o.closeTimeout)!,
      });
      const log = (line: string) => {
        if (g.json) return;
        process.stderr.write(`${line}\n`);
      };
      const json = (obj: object) => g.json && process.stdout.write(`${JSON.stringify(obj)}\n`);
      let done = 0;
      let failed = 0;
      worker.on('completed', (job) => {
        done++;
        json({ event: 'completed', id: job.id, attempt: job.attempt });
      });
      worker.on('failed', (job, err) => {
        failed++;
        json({ event: 'failed', id: job.id, attempt: job.attempt, error: String((err as Error)?.message ?? err) });
        log(`${paint('yellow', 'failed', process.stderr)} ${job.id} (attempt ${job.attempt}): ${String((err as Error)?.message ?? err)}`);
      });
      // With --json every event is a line on stdout, the outages and dead jobs too: a script
      // reading the stream must not learn less than a person reading stderr.
      worker.on('dead', (job, reason) => {
        json({ event: 'dead', id: job.id, ...('attempt' in job ? { attempt: job.attempt } : {}), reason: reason.split('\n')[0] });
        log(`${paint('red', 'dead', process.stderr)} ${job.id}: ${reason.split('\n')[0]}`);
      });
      worker.on('error', (err) => {
        json({ event: 'error', error: err.message });
        log(`${paint('red', 'error', process.stderr)}: ${err.message}`);
      });
      // The signals are taken before the worker says it is up: a supervisor that stops it as
      // soon as it reads the banner or 'started' must get the graceful close, not the default
      // action's kill (exit 143, jobs left leased until their leases run out).
      let scheduler: Scheduler | undefined;
      let stopping = false;
      const stopped = new Promise<void>((resolveStop) => {
        const stop = (signal: string) => {
          stopping = true;
          log(`${signal}: closing (running jobs finish or are handed back)…`);
          Promise.all([worker.close(), scheduler?.close()]).then(
            () => resolveStop(),
            () => resolveStop(),
          );
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      log(
        `${paint('green', 'worker', process.stderr)} on ${g.queue}: concurrency ${worker.concurrency}, lease ${worker.leaseMs} ms${isolation ? `, handler in a pool of ${isolation === 'thread' ? 'threads' : 'processes'}` : ''} (SIGTERM or Ctrl-C to stop)`,
      );
      const onSchedulerError = (err: Error) => {
        json({ event: 'error', source: 'scheduler', error: err.message });
        log(`scheduler error: ${err.message}`);
      };
      if (o.schedules && !stopping) scheduler = new Scheduler(g.queue, { ...connectionOf(g), onError: onSchedulerError });
      json({ event: 'started', queue: g.queue, pid: process.pid });
      await stopped;
      json({ event: 'stopped', completed: done, failed });
      log(`stopped: ${done} completed, ${failed} failed`);
      // A handler that ignored its abort signal may still be running; its job was handed back
      // (or its lease will run out), so nothing keeps the process.
      process.stdout.write('', () => process.exit(0));
    });
}

/** --isolation's value: thread, process, or none given. */
function isolationOption(value: string | undefined): 'thread' | 'process' | undefined {
  if (value === undefined) return undefined;
  if (value === 'thread' || value === 'process') return value;
  throw new UsageError(`--isolation must be thread or process (got ${JSON.stringify(value)})`);
}

/** A default in milliseconds as --help shows it, in the duration syntax the option takes (`30s`). */
function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : String(ms);
}

/** Imports the --handler module; a file that cannot be loaded is the user's to fix (exit 64), said with how. */
async function loadHandlerModule(path: string): Promise<{ default?: unknown; handler?: unknown; handlers?: unknown }> {
  try {
    return (await import(pathToFileURL(resolve(path)).href)) as { default?: unknown; handler?: unknown; handlers?: unknown };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && !existsSync(resolve(path))) throw new UsageError(`--handler ${path}: no such file`);
    if (code === 'ERR_UNKNOWN_FILE_EXTENSION' && /\.[cm]?tsx?$/.test(path)) {
      throw new UsageError(
        `--handler ${path}: Node ${process.versions.node} does not run TypeScript by itself`,
        `compile it to .js (tsc) and pass that, or run through a loader: node --import tsx "$(command -v delayq)" worker --handler ${path}`,
      );
    }
    throw new UsageError(`--handler ${path} cannot be loaded: ${(err as Error).message}`);
  }
}
