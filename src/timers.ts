/**
 * Timers for delays of any length. Node keeps timer delays in a signed 32-bit integer: a delay
 * past 2^31-1 ms (~24.8 days) fires after 1 ms instead, with a warning. Options accept up to
 * 10 years, so every timer built from one goes through here.
 */

/** The longest delay a Node timer keeps. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A delay a Node timer can hold: longer ones are cut to MAX_TIMER_MS (for sleeps where waking early is harmless). */
export function timerDelay(ms: number): number {
  return Math.max(0, Math.min(ms, MAX_TIMER_MS));
}

export interface LongTimeout {
  clear(): void;
}

/** Calls `fn` once after `ms`, however long: delays past MAX_TIMER_MS are made of chained timers. */
export function setLongTimeout(fn: () => void, ms: number): LongTimeout {
  let timer: NodeJS.Timeout;
  let left = Math.max(0, ms);
  const arm = () => {
    const step = Math.min(left, MAX_TIMER_MS);
    left -= step;
    timer = setTimeout(left > 0 ? arm : fn, step);
  };
  arm();
  return { clear: () => clearTimeout(timer) };
}
