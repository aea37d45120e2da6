// tsc copies no .lua files; the Redis store loads its scripts from beside its compiled code.
import { cpSync } from 'node:fs';
cpSync(new URL('../src/store/redis/scripts', import.meta.url), new URL('../dist/src/store/redis/scripts', import.meta.url), { recursive: true });
