/**
 * The jobs whose handlers a worker runs, in the order they started: added, removed and counted
 * in O(1), found by lease token by a scan (only a revocation asks, and rarely).
 * An array compacted in place rather than a Map keyed by token: with jobs coming and going at
 * tens of thousands a second, the Map's tables, rebuilt as entries were deleted and added, were
 * ~110 B of garbage per job (sampling heap profiler); this makes none once it has grown.
 */

/** A job as RunningJobs keeps it: `runningAt` is its slot, -1 when it is not running. */
export interface RunningJob {
  readonly token: string;
  runningAt: number;
}

export class RunningJobs<J extends RunningJob> {
  /** Slots 0 to #end - 1: the jobs in the order they started, undefined where one ended. */
  readonly #slots: (J | undefined)[] = [];
  #end = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  add(job: J): void {
    if (this.#end === this.#slots.length) this.#slots.push(job);
    else this.#slots[this.#end] = job;
    job.runningAt = this.#end++;
    this.#size++;
  }

  /** Takes the job out; false when it was not here. */
  delete(job: J): boolean {
    const at = job.runningAt;
    if (at < 0 || this.#slots[at] !== job) return false;
    this.#slots[at] = undefined;
    job.runningAt = -1;
    this.#size--;
    if (this.#size === 0) this.#end = 0;
    // Compacted once the empty slots outnumber the jobs: each move is paid for by a delete.
    else if (this.#end - this.#size > Math.max(this.#size, 16)) this.#compact();
    return true;
  }

  /** The running job holding this lease token, if any. */
  get(token: string): J | undefined {
    for (let i = 0; i < this.#end; i++) {
      const job = this.#slots[i];
      if (job !== undefined && job.token === token) return job;
    }
    return undefined;
  }

  /** The running jobs, in the order they started (a copy: the caller may end them as it goes). */
  values(): J[] {
    const out: J[] = [];
    for (let i = 0; i < this.#end; i++) {
      const job = this.#slots[i];
      if (job !== undefined) out.push(job);
    }
    return out;
  }

  #compact(): void {
    let to = 0;
    for (let i = 0; i < this.#end; i++) {
      const job = this.#slots[i];
      if (job === undefined) continue;
      job.runningAt = to;
      this.#slots[to++] = job;
    }
    for (let i = to; i < this.#end; i++) this.#slots[i] = undefined;
    this.#end = to;
  }
}
