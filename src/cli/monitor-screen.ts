/**
 * What `delayq monitor` shows, as pure functions: the state in, lines (or a JSON record) out.
 * No I/O and no clock of its own (the caller passes `nowMs`), so the screen can be tested with
 * fixed inputs and more rows (live workers, next due jobs) can be added without touching the
 * refresh loop in commands/monitor.ts.
 */
import { styleText } from 'node:util';
import type { JobInfo, QueueStats, WorkerInfo } from '../types.js';
import { heldLine, ms, nextDue, upcoming } from './context.js';

/** One good answer from `queue.stats()`, stamped with the local time it arrived. */
export interface Sample {
  stats: QueueStats;
  atMs: number;
  /** The next jobs to fall due (a page of the scheduled listing), when asked for. */
  next?: JobInfo<unknown>[];
  /** The live workers, when asked for. */
  workers?: WorkerInfo[];
}

export interface MonitorState {
  queue: string;
  /** The local clock at drawing time: it keeps ticking while Redis does not answer. */
  nowMs: number;
  /** Good samples of the last minute, oldest first (rates come from these). */
  history: Sample[];
  /** Set while stats fail with a connection error: since when, and the latest error. */
  outage?: { sinceMs: number; error: string; address?: string };
  /** Set while a stats call is under way: a slow answer shows before it becomes an error. */
  askingSinceMs?: number;
}

export interface Rates {
  /** Jobs completed per second between the last two samples. */
  completedPerSec: number | undefined;
  /** Jobs completed per second over the samples of the last minute. */
  completedPerSecMinute: number | undefined;
}

/** A stats call under way for this long is shown as waiting (it takes milliseconds when all is well). */
export const SLOW_ANSWER_MS = 1000;

/** How long the history reaches back. */
export const HISTORY_MS = 60_000;

/** Adds a sample and drops what is older than a minute; a counter that went down (a Redis without persistence restarted) starts the history afresh. */
export function withSample(history: readonly Sample[], sample: Sample): Sample[] {
  const last = history.at(-1);
  if (last && sample.stats.completedTotal < last.stats.completedTotal) return [sample];
  return [...history, sample].filter((s) => sample.atMs - s.atMs <= HISTORY_MS);
}

function perSec(from: Sample | undefined, to: Sample | undefined): number | undefined {
  if (!from || !to || to.atMs <= from.atMs) return undefined;
  return (to.stats.completedTotal - from.stats.completedTotal) / ((to.atMs - from.atMs) / 1000);
}

export function rates(history: readonly Sample[]): Rates {
  return { completedPerSec: perSec(history.at(-2), history.at(-1)), completedPerSecMinute: perSec(history[0], history.at(-1)) };
}

const rate = (r: number | undefined) => (r === undefined ? '—' : `${r < 10 ? r.toFixed(1) : r.toFixed(0)}/s`);
const time = (ms: number) => new Date(ms).toISOString();
const num = (n: number, width: number) => String(n).padStart(width);

type Style = Parameters<typeof styleText>[0];

/** The screen, one string per line. With `colour` false the lines are plain text. */
export function renderMonitor(state: MonitorState, opts: { colour: boolean }): string[] {
  const paint = (style: Style, text: string) => (opts.colour ? styleText(style, text) : text);
  const last = state.history.at(-1);
  const s = last?.stats;
  const lines = [`${paint('bold', `delayq monitor — ${state.queue}`)}${s?.paused ? paint('yellow', '  PAUSED') : ''}   ${time(state.nowMs)}`];

  if (s) {
    const r = rates(state.history);
    lines.push(
      `scheduled ${num(s.scheduled, 8)}   ready ${num(s.ready, 8)}   upcoming ${num(upcoming(s), 8)}   active ${num(s.active, 6)}   dead ${paint(s.dead > 0 ? 'red' : 'green', num(s.dead, 6))}`,
      `due in the next ${ms(s.windowMs)} ${num(s.dueWithinWindow, 8)}   next due: ${nextDue(s)}`,
      `completed ${rate(r.completedPerSec)} now, ${rate(r.completedPerSecMinute)} over the last minute   (${s.completedTotal} in all)`,
      `lag ${s.oldestDueAgeMs === undefined ? 'none (no job is due)' : paint(s.oldestDueAgeMs > 1000 ? 'yellow' : 'green', `${ms(s.oldestDueAgeMs)} (the oldest due job has waited this long)`)}`,
      ...heldLine(s).map((l) => paint('yellow', l)),
      `event stream ${s.eventStreamLength === undefined ? 'off' : `on, ${s.eventStreamLength} entries`}   kept completed ${s.completed}`,
    );
    // The alarm a delay queue needs most: work is due and nobody is taking it.
    if (s.workers === 0 && s.ready > 0) lines.push(paint('red', `no live worker, and ${s.ready} jobs are due`));
    else {
      const ws = last.workers ?? [];
      const running = ws.reduce((n, w) => n + w.running, 0);
      const slots = ws.reduce((n, w) => n + w.concurrency, 0);
      lines.push(
        `workers ${s.workers} live${
          ws.length > 0
            ? `, running ${running} of ${slots} slots (${ws
                .map((w) => w.host)
                .filter((h, i, a) => a.indexOf(h) === i)
                .join(', ')})`
            : ''
        }`,
      );
    }
    if (last.next && last.next.length > 0) {
      lines.push(`next due: ${last.next.map((j) => `${j.id} in ${ms(Math.max(0, j.dueAtMs - s.nowMs))}`).join(', ')}`);
    }
  }

  if (state.outage) {
    const o = state.outage;
    lines.push(paint('yellow', `reconnecting… for ${ms(state.nowMs - o.sinceMs)}: ${o.error}`));
  } else if (state.askingSinceMs !== undefined && state.nowMs - state.askingSinceMs >= SLOW_ANSWER_MS) {
    lines.push(paint('yellow', `waiting for Redis to answer… ${ms(state.nowMs - state.askingSinceMs)}`));
  }
  lines.push(
    last
      ? paint(
          state.outage ? 'yellow' : 'dim',
          `last sample ${time(last.atMs)} (${ms(state.nowMs - last.atMs)} ago)${state.outage ? ': the figures above are from then' : ''}`,
        )
      : paint('dim', state.outage ? 'no sample yet' : 'connecting…'),
  );
  return lines;
}

/** One refresh for --json: the stats with rates, or the outage; always an ISO `time`. */
export function monitorRecord(state: MonitorState): Record<string, unknown> {
  const last = state.history.at(-1);
  const base = { time: time(state.nowMs), queue: state.queue };
  if (state.outage) {
    return {
      ...base,
      reconnecting: true,
      error: state.outage.error,
      ...(state.outage.address !== undefined ? { address: state.outage.address } : {}),
      reconnectingForMs: state.nowMs - state.outage.sinceMs,
      lastSampleTime: last ? time(last.atMs) : null,
      lastSampleAgeMs: last ? state.nowMs - last.atMs : null,
    };
  }
  const r = rates(state.history);
  // throughputPerSec: the name this field had before the rates were split.
  return { ...base, ...last?.stats, throughputPerSec: r.completedPerSec, completedPerSecMinute: r.completedPerSecMinute };
}
