/**
 * Lua in Redis allows 200 locals per function and 60 upvalues per closure: one feature too many
 * and a script stops loading. Each check here adds a margin of spare names to every function of
 * the library, to its main chunk, and to every EVAL script, and loads the result on a real
 * server: it loads only while every function keeps that margin. The same check with a margin no
 * code could hold fails, so the check itself can fail.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { library, loadScriptSource, SCRIPT_NAMES } from '../../src/store/redis/scripts.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();

/** Spare locals in every function, spare upvalues in every function, spare locals in the main chunk. */
interface Margin {
  locals: number;
  upvalues: number;
  chunk: number;
}
/**
 * What the code must keep free: room for a feature's worth of names. Upvalues are the tighter
 * limit (60 a closure): claim, split along its seams into _claim.lua, _claim_turns.lua and
 * _claim_rates.lua, reads 19 names of the library now (53 before); add reads the most, 46, so
 * the margin held here is 12.
 */
const AMPLE: Margin = { locals: 60, upvalues: 12, chunk: 40 };

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

/** `local a1, a2 = nil, nil` (a statement that declares n locals). */
function declare(prefix: string, n: number, value = 'nil'): string {
  if (n === 0) return '';
  return `local ${names(prefix, n).join(', ')} = ${names(prefix, n)
    .map(() => value)
    .join(', ')}\n`;
}

/** A statement that reads n names of the enclosing scope, making each an upvalue. */
function use(prefix: string, n: number): string {
  if (n === 0) return '';
  return `local _use = ${names(prefix, n).join(' + ')}\n`;
}

function padLibrary(m: Margin, tag: string): string {
  const lib = library();
  let src = lib.source.replaceAll(lib.name, `dq_margin_${tag}`);
  const top = src.indexOf('\n') + 1;
  src = src.slice(0, top) + declare('U', m.upvalues, '1') + declare('C', Math.max(0, m.chunk - m.upvalues)) + src.slice(top);
  // Each function's body begins after its `enter(...)` line, or (a script whose reply may come
  // packed: scripts.ts packedTail) in a function of its own, `run`.
  const pad = `${declare('L', m.locals)}${use('U', m.upvalues)}`;
  return src.replaceAll('\nenter(w, keys, args)\n', `\nenter(w, keys, args)\n${pad}`).replaceAll('\nlocal function run()\n', `\nlocal function run()\n${pad}`);
}

function padScript(name: (typeof SCRIPT_NAMES)[number], m: Margin): string {
  const src = loadScriptSource(name);
  // The body's function: returned, or (a reply that may come packed: scripts.ts packedTail) kept as `out`.
  const opening = ['check_args()\nreturn (function()\n', 'check_args()\nlocal out = (function()\n'].find((o) => src.includes(o));
  assert.ok(opening, `${name}: the body's function`);
  const at = src.indexOf(opening);
  const bodyAt = at + opening.length;
  return (
    src.slice(0, at) +
    declare('U', m.upvalues, '1') +
    declare('C', Math.max(0, m.chunk - m.upvalues)) +
    src.slice(at, bodyAt) +
    declare('L', m.locals) +
    use('U', m.upvalues) +
    src.slice(bodyAt)
  );
}

async function loads(what: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await what();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('Lua limits: every function keeps ample room', () => {
  test(`the library loads with ${AMPLE.locals} more locals and ${AMPLE.upvalues} more upvalues in every function, ${AMPLE.chunk} more locals at its top`, async () => {
    const error = await loads(() => fx.client.call('FUNCTION', 'LOAD', padLibrary(AMPLE, 'ample')));
    assert.equal(error, undefined);
    await fx.client.call('FUNCTION', 'DELETE', 'dq_margin_ample');
  });

  test('each EVAL script (the protocol form) compiles with the same margin', async () => {
    for (const name of SCRIPT_NAMES) {
      const error = await loads(() => fx.client.script('LOAD', padScript(name, AMPLE)));
      assert.equal(error, undefined, name);
    }
  });

  test('a margin no code could keep is refused: the check can fail', async () => {
    for (const m of [
      { ...AMPLE, locals: 200 },
      { ...AMPLE, upvalues: 60 },
      { ...AMPLE, chunk: 200 },
    ]) {
      const error = await loads(() => fx.client.call('FUNCTION', 'LOAD', padLibrary(m, 'over')));
      assert.match(error ?? '', /more than 200 local variables|more than 60 upvalues|too many local variables|overflow/, JSON.stringify(m));
      const scriptError = await loads(() => fx.client.script('LOAD', padScript('claim', m)));
      assert.match(scriptError ?? '', /more than 200 local variables|more than 60 upvalues|too many local variables|overflow/, JSON.stringify(m));
    }
  });
});
