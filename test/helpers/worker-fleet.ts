/** Starts and tracks worker child processes (see worker-process.ts) and what they report. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROGRAM = fileURLToPath(new URL('./worker-process.js', import.meta.url));

export interface Report {
  t: 'ready' | 'start' | 'end' | 'completed' | 'leaseLost' | 'settleFailed' | 'error' | 'rateLimited';
  pid: number;
  id?: string;
  token?: string;
  attempt?: number;
  /** start, end: the job's group and when (Date.now() in the child). */
  group?: string;
  at?: number;
}

export class WorkerFleet {
  readonly reports: Report[] = [];
  readonly children = new Map<number, ChildProcess>();
  readonly killed = new Set<number>();
  readonly #env: Record<string, string>;

  constructor(env: { url: string; queue: string; concurrency?: number; leaseMs?: number; workMs?: number; extra?: Record<string, string> }) {
    this.#env = {
      ...env.extra,
      DQ_URL: env.url,
      DQ_QUEUE: env.queue,
      DQ_CONCURRENCY: String(env.concurrency ?? 10),
      DQ_LEASE_MS: String(env.leaseMs ?? 30_000),
      DQ_WORK_MS: String(env.workMs ?? 0),
    };
  }

  /** Starts one worker process (with `extra` environment of its own) and resolves once it is running. */
  async start(extra: Record<string, string> = {}): Promise<ChildProcess> {
    const child = fork(PROGRAM, [], { env: { ...process.env, ...this.#env, ...extra }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    const ready = new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      // A child killed while starting is done starting too.
      child.once('exit', () => resolve());
      child.on('message', (m: Report) => {
        this.reports.push(m);
        if (m.t === 'ready') resolve();
      });
    });
    this.children.set(child.pid!, child);
    child.once('exit', () => this.children.delete(child.pid!));
    await ready;
    return child;
  }

  kill9(child: ChildProcess): Promise<void> {
    this.killed.add(child.pid!);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    return exited;
  }

  completedIds(): Set<string> {
    return new Set(this.reports.filter((r) => r.t === 'completed').map((r) => r.id!));
  }

  /** Stops every live worker gracefully. */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.children.values()].map(
        (c) =>
          new Promise<void>((resolve) => {
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
