/**
 * Hash routes, so every page has a real URL (bookmarkable, back button, open in a new tab)
 * without the server knowing the pages: it serves index.html at one path only, which also
 * keeps the dashboard working under any base path.
 *
 *   #/                              overview of every queue
 *   #/queues/<q>                    a queue (its scheduled tab)
 *   #/queues/<q>/<tab>              scheduled | ready | active | dead | completed | schedules | groups | workers | shards
 *   #/queues/<q>/dead?error=…       dead (or completed) jobs whose last error contains the text
 *   #/queues/<q>/search?text=…      search (or ?path=a.b&equals=…)
 *   #/queues/<q>/jobs/<id>          a job
 *
 * Queue names and job ids are percent-encoded: an id may hold '/', '#' or '?'.
 */

export const STATES = ['scheduled', 'ready', 'active', 'dead', 'completed'];
export const TABS = [...STATES, 'schedules', 'groups', 'workers', 'shards'];

const enc = encodeURIComponent;

export const href = {
  overview: () => '#/',
  queue: (q, tab, params) => {
    const query = params ? `?${new URLSearchParams(params).toString()}` : '';
    return tab && (tab !== 'scheduled' || query) ? `#/queues/${enc(q)}/${tab}${query}` : `#/queues/${enc(q)}`;
  },
  job: (q, id) => `#/queues/${enc(q)}/jobs/${enc(id)}`,
  search: (q, params) => `#/queues/${enc(q)}/search?${new URLSearchParams(params).toString()}`,
};

function decode(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The current route: { page: 'overview' | 'queue' | 'job' | 'search' | 'missing', queue?, tab?, id?, params? }. */
export function parseHash(hash = location.hash) {
  const raw = hash.replace(/^#/, '');
  const qIndex = raw.indexOf('?');
  const path = qIndex === -1 ? raw : raw.slice(0, qIndex);
  const params = new URLSearchParams(qIndex === -1 ? '' : raw.slice(qIndex + 1));
  const parts = path.split('/').filter(Boolean);
  if (parts.length === 0) return { page: 'overview' };
  if (parts[0] !== 'queues' || parts.length < 2) return { page: 'missing' };
  const queue = decode(parts[1]);
  if (parts.length === 2) return { page: 'queue', queue, tab: 'scheduled', params };
  if (parts[2] === 'jobs' && parts.length >= 4) return { page: 'job', queue, id: decode(parts.slice(3).join('/')) };
  if (parts[2] === 'search') return { page: 'search', queue, tab: 'search', params };
  if (parts.length === 3 && TABS.includes(parts[2])) return { page: 'queue', queue, tab: parts[2], params };
  return { page: 'missing' };
}

/** Calls `render(route)` now and on every hash change. */
export function startRouter(render) {
  const run = () => render(parseHash());
  window.addEventListener('hashchange', run);
  run();
}

export function go(hash) {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}
