import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../../scripts/test-preflight.js', import.meta.url));
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * Runs the preflight with PATH = one temporary directory holding `commands` (empty scripts,
 * but an `apt-get` that records its arguments in `apt-get.log` there), and `env`.
 */
function preflight(commands: string[], env: Record<string, string> = { DQ_PREFLIGHT_INSTALL: '0' }) {
  const bin = mkdtempSync(join(tmpdir(), 'delayq-preflight-'));
  dirs.push(bin);
  for (const c of commands) {
    writeFileSync(join(bin, c), c === 'apt-get' ? `#!/bin/sh\necho "$@" >> ${join(bin, 'apt-get.log')}\n` : '#!/bin/sh\n');
    chmodSync(join(bin, c), 0o755);
  }
  const r = spawnSync(process.execPath, [script], { env: { PATH: bin, ...env }, encoding: 'utf8', timeout: 10_000 });
  return { ...r, aptGet: existsSync(join(bin, 'apt-get.log')) ? readFileSync(join(bin, 'apt-get.log'), 'utf8') : '' };
}

describe('npm test preflight', () => {
  test('passes quietly when redis-server, redis-cli, redis-sentinel, chromium, jq and promtool are on the PATH', () => {
    const r = preflight(['redis-server', 'redis-cli', 'redis-sentinel', 'chromium', 'jq', 'promtool']);
    assert.equal(r.status, 0);
    assert.equal(r.stderr, '');
  });

  test('without them it stops at once with one line naming the Debian packages to install', () => {
    const r = preflight(['redis-cli']);
    assert.equal(r.status, 1);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /needs redis-server, redis-sentinel, chromium, jq, promtool on the PATH/);
    assert.match(lines[0]!, /apt-get install redis-server redis-sentinel chromium jq prometheus/);
  });

  const asRoot = process.platform === 'linux' && process.getuid?.() === 0;
  test('as root it runs apt-get for what is missing; DQ_PREFLIGHT_INSTALL=0 never does', { skip: !asRoot && 'needs root' }, () => {
    const installs = preflight(['redis-cli', 'apt-get'], {});
    assert.match(installs.aptGet, /install -y -qq --no-install-recommends redis-server redis-sentinel chromium jq prometheus/);
    assert.equal(installs.status, 1, 'the fake apt-get installed nothing');
    assert.match(installs.stderr, /apt-get could not install them/);

    const optOut = preflight(['redis-cli', 'apt-get'], { DQ_PREFLIGHT_INSTALL: '0' });
    assert.equal(optOut.aptGet, '', 'apt-get was not run');
    assert.equal(optOut.status, 1);
    assert.match(optOut.stderr, /^npm test needs redis-server, redis-sentinel, chromium, jq, promtool on the PATH: install them/);
  });

  test('the README says what npm test installs and how to opt out, where it says how to run the tests', () => {
    const readme = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');
    const section = readme.slice(readme.indexOf('## Running the tests'));
    assert.ok(readme.includes('## Running the tests'), 'README has a "Running the tests" section');
    assert.match(section, /DQ_PREFLIGHT_INSTALL=0 npm test/);
    assert.match(section, /apt-get/);
  });
});
