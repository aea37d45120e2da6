/**
 * `add --ndjson`: many jobs from a file or stdin, one per line. All or nothing for bad input:
 * every line is read, parsed and validated before the first write, so a typo on line 1201
 * leaves the queue as it was, and the error names that line.
 */
import type { ReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { ValidationError } from '../errors.js';
import type { AddOptions } from '../options.js';
import { type BulkJob, Queue } from '../queue.js';
import type { Store } from '../store/store.js';
import { type GlobalOptions, openCliStore, output, paint } from './context.js';
import { notChanged, UsageError } from './errors.js';
import { type Progress, startProgress } from './progress.js';
import { openSource } from './read-input.js';

const NOTHING_ADDED = 'nothing was added: fix that line and run the import again';

export interface ParsedLines {
  jobs: BulkJob<unknown>[];
  /** lineOf[i] is the 1-based line that jobs[i] came from (blank lines are skipped). */
  lineOf: number[];
}

const ENVELOPE_KEYS = new Set(['data', 'opts']);

/**
 * One line → one job: `{"data":…,"opts":{…}}`, or any other JSON value as the data itself. An
 * object with a `data` key is an envelope and may hold nothing else: a key beside them (an `id`
 * put next to `opts` instead of in it) would otherwise vanish without a word.
 */
export function jobOfLine(line: string, lineNo: number, defaults: AddOptions): BulkJob<unknown> {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (err) {
    throw new UsageError(`line ${lineNo}: not JSON (${(err as Error).message})`, NOTHING_ADDED);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v) || !('data' in v)) return { data: v, opts: { ...defaults } };
  const unknown = Object.keys(v).filter((k) => !ENVELOPE_KEYS.has(k));
  if (unknown.length > 0) {
    const names = unknown.map((k) => JSON.stringify(k)).join(', ');
    throw new UsageError(
      `line ${lineNo}: ${names} beside "data": a line with "data" is {"data": …, "opts": {…}} (job options go in "opts"; a payload with a "data" key goes whole in "data")`,
      NOTHING_ADDED,
    );
  }
  const { data, opts } = v as { data: unknown; opts?: unknown };
  if (opts !== undefined && (typeof opts !== 'object' || opts === null || Array.isArray(opts))) {
    throw new UsageError(`line ${lineNo}: opts must be an object`, NOTHING_ADDED);
  }
  const own = (opts ?? {}) as AddOptions;
  // A line's own time (delay, runAt or debounce) replaces the default's (--delay, --at or the
  // --debounce-* options) whole: they exclude each other.
  const timed = own.delay !== undefined || own.runAt !== undefined || own.debounce !== undefined;
  const { delay: _delay, runAt: _runAt, debounce: _debounce, ...untimed } = defaults;
  return { data, opts: { ...(timed ? untimed : defaults), ...own } };
}

/**
 * addBulk names a bad job by its index (`jobs[1200].opts.delay must be…`); a person wants the
 * line of the file: `line 1201: opts.delay must be…`.
 */
export function lineError(err: unknown, lineOf: readonly number[]): unknown {
  if (!(err instanceof ValidationError)) return err;
  const m = /^jobs\[(\d+)\]\.?/.exec(err.field);
  const line = m ? lineOf[Number(m[1])] : undefined;
  if (!m || line === undefined) return err;
  const rest = err.message.slice(m[0].length).trimStart();
  return new UsageError(`line ${line}: ${rest}`, NOTHING_ADDED);
}

async function readLines(file: string | undefined, defaults: AddOptions): Promise<ParsedLines> {
  const { input, size } = await openSource(file, 'no jobs: give --file <path>, or pipe NDJSON on stdin');
  // A file's size gives the reading bar a total; stdin only has a count of lines.
  const bar = size === undefined ? startProgress({ label: 'reading', unit: 'lines' }) : startProgress({ label: 'reading', total: size });
  const jobs: BulkJob<unknown>[] = [];
  const lineOf: number[] = [];
  let lineNo = 0;
  try {
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      lineNo++;
      if (size === undefined) bar.tick();
      else bar.set((input as ReadStream).bytesRead);
      if (line.trim() === '') continue;
      jobs.push(jobOfLine(line, lineNo, defaults));
      lineOf.push(lineNo);
    }
  } finally {
    bar.done();
  }
  return { jobs, lineOf };
}

/**
 * The store, with its `add` calls counted as they finish: addBulk writes in chunks, and this is
 * how the adding bar moves while one addBulk call validates everything up front.
 */
function countingAdds(store: Store, onCall: () => void, onAdded: (n: number) => void): Store {
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      // Bound to the real store: its methods use private fields, which a proxy does not have.
      if (prop !== 'add') return value.bind(target);
      return async (queue: string, jobs: Parameters<Store['add']>[1]) => {
        onCall();
        const r = await target.add(queue, jobs);
        onAdded(r.length);
        return r;
      };
    },
  });
}

export async function addNdjson(g: GlobalOptions, file: string | undefined, defaults: AddOptions): Promise<void> {
  if (defaults.id !== undefined) throw new UsageError('--id names one job: with --ndjson give each line its own id in "opts"');
  const { jobs, lineOf } = await readLines(file, defaults);
  // Started by the first write, so a validation error never shows an adding bar.
  let bar: Progress | undefined;
  const startBar = () => {
    bar ??= startProgress({ label: 'adding', total: jobs.length, unit: 'jobs' });
  };
  const { store, owned } = openCliStore(g);
  let added = 0;
  let existing = 0;
  let debounced = 0;
  try {
    const q = new Queue<unknown>(g.queue, { store: countingAdds(store, startBar, (n) => bar?.tick(n)) });
    // One call: addBulk validates every job before it writes any.
    const results = await q.addBulk(jobs).catch((err: unknown) => {
      throw lineError(err, lineOf);
    });
    for (const r of results) r.added ? added++ : r.debounced ? debounced++ : existing++;
  } finally {
    bar?.done();
    if (owned) await store.close();
  }
  // `debounced` only when a line was folded into a burst's job (the shape stays as it was otherwise).
  output(g, { added, existing, ...(debounced ? { debounced } : {}) }, () =>
    [
      `${paint('green', 'added')} ${added} jobs`,
      ...(debounced ? [`${debounced} debounced into a burst's job`] : []),
      ...(existing ? [`${existing} existed already`] : []),
    ].join(', '),
  );
  // Some ids were there already: like `add` of an existing id, "not changed" (for those).
  if (existing > 0) notChanged();
}
