/**
 * How the CLI fails: one error format and one table of exit codes, used by every command.
 *
 *   error: <message>          always, one line on stderr
 *   hint: <what to do>        sometimes, a second line
 *
 * Exit codes (docs/cli.md has the same table):
 *   0  ok
 *   1  error: Redis unreachable or refusing, a broken store, a handler module that throws…
 *      (running the same command again may work)
 *   2  not found / not changed: the command ran, but the job was not there, was in another
 *      state, or the queue already was as asked (the answer itself is on stdout)
 *   64 usage: the command line or its input is wrong (unknown command or option, bad value,
 *      bad job data); nothing was written, and running it again will not help. 64 is
 *      EX_USAGE from sysexits.h, so scripts can tell "retry" (1) from "fix the call" (64).
 */
import { styleText } from 'node:util';
import { type Command, CommanderError } from 'commander';
import { ConnectionError, ValidationError } from '../errors.js';

export const EXIT = { ok: 0, error: 1, notChanged: 2, usage: 64 } as const;

/** The command line or its input is wrong: exit 64, with an optional hint. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** A failure the CLI itself diagnosed, with its own exit code and hint (e.g. "the event stream is off"). */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.error,
    readonly hint?: string,
  ) {
    super(message);
  }
}

export interface Failure {
  exitCode: number;
  /** Undefined when there is nothing to print (help was shown, the version printed). */
  message?: string;
  hint?: string;
}

/** `delayq dead retry`, for "see 'delayq dead retry --help'". */
export function commandPath(cmd: Command | undefined): string {
  const names: string[] = [];
  for (let c: Command | null | undefined = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ') || 'delayq';
}

const helpHint = (cmd: Command | undefined) => `see '${commandPath(cmd)} --help'`;

/** Commander's own errors: help and version end here too, and a "did you mean" must survive. */
function fromCommander(err: CommanderError, cmd: Command | undefined): Failure {
  // --help, --version, and a command group given without a subcommand (its help was printed
  // on stderr already): nothing more to say. The group case is an incomplete command line.
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return { exitCode: EXIT.ok };
  if (err.code === 'commander.help') return { exitCode: err.exitCode === 0 ? EXIT.ok : EXIT.usage };
  const [first = '', ...rest] = err.message.split('\n');
  // Commander puts its suggestion on a line of its own: "(Did you mean stats?)".
  const suggestion = rest.map((l) => /^\(?(Did you mean .*?)\)?$/.exec(l.trim())?.[1]).find(Boolean);
  return {
    exitCode: EXIT.usage,
    message: first.replace(/^error: /, ''),
    hint: suggestion ? `${suggestion[0]!.toLowerCase()}${suggestion.slice(1)}` : helpHint(cmd),
  };
}

/** Redis's refusals of a connection's credentials (a wrong password or user, or none given). */
const AUTH_REFUSED =
  /\b(WRONGPASS|NOAUTH|ERR invalid password|ERR AUTH <password> called without any password configured|ERR Client sent AUTH, but no password is set)\b/;

/** What an error means for the person at the terminal: message, hint, exit code. */
export function describeFailure(err: unknown, cmd?: Command): Failure {
  if (err instanceof CommanderError) return fromCommander(err, cmd);
  if (err instanceof UsageError) return { exitCode: EXIT.usage, message: err.message, hint: err.hint ?? helpHint(cmd) };
  if (err instanceof CliError) return { exitCode: err.exitCode, message: err.message, ...(err.hint ? { hint: err.hint } : {}) };
  // The library's ValidationError is bad input by contract, and nothing was written.
  if (err instanceof ValidationError) return { exitCode: EXIT.usage, message: err.message };
  if (err instanceof ConnectionError) {
    // Redis answered, and refused who we are: the server is there, the credentials are wrong.
    if (AUTH_REFUSED.test(err.message)) {
      return {
        exitCode: EXIT.error,
        message: `authentication failed: ${err.message}`,
        hint: 'the password (or user) is wrong or missing: put them in the URL, redis://<user>:<password>@host:port (or $REDIS_URL); the server itself answered',
      };
    }
    return { exitCode: EXIT.error, message: err.message, hint: 'is Redis running there? --redis <url> or $REDIS_URL picks the server' };
  }
  if (err instanceof Error) return { exitCode: EXIT.error, message: err.message };
  return { exitCode: EXIT.error, message: String(err) };
}

function colourOnStderr(): boolean {
  return Boolean(process.stderr.isTTY) && !('NO_COLOR' in process.env) && process.env.TERM !== 'dumb';
}

/** The two lines (at most) a failure prints; the message is cut to its first line. */
export function formatFailure(f: Failure, colour = false): string[] {
  if (f.message === undefined) return [];
  const label = (style: Parameters<typeof styleText>[0], text: string) => (colour ? styleText(style, text) : text);
  const lines = [`${label('red', 'error:')} ${f.message.split('\n')[0]!.trim() || 'failed'}`];
  if (f.hint) lines.push(`${label('dim', 'hint:')} ${f.hint}`);
  return lines;
}

/** Prints the failure on stderr and exits with its code: the CLI's only way to fail. */
export function fail(err: unknown, cmd?: Command): never {
  const f = describeFailure(err, cmd);
  for (const line of formatFailure(f, colourOnStderr())) process.stderr.write(`${line}\n`);
  process.exit(f.exitCode);
}

/** A warning that does not stop the command: one line on stderr, text even with --json. */
export function warn(message: string): void {
  const label = colourOnStderr() ? styleText('yellow', 'warning:') : 'warning:';
  process.stderr.write(`${label} ${message}\n`);
}

/** Advice beside a result (not a failure): `hint:` on stderr, text even with --json. */
export function hint(message: string): void {
  const label = colourOnStderr() ? styleText('dim', 'hint:') : 'hint:';
  process.stderr.write(`${label} ${message}\n`);
}

/** The command ran, but what it was asked to change was not there or already so: exit 2. */
export function notChanged(): void {
  process.exitCode = EXIT.notChanged;
}
