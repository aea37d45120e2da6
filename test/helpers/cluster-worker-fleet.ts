/**
 * Starts and tracks worker child processes on any connection (worker-process.ts), with
 * the time (Date.now() in this process) each report arrived: for measuring when work stopped
 * and resumed around a failover.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROGRAM = fileURLToPath(new URL('./worker-process.js', import.meta.url));

export interface TimedReport {
  t: 'ready' | 'start' | 'completed' | 'leaseLost' | 'settleFailed' | 'error';
  pid: number;
  id?: string;
  token?: string;
  attempt?: number;
  message?: string;
  /** When this process received it (epoch ms). */
  at: number;
}

export class ClusterWorkerFleet {
  readonly reports: TimedReport[] = [];
  readonly children = new Set<ChildProcess>();
  readonly #env: Record<string, string>;
  readonly #listeners = new Set<(r: TimedReport) => void>();

  constructor(env: { connection: unknown; queue: string; concurrency?: number; leaseMs?: number; workMs?: number }) {
    this.#env = {
      DQ_CONNECTION: JSON.stringify(env.connection),
      DQ_QUEUE: env.queue,
      DQ_CONCURRENCY: String(env.concurrency ?? 10),
      DQ_LEASE_MS: String(env.leaseMs ?? 30_000),
      DQ_WORK_MS: String(env.workMs ?? 0),
    };
  }

  /** Calls `fn` with every report from now on. */
  onReport(fn: (r: TimedReport) => void): void {
    this.#listeners.add(fn);
  }

  /** Starts one worker process and resolves once it is running (rejects if it exits first). */
  async start(): Promise<ChildProcess> {
    const child = fork(PROGRAM, [], { env: { ...process.env, ...this.#env }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code, signal) => reject(new Error(`worker process exited while starting (${code ?? signal})`)));
      child.on('message', (m: Omit<TimedReport, 'at'>) => {
        const r = { ...m, at: Date.now() } as TimedReport;
        this.reports.push(r);
        for (const fn of this.#listeners) fn(r);
        if (r.t === 'ready') resolve();
      });
    });
    return child;
  }

  of(t: TimedReport['t']): TimedReport[] {
    return this.reports.filter((r) => r.t === t);
  }

  /** Stops every live worker gracefully (SIGTERM; SIGKILL after 10 s). */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.children].map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            const t = setTimeout(() => c.kill('SIGKILL'), 10_000);
            c.once('exit', () => {
              clearTimeout(t);
              resolve();
            });
            c.kill('SIGTERM');
          }),
      ),
    );
  }
}
