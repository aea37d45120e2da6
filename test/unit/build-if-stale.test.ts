/**
 * `npm run demo` builds only when a source changed (scripts/build-if-stale.js): tried on a
 * project of its own in a temporary directory, whose `npm run build` only counts its runs.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
let dir: string;

// The build: what `npm run build` does to dist/ (removes it, writes it again), counting its runs.
const BUILD = `import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
rmSync('dist', { recursive: true, force: true });
mkdirSync('dist/src/cli', { recursive: true });
writeFileSync('dist/src/cli/main.js', '');
appendFileSync('builds.log', 'built\\n');
`;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'delayq-build-if-stale-'));
  mkdirSync(join(dir, 'scripts'));
  copyFileSync(join(root, 'scripts/build-if-stale.js'), join(dir, 'scripts/build-if-stale.js'));
  writeFileSync(join(dir, 'scripts/build.js'), BUILD);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'p', type: 'module', scripts: { build: 'node scripts/build.js' } }));
  mkdirSync(join(dir, 'src/store'), { recursive: true });
  writeFileSync(join(dir, 'src/index.ts'), 'export {};\n');
  writeFileSync(join(dir, 'src/store/a.ts'), 'export {};\n');
  mkdirSync(join(dir, 'node_modules/typescript'), { recursive: true });
  writeFileSync(join(dir, 'node_modules/typescript/package.json'), JSON.stringify({ version: '6.0.3' }));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the script as `npm run demo` does; answers how many builds have run in all. */
function demo(): number {
  const r = spawnSync(process.execPath, [join(dir, 'scripts/build-if-stale.js')], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return readFileSync(join(dir, 'builds.log'), 'utf8').split('\n').filter(Boolean).length;
}

describe('build-if-stale (npm run demo)', () => {
  test('builds the first time, then not again while nothing changed', () => {
    assert.equal(demo(), 1);
    assert.equal(demo(), 1);
    assert.equal(demo(), 1);
  });

  test('an edited source builds again, once', () => {
    writeFileSync(join(dir, 'src/store/a.ts'), 'export const a = 1;\n');
    assert.equal(demo(), 2);
    assert.equal(demo(), 2);
  });

  test('a source touched to an older time (a checkout of an older file) builds again', () => {
    const old = new Date(Date.now() - 86_400_000);
    utimesSync(join(dir, 'src/index.ts'), old, old);
    assert.equal(demo(), 3);
  });

  test('a new file, a renamed one and a deleted one each build again', () => {
    writeFileSync(join(dir, 'src/store/b.ts'), 'export {};\n');
    assert.equal(demo(), 4);
    renameSync(join(dir, 'src/store/b.ts'), join(dir, 'src/store/c.ts'));
    assert.equal(demo(), 5);
    rmSync(join(dir, 'src/store/c.ts'));
    assert.equal(demo(), 6);
    assert.equal(demo(), 6);
  });

  test('another TypeScript, a changed package.json or a dist/ removed by npm run build each build again', () => {
    writeFileSync(join(dir, 'node_modules/typescript/package.json'), JSON.stringify({ version: '6.0.4' }));
    assert.equal(demo(), 7);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, version: '1.0.0' }));
    assert.equal(demo(), 8);
    rmSync(join(dir, 'dist'), { recursive: true });
    assert.equal(demo(), 9);
    assert.equal(demo(), 9);
  });

  test('npm run demo goes through it', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.match(pkg.scripts.demo!, /^node scripts\/build-if-stale\.js && /);
  });
});
