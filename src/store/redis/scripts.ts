/**
 * Loads the Lua scripts from their .lua files and runs them by EVALSHA, falling back to EVAL
 * when the server does not know the script (after a restart or SCRIPT FLUSH), which also
 * loads it. Each script's source starts with the package name and version, so two versions
 * of delayq never run each other's scripts under one SHA.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from './connection.js';
import { VERSION } from '../../version.js';
import { luaPrologue, SCRIPT_NAMES, type ScriptName } from './wire.js';

export { SCRIPT_NAMES, type ScriptName };

export interface Script {
  readonly name: ScriptName;
  readonly source: string;
  readonly sha: string;
}

const INCLUDE = /^--@include (\S+)\s*$/gm;

function readScript(file: string): string {
  return readFileSync(new URL(`./scripts/${file}`, import.meta.url), 'utf8');
}

const NOW_MS = 'local function now_ms()\n';

/**
 * Resolves the `--@include file` lines in order (one level: included files include nothing),
 * the first preceded by the script's generated prologue (wire.ts luaPrologue). With `testClockKey`,
 * now_ms() returns that key's value while it is set: a frozen server clock for tests that
 * step time (the differential test). Production scripts never carry it.
 */
export function loadScriptSource(name: ScriptName, testClockKey?: string): string {
  const raw = readScript(`${name}.lua`);
  let first = true;
  // The named KEYS/ARGV locals (wire.ts) come first: the helpers read them too.
  let body = raw.replace(INCLUDE, (_, file: string) => {
    const prologue = first ? luaPrologue(name) : '';
    first = false;
    return prologue + readScript(file);
  });
  if (first) throw new Error(`${name}.lua: no --@include line`);
  if (testClockKey !== undefined) {
    if (!body.includes(NOW_MS)) throw new Error(`${name}.lua: no now_ms() to replace`);
    body = body.replace(NOW_MS, `${NOW_MS}  local fixed = redis.call('GET', ${JSON.stringify(testClockKey)})\n  if fixed then return tonumber(fixed) end\n`);
  }
  return `-- delayq ${VERSION} ${name}\n${body}`;
}

const caches = new Map<string, Map<ScriptName, Script>>();

export function scripts(testClockKey?: string): Map<ScriptName, Script> {
  let cache = caches.get(testClockKey ?? '');
  if (!cache) {
    cache = new Map();
    for (const name of SCRIPT_NAMES) {
      const source = loadScriptSource(name, testClockKey);
      cache.set(name, { name, source, sha: createHash('sha1').update(source).digest('hex') });
    }
    caches.set(testClockKey ?? '', cache);
  }
  return cache;
}

export async function runScript(
  client: Client,
  name: ScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
  testClockKey?: string,
): Promise<unknown> {
  const script = scripts(testClockKey).get(name)!;
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return client.eval(script.source, keys.length, ...keys, ...args);
    }
    throw err;
  }
}
