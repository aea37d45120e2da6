// Runs the TypeScript we pin (devDependencies.typescript), never whatever `tsc` is first in
// node_modules/.bin: the `ts7` alias installs a `tsc` of its own there (see typecheck-ts7.js).
// Refuses a compiler outside the pinned range, and records the version that built dist/
// (dist/build-info.json, checked by test/unit/build-info.test.ts).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const pin = pkg.devDependencies.typescript;
const tsDir = dirname(require.resolve('typescript/package.json'));
const { version } = JSON.parse(readFileSync(join(tsDir, 'package.json'), 'utf8'));

if (!satisfies(version, pin)) {
  console.error(`tsc: node_modules/typescript is ${version}, but package.json pins ${pin}: run npm ci`);
  process.exit(1);
}

const args = process.argv.slice(2);
const r = spawnSync(process.execPath, [join(tsDir, 'bin', 'tsc'), ...args], { stdio: 'inherit' });
if (r.status === 0 && !args.includes('--noEmit')) {
  mkdirSync(new URL('../dist/', import.meta.url), { recursive: true });
  writeFileSync(new URL('../dist/build-info.json', import.meta.url), `${JSON.stringify({ typescript: version, pin }, null, 2)}\n`);
}
process.exit(r.status ?? 1);

/** The two range forms package.json uses for TypeScript: `~x.y.z`, `^x.y.z` and `x.y.z`. */
function satisfies(v, range) {
  const m = /^([~^]?)(\d+)\.(\d+)\.(\d+)$/.exec(range);
  const [maj, min, pat] = v.split('-')[0].split('.').map(Number);
  if (!m || v.includes('-')) return false;
  const [, op, a, b, c] = m;
  const [ra, rb, rc] = [Number(a), Number(b), Number(c)];
  if (op === '') return maj === ra && min === rb && pat === rc;
  if (maj !== ra) return false;
  if (op === '~') return min === rb && pat >= rc;
  return min > rb || (min === rb && pat >= rc);
}
