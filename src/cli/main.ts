#!/usr/bin/env node
/**
 * The delayq command line: a thin layer over the public API. Every command takes the global
 * options; every failure goes through fail() (errors.ts): `error:` and maybe `hint:` on
 * stderr, and an exit code from the documented table.
 */
import { Command } from 'commander';
import { VERSION } from '../version.js';
import { addCommand } from './commands/add.js';
import { benchCommand } from './commands/bench.js';
import { cronCommands } from './commands/cron.js';
import { deadCommands } from './commands/dead.js';
import { demoCommand } from './commands/demo.js';
import { eventsCommands } from './commands/events.js';
import { groupsCommands } from './commands/groups.js';
import { importCommand } from './commands/import.js';
import { inspectCommands } from './commands/inspect.js';
import { jobCommands } from './commands/job-ops.js';
import { historyCommand } from './commands/history.js';
import { monitorCommand } from './commands/monitor.js';
import { serveCommand } from './commands/serve.js';
import { workerCommand } from './commands/worker.js';
import { DEFAULT_PREFIX, warnIfEphemeral } from './context.js';
import { fail } from './errors.js';

export function buildProgram(): Command {
  const program = new Command('delayq')
    .version(VERSION)
    .description('Delayed jobs on Redis sorted sets: add, inspect and run them.')
    .option('-q, --queue <name>', 'queue name', 'default')
    .option('--redis <url>', 'redis://, rediss:// or memory:// (default: $REDIS_URL, else redis://127.0.0.1:6379)')
    .option('--prefix <prefix>', 'key prefix', DEFAULT_PREFIX)
    .option('--json', 'machine-readable output')
    .showHelpAfterError(false)
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .addHelpText(
      'after',
      `
Examples:
  $ delayq demo                                        # the order-timeout demo, no Redis needed
  $ delayq add '{"orderId":"123"}' --id order:123 --delay 30m --queue order-timeouts
  $ delayq cancel order:123 --queue order-timeouts
  $ delayq stats --queue order-timeouts --json
  $ delayq worker --queue order-timeouts --handler ./cancel-order.mjs
  $ delayq events follow --queue order-timeouts --json
  $ delayq import --from-bullmq order-timeouts --dry-run  # count a BullMQ queue's jobs before moving them
  $ delayq serve                                       # dashboard and HTTP API on http://127.0.0.1:8787/

Exit codes: 0 ok, 1 error (e.g. Redis unreachable), 2 not found / not changed, 64 usage
(bad command line or input; nothing was written). Errors: "error: …" on stderr, maybe "hint: …".`,
    );
  addCommand(program);
  jobCommands(program);
  historyCommand(program);
  deadCommands(program);
  inspectCommands(program);
  groupsCommands(program);
  importCommand(program);
  monitorCommand(program);
  cronCommands(program);
  eventsCommands(program);
  workerCommand(program);
  serveCommand(program);
  demoCommand(program);
  benchCommand(program);
  program.hook('postAction', (_program, actionCommand) => warnIfEphemeral(actionCommand));
  return program;
}

/** Every command, the program included, so each can name itself in a usage error. */
function* allCommands(cmd: Command): Generator<Command> {
  yield cmd;
  for (const sub of cmd.commands) yield* allCommands(sub);
}

const program = buildProgram();
// The command whose parsing or action failed: its --help is what the hint points at.
let failedIn: Command = program;
for (const cmd of allCommands(program)) {
  cmd.exitOverride((err) => {
    failedIn = cmd;
    throw err;
  });
}
program.hook('preAction', (_program, actionCommand) => {
  failedIn = actionCommand;
});

try {
  await program.parseAsync(process.argv);
} catch (err) {
  fail(err, failedIn);
}
