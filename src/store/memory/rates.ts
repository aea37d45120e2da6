/**
 * The memory store's rate limiters: the twin of RL() in redis/scripts/_rate.lua (and of
 * _claim_rates.lua, what the limits do to a claim's picks). A limiter is '' (the queue's) or a
 * group id; it keeps the tokens taken in the window, a hold (RateLimitSignal),
 * and its log: one entry per claim, given back once its expiry has passed (a sliding window: at
 * most `max` tokens taken in any window of `perMs`). `wake` is the rate-wake ZSET: when a claim
 * looks at a group again (a token comes back, its hold ends), ordered as Redis orders it (time,
 * then the group's bytes).
 */
import type { RateLimit, RateUse } from '../store.js';
import { byteOrder } from '../zset-order.js';

interface LogEntry {
  expiry: number;
  tokens: number;
  /** When the claim took them (a clamp after the clock stepped back reads it). */
  takenAt: number;
}

interface Limiter {
  taken: number;
  held: number | undefined;
  /** In expiry order. */
  log: LogEntry[];
}

export class Rates {
  readonly #limiters = new Map<string, Limiter>();
  /** group -> when a claim looks at it again (rate-wake). */
  readonly wake = new Map<string, number>();

  #get(id: string): Limiter {
    let l = this.#limiters.get(id);
    if (!l) {
      l = { taken: 0, held: undefined, log: [] };
      this.#limiters.set(id, l);
    }
    return l;
  }

  /** A limiter with nothing taken and no hold has no state (as its field goes). */
  #forgetIfIdle(id: string, l: Limiter): void {
    if (l.taken <= 0 && l.held === undefined) this.#limiters.delete(id);
  }

  /** Gives back the tokens whose window has passed, and ends a hold that has. */
  trim(id: string, now: number): void {
    const l = this.#limiters.get(id);
    if (!l) return;
    if (l.held !== undefined && l.held <= now) l.held = undefined;
    let n = 0;
    while (n < l.log.length && l.log[n]!.expiry <= now) l.taken -= l.log[n++]!.tokens;
    if (n > 0) l.log.splice(0, n);
    l.taken = Math.max(0, l.taken);
    this.#forgetIfIdle(id, l);
  }

  /** Tokens the limiter may still give now (after trim): 0 while held, Infinity without a limit. */
  tokens(id: string, limit: RateLimit | undefined, now: number): number {
    this.trim(id, now);
    const l = this.#limiters.get(id);
    if (l?.held !== undefined) return 0;
    if (!limit) return Infinity;
    if (l) this.#clamp(l, now);
    return limit.max - (l?.taken ?? 0);
  }

  /**
   * As _rate.lua's clamp: the clock stepped back since tokens were taken (seen on the entry that
   * comes back last): each entry taken after now comes back its own window from now.
   */
  #clamp(l: Limiter, now: number): void {
    const last = l.log[l.log.length - 1];
    if (!last || last.takenAt <= now) return;
    for (const e of l.log) if (e.takenAt > now) [e.expiry, e.takenAt] = [now + e.expiry - e.takenAt, now];
    l.log.sort((a, b) => a.expiry - b.expiry);
  }

  /** When the oldest tokens come back (undefined: none taken). */
  nextRefill(id: string): number | undefined {
    return this.#limiters.get(id)?.log[0]?.expiry;
  }

  /** When the limiter may give a token again: its hold's end, else its next refill. */
  freeAt(id: string): number | undefined {
    return this.#limiters.get(id)?.held ?? this.nextRefill(id);
  }

  take(id: string, tokens: number, expiry: number, takenAt: number): void {
    if (tokens <= 0) return;
    const l = this.#get(id);
    l.taken += tokens;
    // Entries of one limiter sort by expiry (a window changed meanwhile may put one earlier).
    let at = l.log.length;
    while (at > 0 && l.log[at - 1]!.expiry > expiry) at--;
    l.log.splice(at, 0, { expiry, tokens, takenAt });
  }

  /** Holds back until `untilMs` (a later hold already set stays). */
  hold(id: string, untilMs: number): void {
    const l = this.#get(id);
    if (l.held === undefined || l.held < untilMs) l.held = untilMs;
  }

  /** Read only: tokens in the window now, a hold that has not ended, the next refill. */
  peek(id: string, now: number): RateUse {
    const l = this.#limiters.get(id);
    if (!l) return { used: 0, heldUntilMs: undefined, nextRefillMs: undefined };
    let used = l.taken;
    for (const e of l.log) if (e.expiry <= now) used -= e.tokens;
    used = Math.max(0, used);
    return {
      used,
      heldUntilMs: l.held !== undefined && l.held > now ? l.held : undefined,
      nextRefillMs: used > 0 ? l.log.find((e) => e.expiry > now)?.expiry : undefined,
    };
  }

  /** ZADD rate-wake: NX keeps a booking, LT keeps the earlier one, neither moves it. */
  book(group: string, at: number, mode: 'NX' | 'LT' | 'set'): void {
    const had = this.wake.get(group);
    if (had === undefined || mode === 'set' || (mode === 'LT' && at < had)) this.wake.set(group, at);
  }

  /** The groups booked at or before `now`, in rate-wake order, at most `limit`; taken out. */
  dueVisits(now: number, limit: number): string[] {
    const due = [...this.wake].filter(([, at]) => at <= now);
    due.sort((a, b) => a[1] - b[1] || byteOrder(a[0], b[0]));
    const out = due.slice(0, limit).map(([g]) => g);
    for (const g of out) this.wake.delete(g);
    return out;
  }

  /** The earliest booking (rate-wake's head). */
  nextVisit(): number | undefined {
    let min: number | undefined;
    for (const at of this.wake.values()) if (min === undefined || at < min) min = at;
    return min;
  }

  /** A limit raised on every group: each booking becomes 0 (looked at by the next claim). */
  lookAllNow(): void {
    for (const g of this.wake.keys()) this.wake.set(g, 0);
  }
}
