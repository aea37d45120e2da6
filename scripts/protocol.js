// npm run protocol: writes protocol/manifest.json and protocol/scripts/<name>.lua from the build
// (src/store/redis/protocol.ts), the published wire protocol for clients in other languages.
// test/unit/protocol.test.ts fails when the committed files are not what this writes.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { protocolManifest, protocolScript } from '../dist/src/store/redis/protocol.js';
import { SCRIPT_NAMES } from '../dist/src/store/redis/wire.js';

const root = new URL('../protocol/', import.meta.url);
rmSync(new URL('scripts/', root), { recursive: true, force: true });
mkdirSync(new URL('scripts/', root), { recursive: true });
writeFileSync(new URL('manifest.json', root), `${JSON.stringify(protocolManifest(), null, 2)}\n`);
for (const name of SCRIPT_NAMES) writeFileSync(new URL(`scripts/${name}.lua`, root), protocolScript(name));
console.log(`protocol/: manifest.json and ${SCRIPT_NAMES.length} scripts`);
