/**
 * One script run as a client of another language builds it: KEYS and ARGV from the published
 * manifest (the default prefix `dq`), the memo key from the request id.
 */
import type { Redis } from 'ioredis';
import { protocolManifest } from '../../src/store/redis/protocol.js';
import { runScript } from '../../src/store/redis/scripts.js';
import type { ScriptName } from '../../src/store/redis/wire.js';

const manifest = protocolManifest();

/** A call's KEYS and ARGV before its items, from the manifest. */
export function callHead(name: ScriptName, q: string, args: Record<string, string | number>): { keys: string[]; argv: string[] } {
  const s = manifest.scripts[name];
  const root = `dq:{${q}}:`;
  const keys = s.keys.map((k) =>
    k.key
      .replace('<prefix>', 'dq')
      .replace('<queue>', q)
      .replace(/req:<request id>.*$/, `req:${args.request_id || 'none'}`),
  );
  const argv = s.args.map((a) => (a.name === 'root' ? root : a.name === 'wake' ? `${root}wake` : String(args[a.name] ?? '')));
  return { keys, argv };
}

export function callScript(client: Redis, name: ScriptName, q: string, args: Record<string, string | number>, items: Record<string, string | number>[] = []) {
  const { keys, argv } = callHead(name, q, args);
  for (const item of items) for (const f of manifest.scripts[name].items!.fields) argv.push(String(item[f.name] ?? ''));
  return runScript(client, name, keys, argv);
}
