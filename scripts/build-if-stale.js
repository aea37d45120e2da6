// Runs `npm run build` unless dist/ was built from the sources as they are now: what `npm run
// demo` runs first, so a second demo starts at once instead of recompiling everything.
// The build's inputs (every file and folder under src/, test/ and bench/, with its size and
// modification time; tsconfig.json, package.json, the build scripts; the TypeScript version
// installed) make a signature, written to dist/sources.sig after a build that succeeded. A
// build is skipped only when that file holds the signature of now: an edit, a new file, a deleted
// or renamed one, or another TypeScript all rebuild. `npm run build` itself always rebuilds (it
// removes dist/, this file with it).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const sigFile = join(root, 'dist', 'sources.sig');

function signature() {
  const hash = createHash('sha256');
  const add = (path) => {
    const s = statSync(path);
    hash.update(`${relative(root, path)}\0${s.isDirectory() ? 'dir' : s.size}\0${s.mtimeMs}\n`);
    if (s.isDirectory()) for (const name of readdirSync(path).sort()) add(join(path, name));
  };
  for (const p of [
    'src',
    'test',
    'bench',
    'tsconfig.json',
    'package.json',
    'scripts/clean.js',
    'scripts/tsc.js',
    'scripts/copy-assets.js',
    'scripts/protocol.js',
  ]) {
    if (existsSync(join(root, p))) add(join(root, p));
  }
  const ts = JSON.parse(readFileSync(join(root, 'node_modules', 'typescript', 'package.json'), 'utf8'));
  hash.update(`typescript ${ts.version}\n`);
  return hash.digest('hex');
}

const before = signature();
let built = '';
try {
  built = readFileSync(sigFile, 'utf8').trim();
} catch {
  // Never built through this script, or removed by `npm run build`.
}
if (built === before && existsSync(join(root, 'dist', 'src', 'cli', 'main.js'))) process.exit(0);

// Under npm (npm run demo), the npm that runs us; else the one on the PATH.
const npm = process.env.npm_execpath;
const r = spawnSync(npm ? process.execPath : 'npm', [...(npm ? [npm] : []), 'run', '-s', 'build'], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) process.exit(r.status ?? 1);
// Taken before the build: a source edited while it ran makes the next run build again.
writeFileSync(sigFile, `${before}\n`);
