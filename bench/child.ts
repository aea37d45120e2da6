/** The parent's handle on a worker child process (worker-child.ts). */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROGRAM = fileURLToPath(new URL('./worker-child.js', import.meta.url));

export class WorkerChild {
  readonly #child: ChildProcess;
  readonly #waiters = new Map<string, (m: Record<string, unknown>) => void>();
  readonly ready: Promise<{ startedAt: number }>;

  constructor(system: string, url: string, queue: string) {
    this.#child = fork(PROGRAM, [system, url, queue], {
      execArgv: [...process.execArgv, ...(process.env.BENCH_CHILD_FLAGS?.split(' ').filter(Boolean) ?? [])],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.#child.on('message', (m: Record<string, unknown>) => {
      const w = this.#waiters.get(m.t as string);
      if (w) {
        this.#waiters.delete(m.t as string);
        w(m);
      }
    });
    this.ready = this.#next('ready') as Promise<{ startedAt: number }>;
  }

  #next(t: string, timeoutMs = 600_000): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker child: no '${t}' within ${timeoutMs} ms`)), timeoutMs);
      this.#waiters.set(t, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }

  /** Resolves when `n` handlers have started, with the child's start time and that moment. */
  async reached(n: number, timeoutMs: number): Promise<{ startedAt: number; reachedAt: number }> {
    const p = this.#next('reached', timeoutMs);
    this.#child.send({ t: 'expect', n });
    return (await p) as { startedAt: number; reachedAt: number };
  }

  /** How many handlers have started so far. */
  async count(): Promise<number> {
    const p = this.#next('count');
    this.#child.send({ t: 'count' });
    return ((await p) as { n: number }).n;
  }

  async samples(): Promise<number[]> {
    const p = this.#next('samples');
    this.#child.send({ t: 'samples' });
    return ((await p) as { lateness: number[] }).lateness;
  }

  /** The child's CPU time (user + system, µs) since just before its worker started. */
  async cpuMicros(): Promise<number> {
    const p = this.#next('cpu');
    this.#child.send({ t: 'cpu' });
    return ((await p) as { us: number }).us;
  }

  async stop(): Promise<void> {
    const exited = new Promise<void>((r) => this.#child.once('exit', () => r()));
    this.#child.send({ t: 'stop' });
    const t = setTimeout(() => this.#child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  }
}
