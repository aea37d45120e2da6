// Runs before `npm test` (pretest): the suite starts its own redis-server, redis-sentinel and
// redis-cli processes, drives Debian's chromium (the dashboard's browser tests) and pipes the CLI
// into jq (the docs' examples, test/docs/snippets.test.ts), checks the documented alert rules with
// Debian's promtool (package prometheus: test/metrics/alert-rules.test.ts) and runs the Python client's drivers with Debian's
// /usr/bin/python3 and its python3-redis (test/clients/python-client.test.ts), so it checks they are there first. When one is missing it installs
// the Debian packages (as root, with apt-get), or else stops at once with one line saying what to
// install, instead of a wall of failed and cancelled tests. DQ_PREFLIGHT_INSTALL=0 never installs
// (README.md, "Running the tests", says so too).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Command the tests run → the Debian package that has it. */
const NEEDED = {
  'redis-server': 'redis-server',
  'redis-cli': 'redis-tools',
  'redis-sentinel': 'redis-sentinel',
  chromium: 'chromium',
  jq: 'jq',
  promtool: 'prometheus',
};

const onPath = (cmd) =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir || '.', cmd), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
/**
 * The Python client's tests run /usr/bin/python3 (else python3) with `import redis` (Debian's
 * python3-redis), and pip-install the client into a fresh venv with no network
 * (test/clients/python-package.test.ts: python3-venv, python3-setuptools, python3-wheel), whose
 * type hints are checked with Debian's mypy (python3-mypy: the venv sees the system's packages).
 */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const PYTHON_REDIS = `${PYTHON} with its redis, venv, setuptools, wheel and mypy packages`;
const pythonRedis = () =>
  spawnSync(PYTHON, ['-c', 'import redis, venv, ensurepip, setuptools, wheel, mypy'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
const missing = () => [...Object.keys(NEEDED).filter((cmd) => !onPath(cmd)), ...(pythonRedis() ? [] : [PYTHON_REDIS])];

let absent = missing();
if (absent.length === 0) process.exit(0);
const PYTHON_PACKAGES = ['python3-redis', 'python3-venv', 'python3-setuptools', 'python3-wheel', 'python3-mypy'];
const packages = [...new Set(absent.flatMap((cmd) => (cmd === PYTHON_REDIS ? PYTHON_PACKAGES : [NEEDED[cmd]])))];

const canInstall = process.env.DQ_PREFLIGHT_INSTALL !== '0' && process.platform === 'linux' && process.getuid?.() === 0 && onPath('apt-get');
if (canInstall) {
  console.error(`npm test: ${absent.join(', ')} not found; installing ${packages.join(' ')} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const opts = { stdio: ['ignore', 'ignore', 'inherit'], env };
  // A failed update (offline, say) may still leave package lists good enough to install from.
  spawnSync('apt-get', ['update', '-qq'], opts);
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...packages], opts);
  absent = missing();
  if (absent.length === 0) process.exit(0);
}

console.error(
  `npm test needs ${absent.join(', ')} on the PATH${canInstall ? ' (apt-get could not install them)' : ''}: ` +
    `install them with \`sudo apt-get install ${packages.join(' ')}\` (Debian, Ubuntu) or \`brew install redis chromium jq\` and \`pip install redis setuptools wheel mypy\` (macOS), then run npm test again`,
);
process.exit(1);
