/**
 * The published protocol (protocol/manifest.json, protocol/scripts/*.lua) is what
 * src/store/redis/protocol.ts makes from wire.ts: a change of a script's wire, a format or the key
 * layout that is not published again (`npm run protocol`) fails here. And what is published holds
 * together: every script the manifest names is there, every argument is documented, and a
 * self-contained script is the library's own source under its header.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
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

  test('protocol/scripts holds every script, each as the build makes it, and nothing else', () => {
    const files = readdirSync(new URL('scripts/', root)).sort();
    assert.deepEqual(files, SCRIPT_NAMES.map((n) => `${n}.lua`).sort());
    for (const name of SCRIPT_NAMES) {
      const text = readFileSync(new URL(`scripts/${name}.lua`, root), 'utf8');
      assert.equal(text, protocolScript(name), `${name}.lua is out of date`);
      assert.ok(text.endsWith(loadScriptSource(name)), `${name}.lua runs the library's own source`);
      assert.doesNotMatch(text, /^--@include/m, `${name}.lua is self-contained`);
    }
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
