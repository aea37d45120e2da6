/** Reads a group's state as the `groups` hash keeps it (wire.ts GROUP_STATE), and writes limit changes as limits.lua takes them. */
import type { StoredGroup } from '../store.js';

const GROUP_STATE = /^(\d{1,16}):(\d{1,16}):(\d{0,16}):(1?)$/;

/** A group's state; one with none (or one that does not read) is nothing running or waiting, no limit, not paused. */
export function parseGroupState(id: string, text: unknown): StoredGroup {
  const m = typeof text === 'string' ? GROUP_STATE.exec(text) : null;
  if (!m) return { id, running: 0, waiting: 0, concurrency: undefined, paused: false };
  return { id, running: Number(m[1]), waiting: Number(m[2]), concurrency: m[3] === '' ? undefined : Number(m[3]), paused: m[4] === '1' };
}

/** A limit setting as limits.lua takes it: '' leaves it, '0' removes it, else the number. */
export function limitArg(v: number | null | undefined): string | number {
  if (v === undefined) return '';
  return v === null ? 0 : v;
}
