/** When a schedule fires: croner does the calendar and time-zone arithmetic, never we. */
import { Cron } from 'croner';
import type { StoredDefinition } from './definition.js';

const crons = new Map<string, Cron>();

function cronOf(pattern: string, tz: string): Cron {
  const key = `${tz} ${pattern}`;
  let c = crons.get(key);
  if (!c) {
    c = new Cron(pattern, { timezone: tz, paused: true });
    crons.set(key, c);
  }
  return c;
}

/** The first occurrence strictly after `afterMs`, or undefined when there is none. */
export function nextOccurrence(def: StoredDefinition, afterMs: number): number | undefined {
  if (def.every !== undefined) {
    const k = Math.floor((afterMs - def.anchorMs) / def.every) + 1;
    return def.anchorMs + Math.max(1, k) * def.every;
  }
  const next = cronOf(def.cron!, def.tz).nextRun(new Date(afterMs));
  return next ? next.getTime() : undefined;
}

/** The latest occurrence at or before `nowMs` and after `afterMs`, or undefined. */
export function latestOccurrence(def: StoredDefinition, afterMs: number, nowMs: number): number | undefined {
  if (def.every !== undefined) {
    if (nowMs < def.anchorMs + def.every) return undefined;
    const at = def.anchorMs + Math.floor((nowMs - def.anchorMs) / def.every) * def.every;
    return at > afterMs ? at : undefined;
  }
  let latest: number | undefined;
  let t = afterMs;
  // Walk forward; bounded so a per-second pattern after a long outage cannot spin for long.
  for (let i = 0; i < 100_000; i++) {
    const n = nextOccurrence(def, t);
    if (n === undefined || n > nowMs) break;
    latest = n;
    t = n;
  }
  return latest;
}
