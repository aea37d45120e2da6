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

export const SCRIPT_NAMES = [
  'add',
  'claim',
  'complete',
  'fail',
  'extend',
  'release',
  'cancel',
  'reschedule',
  'get',
  'stats',
  'snooze',
  'dead-list',
  'dead-retry',
  'dead-purge',
  'set-meta',
  'schedule-set',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

export interface Script {
  readonly name: ScriptName;
  readonly source: string;
  readonly sha: string;
}

const INCLUDE = /^--@include (\S+)\s*$/m;

function readScript(file: string): string {
  return readFileSync(new URL(`./scripts/${file}`, import.meta.url), 'utf8');
}

/** Resolves `--@include file` lines (one level: helpers include nothing). */
export function loadScriptSource(name: ScriptName): string {
  const raw = readScript(`${name}.lua`);
  const body = raw.replace(INCLUDE, (_, file: string) => readScript(file));
  return `-- delayq ${VERSION} ${name}\n${body}`;
}

let cache: Map<ScriptName, Script> | undefined;

export function scripts(): Map<ScriptName, Script> {
  if (!cache) {
    cache = new Map();
    for (const name of SCRIPT_NAMES) {
      const source = loadScriptSource(name);
      cache.set(name, { name, source, sha: createHash('sha1').update(source).digest('hex') });
    }
  }
  return cache;
}

export async function runScript(
  client: Client,
  name: ScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  const script = scripts().get(name)!;
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return client.eval(script.source, keys.length, ...keys, ...args);
    }
    throw err;
  }
}
