/**
 * The Python client as its users get it: `pip install ./clients/python` into a fresh virtualenv
 * (Debian's python3-venv, seeing the system's redis-py, setuptools, wheel and mypy: no network is
 * needed), built from a copy of clients/python outside the checkout, so the build cannot reach
 * ../../protocol by accident and leaves nothing in the checkout; $DELAYQ_PROTOCOL names the
 * published protocol for the build alone. The client's driver scripts (clients/python/tests) are
 * copied beside it and run against the install (DELAYQ_CLIENT_INSTALLED: no source path added).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Debian's python3 has python3-redis, -venv, -setuptools, -wheel and -mypy (the preflight installs them). */
export const SYSTEM_PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

export interface InstalledClient {
  /** The temporary directory: src/ (the copy built), drivers/, venv/. */
  dir: string;
  /** The venv's python. */
  python: string;
  /** The copied driver scripts. */
  drivers: string;
  /** The copy of clients/python that was built (its pyproject.toml configures mypy). */
  src: string;
  /** The environment a driver runs in: the installed package, no source path, no protocol path. */
  env: NodeJS.ProcessEnv;
  remove(): void;
}

/** Runs a command to its end within `timeoutMs`; fails the test with its output otherwise. */
export function runOk(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000, cwd: opts.cwd, env: opts.env ?? process.env });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed (${r.error?.message ?? r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Fails (never skips) with one clear line when Python or the Debian packages the install needs are missing. */
export function requirePythonTools(): void {
  const r = spawnSync(SYSTEM_PYTHON, ['-c', 'import redis, venv, setuptools, wheel'], { encoding: 'utf8', timeout: 10_000 });
  if (r.error || r.status !== 0) {
    assert.fail(
      `the Python client's tests pip-install it with ${SYSTEM_PYTHON} and its redis, venv, setuptools and wheel packages ` +
        `(Debian: apt-get install python3-redis python3-venv python3-setuptools python3-wheel): ${r.error?.message ?? r.stderr.trim().split('\n').pop()}`,
    );
  }
}

export function installPythonClient(): InstalledClient {
  requirePythonTools();
  const dir = mkdtempSync(join(tmpdir(), 'delayq-pyclient-'));
  const src = join(dir, 'src');
  cpSync(join(REPO, 'clients/python'), src, { recursive: true, filter: (p) => !/(__pycache__|\.egg-info|\/build|\.mypy_cache)$/.test(p) });
  cpSync(join(REPO, 'clients/python/tests'), join(dir, 'drivers'), { recursive: true, filter: (p) => !/__pycache__$/.test(p) });
  const venv = join(dir, 'venv');
  runOk(SYSTEM_PYTHON, ['-m', 'venv', '--system-site-packages', venv], { cwd: dir });
  runOk(join(venv, 'bin/pip'), ['install', '--quiet', '--no-build-isolation', '--no-index', src], {
    cwd: dir,
    env: { ...process.env, DELAYQ_PROTOCOL: join(REPO, 'protocol'), PIP_DISABLE_PIP_VERSION_CHECK: '1' },
  });
  const env: NodeJS.ProcessEnv = { ...process.env, DELAYQ_CLIENT_INSTALLED: '1' };
  delete env.DELAYQ_PROTOCOL;
  delete env.PYTHONPATH;
  return {
    dir,
    python: join(venv, 'bin/python'),
    drivers: join(dir, 'drivers'),
    src,
    env,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
