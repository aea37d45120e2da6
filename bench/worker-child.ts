/**
 * One system's worker in a process of its own (so it never shares an event loop with the
 * producer). argv: <system> <redis url> <queue>. IPC in: { t: 'expect', n } (report when n jobs
 * have started; each expect is answered once), { t: 'count' }, { t: 'samples' }, { t: 'cpu' }, { t: 'stop' }. IPC out:
 * { t: 'ready' }, { t: 'reached', startedAt, reachedAt }, { t: 'count', n } (handlers started so
 * far), { t: 'samples', lateness }, { t: 'cpu', us } (this process's CPU time, user + system,
 * since just before the worker started).
 */
import { systems } from './systems/index.js';

const [name, url, queue] = process.argv.slice(2) as [string, string, string];
const system = systems().find((s) => s.name === name);
if (!system) throw new Error(`unknown system ${name}`);
const lateness: number[] = [];
let expect = Infinity;
let reported = false;
const startedAt = Date.now();
const cpuAtStart = process.cpuUsage();
const consumer = await system.consumer(url, queue, (due) => {
  lateness.push(Date.now() - due);
  if (!reported && lateness.length >= expect) {
    reported = true;
    process.send!({ t: 'reached', startedAt, reachedAt: Date.now() });
  }
});
process.on('message', async (m: { t: string; n?: number }) => {
  if (m.t === 'expect') {
    // Each expect gets its own 'reached' (the warm pass of dispatch asks a second time).
    expect = m.n!;
    reported = false;
    if (!reported && lateness.length >= expect) {
      reported = true;
      process.send!({ t: 'reached', startedAt, reachedAt: Date.now() });
    }
  } else if (m.t === 'count') process.send!({ t: 'count', n: lateness.length });
  else if (m.t === 'samples') process.send!({ t: 'samples', lateness });
  else if (m.t === 'cpu') {
    const { user, system } = process.cpuUsage(cpuAtStart);
    process.send!({ t: 'cpu', us: user + system });
  } else if (m.t === 'stop') {
    await consumer.close().catch(() => {});
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send!({ t: 'ready', startedAt });
