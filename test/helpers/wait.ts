import type { Redis } from 'ioredis';
/** Waiting on conditions with a deadline, never on a fixed sleep. */

export async function until<T>(check: () => T | Promise<T>, what: string, timeoutMs = 10_000, everyMs = 5): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A promise with its resolve, for handlers that signal the test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export async function serverTimeMs(client: Redis): Promise<number> {
  const [s, us] = (await client.time()) as [string | number, string | number];
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** `promise`, or a rejection naming `what` once `ms` have passed: a stuck call fails the test in seconds. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
