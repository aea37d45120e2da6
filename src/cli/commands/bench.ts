import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { CliError, EXIT } from '../errors.js';

const REPOSITORY = 'https://github.com/delayq/delayq';

/** Runs the benchmark (bench/run.ts, compiled beside the CLI in a source checkout). */
export function benchCommand(program: Command): void {
  const run = fileURLToPath(new URL('../../../bench/run.js', import.meta.url));
  // An installed package has no benchmark: the command is left out of --help there (and still
  // says where to find it when called).
  program
    .command('bench', { hidden: !existsSync(run) })
    .description('delayq beside BullMQ and a naive poller on a redis-server of its own (source checkout only)')
    .option('--quick', 'tiny sizes: a smoke run')
    .option('--only <scenarios>', 'load,low,dispatch,enqueue,cost,scale')
    .option('--systems <names>', 'delayq,bullmq,naive10,naive1000')
    .action(async (o: { quick?: boolean; only?: string; systems?: string }, cmd: Command) => {
      if (!existsSync(run))
        throw new CliError(
          'the benchmark ships with the source repository, not the package',
          EXIT.error,
          `git clone ${REPOSITORY}, then npm ci && npm run bench`,
        );
      const args = [run, ...(o.quick ? ['--quick'] : []), ...(o.only ? ['--only', o.only] : []), ...(o.systems ? ['--systems', o.systems] : [])];
      if (cmd.optsWithGlobals().json) args.push('--json');
      const child = spawn(process.execPath, args, { stdio: 'inherit' });
      process.exitCode = await new Promise<number>((r) => child.on('exit', (code) => r(code ?? 1)));
    });
}
