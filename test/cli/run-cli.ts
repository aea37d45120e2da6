/** Runs the built CLI as a child process, as a person or a script would. */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  env?: Record<string, string>;
}

export function start(args: string[], opts: RunOptions = {}): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: '1', ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  if (opts.input !== undefined) child.stdin!.end(opts.input);
  else child.stdin!.end();
  const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return { child, done };
}

export const run = (args: string[], opts: RunOptions = {}) => start(args, opts).done;

/**
 * The error format: `error: <message>` on the first line of stderr, at most one `hint:` line
 * after it, nothing else. Returns the message and the hint.
 */
export function assertFailure(r: Run, exitCode: number, what: string): { message: string; hint: string | undefined } {
  assert.equal(r.code, exitCode, `${what}: exit ${r.code}, stderr ${JSON.stringify(r.stderr)}`);
  const lines = r.stderr.replace(/\n$/, '').split('\n');
  assert.ok(lines.length <= 2, `${what}: at most two lines, got ${JSON.stringify(r.stderr)}`);
  assert.match(lines[0]!, /^error: \S/, `${what}: starts with "error: "`);
  if (lines[1] !== undefined) assert.match(lines[1], /^hint: \S/, `${what}: a second line is a hint`);
  return { message: lines[0]!.slice('error: '.length), hint: lines[1]?.slice('hint: '.length) };
}
