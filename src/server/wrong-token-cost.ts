/**
 * Makes a wrong token cost its sender time, per client: a try that presents a credential and
 * fails is answered after `delayMs`, and while one is pending the client's next tries wait in
 * line and are checked one at a time. So a guesser gets one answer per `delayMs` whether it
 * waits for each or sends a thousand at once.
 *
 * Why the line comes before the check: if only failures were delayed, a guesser sending many
 * guesses at once would get the right one back at once and never wait for the wrong ones.
 *
 * Who pays: a client is its address (an IPv6 client its /64, which one host usually holds
 * whole). A client with no failure pending is checked at once, so the right token is not slowed
 * and one guesser slows only itself. What is kept is bounded: a line exists only while a failure
 * is pending, at most `maxClients` lines exist (beyond that, addresses without a line of their
 * own share one overflow line, checked in turn: failing closed beats handing out free guesses),
 * and a line holds at most `maxWaiting` tries (more are refused at once, unchecked, with 429).
 */
import { isIP } from 'node:net';
import { timerDelay } from '../timers.js';
import { Refusal } from './route.js';

export interface WrongTokenCostOptions {
  /** How long a failed try holds its client's line (and waits for its answer). */
  delayMs: number;
  /** Most clients with a line of their own at once. */
  maxClients: number;
  /** Most tries one line holds (the one being checked included). */
  maxWaiting: number;
}

interface Line {
  /** Settles when the last try in line has been answered. */
  tail: Promise<void>;
  waiting: number;
}

/** The key of the shared line; no address looks like it. */
const OVERFLOW = '*';

/** The client an address stands for: an IPv6 address by its /64, an IPv4-mapped one as IPv4. */
export function clientKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIP(address) !== 6) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * The client address a reverse proxy put in a header (`x-real-ip`, or `x-forwarded-for`, of
 * which the last entry is the one the nearest proxy added; the ones before it came from the
 * client and could be anything).
 */
export function addressFromHeader(name: string): (request: Request) => string | undefined {
  return (request) => {
    const value = request.headers.get(name);
    return value?.split(',').at(-1)?.trim() || undefined;
  };
}

export class WrongTokenCost {
  readonly #opts: WrongTokenCostOptions;
  readonly #lines = new Map<string, Line>();
  readonly #overflow: Line = { tail: Promise.resolve(), waiting: 0 };

  constructor(opts: WrongTokenCostOptions) {
    this.#opts = opts;
  }

  /** Clients with a line of their own now (for tests: it must not grow without bound). */
  get size(): number {
    return this.#lines.size;
  }

  /**
   * Runs `verify` (a synchronous check of the presented credential) in the client's turn and
   * says whether it passed; a failure answers after `delayMs`. Throws a 429 Refusal, without
   * running `verify`, when the client's line is full.
   */
  check(client: string, verify: () => boolean): Promise<boolean> {
    let line = this.#lines.get(client);
    let key = client;
    if (!line) {
      if (this.#lines.size < this.#opts.maxClients) {
        // No failure pending: checked at once. The line starts in the same turn as the failure,
        // so a try that arrives right after it already waits.
        if (verify()) return Promise.resolve(true);
        line = { tail: Promise.resolve(), waiting: 0 };
        this.#lines.set(client, line);
        return this.#take(client, line, () => false);
      }
      line = this.#overflow;
      key = OVERFLOW;
    }
    if (line.waiting >= this.#opts.maxWaiting) {
      return Promise.reject(new Refusal(429, 'slow_down', 'too many tries with a wrong token from this address: wait for their answers, then try again'));
    }
    return this.#take(key, line, verify);
  }

  /** Queues a try in `line`: checked once the tries before it are answered; a failure holds the line for `delayMs`. */
  #take(key: string, line: Line, verify: () => boolean): Promise<boolean> {
    line.waiting++;
    const answer = line.tail.then(async () => {
      if (verify()) return true;
      await new Promise((resolve) => setTimeout(resolve, timerDelay(this.#opts.delayMs)));
      return false;
    });
    const tail = answer.then(
      () => undefined,
      () => undefined,
    );
    line.tail = tail;
    return answer.finally(() => {
      line.waiting--;
      // The last try of the line was answered: the client is forgotten.
      if (line.waiting === 0 && line.tail === tail && this.#lines.get(key) === line) this.#lines.delete(key);
    });
  }
}
