/**
 * One script run as a client of another language builds it: KEYS and ARGV from the published
 * manifest (the default prefix `dq`), the memo key from the request id.
 */
import type { Redis } from 'ioredis';
import { protocolManifest } from '../../src/store/redis/protocol.js';
import { runScript } from '../../src/store/redis/scripts.js';
import type { ScriptName } from '../../src/store/redis/wire.js';

const manifest = protocolManifest();

export function callScript(client: Redis, name: ScriptName, q: string, args: Record<string, string | number>, items: Record<string, string | number>[] = []) {
  const s = manifest.scripts[name];
  const root = `dq:{${q}}:`;
  const keys = s.keys.map((k) =>
    k.key
      .replace('<prefix>', 'dq')
      .replace('<queue>', q)
      .replace(/req:<request id>.*$/, `req:${args.request_id || 'none'}`),
  );
  const argv = s.args.map((a) => (a.name === 'root' ? root : a.name === 'wake' ? `${root}wake` : String(args[a.name] ?? '')));
  for (const item of items) for (const f of s.items!.fields) argv.push(String(item[f.name] ?? ''));
  return runScript(client, name, keys, argv);
}
