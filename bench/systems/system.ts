/**
 * What the benchmark needs from each system it compares: a producer that enqueues jobs due at
 * given times, and a worker (run in a child process) that calls back at each handler start.
 * Every job carries its intended due time (host clock, ms) in its data, so lateness is measured
 * the same way for every system: handler start − intended due time.
 */
export interface BenchJob {
  id: string;
  /** Intended due time, epoch ms on this host. */
  due: number;
}

export interface Producer {
  /** Enqueues the jobs (bulk, as fast as the system allows). */
  enqueue(jobs: BenchJob[]): Promise<void>;
  close(): Promise<void>;
}

export interface Consumer {
  close(): Promise<void>;
}

export interface System {
  readonly name: string;
  producer(url: string, queue: string): Producer;
  /** Starts a worker; `onJob` is called at each handler start with the job's intended due time. */
  consumer(url: string, queue: string, onJob: (due: number) => void): Promise<Consumer>;
}

/** The payload every system carries: the same for all, as the issue asks. */
export function payload(job: BenchJob): { orderId: string; userId: number; action: string; due: number } {
  return { orderId: job.id, userId: 123, action: 'cancel', due: job.due };
}
