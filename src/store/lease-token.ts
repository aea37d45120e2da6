/**
 * What a lease token says about its hand-out. Both stores mint a token as `<claim ms>-<n>`
 * (claim.lua's token_prefix, MemoryStore.claim): the server time of the claim, then a number
 * unique under the queue. A mark before it (lifecycle.ts MARK) means the lease has ended.
 */

/** When the hand-out holding this token began (server ms), or undefined for a token that is not a live one. */
export function handedOutAtMs(token: string | undefined): number | undefined {
  if (!token) return undefined;
  const dash = token.indexOf('-');
  if (dash < 1 || dash > 16) return undefined;
  const ms = token.slice(0, dash);
  return /^\d+$/.test(ms) ? Number(ms) : undefined;
}
