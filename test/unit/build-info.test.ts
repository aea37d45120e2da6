import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const root = new URL('../../../', import.meta.url);
const require = createRequire(root);
const json = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;

test('dist/ was built by the pinned TypeScript, not the ts7 alias', () => {
  const pkg = json(new URL('package.json', root).pathname) as { devDependencies: Record<string, string> };
  const info = json(new URL('dist/build-info.json', root).pathname);
  const pinned = json(require.resolve('typescript/package.json')).version as string;
  const ts7 = json(require.resolve('ts7/package.json')).version as string;
  assert.equal(info.pin, pkg.devDependencies.typescript, 'build-info records the pin in package.json');
  assert.equal(info.typescript, pinned, 'dist/ was compiled by node_modules/typescript');
  const [major, minor] = pkg.devDependencies.typescript!.replace(/^[~^]/, '').split('.');
  assert.ok((info.typescript as string).startsWith(`${major}.${minor}.`), `compiler ${String(info.typescript)} is within ${pkg.devDependencies.typescript}`);
  assert.notEqual(info.typescript, ts7, 'the TypeScript 7 alias is only for typecheck:ts7');
});
