/** Waiting with a bound: close() paths must resolve whatever Redis does. */
import { timerDelay } from './timers.js';

/** Resolves with whether `p` settled within `ms` (it is never rejected). */
export async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timerDelay(ms));
    }),
  ]);
  clearTimeout(timer);
  return settled;
}
