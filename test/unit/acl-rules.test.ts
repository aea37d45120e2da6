import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { aclRules, aclSetUserLine } from '../../src/index.js';
import { SCRIPT_COMMANDS } from '../../src/store/redis/acl.js';

const root = new URL('../../../', import.meta.url);
const scriptsDir = new URL('src/store/redis/scripts/', root);

describe('aclRules()', () => {
  test("grants exactly the commands the Lua scripts call (Redis checks a script's commands against the user too)", () => {
    const called = new Set<string>();
    for (const f of readdirSync(scriptsDir).filter((n) => n.endsWith('.lua'))) {
      const text = readFileSync(new URL(f, scriptsDir), 'utf8');
      for (const m of text.matchAll(/(?:redis\.p?call|call_chunked)\(\s*'([A-Za-z]+)'/g)) called.add(m[1]!.toLowerCase());
    }
    assert.deepEqual([...new Set(SCRIPT_COMMANDS)].sort(), [...called].sort());
    for (const c of called) assert.ok(aclRules().includes(`+${c}`), `+${c}`);
  });

  test('docs/operations.md prints the rules aclRules() gives for the default prefix', () => {
    const docs = readFileSync(new URL('docs/operations.md', root), 'utf8');
    const line = `ACL SETUSER delayq on >a-long-password ${aclRules('dq').join(' ')}`;
    assert.ok(docs.includes(`\n${line}\n`), `docs/operations.md should hold the line:\n${line}`);
    assert.equal(aclSetUserLine('delayq', 'a-long-password'), line, 'aclSetUserLine gives that line');
  });

  test('aclSetUserLine refuses a user or password with a space (it could not go on one line)', () => {
    assert.throws(() => aclSetUserLine('del ayq', 'pw'), TypeError);
    assert.throws(() => aclSetUserLine('delayq', 'two words'), TypeError);
    assert.match(aclSetUserLine('app', 'pw', 'jobs'), /^ACL SETUSER app on >pw resetkeys ~jobs:\* resetchannels &jobs:\* -@all \+fcall /);
  });
});
