// Removes the previous build so a deleted source file cannot leave a stale test behind.
import { rmSync } from 'node:fs';
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
