/** delayq: delayed jobs on Redis sorted sets. Public exports only. */
export {
  Queue,
  listQueues,
  type BulkJob,
  type CancelManyResult,
  type DeadFilter,
  type DeadJobInfo,
  type GroupInfo,
  type Groups,
  type QueueLimitsInfo,
  type ListOptions,
  type QueueEvents,
  type SearchOptions,
  type SearchResult,
  type TimelineOptions,
  type FlowJob,
  type FlowResult,
} from './queue.js';
export { EventFeed, type FollowOptions, type StreamEvent } from './event-feed.js';
export type { Logger } from './logger.js';
export type { RateLimit, RateStatus, RateUse } from './store/store.js';
export { DelayqMetrics, type MetricsOptions, type MetricsRegistry } from './metrics/metrics.js';
export type { TracerLike, SpanLike } from './tracing.js';
export { Scheduler, occurrenceJobId, type SchedulerOptions } from './schedules/scheduler.js';
export type { Schedules, ScheduleInfo } from './schedules/schedules.js';
export type { ScheduleSpec, MissedPolicy } from './schedules/definition.js';
export { Worker, type Handler, type Handlers, type WorkerEvents } from './worker.js';
export type { Job, JobHold, JobSignal, ChildResult, ChildResults } from './job.js';
export type { SignalResult } from './store/store.js';
export type { AddOptions, QueueOptions, WorkerOptions, RescheduleOptions, ConnectionOptions, CancelOptions, FailNowOptions, WaitOptions } from './options.js';
export type { BackoffOptions, BackoffFunction } from './backoff.js';
export type {
  JobState,
  JobInfo,
  JobError,
  JobPage,
  ListState,
  ListOrder,
  AddResult,
  CancelResult,
  FailNowResult,
  RescheduleResult,
  QueueStats,
  HistoryMinute,
  HeldSummary,
  DueTimeline,
  RetentionRule,
  WorkerInfo,
  HoldInfo,
} from './types.js';
export {
  DelayqError,
  ValidationError,
  LeaseLostError,
  UnrecoverableError,
  StoreError,
  HandlerTimeoutError,
  JobCancelledError,
  JobFailedError,
  JobNotFoundError,
  WaitTimeoutError,
  SnoozeSignal,
  WaitForSignal,
  RateLimitSignal,
  ConnectionError,
  ShardError,
  IsolatedHandlerError,
} from './errors.js';
export { RedisStore, type RedisStoreOptions } from './store/redis/redis-store.js';
export { MemoryStore } from './store/memory/memory-store.js';
export { ShardedStore } from './store/sharded/sharded-store.js';
export type { ShardFigures, ShardStatus } from './store/shard-admin.js';
export { aclRules, aclSetUserLine } from './store/redis/acl.js';
export type { Store, VerifyReport, ObliterateResult } from './store/store.js';
export {
  importFromBullmq,
  BullmqImportError,
  type BullmqImportOptions,
  type BullmqImportReport,
  type BullmqSkippedJob,
  type BullmqState,
} from './import/bullmq.js';
export { VERSION } from './version.js';
