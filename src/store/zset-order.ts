/**
 * How the Redis layout orders things, for the code outside Lua that must agree with it: ZSET
 * members of equal score sort by their bytes, and a ready member is `<due:16><seq:16><id>`
 * (the scripts' ready_member). The memory store orders its listings by these; verify() checks
 * ready members against them.
 */

/** Byte order of UTF-8 strings, as Redis orders the members of equal score. */
export function byteOrder(a: string, b: string): number {
  if (a === b) return 0;
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The ready set's member of a job. */
export function readyMember(due: number, seq: number, id: string): string {
  return `${String(Math.max(0, due)).padStart(16, '0')}${String(Math.max(0, seq)).padStart(16, '0')}${id}`;
}
