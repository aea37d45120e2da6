/**
 * A claim watchdog drops the command connection when a claim has gone unanswered for too long
 * (a half-open socket that TCP keepalive would take minutes to notice), so ioredis reconnects.
 * One timer for every claim in flight, not one per claim: a timer made and cleared per claim
 * inserted and removed a list in Node's timer queue each time (~2% of the worker's CPU in
 * bench/worker-alloc.ts's profile), and its code was compiled again after an idle period.
 */
import { timerDelay } from '../../timers.js';

/** A free slot; a claim the watchdog already fired for keeps its slot as FIRED until it ends. */
const FREE = -1;
const FIRED = -2;

export class ClaimWatchdog {
  readonly #ms: number;
  readonly #onWedged: () => void;
  /** When each claim in flight was sent (performance.now()), by slot; FREE or FIRED otherwise. */
  readonly #sentAt: number[] = [];
  #inFlight = 0;
  /** Armed for the earliest deadline of a claim in flight, or later ones once it fired; kept between claims. */
  #timer: NodeJS.Timeout | undefined;
  readonly #check = () => this.#fire();

  constructor(ms: number, onWedged: () => void) {
    this.#ms = ms;
    this.#onWedged = onWedged;
  }

  /** A claim was sent: the slot to give end() when it is answered (or failed). */
  begin(): number {
    const now = performance.now();
    let slot = this.#sentAt.indexOf(FREE);
    if (slot < 0) slot = this.#sentAt.push(now) - 1;
    else this.#sentAt[slot] = now;
    // An armed timer is for a deadline no later than this claim's: it re-arms when it fires. It
    // is not armed with no claim in flight, nor with only claims it fired for (still unanswered).
    if (this.#timer === undefined) this.#timer = setTimeout(this.#check, timerDelay(this.#ms));
    // Only while a claim waits does the watchdog keep the process alive, as a timer per claim did.
    else if (this.#inFlight === 0) this.#timer.ref();
    this.#inFlight++;
    return slot;
  }

  end(slot: number): void {
    this.#sentAt[slot] = FREE;
    if (--this.#inFlight === 0) this.#timer?.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    const now = performance.now();
    let wedged = false;
    let next = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.#sentAt.length; i++) {
      const at = this.#sentAt[i]!;
      if (at < 0) continue;
      if (now - at >= this.#ms) {
        this.#sentAt[i] = FIRED;
        wedged = true;
      } else next = Math.min(next, at + this.#ms);
    }
    if (next !== Number.POSITIVE_INFINITY) this.#timer = setTimeout(this.#check, timerDelay(Math.ceil(next - now)));
    if (wedged) this.#onWedged();
  }
}
