/**
 * Runs a driver script of the Python client (clients/python/tests/*.py) as a child process, as
 * the Python tests do: its JSON lines once it exits, killed after `timeoutMs` so a stuck one
 * fails the test in seconds.
 */
import { spawn } from 'node:child_process';

export interface PyRun {
  code: number | null;
  lines: Record<string, unknown>[];
  stderr: string;
}

export function runDriver(
  python: string,
  script: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<PyRun> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const child = spawn(python, [script, ...args], {
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
      cwd: opts.cwd,
      env: { ...(opts.env ?? process.env), PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
    });
    let out = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (signal) return reject(new Error(`${script} was killed (${signal}) after ${timeoutMs} ms; stderr: ${stderr}`));
      const lines = out
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines, stderr });
    });
  });
}
