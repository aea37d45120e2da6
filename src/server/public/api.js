/**
 * The JSON API, by paths relative to the page: the dashboard may be mounted under a base path
 * (/admin/queues/), so 'api/queues' resolves beside index.html wherever that is. Writes carry
 * the CSRF token from the session and a JSON content type, as the server requires.
 */

/** An error answer from the server ({error:{code,message,field?}}), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

let csrfToken = '';

export function setCsrfToken(token) {
  csrfToken = token ?? '';
}

async function request(method, path, body) {
  const init = { method, headers: { accept: 'application/json' }, credentials: 'same-origin' };
  if (method !== 'GET') {
    init.headers['content-type'] = 'application/json';
    init.headers['x-csrf-token'] = csrfToken;
    init.body = JSON.stringify(body ?? {});
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, 'network', `The dashboard server did not answer (${err.message}).`);
  }
  let json;
  try {
    json = await res.json();
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = json?.error;
    throw new ApiError(res.status, e?.code ?? 'http', e?.message ?? `${res.status} ${res.statusText}`, e?.field);
  }
  return json;
}

/**
 * A path segment: queue names, job and group ids may hold characters a URL gives meaning to. A
 * name that is only dots ('.', '..', even percent-encoded) is resolved away by every URL parser:
 * `groups/../pause` is the queue's own pause. No path can name it, so it is refused here, before
 * any request is made.
 */
function seg(part) {
  if (part === '.' || part === '..') throw new ApiError(400, 'dot_segment', `“${part}” cannot be named in a URL: act on it with the library or the CLI.`);
  return encodeURIComponent(part);
}

/** A query string from an object, skipping empty values. */
function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const text = p.toString();
  return text ? `?${text}` : '';
}

const q = (name) => `api/queues/${seg(name)}`;

export const api = {
  session: () => request('GET', 'api/session'),
  login: (token) => request('POST', 'api/login', { token }),
  logout: () => request('POST', 'api/logout'),
  queues: () => request('GET', 'api/queues'),
  queue: (name) => request('GET', q(name)),
  /** Every shown queue's last hour, in one answer. */
  history: () => request('GET', 'api/history'),
  timeline: (name) => request('GET', `${q(name)}/timeline`),
  /** A page of a state; order 'desc' is newest first; errorContains filters dead or completed jobs (reading at most budget). */
  jobs: (name, state, { limit, cursor, order, errorContains, budget } = {}) =>
    request('GET', `${q(name)}/jobs${qs({ state, limit, cursor, order, errorContains, budget })}`),
  /** How many jobs of a retained set a bulk action by this error text would take (at most maxBulk, then more). */
  count: (name, set, errorContains) => request('GET', `${q(name)}/${set}/count${qs({ errorContains })}`),
  search: (name, params) => request('GET', `${q(name)}/search${qs(params)}`),
  job: (name, id) => request('GET', `${q(name)}/jobs/${seg(id)}`),
  workers: (name) => request('GET', `${q(name)}/workers`),
  shards: (name) => request('GET', `${q(name)}/shards`),
  schedules: (name) => request('GET', `${q(name)}/schedules`),
  cancel: (name, id, opts) => request('POST', `${q(name)}/jobs/${seg(id)}/cancel`, opts),
  fail: (name, id, opts) => request('POST', `${q(name)}/jobs/${seg(id)}/fail`, opts),
  promote: (name, id) => request('POST', `${q(name)}/jobs/${seg(id)}/promote`),
  retry: (name, id) => request('POST', `${q(name)}/jobs/${seg(id)}/retry`),
  reschedule: (name, id, when) => request('POST', `${q(name)}/jobs/${seg(id)}/reschedule`, when),
  remove: (name, id) => request('DELETE', `${q(name)}/jobs/${seg(id)}`),
  /** set: 'dead' | 'completed'; action: 'retry' | 'purge'; target: {ids} | {all, expect} | {errorContains, expect}. */
  bulk: (name, set, action, target) => request('POST', `${q(name)}/${set}/${action}`, target),
  drain: (name, expect) => request('POST', `${q(name)}/drain`, { expect }),
  pause: (name) => request('POST', `${q(name)}/pause`),
  resume: (name) => request('POST', `${q(name)}/resume`),
  removeSchedule: (name, schedule) => request('DELETE', `${q(name)}/schedules/${seg(schedule)}`),
  /** A page of the queue's groups; cursor: the last page's, as it came. */
  groups: (name, { limit, cursor } = {}) => request('GET', `${q(name)}/groups${qs({ limit, cursor })}`),
  /** limits: { concurrency?, groupConcurrency?, rateLimit?, groupRateLimit? }, each a number / { max, perMs }, or null (none). */
  setLimits: (name, limits) => request('POST', `${q(name)}/limits`, limits),
  /** limits: { concurrency?, rateLimit? }: a number / { max, perMs }, or null for the queue's groupConcurrency / groupRateLimit. */
  setGroupLimit: (name, group, limits) => request('POST', `${q(name)}/groups/${seg(group)}/limits`, limits),
  pauseGroup: (name, group) => request('POST', `${q(name)}/groups/${seg(group)}/pause`),
  resumeGroup: (name, group) => request('POST', `${q(name)}/groups/${seg(group)}/resume`),
};
