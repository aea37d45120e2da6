import type { Command } from 'commander';
import { MAX_RATE_TOKENS } from '../../limits.js';
import type { AddOptions } from '../../options.js';
import { duration, globals, instant, numberOption, output, paint, when, withQueue, writes } from '../context.js';
import { notChanged, UsageError } from '../errors.js';
import { addNdjson } from '../ndjson-import.js';
import { parseData, readSource } from '../read-input.js';

/** A job's cost in tokens as typed: digits only, 1 to MAX_RATE_TOKENS. */
export function costArg(value: string): number {
  const n = /^\d{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= MAX_RATE_TOKENS))
    throw new UsageError(`--cost must be a whole number of tokens from 1 to ${MAX_RATE_TOKENS} (got ${JSON.stringify(value)})`);
  return n;
}

/** --debounce-key with --debounce-ms (and maybe --debounce-max-ms), or none of them. */
export function debounceArgs(o: Record<string, string | boolean | undefined>): AddOptions['debounce'] {
  const key = o.debounceKey as string | undefined;
  const delayMs = duration('--debounce-ms', o.debounceMs as string | undefined);
  const maxWaitMs = duration('--debounce-max-ms', o.debounceMaxMs as string | undefined);
  if (key === undefined && delayMs === undefined && maxWaitMs === undefined) return undefined;
  if (key === undefined) throw new UsageError('--debounce-ms and --debounce-max-ms need --debounce-key (the burst the add belongs to)');
  if (delayMs === undefined) throw new UsageError('--debounce-key needs --debounce-ms (how long after the last add of the burst the job runs)');
  return maxWaitMs === undefined ? { key, delayMs } : { key, delayMs, maxWaitMs };
}

export function addCommand(program: Command): void {
  writes(program.command('add'))
    .description('add a job (data from the argument, --file, or stdin), or many with --ndjson')
    .argument('[data]', 'the job data: JSON, or plain text')
    .option('--id <id>', 'job id (an existing id is left alone unless --replace)')
    .option('--delay <duration>', 'run after this long: 1500, 30s, 5m, 2h')
    .option('--at <time>', 'run at this time: ISO 8601 or epoch ms')
    .option('--priority <n>', 'higher runs first among due jobs')
    .option('--attempts <n>', 'hand-outs before the dead set')
    .option('--timeout <duration>', 'how long one attempt may run (30s, 5m): longer fails it (retries apply)')
    .option('--name <name>', "the job's name (send-email): shown in listings, searched by --name, routed by a Worker given handlers by name")
    .option('--group <id>', 'the group it belongs to (a tenant, a customer): groups take turns, each within its concurrency limit')
    .option('--cost <n>', `tokens of the rate limits the job takes when it starts (1-${MAX_RATE_TOKENS}; default 1)`)
    .option('--debounce-key <key>', 'fold a burst of adds with this key into one run: the last add wins (needs --debounce-ms)')
    .option('--debounce-ms <duration>', 'run this long after the last add of the burst: 2000, 2s')
    .option('--debounce-max-ms <duration>', "run no later than this after the burst's first add")
    .option('--depends-on <id>', 'hold the job until this job has ended (repeat for several; docs/flows.md)', (v: string, all: string[] = []) => [...all, v])
    .option('--wait-at-most <duration>', 'with --depends-on: run anyway this long after the add (30m)')
    .option('--on-child-failure <policy>', "with --depends-on: 'fail' (default: bury it when one ends dead or cancelled) or 'ignore'")
    .option('--replace', 'replace an existing job with this id')
    .option('--file <path>', 'read the data from a file (- for stdin)')
    .option('--text', 'the data is plain text, even when it looks like JSON')
    .option('--ndjson', 'bulk: one job per line, {"data":…,"opts":{…}} or a bare JSON value; nothing is written unless every line is valid')
    .addHelpText(
      'after',
      `
Examples:
  $ delayq add '{"orderId":"123"}' --id order:123:timeout --delay 30m
  $ delayq add --file report.json --at 2026-12-01T02:00:00Z
  $ delayq add '{"to":"ada@example.com"}' --name send-email --group tenant-42 --queue emails
  $ delayq add '{"doc":"d7"}' --debounce-key recompute:d7 --debounce-ms 2s --debounce-max-ms 10s
  $ delayq add '{"batch":50}' --cost 50 --queue api-calls
  $ delayq add '{"orderId":"123"}' --id ship:123 --depends-on charge:123 --depends-on reserve:123 --wait-at-most 1h
  $ cat jobs.ndjson | delayq add --ndjson --queue emails`,
    )
    .action(async (data: string | undefined, o: Record<string, string | string[] | boolean | undefined>, cmd: Command) => {
      const g = globals(cmd);
      const opts: AddOptions = {};
      if (o.id !== undefined) opts.id = o.id as string;
      const delay = duration('--delay', o.delay as string | undefined);
      const at = instant('--at', o.at as string | undefined);
      if (delay !== undefined) opts.delay = delay;
      if (at !== undefined) opts.runAt = at;
      const priority = numberOption('--priority', o.priority as string | undefined);
      if (priority !== undefined) opts.priority = priority;
      const attempts = numberOption('--attempts', o.attempts as string | undefined);
      if (attempts !== undefined) opts.attempts = attempts;
      if (o.group !== undefined) opts.group = o.group as string;
      if (o.name !== undefined) opts.name = o.name as string;
      const timeout = duration('--timeout', o.timeout as string | undefined);
      if (timeout !== undefined) opts.timeoutMs = timeout;
      if (o.replace) opts.replace = true;
      if (o.cost !== undefined) opts.cost = costArg(o.cost as string);
      const debounce = debounceArgs(o as Record<string, string | boolean | undefined>);
      if (debounce !== undefined) opts.debounce = debounce;
      if (o.dependsOn !== undefined) opts.dependsOn = o.dependsOn as string[];
      const waitAtMost = duration('--wait-at-most', o.waitAtMost as string | undefined);
      if (waitAtMost !== undefined) opts.waitAtMostMs = waitAtMost;
      if (o.onChildFailure !== undefined) {
        if (o.onChildFailure !== 'fail' && o.onChildFailure !== 'ignore')
          throw new UsageError(`--on-child-failure must be 'fail' or 'ignore' (got ${JSON.stringify(o.onChildFailure)})`);
        opts.onChildFailure = o.onChildFailure;
      }

      if (o.ndjson) {
        if (data !== undefined) throw new UsageError('--ndjson reads jobs from --file or stdin, not from an argument');
        if (o.text) throw new UsageError('--text is for one job; with --ndjson each line is JSON');
        await addNdjson(g, o.file as string | undefined, opts);
        return;
      }
      const payload = parseData(data !== undefined ? data : await readSource(o.file as string | undefined), Boolean(o.text));
      const r = await withQueue(g, (q) => q.add(payload, opts));
      output(g, r, () =>
        r.added
          ? `${paint('green', 'added')} ${r.id}, due ${when(r.dueAtMs)}`
          : r.debounced
            ? `${paint('green', 'debounced')} into ${r.id} (its data and options now these), due ${when(r.dueAtMs)}`
            : `${paint('yellow', 'not added')}: ${r.duplicateOf ? `deduplicated by ${r.duplicateOf}` : `${r.id} exists (${r.state}, due ${when(r.dueAtMs)})`}`,
      );
      // A debounced add changed the burst's job (its data and due time): not "nothing changed".
      if (!r.added && !r.debounced) notChanged();
    });
}
