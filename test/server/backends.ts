/**
 * The two stores the dashboard's tests run on: the embedded memory store and a real
 * redis-server (started once for the test file, stopped after it, with everything the tests
 * opened closed first). Call `serverBackends()` at the top of a test file.
 */
import { MemoryStore, type Store } from '../../src/index.js';
import { useRedis } from '../helpers/redis-fixture.js';

export interface Backend {
  name: 'memory' | 'redis';
  /** Options that put a queue, a worker and a dashboard on the same data. */
  options(): { store: Store } | { connection: string };
  /** Closes `x` after the file's tests (before the redis-server stops). */
  track<T extends { close(): Promise<void> }>(x: T): T;
  /** The Redis keys matching `pattern` (redis only: the memory store has none to read). */
  keys?(pattern: string): Promise<string[]>;
}

export function serverBackends(): Backend[] {
  const fx = useRedis();
  const memory = new MemoryStore();
  return [
    { name: 'memory', options: () => ({ store: memory }), track: fx.track },
    { name: 'redis', options: () => ({ connection: fx.redis.url }), track: fx.track, keys: (pattern) => fx.client.keys(pattern) },
  ];
}

/** A logger that keeps what it is given, by level. */
export function keepingLogger(): {
  logger: { debug(o: object, m?: string): void; info(o: object, m?: string): void; warn(o: object, m?: string): void; error(o: object, m?: string): void };
  lines: { level: string; obj: Record<string, unknown>; msg: string | undefined }[];
} {
  const lines: { level: string; obj: Record<string, unknown>; msg: string | undefined }[] = [];
  const keep = (level: string) => (obj: object, msg?: string) => lines.push({ level, obj: obj as Record<string, unknown>, msg });
  return { lines, logger: { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') } };
}
