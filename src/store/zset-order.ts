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

/**
 * A job's member in its group's line (the waiting set, all scored 0): the group, a NUL, 7 digits
 * that sort higher priorities first, then its ready member (_groups.lua waiting_member).
 */
export function waitingMember(group: string, priority: number, due: number, seq: number, id: string): string {
  const key = String(Math.max(0, Math.min(2_000_000, 1_000_000 - priority))).padStart(7, '0');
  return `${group}\0${key}${readyMember(due, seq, id)}`;
}

/** The ready set's member of a job. */
export function readyMember(due: number, seq: number, id: string): string {
  return `${String(Math.max(0, due)).padStart(16, '0')}${String(Math.max(0, seq)).padStart(16, '0')}${id}`;
}
