/**
 * What every command shares: the global options turned into a Queue, output in text or JSON,
 * colour only on a terminal and never with NO_COLOR. Errors and exit codes: errors.ts.
 */
import { styleText } from 'node:util';
import type { Command } from 'commander';
import type { ConnectionOptions } from '../options.js';
import type { QueueStats } from '../types.js';
import { Queue } from '../queue.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { UsageError, warn } from './errors.js';
import { describeHeld } from '../store/held.js';

/** The key prefix when --prefix is not given. */
export const DEFAULT_PREFIX = 'dq';

export interface GlobalOptions {
  queue: string;
  redis?: string;
  prefix?: string;
  json?: boolean;
}

export function globals(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals() as GlobalOptions;
}

export function connectionOf(g: GlobalOptions): ConnectionOptions {
  const out: ConnectionOptions = {};
  if (g.redis !== undefined) out.connection = g.redis;
  if (g.prefix !== undefined) out.prefix = g.prefix;
  return out;
}

/**
 * A person at a terminal waits seconds, not the library's 10 s twice: with Redis unreachable a
 * command says so and exits 1 within about 5 s (10 s when it connects and then gets no answer).
 */
export const CLI_CONNECT_TIMEOUT_MS = 5_000;
export const CLI_COMMAND_TIMEOUT_MS = 5_000;

export interface Timeouts {
  connectTimeoutMs?: number;
  commandTimeoutMs?: number;
}

/**
 * The store a one-shot command talks through: bounded waits, and a refused connection (or a
 * server that does not speak Redis) fails the command at once rather than after the timeout.
 */
export function openCliStore(g: GlobalOptions, timeouts: Timeouts = {}): { store: Store; owned: boolean } {
  return openStore(connectionOf(g), { connectTimeoutMs: CLI_CONNECT_TIMEOUT_MS, commandTimeoutMs: CLI_COMMAND_TIMEOUT_MS, failFast: true, ...timeouts });
}

/** Runs `fn` with a queue that is closed afterwards (with its store), whatever happens. */
export async function withQueue<R>(g: GlobalOptions, fn: (q: Queue<unknown>) => Promise<R>, timeouts: Timeouts = {}): Promise<R> {
  const { store, owned } = openCliStore(g, timeouts);
  const q = new Queue<unknown>(g.queue, { store });
  try {
    return await fn(q);
  } finally {
    await q.close();
    if (owned) await store.close();
  }
}

export function colourOn(stream: NodeJS.WriteStream = process.stdout): boolean {
  return Boolean(stream.isTTY) && !('NO_COLOR' in process.env) && process.env.TERM !== 'dumb';
}

type Style = Parameters<typeof styleText>[0];
export function paint(style: Style, text: string, stream: NodeJS.WriteStream = process.stdout): string {
  return colourOn(stream) ? styleText(style, text) : text;
}

/** Prints `value` as JSON with --json, else the text `human` gives. */
export function output(g: GlobalOptions, value: unknown, human: () => string): void {
  process.stdout.write(g.json ? `${JSON.stringify(value)}\n` : `${human()}\n`);
}

export function ms(n: number | undefined): string {
  if (n === undefined) return '—';
  if (Math.abs(n) < 1000) return `${Math.round(n)} ms`;
  if (Math.abs(n) < 120_000) return `${(n / 1000).toFixed(1)} s`;
  if (Math.abs(n) < 7_200_000) return `${(n / 60_000).toFixed(1)} min`;
  if (Math.abs(n) < 2 * 86_400_000) return `${(n / 3_600_000).toFixed(1)} h`;
  return `${(n / 86_400_000).toFixed(1)} d`;
}

/**
 * Scheduled jobs not yet due: "upcoming". One meaning per word on every surface (stats() JSON,
 * /metrics, the CLI, the dashboard): scheduled = every job waiting to run, due or not
 * (`stats().scheduled`); ready = due = scheduled and its due time passed (`stats().ready`);
 * upcoming = scheduled − ready. The listing `jobs ls --state scheduled` (kept for the scripts that
 * use it) lists the upcoming ones; `--state upcoming` says the same.
 */
export function upcoming(s: { scheduled: number; ready: number }): number {
  return s.scheduled - s.ready;
}

/** The waiting jobs in words, as every count line prints them: `scheduled 29 (ready 29, upcoming 0)`. */
export function scheduledCounts(s: { scheduled: number; ready: number }): string {
  return `scheduled ${s.scheduled} (ready ${s.ready}, upcoming ${upcoming(s)})`;
}

/** When the next job is due: "now" while jobs are due (with how long the oldest has been), else in how long. */
export function nextDue(s: QueueStats): string {
  if (s.ready > 0) return `now (${s.ready} due, the oldest since ${ms(s.oldestDueAgeMs ?? 0)} ago)`;
  return s.nextDueInMs === undefined ? 'none scheduled' : `in ${ms(s.nextDueInMs)}`;
}

/** What holds due jobs ("held: 1 group paused with 3 waiting · rate limit holding until …"), as a line when something does. */
export function heldLine(s: QueueStats): string[] {
  const why = describeHeld(s.held);
  return why.length > 0 ? [`held: ${why.join(' · ')}`] : [];
}

/** A time as ISO 8601; '—' for none, or one that could not be read (NaN: a held job's due time on redis, a corrupt job). */
export function when(epochMs: number | undefined): string {
  return epochMs === undefined || !Number.isFinite(epochMs) ? '—' : new Date(epochMs).toISOString();
}

/** A word as a POSIX shell reads it back: bare when it is plain, else in single quotes. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A Redis URL fit to print: its password, if any, as `****` (the hint then says to put it back). */
function printableUrl(url: string): { text: string; masked: boolean } {
  try {
    const u = new URL(url);
    if (u.password === '') return { text: url, masked: false };
    u.password = '****';
    return { text: u.toString(), masked: true };
  } catch {
    return { text: url, masked: false };
  }
}

/**
 * The command line that runs `words` against the same store and queue as this one, for hints a
 * person pastes ("next page: …"): the global options that were given (a password masked), then
 * the command's own words.
 */
export function commandLine(g: GlobalOptions, words: (string | number)[]): string {
  const parts = ['delayq'];
  let note = '';
  if (g.redis !== undefined) {
    const url = printableUrl(g.redis);
    parts.push('--redis', shellWord(url.text));
    if (url.masked) note = '  (put the password back in --redis)';
  }
  if (g.prefix !== undefined && g.prefix !== DEFAULT_PREFIX) parts.push('--prefix', shellWord(g.prefix));
  parts.push('--queue', shellWord(g.queue), ...words.map((w) => shellWord(String(w))));
  return parts.join(' ') + note;
}

/** The URL the command's queue will use, as openStore picks it (an empty REDIS_URL is unset). */
export function storeUrl(g: GlobalOptions): string | undefined {
  return g.redis ?? (process.env.REDIS_URL || undefined);
}

const writers = new WeakSet<Command>();

/**
 * Marks a command as one that writes to the queue. A memory:// store lives only as long as the
 * process, so such a command on memory:// writes something nobody will ever read: main.ts
 * warns after it ran (demo and worker are not marked: they run their work in-process).
 */
export function writes(cmd: Command): Command {
  writers.add(cmd);
  return cmd;
}

export function warnIfEphemeral(cmd: Command): void {
  if (!writers.has(cmd)) return;
  const url = storeUrl(globals(cmd));
  if (url?.startsWith('memory:')) {
    warn(`${url} keeps jobs in this process only: what this command wrote is gone once it exits (use --redis redis://… to keep it)`);
  }
}

/** Parses a number option, refusing anything that is not one. */
export function numberOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${name} must be a number (got ${JSON.stringify(value)})`);
  return n;
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "1500", "1500ms", "30s", "5m", "2h", "1d" → milliseconds. */
export function duration(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(value);
  if (!m) throw new UsageError(`${name} must be a duration like 1500, 30s, 5m, 2h (got ${JSON.stringify(value)})`);
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']!);
}

/** An ISO date or epoch milliseconds → epoch milliseconds. */
export function instant(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(n)) throw new UsageError(`${name} must be an ISO time or epoch milliseconds (got ${JSON.stringify(value)})`);
  return n;
}
