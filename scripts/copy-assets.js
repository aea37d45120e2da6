// tsc copies only what it compiles: the Redis store loads its Lua scripts, and the dashboard its
// pages, from beside the compiled code.
import { cpSync } from 'node:fs';
for (const dir of ['store/redis/scripts', 'server/public']) {
  cpSync(new URL(`../src/${dir}`, import.meta.url), new URL(`../dist/src/${dir}`, import.meta.url), { recursive: true });
}
