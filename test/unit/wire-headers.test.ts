/**
 * The wire format of every script is written once, in wire.ts; each `.lua` header states it
 * for a reader of the script. This test holds the two together: the KEYS, ARGV, EACH and
 * Returns lines of every header must say exactly what WIRE says, and no script may index KEYS
 * or ARGV by number (it reads them through the generated names).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { loadScriptSource } from '../../src/store/redis/scripts.js';
import { CODES, luaPrologue, SCRIPT_NAMES, WIRE, type ScriptWire } from '../../src/store/redis/wire.js';

function header(name: string): Map<string, string> {
  const text = readFileSync(new URL(`../../src/store/redis/scripts/${name}.lua`, import.meta.url), 'utf8');
  const head = text.slice(0, text.indexOf(']]'));
  const lines = new Map<string, string>();
  for (const line of head.split('\n')) {
    const m = /^(KEYS|ARGV|EACH|Returns): (.*)$/.exec(line);
    if (m) lines.set(m[1]!, m[2]!);
  }
  return lines;
}

describe('script headers match wire.ts', () => {
  for (const name of SCRIPT_NAMES) {
    test(name, () => {
      const w: ScriptWire = WIRE[name];
      const h = header(name);
      assert.equal(h.get('KEYS'), ['base', ...w.keys].join(', '));
      assert.equal(h.get('ARGV'), ['base', ...w.args].join(', '));
      assert.equal(h.get('EACH'), w.each ? w.each.join(', ') : undefined);
      assert.equal(h.get('Returns'), w.returns);
      const source = readFileSync(new URL(`../../src/store/redis/scripts/${name}.lua`, import.meta.url), 'utf8');
      assert.doesNotMatch(source, /(KEYS|ARGV)\[\d/, 'reads KEYS/ARGV through the generated names');
      // Every CODE.<name> the script uses exists in its family.
      const family = w.codes ? CODES[w.codes] : {};
      for (const [, code] of source.matchAll(/CODE\.(\w+)/g)) assert.ok(code! in family, `CODE.${code} is not in ${w.codes ?? 'no family'}`);
    });
  }

  test('the scripts fed by flat rows take their items in the order the store writes them', () => {
    for (const name of ['extend', 'release'] as const) assert.deepEqual(WIRE[name].each, ['id', 'token'], name);
    // RedisStore.complete pushes id, token, result per ack.
    assert.deepEqual(WIRE.complete.each, ['id', 'token', 'result']);
  });

  test('the prologue names every key and argument in order', () => {
    const p = luaPrologue('claim');
    assert.match(
      p,
      /^local K_SCHEDULED, K_READY, K_ACTIVE, K_DEAD, K_SEQ, K_JOBS, K_RUNS, K_META, K_EVENTS, K_COMPLETED, K_RESULTS, K_PROGRESS, K_LOGS, K_ERRORS, K_MEMO = KEYS\[1\], .*KEYS\[15\]$/m,
    );
    assert.match(p, /^local A = \{ count = 3, lease_ms = 4, default_max = 5, promote_limit = 6, reap_limit = 7, request_id = 8, worker = 9 \}$/m);
    assert.ok(loadScriptSource('claim').includes(p));
  });
});
