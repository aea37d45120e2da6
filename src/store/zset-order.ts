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

/**
 * A job's member in the scheduled set (SCHEDULED_MEMBER in redis/wire.ts, the scripts'
 * SCHED.member): \x01, a character 48 + n, the n digits of its seq, then its id; members of one
 * due time sort in add order.
 */
export function scheduledMember(seq: number, id: string): string {
  const digits = String(seq);
  return `\x01${String.fromCharCode(48 + digits.length)}${digits}${id}`;
}

/** The job id of a scheduled member of either form (the new one, or the id alone). */
export function scheduledMemberId(member: string): string {
  if (member.charCodeAt(0) !== 1) return member;
  return member.slice(2 + member.charCodeAt(1) - 48);
}

/** The seq a new-form scheduled member carries, or undefined for the id form. */
export function scheduledMemberSeq(member: string): string | undefined {
  if (member.charCodeAt(0) !== 1) return undefined;
  return member.slice(2, 2 + member.charCodeAt(1) - 48);
}

/** The ready set's member of a job. */
export function readyMember(due: number, seq: number, id: string): string {
  return `${String(Math.max(0, due)).padStart(16, '0')}${String(Math.max(0, seq)).padStart(16, '0')}${id}`;
}
