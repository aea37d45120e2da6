/**
 * Progress bars for long CLI work (bulk import today; bulk retry, purge and export later).
 * Drawn on stderr only when stderr is a terminal, so stdout stays clean for --json and pipes,
 * and a log file or CI run never fills up with redraws. Off a terminal every call is a no-op.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** Adds `n` (default 1) to the value. */
  tick(n?: number): void;
  /** Sets the value. */
  set(value: number): void;
  /** Draws the last state and moves past the bar; further calls do nothing. */
  done(): void;
}

export interface ProgressOptions {
  /** What is going on: "reading", "adding". */
  label: string;
  /** The value that means finished; without one only the count is shown (e.g. lines from stdin). */
  total?: number;
  /** What the value counts: "jobs", "lines". Omit with a total in bytes: the bar shows percent. */
  unit?: string;
  stream?: NodeJS.WriteStream;
}

/** Whether bars are drawn at all: a terminal that can move its cursor. */
export function progressShown(stream: NodeJS.WriteStream = process.stderr): boolean {
  return Boolean(stream.isTTY) && process.env.TERM !== 'dumb';
}

const SILENT: Progress = { tick() {}, set() {}, done() {} };

export function startProgress(opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  if (!progressShown(stream)) return SILENT;
  const unit = opts.unit ? ` ${opts.unit}` : '';
  const format =
    opts.total === undefined
      ? `${opts.label} {value}${unit}  {duration_formatted}`
      : // No ETA: cli-progress prints "NULL" until it has enough samples, which reads as a bug.
        `${opts.label} [{bar}] {percentage}%${opts.unit ? ` {value}/{total}${unit}` : ''}  {duration_formatted}`;
  const bar = new cliProgress.SingleBar({
    format,
    stream,
    barsize: 30,
    hideCursor: true,
    // The bar is a view of work under way: once done, the result line says what happened.
    clearOnComplete: true,
    // cli-progress would print a plain line every 2 s off a terminal; off a terminal we draw nothing.
    noTTYOutput: false,
  });
  // Without a total, a bar of 0 would read "100%": give it one it never reaches, and no {bar}.
  bar.start(opts.total ?? Number.MAX_SAFE_INTEGER, 0);
  let value = 0;
  let finished = false;
  return {
    tick(n = 1) {
      if (finished) return;
      value += n;
      bar.update(value);
    },
    set(v) {
      if (finished) return;
      value = v;
      bar.update(value);
    },
    done() {
      if (finished) return;
      finished = true;
      bar.stop();
    },
  };
}
