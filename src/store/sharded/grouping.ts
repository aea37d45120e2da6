/**
 * The two small helpers every fan-out over shards uses: grouping calls by the shard they go to
 * (keeping each item's place, so answers come back in the caller's order), and adding up the
 * shards' answers.
 */

/** Items grouped by a key, each with its index in the input. */
export function groupBy<T>(items: readonly T[], key: (item: T, i: number) => string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  items.forEach((item, i) => {
    const k = key(item, i);
    const list = out.get(k);
    if (list) list.push(i);
    else out.set(k, [i]);
  });
  return out;
}

/**
 * Job indices (a sub-list of a call's jobs) grouped by a key, each group holding the indices
 * themselves: a position in the sub-list is not an index into the whole call.
 */
export function groupIndices(indices: readonly number[], key: (index: number) => string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const index of indices) {
    const k = key(index);
    const list = out.get(k);
    if (list) list.push(index);
    else out.set(k, [index]);
  }
  return out;
}

export const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
