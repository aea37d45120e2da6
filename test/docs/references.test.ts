/**
 * What the README and docs/ point at is in the repository: every relative link names a file
 * that exists (and a heading of it, for a link with `#`), every path of the repository written
 * in backticks exists, and no page sends the reader to a document the repository does not hold.
 * Also what a page says that a test elsewhere holds the code to (the clock lag is measured on).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const text = (page: string) => readFileSync(join(root, page), 'utf8');
/** A page without its fenced code blocks: links and paths are read from the prose. */
const prose = (page: string) => text(page).replace(/^ *```[\s\S]*?^ *```/gm, '');

/** The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(page).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('the docs point at what the repository holds', () => {
  test('every relative link names a file that exists, and a heading of it', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const m of prose(page).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const path = file === '' ? page : relative(root, join(root, dirname(page), file));
        if (!existsSync(join(root, path))) broken.push(`${page}: ${target} (no ${path})`);
        else if (anchor !== undefined && path.endsWith('.md') && !anchors(path).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${path})`);
      }
    }
    assert.deepEqual(broken, []);
  });

  test('every path of the repository written in backticks exists', () => {
    const missing: string[] = [];
    for (const page of pages) {
      for (const m of prose(page).matchAll(/`((?:src|test|bench|scripts|docs)\/[\w./-]+)`/g)) {
        const path = m[1]!;
        // What the benchmark writes (bench/results/ is in .gitignore) is not in the repository.
        if (path.startsWith('bench/results/')) continue;
        if (!existsSync(join(root, path))) missing.push(`${page}: ${path}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test('no page sends the reader to a document the repository does not hold', () => {
    const outside = [/DESIGN\.md/, /\bthe contract\b/i, /\bcontract's\b/i, /\bthe seeds?'s?\b/i];
    const found: string[] = [];
    for (const page of pages) {
      text(page)
        .split('\n')
        .forEach((line, i) => {
          if (outside.some((re) => re.test(line))) found.push(`${page}:${i + 1}: ${line.trim()}`);
        });
    }
    assert.deepEqual(found, []);
  });

  test("metrics.md says lag is measured on the Redis server's clock, as the code does (test/metrics: the server's clock, not the worker host's)", () => {
    const metrics = prose('docs/metrics.md');
    assert.match(metrics, /lag figures are measured on the\s+Redis server's clock, never a worker host's/);
    assert.doesNotMatch(metrics, /measured on the worker's host clock/);
    assert.doesNotMatch(metrics, /NTP/);
  });
});
