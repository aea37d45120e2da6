// Type-checks the project with TypeScript 7 (installed as the `ts7` alias) beside the pinned
// TypeScript 6 that builds it: TS7's tsc works, but tools built on its compiler API do not yet.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
let tsc;
try {
  // The package's exports map hides bin/, so find it beside package.json.
  tsc = join(dirname(require.resolve('ts7/package.json')), 'bin', 'tsc');
} catch {
  console.error('typecheck:ts7: the ts7 dev dependency is not installed (run npm ci)');
  process.exit(1);
}
const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
