/**
 * A worker as a real child process, for fault and failover tests: the parent can SIGKILL,
 * SIGSTOP or SIGTERM it. It reports over IPC: { t: 'ready' }, { t: 'start', id, token, attempt,
 * pid }, { t: 'completed', id, token, pid }, { t: 'leaseLost', id, token, pid },
 * { t: 'settleFailed', id, token, message, pid } and { t: 'error', message, pid }.
 * Settings come from the environment: DQ_URL (a Redis URL) or DQ_CONNECTION (JSON: a URL, or
 * { "cluster": [{ "host", "port" }…], "options"? }), DQ_QUEUE, DQ_CONCURRENCY, DQ_LEASE_MS,
 * DQ_WORK_MS, and DQ_RATE_SIGNAL (JSON { id, ms }: the first run of that job in this process
 * throws RateLimitSignal(ms); reported as { t: 'rateLimited', id, token, at }).
 */
import { RateLimitSignal, Worker } from '../../src/index.js';

const env = process.env;
const send = (msg: object) => process.send?.({ ...msg, pid: process.pid });
const workMs = Number(env.DQ_WORK_MS ?? 0);
const signal = env.DQ_RATE_SIGNAL ? (JSON.parse(env.DQ_RATE_SIGNAL) as { id: string; ms: number }) : undefined;
let signalled = false;
const worker = new Worker<unknown>(
  env.DQ_QUEUE!,
  async (job) => {
    // `at` (this host's clock, shared by every child) and the group let a test lay the handlers'
    // runs side by side and check that no limit was exceeded at any instant.
    send({ t: 'start', id: job.id, token: job.token, attempt: job.attempt, group: job.group, at: Date.now() });
    if (signal && job.id === signal.id && !signalled) {
      signalled = true;
      throw new RateLimitSignal(signal.ms);
    }
    if (workMs > 0) await new Promise((r) => setTimeout(r, workMs));
    send({ t: 'end', id: job.id, token: job.token, group: job.group, at: Date.now() });
  },
  {
    connection: env.DQ_CONNECTION ? JSON.parse(env.DQ_CONNECTION) : env.DQ_URL!,
    concurrency: Number(env.DQ_CONCURRENCY ?? 10),
    leaseMs: Number(env.DQ_LEASE_MS ?? 30_000),
    closeTimeoutMs: 2_000,
  },
);
worker.on('completed', (job) => send({ t: 'completed', id: job.id, token: job.token }));
worker.on('rateLimited', (job) => send({ t: 'rateLimited', id: job.id, token: job.token, at: Date.now() }));
worker.on('leaseLost', (job) => send({ t: 'leaseLost', id: job.id, token: job.token }));
worker.on('settleFailed', (job, err) => send({ t: 'settleFailed', id: job.id, token: job.token, message: err.message }));
worker.on('error', (err) => {
  send({ t: 'error', message: err.message });
  if (process.env.DQ_DEBUG) process.stderr.write(`worker ${process.pid} error: ${err.message}\n`);
});
process.on('SIGTERM', () => {
  void worker.close().then(() => process.exit(0));
});
// The parent holds an IPC channel; losing it means the test is gone.
process.on('disconnect', () => process.exit(0));
send({ t: 'ready' });
