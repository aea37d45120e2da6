/**
 * The published protocol is what src/store/redis/protocol.ts makes from wire.ts. The manifest
 * (protocol/manifest.json) is kept in git: a change of a script's wire, a format or the key layout
 * that is not published again (`npm run protocol`) fails here. The scripts (protocol/scripts/*.lua)
 * are not: `npm run build` writes them, and this checks it did, every one as the build makes it
 * (test/package/consumers.test.ts checks the packed ones). And what is published holds together:
 * every script the manifest names is there, every argument is documented, and a self-contained
 * script is the library's own source under its header.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { PROTOCOL_VERSION, protocolManifest, protocolScript } from '../../src/store/redis/protocol.js';
import { loadScriptSource } from '../../src/store/redis/scripts.js';
import { SCRIPT_NAMES } from '../../src/store/redis/wire.js';

// The repository's files (this test runs from dist/test/unit).
const root = new URL('../../../protocol/', import.meta.url);

describe('the published protocol', () => {
  test('protocol/manifest.json is what the build makes (run npm run protocol after changing the wire)', () => {
    const committed = JSON.parse(readFileSync(new URL('manifest.json', root), 'utf8'));
    assert.deepEqual(committed, JSON.parse(JSON.stringify(protocolManifest())));
    assert.equal(committed.protocol, PROTOCOL_VERSION);
  });

  test('npm run build wrote protocol/scripts: every script, each as the build makes it, and nothing else', () => {
    assert.ok(existsSync(new URL('scripts/', root)), 'protocol/scripts is missing: npm run build writes it (scripts/protocol.js)');
    const files = readdirSync(new URL('scripts/', root)).sort();
    assert.deepEqual(files, SCRIPT_NAMES.map((n) => `${n}.lua`).sort());
    for (const name of SCRIPT_NAMES) {
      const text = readFileSync(new URL(`scripts/${name}.lua`, root), 'utf8');
      assert.equal(text, protocolScript(name), `${name}.lua is out of date`);
      assert.ok(text.endsWith(loadScriptSource(name)), `${name}.lua runs the library's own source`);
      assert.doesNotMatch(text, /^--@include/m, `${name}.lua is self-contained`);
    }
  });

  test('the generated scripts are not kept in git; the manifest is', () => {
    const ignored = readFileSync(new URL('../.gitignore', root), 'utf8').split('\n');
    assert.ok(ignored.includes('/protocol/scripts/'), '.gitignore has /protocol/scripts/');
    assert.ok(!ignored.some((l) => /^\/?protocol\/?(manifest\.json)?$/.test(l)), 'the manifest is not ignored');
  });

  test('every argument and item field of every script is documented with its type', () => {
    const m = protocolManifest();
    for (const [name, s] of Object.entries(m.scripts)) {
      for (const a of [...s.args, ...(s.items?.fields ?? [])]) {
        assert.ok(typeof a.type === 'string' && typeof a.doc === 'string' && a.doc.length > 0, `${name}: ${a.name}`);
      }
      for (const k of s.keys) assert.match(k.key, /^<prefix>:\{<queue>\}:/, `${name}: key ${k.name}`);
    }
  });
});
