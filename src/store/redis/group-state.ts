/**
 * Reads a group's state as the `groups` hash keeps it (wire.ts GROUP_STATE) and a limiter's as
 * the `rate` hash keeps it (wire.ts RATE_STATE), and writes limit changes as limits.lua takes them.
 */
import type { RateLimit, RateUse, StoredGroup } from '../store.js';

const GROUP_STATE = /^(\d{1,16}):(\d{1,16}):(\d{0,16}):(1?)(?::(?:(\d{1,16})\/(\d{1,16}))?)?$/;
const RATE_STATE = /^(\d{1,16}):(\d{0,16})$/;

/** A limiter's use: tokens taken, a hold that has not ended, the next refill (-1: none). */
export function parseRateUse(text: unknown, nextRefill: unknown, nowMs: number): RateUse {
  const m = typeof text === 'string' ? RATE_STATE.exec(text) : null;
  const held = m && m[2] !== '' ? Number(m[2]) : undefined;
  const refill = Number(nextRefill);
  return {
    used: m ? Number(m[1]) : 0,
    heldUntilMs: held !== undefined && held > nowMs ? held : undefined,
    nextRefillMs: Number.isFinite(refill) && refill >= 0 ? refill : undefined,
  };
}

const NO_USE: RateUse = { used: 0, heldUntilMs: undefined, nextRefillMs: undefined };

/** A group's state; one with none (or one that does not read) is nothing running or waiting, no limit, not paused. */
export function parseGroupState(id: string, text: unknown, rate: RateUse = NO_USE): StoredGroup {
  const m = typeof text === 'string' ? GROUP_STATE.exec(text) : null;
  if (!m) return { id, running: 0, waiting: 0, concurrency: undefined, rateLimit: undefined, rate, paused: false };
  const rateLimit: RateLimit | undefined = m[5] === undefined ? undefined : { max: Number(m[5]), perMs: Number(m[6]) };
  return { id, running: Number(m[1]), waiting: Number(m[2]), concurrency: m[3] === '' ? undefined : Number(m[3]), rateLimit, rate, paused: m[4] === '1' };
}

/** A limit setting as limits.lua takes it: '' leaves it, '0' removes it, else the number. */
export function limitArg(v: number | null | undefined): string | number {
  if (v === undefined) return '';
  return v === null ? 0 : v;
}

/** A rate limit setting as limits.lua takes it: max and window, each '' (leave) or '0' (remove) alike. */
export function rateArgs(v: RateLimit | null | undefined): [string | number, string | number] {
  if (v === undefined) return ['', ''];
  return v === null ? [0, 0] : [v.max, v.perMs];
}
