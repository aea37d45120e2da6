// npm run check:package: the package as it would be published. Builds, packs into a temporary
// directory, and runs on the tarball: publint, Are The Types Wrong, and the package tests
// (test/package: contents, a CommonJS consumer, a strict TypeScript consumer, the README snippet).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => join(root, 'node_modules', '.bin', name);
const dir = mkdtempSync(join(tmpdir(), 'delayq-check-package-'));

function step(title, cmd, args, env = {}) {
  console.log(`\ncheck:package: ${title}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) {
    console.error(`check:package: ${title} failed`);
    rmSync(dir, { recursive: true, force: true });
    process.exit(r.status ?? 1);
  }
}

step('build', 'npm', ['run', '-s', 'build']);
// --ignore-scripts: the build just ran; no lifecycle script may change what is packed.
step('pack', 'npm', ['pack', '--ignore-scripts', '--pack-destination', dir]);
const tarball = join(
  dir,
  readdirSync(dir).find((f) => f.endsWith('.tgz')),
);
step('publint', bin('publint'), ['run', tarball, '--strict']);
// cjs-resolves-to-esm is ignored on purpose: engines.node is >= 20.19, where require() loads an
// ES module (require(esm)); attw's resolver predates that. test/package proves require() works.
// --profile node16: TypeScript's legacy `node10` resolution knows no `exports`, so it cannot see
// the delayq/dashboard subpath; every resolution a Node >= 20 project uses is still checked.
step('attw', bin('attw'), [tarball, '--ignore-rules', 'cjs-resolves-to-esm', '--profile', 'node16']);
const tests = readdirSync(join(root, 'dist/test/package'))
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => join('dist/test/package', f));
step('consumers (CommonJS and strict TypeScript)', process.execPath, ['--test', '--test-timeout=120000', ...tests], { DQ_PACKED_TARBALL: tarball });

rmSync(dir, { recursive: true, force: true });
console.log('\ncheck:package: all good');
