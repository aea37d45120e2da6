/**
 * What a payload search matches: a substring of the job's data (or its id), or equality at a
 * JSON path, and/or the job's name. Runs in Node over raw stored data, so a search costs Redis
 * only the reads.
 */
import { ValidationError } from '../errors.js';
import { idSchema, parseOptions } from '../options.js';

export interface SearchQuery {
  /** Matches jobs whose id or data (as stored JSON text) contains this text. */
  text?: string;
  /** With `text`: match ids only and never look at the data (for readers who may not see payloads). */
  idsOnly?: boolean;
  /** With `equals`: a path into the data, like `customer.email` or `items[0].sku`. */
  path?: string;
  equals?: unknown;
  /** Only jobs of this name (`add({ name })`), alone or with `text` or `path`. */
  name?: string;
}

type Step = string | number;

/** `a.b[2].c` → ['a', 'b', 2, 'c']; refuses what it cannot read. */
export function parsePath(path: string): Step[] {
  const steps: Step[] = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  let at = 0;
  for (let m = re.exec(path); m; m = re.exec(path)) {
    const gap = path.slice(at, m.index);
    if (gap !== '' && gap !== '.') throw new ValidationError('path', `cannot read ${JSON.stringify(path)} (use a.b[0].c)`);
    steps.push(m[1] !== undefined ? m[1] : Number(m[2]));
    at = re.lastIndex;
  }
  if (steps.length === 0 || at !== path.length) throw new ValidationError('path', `cannot read ${JSON.stringify(path)} (use a.b[0].c)`);
  return steps;
}

function at(value: unknown, steps: Step[]): unknown {
  let v = value;
  for (const s of steps) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[s];
  }
  return v;
}

/** A predicate over (id, raw data), checked once: a bad query fails before anything is read. */
export function matcher(q: SearchQuery): (id: string, data: string | undefined, name?: string | undefined) => boolean {
  if (typeof q !== 'object' || q === null) throw new ValidationError('query', 'must be { text }, { path, equals } or { name }');
  if (q.name !== undefined) {
    const name = parseOptions(idSchema, q.name, 'name');
    const rest: SearchQuery = { ...q };
    delete rest.name;
    if (rest.text === undefined && rest.path === undefined) {
      if (rest.idsOnly !== undefined) throw new ValidationError('idsOnly', 'goes with text');
      if ('equals' in rest) throw new ValidationError('path', 'is required with equals');
      return (_id, _data, n) => n === name;
    }
    const inner = matcher(rest);
    return (id, data, n) => n === name && inner(id, data);
  }
  const hasText = q.text !== undefined;
  const hasPath = q.path !== undefined;
  if (hasText === hasPath) throw new ValidationError('query', 'give exactly one of text, or path with equals (or name)');
  if (hasText) {
    if (typeof q.text !== 'string' || q.text === '') throw new ValidationError('text', 'must be a non-empty string');
    const text = q.text;
    if (q.idsOnly !== undefined && typeof q.idsOnly !== 'boolean') throw new ValidationError('idsOnly', 'must be true or false');
    if (q.idsOnly) return (id) => id.includes(text);
    return (id, data) => id.includes(text) || (data !== undefined && data.includes(text));
  }
  if (q.idsOnly !== undefined) throw new ValidationError('idsOnly', 'goes with text, not with path');
  if (typeof q.path !== 'string') throw new ValidationError('path', 'must be a string like a.b[0].c');
  if (!('equals' in q)) throw new ValidationError('equals', 'is required with path');
  const steps = parsePath(q.path);
  const want = JSON.stringify(q.equals);
  return (_id, data) => {
    if (data === undefined) return false;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      return false;
    }
    const got = at(parsed, steps);
    return got !== undefined && JSON.stringify(got) === want;
  };
}
