/**
 * A Scheduler in a child process of its own (argv: <redis url> <queue> [clock offset ms]), until
 * SIGTERM. With an offset, this process's wall clock (Date.now, new Date()) runs that far ahead
 * of the real one: a host whose clock is wrong.
 */
const [url, queue, offset] = process.argv.slice(2) as [string, string, string | undefined];
if (offset !== undefined && Number(offset) !== 0) {
  const skew = Number(offset);
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(realNow() + skew);
      else super(...(args as [number]));
    }
    static override now(): number {
      return realNow() + skew;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
}
// Imported after the clock is set, so nothing captured the real one first.
const { Scheduler } = await import('../../src/index.js');
const scheduler = new Scheduler(queue, { connection: url, leadMs: 100, onError: (err) => process.stderr.write(`scheduler: ${err.message}\n`) });
process.on('SIGTERM', () => {
  void scheduler.close().then(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));
process.send?.({ t: 'ready', now: Date.now() });
