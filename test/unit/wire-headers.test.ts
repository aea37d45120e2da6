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
import { StoreError } from '../../src/errors.js';
import { decodeReply, REPLY_AT, replyValue } from '../../src/store/redis/replies.js';
import { argRule, CODES, describeReply, luaPrologue, SCRIPT_NAMES, WIRE, type ReplyShape, type ScriptWire } from '../../src/store/redis/wire.js';

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
      assert.equal(h.get('Returns'), describeReply(w.reply));
      const source = readFileSync(new URL(`../../src/store/redis/scripts/${name}.lua`, import.meta.url), 'utf8');
      assert.doesNotMatch(source, /(KEYS|ARGV)\[\d/, 'reads KEYS/ARGV through the generated names');
      // Every key it touches comes from keys.ts: as a declared KEY, or a dedup key from DEDUP_PREFIX.
      assert.doesNotMatch(source.replace(/--\[\[[\s\S]*?\]\]/, ''), /\bROOT \.\./, 'builds no key name of its own');
      // Every CODE.<name> the script uses exists in its family.
      const family = w.codes ? CODES[w.codes] : {};
      for (const [, code] of source.matchAll(/CODE\.(\w+)/g)) assert.ok(code! in family, `CODE.${code} is not in ${w.codes ?? 'no family'}`);
      // The reply is written by name: every R.<field> and RE.<field> is one of the reply's.
      for (const [, f] of source.matchAll(/\bR\.(\w+)/g)) assert.ok(w.reply.fields?.includes(f!), `R.${f} is not a field of ${name}'s reply`);
      for (const [, f] of source.matchAll(/\bRE\.(\w+)/g)) assert.ok(w.reply.each?.includes(f!), `RE.${f} is not an item field of ${name}'s reply`);
      // A reply of several fields is built through them, never as a literal list of positions.
      if ((w.reply.fields?.length ?? 0) > 1) assert.match(source, /\breply\(|\bR\.\w+/, `${name} builds its reply by name`);
    });
  }

  test('the scripts fed by flat rows take their items in the order the store writes them', () => {
    for (const name of ['extend', 'release'] as const) assert.deepEqual(WIRE[name].each, ['id', 'token'], name);
    // RedisStore.complete pushes id, token, result per ack.
    assert.deepEqual(WIRE.complete.each, ['id', 'token', 'result']);
  });

  test("a packed add's common tail needs no rule looked up: priority 0 is in its rule, max_attempts and timeout_ms may be unset", () => {
    // _add_packed.lua check_tail skips check() for priority '0' and for empty limits.
    const priority = argRule('add', 'priority');
    assert.ok('int' in priority && priority.int[0] <= 0 && priority.int[1] >= 0, JSON.stringify(priority));
    for (const name of ['max_attempts', 'timeout_ms']) assert.equal((argRule('add', name) as { unset?: true }).unset, true, name);
  });

  test('the prologue names every key and argument in order', () => {
    const p = luaPrologue('claim');
    assert.match(p, /^local K_SCHEDULED, K_MEMO = KEYS\[1\], KEYS\[2\]$/m);
    // The other base keys and the keys built from suffixes, from the root (protocol 8: passing
    // all 25 base keys cost every call ~32k Redis instructions).
    assert.match(
      p,
      /^local K_READY, K_ACTIVE, K_DEAD, K_SEQ, K_JOBS, K_RUNS, K_META, K_EVENTS, K_COMPLETED, K_RESULTS, K_PROGRESS, K_LOGS, K_ERRORS, K_GROUP_OF, K_GROUPS, K_LANES, K_WAITING, K_FLOW_OF, K_DEBOUNCE, K_RATE, K_RATE_LOG, K_RATE_WAKE, K_REVOKED, K_WAITERS, DEDUP_PREFIX, K_WAITING_DUE, K_RANKED, K_HISTORY = ROOT \.\. 'ready', .*ROOT \.\. 'waiters', ROOT \.\. 'dedup:', ROOT \.\. 'waiting-due', ROOT \.\. 'ranked', ROOT \.\. 'history'$/m,
    );
    assert.match(p, /^local A = \{ count = 3, lease_ms = 4, default_max = 5, promote_limit = 6, reap_limit = 7, request_id = 8, worker = 9, packed = 10 \}$/m);
    assert.ok(loadScriptSource('claim').includes(p));
  });
});

describe('replies are read by name', () => {
  test('decodeReply names fields and items, and a reply that does not fit its shape is an error', () => {
    const r = decodeReply('timeline', [1000, 900, 3, 0]);
    assert.deepEqual(r.fields, { now_ms: 1000, from_ms: 900 });
    assert.deepEqual(r.items, [{ due: 3 }, { due: 0 }]);
    const w = decodeReply('workers', [5, 'w1', 99, 'e1']);
    assert.deepEqual(w.items, [{ id: 'w1', expires_ms: 99, entry: 'e1' }]);
    assert.throws(
      () => decodeReply('workers', [5, 'w1', 99]),
      (e: unknown) => e instanceof StoreError && /does not fit/.test(e.message),
    );
    assert.throws(() => decodeReply('fail', [1]), StoreError);
    assert.throws(() => decodeReply('fail', 'x'), StoreError);
    assert.throws(() => replyValue('purge', [1]), StoreError);
    assert.equal(replyValue('purge', 3), 3);
  });

  test('the prologue gives each script the positions of its reply, as replies.ts reads them', () => {
    for (const name of SCRIPT_NAMES) {
      const p = luaPrologue(name);
      const shape = WIRE[name].reply as ReplyShape;
      const line = (local: string) => new RegExp(`^local ${local} = \\{(.*)\\}$`, 'm').exec(p)![1]!;
      for (const [i, f] of (shape.fields ?? []).entries()) assert.match(line('R'), new RegExp(`\\b${f} = ${i + 1}\\b`), `${name} R.${f}`);
      for (const [i, f] of (shape.each ?? []).entries()) assert.match(line('RE'), new RegExp(`\\b${f} = ${i + 1}\\b`), `${name} RE.${f}`);
      assert.equal(REPLY_AT[name].first + 1, Number(/^local R_EACH_FIRST = (\d+)$/m.exec(p)![1]), name);
    }
  });
});
