/**
 * Reads job data for `add`: an argument, a file, or stdin. JSON where it parses; text that does
 * not look like JSON as a string payload; text that looks like JSON (it starts with `{` or `[`)
 * and does not parse is refused, since it is far more often a typo or a cut-off pipe than a
 * string someone meant (--text takes the data as it is).
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { UsageError } from './errors.js';

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

const NO_DATA = 'no data: pass it as an argument, with --file, or on stdin';

/** A file the user named that cannot be read is their mistake (exit 64), said plainly. */
function unreadable(file: string, err: unknown): UsageError {
  const code = (err as NodeJS.ErrnoException).code;
  const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
  return new UsageError(`cannot read --file ${file}: ${why}`);
}

/** Checks a --file before anything reads it, so the error names the file and the reason. */
export async function checkReadable(file: string): Promise<number> {
  try {
    const s = await stat(file);
    if (s.isDirectory()) throw Object.assign(new Error('directory'), { code: 'EISDIR' });
    return s.size;
  } catch (err) {
    throw unreadable(file, err);
  }
}

/** A stream of a --file, or stdin for none or `-` (refused on a terminal, where nobody is piping). */
export async function openSource(file: string | undefined, what: string): Promise<{ input: NodeJS.ReadableStream; size: number | undefined }> {
  if (file === undefined || file === '-') {
    if (process.stdin.isTTY) throw new UsageError(what);
    return { input: process.stdin, size: undefined };
  }
  const size = await checkReadable(file);
  return { input: createReadStream(file), size };
}

export async function readSource(file: string | undefined): Promise<string> {
  let text: string;
  if (file === undefined || file === '-') {
    if (process.stdin.isTTY) throw new UsageError(NO_DATA);
    text = await readAll(process.stdin);
  } else {
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw unreadable(file, err);
    }
  }
  // Nothing piped in (an empty file, a producer that wrote nothing) is no job, as on a terminal.
  if (text.trim() === '') throw new UsageError(NO_DATA, 'to add a job whose data is an empty string, give it as the argument: delayq add ""');
  return text;
}

/** JSON when the text parses; text that does not look like JSON as a string; `text` mode takes it as it is. */
export function parseData(text: string, asText = false): unknown {
  if (asText) return text;
  try {
    return JSON.parse(text);
  } catch (err) {
    if (/^\s*[{[]/.test(text)) {
      throw new UsageError(`data looks like JSON but does not parse (${(err as Error).message})`, 'fix the JSON, or add --text to store it as a string');
    }
    return text;
  }
}
