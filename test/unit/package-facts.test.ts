import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { VERSION } from '../../src/index.js';
import { SCRIPT_NAMES } from '../../src/store/redis/scripts.js';

const root = new URL('../../../', import.meta.url);
const scriptsDir = new URL('src/store/redis/scripts/', root);

describe('package facts', () => {
  test('VERSION is the version in package.json (script names carry it)', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string };
    assert.equal(VERSION, pkg.version);
  });

  test('every .lua script is loaded, and every loaded script has a header listing KEYS, ARGV and what it returns', () => {
    const files = readdirSync(scriptsDir).filter((f) => f.endsWith('.lua') && !f.startsWith('_'));
    assert.deepEqual([...files].sort(), SCRIPT_NAMES.map((n) => `${n}.lua`).sort());
    for (const f of files) {
      const text = readFileSync(new URL(f, scriptsDir), 'utf8');
      const header = text.slice(0, text.indexOf(']]'));
      assert.ok(header.startsWith(`--[[ ${f.replace(/\.lua$/, '')}:`), `${f} starts with its name`);
      for (const part of ['KEYS:', 'ARGV:', 'Returns:']) assert.ok(header.includes(part), `${f} header lists ${part}`);
    }
  });
});
