/** A worker's entry as both stores keep it: the JSON the worker sent, read back into a WorkerInfo. */
import type { WorkerInfo } from '../types.js';

/** Fields that do not read show as empty: an entry that does not parse still shows the worker is alive. */
export function readWorkerInfo(id: string, json: string, lastSeenAtMs: number, expiresAtMs: number): WorkerInfo {
  let info: Partial<WorkerInfo> = {};
  try {
    info = JSON.parse(json) as Partial<WorkerInfo>;
  } catch {
    // Left empty, as the comment above says.
  }
  return {
    id,
    host: String(info.host ?? ''),
    pid: Number(info.pid ?? 0),
    queue: String(info.queue ?? ''),
    concurrency: Number(info.concurrency ?? 0),
    running: Number(info.running ?? 0),
    startedAtMs: Number(info.startedAtMs ?? 0),
    lastSeenAtMs,
    expiresAtMs,
    version: String(info.version ?? ''),
    language: String(info.language ?? ''),
  };
}
