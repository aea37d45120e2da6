/**
 * scripts/node-versions.js (the suite on Node 22 and 24, .ci/run) with a fake cache: the cached
 * binary is reused without npm, put first on the PATH of the command, checked for its major, and
 * every version runs even when one fails. Installing from the registry is what .ci/run exercises.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../../scripts/node-versions.js', import.meta.url));
const pkg = `node-${process.platform}-${process.arch}`;
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function executable(path: string, text: string): void {
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

/**
 * A cache holding fake node binaries (major → the version each says it is), and a bin directory
 * with an `npm` that only records that it was called. Runs the script with `args`.
 */
function nodeVersions(cached: Record<string, string>, args: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'delayq-node-versions-'));
  dirs.push(dir);
  for (const [major, version] of Object.entries(cached)) {
    const bin = join(dir, 'cache', major, 'node_modules', pkg, 'bin');
    mkdirSync(bin, { recursive: true });
    executable(join(bin, 'node'), `#!/bin/sh\n[ "$1" = --version ] && echo ${version}\nexit 0\n`);
  }
  mkdirSync(join(dir, 'bin'));
  executable(join(dir, 'bin', 'npm'), `#!/bin/sh\necho "$@" >> ${join(dir, 'npm.log')}\nexit 1\n`);
  const env = { ...process.env, DQ_NODE_CACHE: join(dir, 'cache'), PATH: `${join(dir, 'bin')}${delimiter}${process.env.PATH}` };
  const r = spawnSync(process.execPath, [script, ...args], { env, encoding: 'utf8', timeout: 20_000 });
  return { ...r, dir, npmCalled: existsSync(join(dir, 'npm.log')) };
}

describe('scripts/node-versions.js', () => {
  test('runs the command with the cached node of each major first on the PATH, without npm', () => {
    const r = nodeVersions({ '22': 'v22.1.2', '24': 'v24.3.4' }, ['22', '24', '--', 'sh', '-c', 'node --version; command -v node']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.npmCalled, false);
    assert.deepEqual(r.stdout.trim().split('\n'), [
      'v22.1.2',
      join(r.dir, 'cache', '22', 'node_modules', pkg, 'bin', 'node'),
      'v24.3.4',
      join(r.dir, 'cache', '24', 'node_modules', pkg, 'bin', 'node'),
    ]);
    assert.match(r.stderr, /Node v22\.1\.2: passed/);
    assert.match(r.stderr, /Node v24\.3\.4: passed/);
  });

  test('a failure on one version fails the run, after the others ran', () => {
    const r = nodeVersions({ '22': 'v22.1.2', '24': 'v24.3.4' }, ['22', '24', '--', 'sh', '-c', 'node --version; [ "$(node --version)" = v24.3.4 ]']);
    assert.equal(r.status, 1);
    assert.deepEqual(r.stdout.trim().split('\n'), ['v22.1.2', 'v24.3.4']);
    assert.match(r.stderr, /Node v22\.1\.2: FAILED \(exit 1\)/);
    assert.match(r.stderr, /Node v24\.3\.4: passed/);
  });

  test('a cached binary of another major is refused; a failed install is reported', () => {
    const r = nodeVersions({ '22': 'v20.1.0' }, ['22', '23', '--', 'true']);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /says it is "v20\.1\.0", not Node 22/);
    assert.equal(r.npmCalled, true, 'Node 23 is not cached: npm install is tried');
    assert.match(r.stderr, new RegExp(`npm install ${pkg}@23 failed`));
  });

  test('an unknown option is a usage error', () => {
    const r = nodeVersions({}, ['--nope']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^usage: node scripts\/node-versions\.js/);
  });
});
