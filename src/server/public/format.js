/**
 * Numbers, durations and times as people read them. Job times are the Redis server's clock,
 * so "in 4 min" is computed against the server's now (our clock plus the skew measured from
 * the last stats sample), not the browser's: a laptop a minute off still reads true.
 */
import { h } from './dom.js';

let skewMs = 0;

/** Records the server clock seen in a response (stats.nowMs). */
export function noteServerNow(serverNowMs) {
  if (Number.isFinite(serverNowMs)) skewMs = serverNowMs - Date.now();
}

/** The server's clock now, as best we know it. */
export function serverNow() {
  return Date.now() + skewMs;
}

const nf = new Intl.NumberFormat();

export function num(n) {
  return n === undefined || n === null ? '–' : nf.format(n);
}

/** A duration, short: 850 ms, 12 s, 4 min, 2 h 5 min, 3 d. */
export function duration(ms) {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '–';
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(a)} ms`;
  if (a < 59_500) return `${Math.round(a / 1000)} s`;
  // Round to whole minutes first, so 2 h 59.7 min reads "3 h", not "2 h 60 min".
  const minutes = Math.round(a / 60_000);
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 24 * 60) {
    const hours = Math.floor(minutes / 60);
    return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  }
  return `${Math.round(a / 86_400_000)} d`;
}

/** "in 4 min", "12 s ago", "now" for a server-clock timestamp. */
export function relative(atMs) {
  if (atMs === undefined || atMs === null) return '–';
  const d = atMs - serverNow();
  if (Math.abs(d) < 1000) return 'now';
  return d > 0 ? `in ${duration(d)}` : `${duration(d)} ago`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

/** A server-clock timestamp in the browser's local time zone. */
export function localTime(atMs) {
  return atMs === undefined || atMs === null ? '–' : dateTime.format(new Date(atMs));
}

export function clock(atMs) {
  return timeOnly.format(new Date(atMs));
}

/**
 * A <time> whose text is relative and ticks (see tickTimes); the absolute local time is the
 * tooltip and the machine-readable datetime.
 */
export function relTime(atMs) {
  if (atMs === undefined || atMs === null) return h('span', { class: 'muted' }, '–');
  return h('time', { datetime: new Date(atMs).toISOString(), title: localTime(atMs), dataset: { at: atMs } }, relative(atMs));
}

/** Local time and relative, side by side ("12 Mar 2025, 14:02:11 · in 4 min"). */
export function bothTimes(atMs) {
  if (atMs === undefined || atMs === null) return h('span', { class: 'muted' }, '–');
  return h('span', { class: 'both-times' }, h('span', null, localTime(atMs)), h('span', { class: 'muted sep' }, ' · '), relTime(atMs));
}

/** Re-renders every ticking time on the page (called once a second). */
export function tickTimes(root = document) {
  for (const el of root.querySelectorAll('time[data-at]')) {
    const text = relative(Number(el.dataset.at));
    if (el.textContent !== text) el.textContent = text;
  }
}

/** Any value as pretty JSON text (for <pre>); strings as they are. */
export function pretty(value) {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** A one-line preview of a payload for tables, cut to `max` characters. */
export function preview(value, max = 90) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch {
    text = String(value);
  }
  if (text === undefined) return '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The first line of an error (the message), for tables. */
export function firstLine(text) {
  if (!text) return '';
  const line = String(text).split('\n')[0];
  return line.length > 140 ? `${line.slice(0, 139)}…` : line;
}

/** "1 job" / "3 jobs". */
export function plural(n, word, many = `${word}s`) {
  return `${num(n)} ${n === 1 ? word : many}`;
}
