/**
 * The Python client installs like a Python package: `pip install ./clients/python` into a fresh
 * virtualenv (Debian's python3-venv, with the system's redis-py, setuptools and wheel: no network
 * is needed) puts the published protocol inside the package, so the installed client runs with
 * no path setting. Then the client's own driver scripts run from that install, from a directory
 * outside the checkout, beside the Node library: Python adds a named job and a Node worker runs it;
 * Node adds jobs and the installed Python worker runs them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { runDriver } from '../helpers/python-driver.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errors = useErrorLog();
const PYTHON = '/usr/bin/python3';
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'delayq-pypkg-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a command to its end within `timeoutMs`; fails the test with its output otherwise. */
function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: opts.timeoutMs ?? 120_000, cwd: opts.cwd ?? dir, env: opts.env ?? process.env });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed (${r.error?.message ?? r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A driver of clients/python/tests run by the venv's python against the installed package. */
async function driver(venv: string, script: string, args: string[]): Promise<Record<string, unknown>[]> {
  const env: NodeJS.ProcessEnv = { ...process.env, DELAYQ_CLIENT_INSTALLED: '1' };
  delete env.DELAYQ_PROTOCOL;
  delete env.PYTHONPATH;
  const r = await runDriver(join(venv, 'bin/python'), join(dir, 'drivers', script), args, { env, cwd: dir });
  assert.equal(r.code, 0, `${script} exited ${r.code}: ${r.stderr}`);
  return r.lines;
}

test('pip installs clients/python into a fresh venv; the installed client carries the protocol and works beside Node', async () => {
  const venvCheck = spawnSync(PYTHON, ['-c', 'import venv, setuptools, wheel, redis'], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(
    venvCheck.status,
    0,
    `packaging the Python client needs ${PYTHON} with venv, setuptools, wheel and redis (Debian: apt-get install python3-venv python3-setuptools python3-wheel python3-redis): ${venvCheck.stderr}`,
  );
  // A copy of the client outside the checkout, so the build cannot reach ../../protocol by
  // accident; $DELAYQ_PROTOCOL names the published protocol for the build alone.
  const src = join(dir, 'src');
  cpSync(join(repo, 'clients/python'), src, { recursive: true, filter: (p) => !/(__pycache__|\.egg-info|\/build)$/.test(p) });
  cpSync(join(repo, 'clients/python/tests'), join(dir, 'drivers'), { recursive: true });
  const venv = join(dir, 'venv');
  run(PYTHON, ['-m', 'venv', '--system-site-packages', venv]);
  run(join(venv, 'bin/pip'), ['install', '--quiet', '--no-build-isolation', '--no-index', src], {
    env: { ...process.env, DELAYQ_PROTOCOL: join(repo, 'protocol'), PIP_DISABLE_PIP_VERSION_CHECK: '1' },
  });
  const where = JSON.parse(
    run(
      join(venv, 'bin/python'),
      ['-c', 'import json, delayq_client, delayq_client.protocol as p; print(json.dumps([delayq_client.__file__, p.find_manifest()]))'],
      {
        env: { PATH: process.env.PATH },
      },
    ),
  ) as [string, string];
  assert.ok(where[0].startsWith(join(venv, 'lib')), `the package imported from the venv: ${where[0]}`);
  assert.equal(where[1], join(where[0], '../protocol/manifest.json'), 'the manifest inside the package');
  assert.ok(existsSync(join(where[0], '../protocol/scripts/add.lua')));

  // Python (installed) adds; Node runs. Node adds; Python (installed) runs.
  const name = uniqueName('pypkg');
  const produced = await driver(venv, 'produce.py', [fx.redis.url, name]);
  assert.ok(produced.length > 0);
  const ids = produced.filter((l) => typeof l.id === 'string').map((l) => l.id as string);
  const ran = new Set<string>();
  const worker = new Worker(name, (job) => void ran.add(job.id), { connection: fx.redis.url });
  errors.watch(worker);
  fx.track(worker);
  await until(() => ids.every((id) => ran.has(id)), 'the Node worker to run what the installed Python client added');
  await worker.close();

  const back = uniqueName('pypkg-back');
  const queue = fx.track(new Queue<{ n: number }>(back, { connection: fx.redis.url }));
  await queue.addBulk([0, 1, 2].map((n) => ({ data: { n }, opts: { id: `node-${n}` } })));
  const lines = await driver(venv, 'work.py', [fx.redis.url, back, '600']);
  assert.deepEqual(
    lines
      .filter((l) => typeof l.ran === 'string')
      .map((l) => l.ran)
      .sort(),
    ['node-0', 'node-1', 'node-2'],
  );
  await until(async () => (await queue.stats()).completedTotal === 3, 'the three acks');
});
