/**
 * The queue's per-minute history (docs/data-model.md `history`): what the stores keep a minute
 * at a time for 24 hours, and how it is read. Redis keeps one hash field a minute (the minute's
 * number modulo LIMIT.history_minutes, value wire.ts HISTORY_MINUTE) written by the scripts'
 * `note_history`; the memory store keeps the same in a map (HistoryBook). Both answer the same
 * dense list of minutes, and sharded queues merge theirs minute by minute.
 */
import { LIMIT } from './lifecycle.js';
import type { StoredHistory, StoredHistoryMinute } from './store.js';
import type { HistoryMinute } from '../types.js';

export const MINUTE_MS = 60_000;

/** What one store call adds to its minute. */
export interface HistoryCounts {
  completed?: number;
  failed?: number;
  dead?: number;
  /** Jobs handed out, the sum of how late they started and the latest of them (ms). */
  started?: number;
  lateSumMs?: number;
  lateMaxMs?: number;
}

export const emptyMinute = (minute: number): StoredHistoryMinute => ({ minute, completed: 0, failed: 0, dead: 0, started: 0, lateSumMs: 0, lateMaxMs: 0 });

/** The minutes a read of the last `minutes` covers, oldest first (the current one last). */
export function minutesUpTo(nowMs: number, minutes: number): number[] {
  const last = Math.floor(nowMs / MINUTE_MS);
  const n = Math.max(1, Math.min(LIMIT.history_minutes, Math.floor(minutes)));
  return Array.from({ length: n }, (_, i) => last - n + 1 + i);
}

/** The hash field of a minute. */
export const historyField = (minute: number): string => String(minute % LIMIT.history_minutes);

const FIELD = /^(\d{1,16}):(\d{1,15}):(\d{1,15}):(\d{1,15}):(\d{1,15}):(\d{1,15}):(\d{1,15})$/;

/**
 * A stored field as the minute asked for: empty when absent, unreadable, or holding another
 * minute (a day older: the field's slot came round again).
 */
export function parseHistoryField(value: string | null | undefined, minute: number): StoredHistoryMinute {
  const m = value ? FIELD.exec(value) : null;
  if (!m || Number(m[1]) !== minute) return emptyMinute(minute);
  return {
    minute,
    completed: Number(m[2]),
    failed: Number(m[3]),
    dead: Number(m[4]),
    started: Number(m[5]),
    lateSumMs: Number(m[6]),
    lateMaxMs: Number(m[7]),
  };
}

/** Shards' histories of the same minutes, minute by minute: counts summed, the latest start the max. */
export function mergeHistories(all: StoredHistory[]): StoredHistory {
  const first = all[0]!;
  return {
    nowMs: Math.max(...all.map((h) => h.nowMs)),
    minutes: first.minutes.map((m, i) => {
      const out = { ...m };
      for (const h of all.slice(1)) {
        const o = h.minutes[i];
        if (!o || o.minute !== m.minute) continue;
        out.completed += o.completed;
        out.failed += o.failed;
        out.dead += o.dead;
        out.started += o.started;
        out.lateSumMs += o.lateSumMs;
        out.lateMaxMs = Math.max(out.lateMaxMs, o.lateMaxMs);
      }
      return out;
    }),
  };
}

/** A stored minute as the public API gives it. */
export function publicMinute(m: StoredHistoryMinute): HistoryMinute {
  return {
    atMs: m.minute * MINUTE_MS,
    completed: m.completed,
    failed: m.failed,
    dead: m.dead,
    started: m.started,
    lateMeanMs: m.started > 0 ? Math.round(m.lateSumMs / m.started) : undefined,
    lateMaxMs: m.started > 0 ? m.lateMaxMs : undefined,
  };
}

/** The memory store's twin of the `history` hash: a minute per slot, the last day. */
export class HistoryBook {
  readonly #slots = new Map<number, StoredHistoryMinute>();

  /** As note_history (_lifecycle.lua): adds to now's minute; a slot holding another minute starts afresh. */
  note(nowMs: number, c: HistoryCounts): void {
    const minute = Math.floor(nowMs / MINUTE_MS);
    const slot = minute % LIMIT.history_minutes;
    let m = this.#slots.get(slot);
    if (!m || m.minute !== minute) {
      m = emptyMinute(minute);
      this.#slots.set(slot, m);
    }
    m.completed += c.completed ?? 0;
    m.failed += c.failed ?? 0;
    m.dead += c.dead ?? 0;
    m.started += c.started ?? 0;
    m.lateSumMs += c.lateSumMs ?? 0;
    m.lateMaxMs = Math.max(m.lateMaxMs, c.lateMaxMs ?? 0);
  }

  read(nowMs: number, minutes: number): StoredHistory {
    return {
      nowMs,
      minutes: minutesUpTo(nowMs, minutes).map((minute) => {
        const m = this.#slots.get(minute % LIMIT.history_minutes);
        return m && m.minute === minute ? { ...m } : emptyMinute(minute);
      }),
    };
  }
}
