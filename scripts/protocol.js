// Writes the published wire protocol (docs/protocol.md) from the build (dist/src/store/redis/protocol.js):
//   node scripts/protocol.js             protocol/scripts/<name>.lua, the self-contained scripts.
//                                        The last step of `npm run build`: they are made, never
//                                        kept in git (.gitignore), so they always match the build
//                                        and ship with it (`npm pack` builds first).
//   node scripts/protocol.js --manifest  protocol/manifest.json too (`npm run protocol`): the
//                                        readable contract, kept in git and reviewed as it changes.
// test/unit/protocol.test.ts fails when either is not what the build makes; test/package checks
// the packed scripts.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { protocolManifest, protocolScript } from '../dist/src/store/redis/protocol.js';
import { SCRIPT_NAMES } from '../dist/src/store/redis/wire.js';

const root = new URL('../protocol/', import.meta.url);
rmSync(new URL('scripts/', root), { recursive: true, force: true });
mkdirSync(new URL('scripts/', root), { recursive: true });
for (const name of SCRIPT_NAMES) writeFileSync(new URL(`scripts/${name}.lua`, root), protocolScript(name));
if (process.argv.includes('--manifest')) {
  writeFileSync(new URL('manifest.json', root), `${JSON.stringify(protocolManifest(), null, 2)}\n`);
  console.log(`protocol/: manifest.json and ${SCRIPT_NAMES.length} scripts`);
}
