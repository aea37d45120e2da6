/**
 * The package as a user gets it: `npm pack`ed (or the tarball named by DQ_PACKED_TARBALL, which
 * `npm run check:package` sets), unpacked into node_modules/delayq of a temporary project. Its
 * dependencies are linked from this checkout's node_modules, and nothing else is: no dev
 * dependency and no optional peer (prom-client, @opentelemetry/api) can be found from there,
 * as in a fresh install. Offline and quick, unlike a real `npm install`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../../', import.meta.url));

export interface PackedProject {
  /** The temporary project; its node_modules/delayq is the unpacked tarball. */
  readonly dir: string;
  /** node_modules/delayq inside it. */
  readonly pkgDir: string;
  /** Paths inside the package, with '/' separators. */
  readonly files: string[];
  remove(): void;
}

/** Packs the package (npm pack --ignore-scripts: dist/ must be built) and returns the .tgz path. */
export function packTarball(into: string): string {
  if (process.env.DQ_PACKED_TARBALL) return process.env.DQ_PACKED_TARBALL;
  if (!existsSync(join(root, 'dist/src/index.js'))) throw new Error('dist/src is missing: run npm run build first');
  const out = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', into], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [info] = JSON.parse(out) as { filename: string }[];
  return join(into, info!.filename);
}

/** A temporary project with the packed package installed, and `links` (package names) linked from this checkout. */
export function packedProject(links: readonly string[] = []): PackedProject {
  const dir = mkdtempSync(join(tmpdir(), 'delayq-consumer-'));
  try {
    const tarball = packTarball(dir);
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    execFileSync('tar', ['-xzf', tarball, '-C', modules], { timeout: 30_000 });
    const pkgDir = join(modules, 'delayq');
    renameSync(join(modules, 'package'), pkgDir);
    const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    for (const name of [...Object.keys(pkg.dependencies ?? {}), ...links]) {
      const target = join(root, 'node_modules', name);
      if (!existsSync(target)) throw new Error(`${name} is not installed in this checkout: run npm ci`);
      mkdirSync(dirname(join(modules, name)), { recursive: true });
      symlinkSync(target, join(modules, name), 'dir');
    }
    return {
      dir,
      pkgDir,
      files: walk(pkgDir).map((f) => relative(pkgDir, f).split(sep).join('/')),
      remove: () => rmSync(dir, { recursive: true, force: true }),
    };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}
