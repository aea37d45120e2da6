/**
 * A binary min-heap with lazy deletion: entries that no longer hold (a job moved on) are
 * skipped when they reach the top, so cancel and reschedule stay O(1) and a claim is
 * O(k log n) for k jobs, never a scan of every job.
 */
export class Heap<T> {
  readonly #items: T[] = [];
  readonly #less: (a: T, b: T) => boolean;
  readonly #live: (item: T) => boolean;

  /** `live` tells whether an entry still stands; dead entries are dropped as they surface. */
  constructor(less: (a: T, b: T) => boolean, live: (item: T) => boolean) {
    this.#less = less;
    this.#live = live;
  }

  get size(): number {
    return this.#items.length;
  }

  /** Drops every dead entry at once (O(n)): keeps a heap with many stale entries from growing. */
  compact(): void {
    const live = this.#items.filter((x) => this.#live(x));
    this.#items.length = 0;
    for (const x of live) this.push(x);
  }

  push(item: T): void {
    const a = this.#items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(a[i]!, a[parent]!)) break;
      [a[i], a[parent]] = [a[parent]!, a[i]!];
      i = parent;
    }
  }

  /** The smallest live entry, without removing it. */
  peek(): T | undefined {
    while (this.#items.length > 0 && !this.#live(this.#items[0]!)) this.#removeTop();
    return this.#items[0];
  }

  pop(): T | undefined {
    const top = this.peek();
    if (top !== undefined) this.#removeTop();
    return top;
  }

  #removeTop(): void {
    const a = this.#items;
    const last = a.pop()!;
    if (a.length === 0) return;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && this.#less(a[l]!, a[m]!)) m = l;
      if (r < a.length && this.#less(a[r]!, a[m]!)) m = r;
      if (m === i) return;
      [a[i], a[m]] = [a[m]!, a[i]!];
      i = m;
    }
  }
}
