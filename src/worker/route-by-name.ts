/**
 * Handlers by job name as one handler: the rule a Worker and an isolated handler's thread or
 * process share (in a file apart, so a thread loads this and not the whole Worker with its store).
 */
import type { Job } from '../job.js';

type Handler<T> = (job: Job<T>) => unknown;

/** One handler that routes by name; throws a TypeError naming a handler that is not a function. */
export function routeByName<T>(handlers: { readonly [name: string]: Handler<T> }): Handler<T> {
  const byName = new Map<string, Handler<T>>();
  for (const [name, fn] of Object.entries(handlers)) {
    if (typeof fn !== 'function') throw new TypeError(`handlers[${JSON.stringify(name)}] must be a function`);
    byName.set(name, fn);
  }
  if (byName.size === 0) throw new TypeError('handlers must name at least one job name (or `default`)');
  const fallback = byName.get('default');
  const known = [...byName.keys()].filter((n) => n !== 'default');
  const quoted = known.slice(0, 10).map((n) => JSON.stringify(n));
  const shown = known.length > 10 ? `${quoted.join(', ')}, …` : quoted.join(', ');
  return (job) => {
    const fn = (job.name !== undefined && byName.get(job.name)) || fallback;
    if (fn) return fn(job);
    const what = job.name === undefined ? 'job has no name' : `no handler for job name ${JSON.stringify(job.name)}`;
    throw new Error(`${what}: this worker handles ${shown || 'no name'} and has no 'default' handler`);
  };
}

/**
 * The handler of a loaded handler module, by the CLI's rule: its default export when that is a
 * function, else its `handlers` export (handlers by job name), else its `handler` export.
 * Undefined when it has none of them.
 */
export function handlerOfModule(mod: { default?: unknown; handler?: unknown; handlers?: unknown }): Handler<unknown> | undefined {
  const h = typeof mod.default === 'function' ? mod.default : (mod.handlers ?? mod.handler);
  if (typeof h === 'function') return h as Handler<unknown>;
  if (typeof h === 'object' && h !== null && !Array.isArray(h)) return routeByName(h as { [name: string]: Handler<unknown> });
  return undefined;
}
