/** queue.schedules: store, remove and list a queue's recurring schedules (any process may run them). */
import { encodePayload } from '../payload.js';
import type { Store } from '../store/store.js';
import { decodeDefinition, parseScheduleName, parseSpec, type ScheduleSpec, type StoredDefinition } from './definition.js';
import { nextOccurrence } from './occurrences.js';

export interface ScheduleInfo extends StoredDefinition {
  name: string;
  /** The last occurrence enqueued (epoch ms), if any. */
  lastRunAtMs: number | undefined;
  /** The next occurrence after the last one (or after now, if later). */
  nextRunAtMs: number | undefined;
}

export class Schedules {
  readonly #store: Store;
  readonly #queue: string;
  readonly #maxPayloadBytes: number;

  constructor(store: Store, queue: string, maxPayloadBytes: number) {
    this.#store = store;
    this.#queue = queue;
    this.#maxPayloadBytes = maxPayloadBytes;
  }

  /**
   * Creates or changes a schedule. A change applies from the next occurrence; an interval keeps
   * its rhythm unless `every` itself changed. Returns whether anything changed.
   * @example await queue.schedules.upsert('nightly-report', { cron: '0 2 * * *', tz: 'Europe/Berlin', data: { report: 'sales' } })
   */
  async upsert(name: string, spec: ScheduleSpec): Promise<boolean> {
    const n = parseScheduleName(name);
    const previous = (await this.#store.scheduleList(this.#queue)).find((s) => s.name === n);
    // An interval is anchored on the server's clock, like every due time.
    const def = parseSpec(spec, await this.#store.serverTimeMs(this.#queue), previous && decodeDefinition(previous.definition));
    encodePayload(def.data, this.#maxPayloadBytes, 'data');
    return this.#store.scheduleSet(this.#queue, n, JSON.stringify(def));
  }

  /** Removes a schedule (jobs already enqueued for it stay). Returns whether it existed. */
  async remove(name: string): Promise<boolean> {
    return this.#store.scheduleSet(this.#queue, parseScheduleName(name), null);
  }

  async get(name: string): Promise<ScheduleInfo | undefined> {
    const n = parseScheduleName(name);
    return (await this.list()).find((s) => s.name === n);
  }

  async list(): Promise<ScheduleInfo[]> {
    const [now, stored] = await Promise.all([this.#store.serverTimeMs(this.#queue), this.#store.scheduleList(this.#queue)]);
    const out: ScheduleInfo[] = [];
    for (const s of stored) {
      const def = decodeDefinition(s.definition);
      if (!def) continue;
      // The last occurrence may lie ahead (enqueued early); the next one comes after both.
      const from = Math.max(now, s.lastOccurrenceMs ?? def.anchorMs);
      out.push({ ...def, name: s.name, lastRunAtMs: s.lastOccurrenceMs, nextRunAtMs: nextOccurrence(def, from) });
    }
    return out;
  }
}
