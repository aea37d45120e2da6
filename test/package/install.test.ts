/**
 * `npm ci` on the Node the README names prints no warning: every package the lock file installs
 * accepts the least Node of package.json's `engines` (EBADENGINE otherwise), and every package
 * with an install script is approved or denied in `allowScripts` (npm 11 skips unlisted install
 * scripts and warns about each). Read from package-lock.json, without a network.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

const root = new URL('../../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string }; allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; hasInstallScript?: boolean }>;
};

type Version = [number, number, number];

/** The forms of `engines.node` the lock file holds: `*`, `>=a.b.c`, `^a.b.c`, `a.*`, `a`, joined by spaces and `||`. */
function nodeAccepts(range: string, v: Version): boolean {
  const cmp = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  const parse = (s: string): { v: Version; parts: number } => {
    const nums = s.split('.').filter((p) => /^\d+$/.test(p));
    return { v: [Number(nums[0] ?? 0), Number(nums[1] ?? 0), Number(nums[2] ?? 0)], parts: nums.length };
  };
  const one = (c: string): boolean => {
    if (c === '*' || c === '') return true;
    const m = /^(>=|>|<=|<|\^|~|=)?v?(.+)$/.exec(c);
    if (!m) throw new Error(`engines range form not understood: ${c}`);
    const [, op = '', rest] = m;
    const { v: w, parts } = parse(rest!);
    if (op === '>=') return cmp(v, w) >= 0;
    if (op === '>') return cmp(v, w) > 0;
    if (op === '<=') return cmp(v, w) <= 0;
    if (op === '<') return cmp(v, w) < 0;
    if (op === '^') return v[0] === w[0] && cmp(v, w) >= 0;
    if (op === '~') return v[0] === w[0] && v[1] === w[1] && cmp(v, w) >= 0;
    // A bare or partial version (`20`, `10.*`, `20.19.0`): every part given must match.
    return v.slice(0, parts).every((n, i) => n === w[i]);
  };
  return range.split('||').some((alt) =>
    alt
      .trim()
      .replace(/(>=|<=|>|<|=)\s+/g, '$1')
      .split(/\s+/)
      .every(one),
  );
}

describe('npm ci on the least Node package.json allows', () => {
  const least = /^>=\s*(\d+)\.(\d+)(?:\.(\d+))?$/.exec(pkg.engines.node);
  assert.ok(least, `engines.node is a >= range (${pkg.engines.node})`);
  const node: Version = [Number(least[1]), Number(least[2]), Number(least[3] ?? 0)];

  test('the range check reads the forms the lock file holds', () => {
    assert.ok(nodeAccepts('>=20.19', [20, 19, 0]));
    assert.ok(!nodeAccepts('>=22', [20, 19, 0]));
    assert.ok(nodeAccepts('^18.19.0 || >=20.6.0', [20, 19, 0]));
    assert.ok(nodeAccepts('6.* || 8.* || >= 10.*', [20, 19, 0]));
    assert.ok(nodeAccepts('20 || >=22', [20, 19, 0]));
    assert.ok(!nodeAccepts('^16 || ^18', [20, 19, 0]));
    assert.ok(nodeAccepts('>= 0.8', [20, 19, 0]));
  });

  test(`every package in package-lock.json accepts Node ${node.join('.')} (no EBADENGINE warning)`, () => {
    const refused = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && !Array.isArray(p.engines) && p.engines?.node && !nodeAccepts(p.engines.node, node))
      .map(([path, p]) => `${path}@${p.version} wants node ${(p.engines as { node: string }).node}`);
    assert.deepEqual(refused, []);
  });

  test('every package with an install script is approved or denied in allowScripts (no install-scripts warning)', () => {
    const allowed = pkg.allowScripts ?? {};
    const covered = (name: string, version: string | undefined) => name in allowed || `${name}@${version}` in allowed;
    const uncovered = Object.entries(lock.packages)
      .filter(([path, p]) => p.hasInstallScript && path !== '')
      .map(([path, p]) => ({ name: path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length), version: p.version }))
      .filter(({ name, version }) => !covered(name, version))
      .map(({ name, version }) => `${name}@${version}`);
    assert.deepEqual(uncovered, []);
  });
});
