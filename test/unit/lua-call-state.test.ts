/**
 * In the Functions library the helper files run once, at load, and their top-level names live as
 * long as the library: a cache one call fills would be read by the next call, of another queue.
 * So a helper file's top-level names are functions, constants (UPPERCASE, never written after
 * load) or per-call state declared `local name = nil`, which every library function sets back
 * to nil as it enters (scripts.ts perCallNames). This test reads the helper files and fails on
 * any other top-level name, and on a write to a constant.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { librarySource, perCallNames } from '../../src/store/redis/scripts.js';

const scriptsDir = new URL('../../src/store/redis/scripts/', import.meta.url);
const files = readdirSync(scriptsDir).filter((f) => f.endsWith('.lua'));
const helpers = files.filter((f) => f.startsWith('_')).map((file) => ({ file, source: readFileSync(new URL(file, scriptsDir), 'utf8') }));
const all = files.map((file) => ({ file, source: readFileSync(new URL(file, scriptsDir), 'utf8') }));

/** Lines without Lua comments. */
function code(source: string): string[] {
  return source
    .replace(/--\[\[[\s\S]*?\]\]/g, '')
    .split('\n')
    .map((l) => l.replace(/--.*$/, ''));
}

/**
 * The one state a call may leave to the next: a memo whose every entry is a function of its key
 * alone (the text of a number -> the number, _helpers.lua arg_as_int; a small whole number -> its
 * text, text), so whichever queue or call filled it, the next reads what it would have computed.
 * Bounded in size by its code.
 */
const PURE_MEMOS = new Set(['arg_numbers', 'arg_numbers_size']);

describe('the library keeps no state between calls', () => {
  test('every top-level name of a helper file is a function, an UPPERCASE constant or per-call state (= nil)', () => {
    const offenders: string[] = [];
    for (const { file, source } of helpers) {
      for (const line of code(source)) {
        const m = /^local (\w+(?:, \w+)*) = (.*)$/.exec(line.trimEnd());
        if (!m) continue;
        for (const name of m[1]!.split(', ')) {
          if (/^[A-Z][A-Z0-9_]*$/.test(name)) continue;
          if (m[2] === 'nil') continue;
          if (PURE_MEMOS.has(name)) continue;
          offenders.push(`${file}: ${line.trim()}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  test('no script writes a constant of the helper files after load', () => {
    const constants = new Set<string>();
    for (const { source } of helpers) {
      for (const line of code(source)) {
        // Per-call names (= nil) are set by their calls; constants never after load.
        const m = /^local ([A-Z][A-Z0-9_]*) = (?!nil$)/.exec(line.trimEnd());
        if (m) constants.add(m[1]!);
      }
    }
    assert.ok(constants.size > 0);
    const offenders: string[] = [];
    for (const { file, source } of all) {
      for (const line of code(source)) {
        const l = line.trim();
        if (l.startsWith('local ')) continue;
        for (const name of constants) {
          if (new RegExp(`^${name}(\\.\\w+|\\[[^\\]]+\\])* =[^=]`).test(l)) offenders.push(`${file}: ${l}`);
        }
      }
    }
    assert.deepEqual(offenders, []);
  });

  test('the library sets every per-call name back to nil as a call enters', () => {
    const names = helpers.flatMap(({ source }) => perCallNames(source));
    assert.ok(names.length >= 4, names.join(', '));
    const { source } = librarySource();
    const enter = source.slice(source.indexOf('local function enter('), source.indexOf('\nend\n', source.indexOf('local function enter(')));
    for (const name of names) assert.match(enter, new RegExp(`\\b${name}\\b[^\\n]*= [^\\n]*nil`), name);
  });
});
