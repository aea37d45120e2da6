/**
 * Every limit delayq checks its inputs against, written once: the longest delay, the time
 * range, the longest id, counts and sizes. Validation (options.ts, queue/validation.ts, the
 * handler's Job, the event feed, the HTTP API's schemas) and the stores read them from here, so
 * an error message and the check it describes always name the same number. This module imports
 * nothing: any layer may depend on it, the store included. Defaults live with their options
 * (options.ts, worker/defaults.ts), not here.
 */

/** The longest delay, backoff, lease, window or age: 10 years. */
export const MAX_DELAY_MS = 10 * 365 * 24 * 3600 * 1000;
/**
 * 2001-01-01T00:00:00Z. A `runAt` before it can only be a time in seconds (a second count of
 * today is ~1.8e9, which read as milliseconds is January 1970): refused, not silently due now.
 */
export const MIN_RUN_AT_MS = 978_307_200_000;
/** 9999-12-31T23:59:59.999Z */
export const MAX_RUN_AT_MS = 253_402_300_799_999;
/** The latest epoch ms a Date can hold; far enough out, and exact in a double with a timeline added. */
export const MAX_EPOCH_MS = 8_640_000_000_000_000;
export const MAX_ID_LENGTH = 256;
export const MAX_PRIORITY = 1_000_000;
export const MAX_ATTEMPTS = 1_000_000;

/** Most shards a queue may have: each costs a claim when due and a few keys. */
export const MAX_SHARDS = 256;

/** Most jobs a retention rule or a dead-set cap may keep. */
export const MAX_RETAINED_COUNT = 1_000_000_000;
/** Most dead jobs one page of `queue.dead.list` holds. */
export const DEAD_PAGE_MAX = 10_000;
/** Most jobs a listing page or a search answer holds. */
export const PAGE_LIMIT_MAX = 1000;
/** Most jobs one search call may read. */
export const SEARCH_BUDGET_MAX = 1_000_000;
/** Timeline bounds: a bucket of 1 s to 1 day, at most a day of minutes (one ZCOUNT per bucket). */
export const TIMELINE_BUCKET_MS = { min: 1000, max: 86_400_000, default: 60_000 };
export const TIMELINE_BUCKETS = { min: 1, max: 1440, default: 60 };

/** Most events a queue's event stream may keep, and most entries one read of the feed fetches. */
export const EVENT_STREAM_MAX_LEN = 10_000_000;
export const EVENT_BATCH_MAX = 10_000;

/** Longest a producer call may wait for a connection or an answer (connectTimeoutMs, commandTimeoutMs): 1 h. */
export const PRODUCER_TIMEOUT_MAX_MS = 3_600_000;
/** Worker option bounds: handlers at once, jobs per claim, the shortest lease, the longest kept error text. */
export const MAX_CONCURRENCY = 100_000;
/**
 * Rate limits: at most MAX_RATE_TOKENS tokens per window (each token taken is one entry of a
 * sliding log until its window passes, so this bounds the log), windows from 1 ms to a week;
 * a job's cost is 1..MAX_RATE_TOKENS; a RateLimitSignal holds back for at most a week.
 */
export const MAX_RATE_TOKENS = 1_000_000;
export const MAX_RATE_WINDOW_MS = 7 * 24 * 3600 * 1000;
export const MAX_BATCH = 10_000;
export const MIN_LEASE_MS = 100;
export const MAX_ERROR_LENGTH = 1_000_000;

/** A kept result larger than this is replaced by a note saying so (results live in Redis memory). */
export const MAX_RESULT_BYTES = 16_384;
/** Log lines kept per job, and the length each is cut at. */
export const LOG_CAP = 100;
export const LOG_LINE_MAX = 2000;
/** Progress is meant for a number or a few fields: at most this many bytes of JSON. */
export const PROGRESS_MAX_BYTES = 4096;
