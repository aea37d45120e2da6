import type { Command } from 'commander';
import { serveDashboard } from '../../server/serve.js';
import { addressFromHeader } from '../../server/wrong-token-cost.js';
import { connectionOf, globals, numberOption, paint, withQueue } from '../context.js';
import { CliError, EXIT, UsageError } from '../errors.js';

/**
 * Runs the HTTP API and the dashboard until SIGTERM/SIGINT. The token comes from --token or,
 * better (it stays out of `ps`), from DELAYQ_TOKEN.
 */
export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run the web dashboard and HTTP API (binds 127.0.0.1 unless told otherwise)')
    .option('--port <n>', 'port to listen on', '8787')
    .option('--host <address>', 'address to listen on; anything but loopback needs --token', '127.0.0.1')
    .option('--queues <names...>', 'show only these queues (default: every queue under the prefix)')
    .option('--read-only', 'hide every action and refuse every write')
    .option('--token <secret>', 'require this bearer token / login (default: $DELAYQ_TOKEN)')
    .option('--base-path <path>', 'serve under this path, e.g. /delayq behind a proxy')
    .option('--max-bulk <n>', 'most jobs one bulk action may touch', '1000')
    .option(
      '--client-ip-header <name>',
      "behind a reverse proxy: the header it sets to the client's address (e.g. x-real-ip), so a wrong token costs each client apart",
    )
    .addHelpText(
      'after',
      `
Examples:
  $ delayq serve --redis redis://127.0.0.1:6379            # http://127.0.0.1:8787/
  $ DELAYQ_TOKEN=$(openssl rand -hex 24) delayq serve --host 0.0.0.0 --read-only

Every write is audited: one JSON line on stderr (who, what, which queue, how many).`,
    )
    .action(async (o: Record<string, string | string[] | boolean | undefined>, cmd: Command) => {
      const g = globals(cmd);
      const token = (o.token as string | undefined) ?? process.env.DELAYQ_TOKEN ?? undefined;
      // Redis first: a dashboard that starts on a wrong address answers 503 to every page.
      await withQueue(g, (q) => q.store.queues());
      const port = numberOption('--port', o.port as string)!;
      let running: Awaited<ReturnType<typeof serveDashboard>>;
      try {
        running = await serveDashboard({
          ...connectionOf(g),
          port,
          host: o.host as string,
          queues: o.queues as string[] | undefined,
          readOnly: o.readOnly === true,
          token: token === '' ? undefined : token,
          basePath: o.basePath as string | undefined,
          maxBulk: numberOption('--max-bulk', o.maxBulk as string)!,
          clientAddress: o.clientIpHeader ? addressFromHeader(o.clientIpHeader as string) : undefined,
        });
      } catch (err) {
        if (err instanceof TypeError) throw new UsageError(err.message);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE')
          throw new CliError(`port ${port} on ${o.host} is in use`, EXIT.error, 'pick another with --port (0 takes a free one), or stop what listens there');
        if (code === 'EACCES')
          throw new CliError(`not allowed to listen on port ${port} of ${o.host}`, EXIT.error, 'ports below 1024 need privileges: pick one above with --port');
        if (code === 'EADDRNOTAVAIL') throw new UsageError(`${o.host} is not an address of this machine (--host)`);
        throw err;
      }
      // The signals are taken before the line that says the server is up: a supervisor that
      // stops it as soon as it reads that line must find the close in place (a SIGTERM before
      // it would kill the process outright: exit 143, seen under load).
      const stopped = new Promise<void>((resolve) => {
        process.once('SIGTERM', () => resolve());
        process.once('SIGINT', () => resolve());
      });
      const note = [o.readOnly ? 'read-only' : '', token ? 'token required' : 'no authentication (loopback only)'].filter(Boolean).join(', ');
      if (g.json) process.stdout.write(`${JSON.stringify({ event: 'listening', url: running.url, readOnly: o.readOnly === true, auth: Boolean(token) })}\n`);
      else process.stdout.write(`${paint('green', 'delayq dashboard')} on ${running.url} (${note}). Ctrl-C to stop.\n`);
      await stopped;
      await running.close();
    });
}
