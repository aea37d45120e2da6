import type { Command } from 'commander';
import { type DemoReport, runDemo } from '../../demo/run-demo.js';
import { colourOn, globals, numberOption, paint } from '../context.js';

export function demoCommand(program: Command): void {
  program
    .command('demo')
    .description("the shop's order-timeout scenario end to end, with a final check (memory:// unless --redis/REDIS_URL)")
    .option('--orders <n>', 'orders to place', '300')
    .option('--timeout-ms <ms>', 'the unpaid-order timeout (30 min in the shop, scaled down)', '2000')
    .option('--seed <n>', 'repeat a run exactly')
    .addHelpText(
      'after',
      `
Examples:
  $ delayq demo
  $ delayq demo --orders 2000 --redis redis://127.0.0.1:6379`,
    )
    .action(async (o: { orders: string; timeoutMs: string; seed?: string }, cmd: Command) => {
      const g = globals(cmd);
      const connection = g.redis ?? (process.env.REDIS_URL || 'memory://demo');
      const live = colourOn(process.stderr) && !g.json;
      const timeoutMs = numberOption('--timeout-ms', o.timeoutMs)!;
      if (!g.json) {
        process.stderr.write(
          `${paint('bold', 'delayq demo', process.stderr)}: orders that stay unpaid are cancelled ${timeoutMs} ms after they are placed (30 min in the shop), on ${connection.replace(/\/\/[^@/]*@/, '//***@')}\n`,
        );
      }
      let lastPlain = 0;
      // Ctrl-C (or SIGTERM) stops the run, which still removes its queue; a second one kills at once.
      const stop = new AbortController();
      const onSignal = (signal: NodeJS.Signals) => {
        process.exitCode = signal === 'SIGINT' ? 130 : 143;
        if (!g.json) process.stderr.write(`${live ? '\n' : ''}stopping: removing the demo queue (${signal} again to quit at once)\n`);
        stop.abort();
      };
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const report = await runDemo({
        connection,
        ...(g.prefix !== undefined ? { prefix: g.prefix } : {}),
        orders: numberOption('--orders', o.orders)!,
        timeoutMs,
        ...(o.seed !== undefined ? { seed: numberOption('--seed', o.seed)! } : {}),
        signal: stop.signal,
        onProgress: (line) => {
          if (g.json) return;
          if (live) process.stderr.write(`\r\x1b[2K${line}`);
          else if (Date.now() - lastPlain >= 1000) {
            lastPlain = Date.now();
            process.stderr.write(`${line}\n`);
          }
        },
      });
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (live) process.stderr.write('\n');
      if (report.interrupted) {
        if (g.json) process.stdout.write(`${JSON.stringify(report)}\n`);
        else process.stdout.write(`interrupted after ${report.placed} of the orders were placed; the demo queue ${report.queue} was removed\n`);
        return;
      }
      if (g.json) {
        process.stdout.write(`${JSON.stringify(report)}\n`);
      } else {
        const out = [
          '',
          `orders placed          ${report.placed}`,
          `paid                   ${report.paid}   (of which payment was pending first: ${report.pendingThenPaid})`,
          `cancelled when due     ${report.cancelled}   (of which payment was pending first: ${report.pendingThenCancelled})`,
          `timeout lateness       p50 ${report.lateness.p50} ms, p99 ${report.lateness.p99} ms, max ${report.lateness.max} ms (${report.lateness.samples} handler runs)`,
          `this host's timers     p99 ${report.host.timerLateP99} ms, max ${report.host.timerLateMax} ms late (the customers' steps: what the host adds to any lateness)`,
          '',
          ...report.checks.map((c) => `${c.ok ? paint('green', 'ok  ') : paint('red', 'FAIL')} ${c.name} (${c.detail})`),
          '',
          ...hostNote(report),
          report.ok ? paint('green', `all checks passed in ${(report.elapsedMs / 1000).toFixed(1)} s`) : paint('red', 'the demo check FAILED: a queue fault'),
        ];
        process.stdout.write(`${out.join('\n')}\n`);
      }
      if (!report.ok) process.exitCode = 1;
    });
}

/**
 * Whose lateness it was: a slow or busy host fires its own timers late (the customers' payments
 * then may run after their deadline, and are rightly cancelled), which no queue can make up for.
 */
function hostNote(report: DemoReport): string[] {
  if (!report.host.slow) return [];
  const late = report.host.latePayments;
  return [
    paint(
      'yellow',
      `a slow or busy host: its own timers fired up to ${report.host.timerLateMax} ms late` +
        (late > 0 ? `, so ${late} customer${late === 1 ? '' : 's'} paid after the deadline (cancelled, as they must be)` : '') +
        "; the lateness above is as much the host's as the queue's. Run it on a quieter machine to measure the queue alone.",
    ),
    '',
  ];
}
