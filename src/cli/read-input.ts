/** Reads job data for `add`: an argument, a file, or stdin; JSON where it parses, else the text. */
import { readFile } from 'node:fs/promises';
import { UsageError } from './errors.js';

export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

export async function readSource(file: string | undefined): Promise<string> {
  if (file === undefined || file === '-') {
    if (process.stdin.isTTY) throw new UsageError('no data: pass it as an argument, with --file, or on stdin');
    return readAll(process.stdin);
  }
  return readFile(file, 'utf8');
}

/** JSON when the text parses as JSON; otherwise the text itself, as a string payload. */
export function parseData(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
