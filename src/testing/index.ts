/**
 * delayq/testing: the real engine on a virtual clock, for tests of time that take milliseconds.
 * `createTestEnv()` gives queues and workers on the embedded store driven by the clock;
 * `performJob()` runs one handler once with a real Job. Neither depends on a test runner.
 */
export { createTestEnv, TestEnv, TestEnvError, type TestEnvOptions, type EnqueuedJob, type FinishedJob } from './test-env.js';
export { performJob, type PerformJobOptions, type PerformResult } from './perform-job.js';
export type { AttemptOutcome, AttemptRecord, OutcomeEntry } from './journal.js';
export type { JobFilter } from './matching.js';
