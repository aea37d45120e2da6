import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../../scripts/test-preflight.js', import.meta.url));
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs the preflight with PATH = one temporary directory holding `commands` (empty scripts). */
function preflight(commands: string[]) {
  const bin = mkdtempSync(join(tmpdir(), 'delayq-preflight-'));
  dirs.push(bin);
  for (const c of commands) {
    writeFileSync(join(bin, c), '#!/bin/sh\n');
    chmodSync(join(bin, c), 0o755);
  }
  return spawnSync(process.execPath, [script], { env: { PATH: bin, DQ_PREFLIGHT_INSTALL: '0' }, encoding: 'utf8', timeout: 10_000 });
}

describe('npm test preflight', () => {
  test('passes quietly when redis-server, redis-cli, redis-sentinel and chromium are on the PATH', () => {
    const r = preflight(['redis-server', 'redis-cli', 'redis-sentinel', 'chromium']);
    assert.equal(r.status, 0);
    assert.equal(r.stderr, '');
  });

  test('without them it stops at once with one line naming the Debian packages to install', () => {
    const r = preflight(['redis-cli']);
    assert.equal(r.status, 1);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /needs redis-server, redis-sentinel, chromium on the PATH/);
    assert.match(lines[0]!, /apt-get install redis-server redis-sentinel chromium/);
  });
});
