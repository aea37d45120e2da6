// Runs before `npm test` (pretest): the suite starts its own redis-server, redis-sentinel and
// redis-cli processes, drives Debian's chromium (the dashboard's browser tests) and pipes the CLI
// into jq (the docs' examples, test/docs/snippets.test.ts), so it checks they are on the PATH first. When one is missing it installs
// the Debian packages (as root, with apt-get), or else stops at once with one line saying what to
// install, instead of a wall of failed and cancelled tests. DQ_PREFLIGHT_INSTALL=0 never installs
// (README.md, "Running the tests", says so too).
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Command the tests run → the Debian package that has it. */
const NEEDED = { 'redis-server': 'redis-server', 'redis-cli': 'redis-tools', 'redis-sentinel': 'redis-sentinel', chromium: 'chromium', jq: 'jq' };

const onPath = (cmd) =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir || '.', cmd), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
const missing = () => Object.keys(NEEDED).filter((cmd) => !onPath(cmd));

let absent = missing();
if (absent.length === 0) process.exit(0);
const packages = [...new Set(absent.map((cmd) => NEEDED[cmd]))];

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
    `install them with \`sudo apt-get install ${packages.join(' ')}\` (Debian, Ubuntu) or \`brew install redis chromium jq\` (macOS), then run npm test again`,
);
process.exit(1);
