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
  /** The job's data when it is not the usual payload(job) (the memory figure's fixed-size payload). */
  data?: Record<string, unknown>;
}

export interface Producer {
  /** Enqueues the jobs (bulk, as fast as the system allows). */
  enqueue(jobs: BenchJob[]): Promise<void>;
  /** Adds one job with the system's single add, as a web handler adds the job of one request. */
  addOne(job: BenchJob): Promise<void>;
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

/** The payload every system carries: the same for all, as the issue asks, plus the due time lateness is measured against. */
export function payload(job: BenchJob): Record<string, unknown> {
  return job.data ?? { orderId: job.id, userId: 123, action: 'cancel', due: job.due };
}

/** Bytes of memoryPayload's JSON, whatever the index. */
export const MEMORY_PAYLOAD_BYTES = 60;

/**
 * The memory figure's payload: the three fields and no due time (no worker reads these
 * jobs), exactly 60 bytes of JSON for every job. Its size matters beyond its bytes: Redis keeps a
 * small hash as one compact listpack only while every value is at most hash-max-listpack-value
 * (64) bytes, so a payload of 65+ bytes stored as a hash field costs far more than 5 more bytes.
 */
export function memoryPayload(i: number): Record<string, unknown> {
  return { orderId: `order-${String(i).padStart(9, '0')}`, userId: 123, action: 'cancel' };
}
