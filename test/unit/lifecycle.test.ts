/**
 * The job lifecycle has one home per store (src/store/lifecycle.ts): every way into and out of
 * `active` goes through _lifecycle.lua's enter_active / leave_active / renew_active on Redis and
 * MemoryQueue's #move on the memory store, so a rule that spans every transition (a running
 * count per group) is written once per store. This test reads the sources and fails when a
 * script or the memory store moves a job some other way, or names an event or token mark that
 * lifecycle.ts does not define.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { EVENTS, FINISHES, LIMIT, MARK, PLACES } from '../../src/store/lifecycle.js';

const scriptsDir = new URL('../../src/store/redis/scripts/', import.meta.url);
// The TypeScript sources (this test runs from dist/, which holds only the compiled files).
const memoryDir = new URL('../../../src/store/memory/', import.meta.url);
const scripts = readdirSync(scriptsDir)
  .filter((f) => f.endsWith('.lua'))
  .map((file) => ({ file, source: readFileSync(new URL(file, scriptsDir), 'utf8') }));

/** Source lines without Lua comments (a `--` comment may name anything). */
function codeLines(source: string): string[] {
  return source
    .replace(/--\[\[[\s\S]*?\]\]/g, '')
    .split('\n')
    .map((l) => l.replace(/--.*$/, ''));
}

/** Reads of the active set any script may make. */
const READS = /redis\.call\('(ZSCORE|ZCARD|ZRANGE|ZRANGEBYSCORE|ZMSCORE|ZCOUNT|ZRANK)', K_ACTIVE|head_score\(K_ACTIVE\)|members_of\(K_ACTIVE/;
/** Lines that name the active set and are no move, each with why. */
const ALLOWED: Record<string, RegExp> = {
  // Every key of the queue goes at once: no job is left to leave anything.
  'obliterate.lua': /^redis\.call\('UNLINK', K_SCHEDULED, K_READY, K_ACTIVE,/,
  // The listing's table of sets to read from.
  'list.lua': /SETS = \{ .*active = K_ACTIVE/,
};

describe('the job lifecycle has one home per store', () => {
  test('no script writes the active set except through _lifecycle.lua', () => {
    const offenders: string[] = [];
    for (const { file, source } of scripts) {
      if (file === '_lifecycle.lua') continue;
      for (const line of codeLines(source)) {
        if (!line.includes('K_ACTIVE')) continue;
        if (READS.test(line) || ALLOWED[file]?.test(line.trim())) continue;
        offenders.push(`${file}: ${line.trim()}`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  test('scripts that start or end a lease include _lifecycle.lua, and it is the only place that writes K_ACTIVE', () => {
    for (const { file, source } of scripts) {
      const uses = /\b(enter_active|leave_active|renew_active|lease_status|given_up)\(/.test(codeLines(source).join('\n'));
      if (file.startsWith('_') || !uses) continue;
      assert.match(source, /^--@include _lifecycle\.lua$/m, file);
    }
    const lifecycle = scripts.find((s) => s.file === '_lifecycle.lua')!.source;
    const writers = codeLines(lifecycle).filter((l) => /'(ZADD|ZREM)', K_ACTIVE/.test(l));
    assert.equal(writers.length, 3, 'enter_active, leave_active, renew_active');
  });

  test('every event a script writes, every place and every token mark is one lifecycle.ts defines', () => {
    for (const { file, source } of scripts) {
      const code = codeLines(source).join('\n');
      assert.doesNotMatch(code, /emit\('/, `${file}: events are named through EVENT.<name>`);
      for (const [, name] of code.matchAll(/EVENT\.(\w+)/g)) assert.ok((EVENTS as readonly string[]).includes(name!), `${file}: EVENT.${name}`);
      for (const [, name] of code.matchAll(/MARK\.(\w+)/g)) assert.ok(name! in MARK, `${file}: MARK.${name}`);
      for (const [, name] of code.matchAll(/LIMIT\.(\w+)/g)) assert.ok(name! in LIMIT, `${file}: LIMIT.${name}`);
      for (const [, name] of code.matchAll(/PLACE\.(\w+)/g)) assert.ok((PLACES as readonly string[]).includes(name!), `${file}: PLACE.${name}`);
      // A mark is written through MARK, never as a literal prefix of a token.
      assert.doesNotMatch(code, /'[-~+]' \.\. (r\.k|token|tokens\[)/, `${file}: token marks through MARK`);
    }
  });

  test("every end of a job goes through _lifecycle.lua's finish: no other script writes the dead or completed set, or deletes a job that has not ended", () => {
    // Deletes of jobs that already ended (purge, the retention trim, a dead-retry of a body that
    // is gone) are no end of a job: `forget` is theirs to call.
    const FORGETS: Record<string, RegExp> = { 'purge.lua': /^forget\(dead\)$/, 'dead-retry.lua': /^forget\(gone\)$/ };
    const offenders: string[] = [];
    for (const { file, source } of scripts) {
      if (file === '_lifecycle.lua') continue;
      for (const line of codeLines(source)) {
        const l = line.trim();
        if (/'ZADD', K_(DEAD|COMPLETED)\b/.test(l)) offenders.push(`${file}: ${l}`);
        if (
          /(^|[^_\w])forget\(/.test(l) &&
          !l.startsWith('local function forget(') &&
          !FORGETS[file]?.test(l) &&
          !(file === '_helpers.lua' && l === 'forget(victims)')
        )
          offenders.push(`${file}: ${l}`);
        if (/HINCRBY', K_META, 'completed'/.test(l)) offenders.push(`${file}: ${l}`);
      }
    }
    assert.deepEqual(offenders, []);
    for (const { file, source } of scripts) {
      if (file.startsWith('_') || !/\bfinish\(/.test(codeLines(source).join('\n'))) continue;
      assert.match(source, /^--@include _lifecycle\.lua$/m, file);
    }
    const lifecycle = codeLines(scripts.find((s) => s.file === '_lifecycle.lua')!.source).join('\n');
    for (const f of FINISHES) assert.match(lifecycle, new RegExp(`outcome == FINISH\\.${f}\\b`), `finish handles ${f}`);
  });

  test('the memory store ends a job only through MemoryQueue.finish', () => {
    const queue = readFileSync(new URL('memory-queue.ts', memoryDir), 'utf8');
    const store = readFileSync(new URL('memory-store.ts', memoryDir), 'utf8');
    // Into the dead or completed place only in finish; the store deletes a job (remove) only for
    // deletes that are no end: a replace, purge, the retention trim, obliterate.
    // finish and finishAll (a call's ends together, which finish is one of).
    const finish = queue.slice(queue.indexOf('  finish('), queue.indexOf('\n  }\n', queue.indexOf('  finishAll(')));
    for (const place of ['dead', 'completed']) {
      const moves = [...queue.matchAll(new RegExp(`#move\\(job, '${place}'\\)`, 'g'))].length;
      assert.equal(moves, 1, `one move to ${place}`);
      assert.match(finish, new RegExp(`#move\\(job, '${place}'\\)`), `the move to ${place} is in finish`);
    }
    assert.doesNotMatch(store, /completed\+\+/, 'the completed total is counted in finish');
    const removes = [...store.matchAll(/q\.remove\(/g)].length;
    assert.equal(removes, 4, 'q.remove: a replace, purge, the retention trim, obliterate');
    for (const f of FINISHES) assert.match(finish, new RegExp(`case '${f}'`), `finish handles ${f}`);
  });

  test("the memory store moves a job only through MemoryQueue's #move, and marks tokens through MARK", () => {
    const queue = readFileSync(new URL('memory-queue.ts', memoryDir), 'utf8');
    const store = readFileSync(new URL('memory-store.ts', memoryDir), 'utf8');
    const assignments = [...queue.matchAll(/^(.*)\.where = /gm)].map((m) => m[1]!.trim());
    assert.deepEqual(assignments, ['job'], 'one assignment of where, in #move');
    const move = queue.slice(queue.indexOf('  #move('), queue.indexOf('\n  }\n', queue.indexOf('  #move(')));
    assert.match(move, /job\.where = where;/);
    assert.doesNotMatch(store, /\.where = /, 'memory-store.ts assigns no place itself');
    assert.doesNotMatch(store, /`[-~+]\$\{/, 'token marks through MARK');
  });
});
