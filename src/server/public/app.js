/**
 * Start-up: read the session (sign in first when the server asks), draw the header with the
 * connection status, open the live stream, and hand each route to its page. A page is a
 * function (main, route) returning its cleanup, or { update(route), cleanup } when it can
 * move to a nearby route (another tab of the same queue) without being rebuilt.
 */
import { api, setCsrfToken } from './api.js';
import { h, icon, replace } from './dom.js';
import { tickTimes } from './format.js';
import * as live from './live.js';
import { jobPage } from './pages-job.js';
import { overviewPage } from './pages-overview.js';
import { queuePage } from './pages-queue.js';
import { href, startRouter } from './router.js';
import { emptyState, errorNote, loading, session } from './ui.js';

/** The icon beside this module: under the versioned path, so it is cached for good like the rest. */
const FAVICON = new URL('./favicon.svg', import.meta.url).href;

const main = h('main', { id: 'main', class: 'main', tabindex: '-1' });
const banner = h('div', { class: 'banner', role: 'status', 'aria-live': 'polite', hidden: true });
const status = h('span', { class: 'conn conn-connecting' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), 'Connecting…');
const headerRight = h('div', { class: 'header-right' }, status);

document.body.append(
  h('a', { href: '#main', class: 'skip' }, 'Skip to content'),
  h(
    'header',
    { class: 'topbar' },
    h(
      'a',
      { href: href.overview(), class: 'brand', 'aria-label': 'delayq: all queues' },
      h('img', { src: FAVICON, alt: '', width: '24', height: '24' }),
      h('span', null, 'delayq'),
    ),
    headerRight,
  ),
  banner,
  main,
);
// The skip link targets the main element without changing the route hash.
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});

let page; // { kind, queue, update?, cleanup }

function render(route) {
  if (page?.update && page.kind === route.page.replace('search', 'queue') && page.update(route)) return;
  page?.cleanup?.();
  page = undefined;
  window.scrollTo(0, 0);
  let result;
  if (route.page === 'overview') {
    live.followQueue(undefined);
    result = overviewPage(main, route);
  } else if (route.page === 'queue' || route.page === 'search') result = queuePage(main, route);
  else if (route.page === 'job') result = jobPage(main, route);
  else {
    replace(
      main,
      emptyState('Page not found', 'That address is not a page of this dashboard.', 'search'),
      h('p', { class: 'center' }, h('a', { href: '#/' }, 'Back to all queues')),
    );
  }
  const kind = route.page === 'search' ? 'queue' : route.page;
  page = typeof result === 'function' ? { kind, cleanup: result } : { kind, ...result };
}

const STATUS_TEXT = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', 'redis-down': 'Redis unreachable' };
let everLive = false;

function showStatus({ state, error }) {
  status.className = `conn conn-${state}`;
  replace(status, h('span', { class: 'dot', 'aria-hidden': 'true' }), STATUS_TEXT[state]);
  if (state === 'live') everLive = true;
  // The first connection gets no banner; a lost one does, saying what is stale.
  const show = state === 'redis-down' || (state === 'reconnecting' && everLive);
  banner.hidden = !show;
  banner.className = `banner banner-${state}`;
  if (show) {
    replace(
      banner,
      icon('alert'),
      state === 'redis-down'
        ? h(
            'span',
            null,
            h('strong', null, 'Redis unreachable. '),
            'The figures are from before the outage and refresh once it answers again. ',
            h('span', { class: 'banner-detail' }, error),
          )
        : h('span', null, h('strong', null, 'Reconnecting… '), 'The live connection to the dashboard dropped; the figures may be out of date.'),
    );
  }
}

function loginPage(message) {
  const input = h('input', { type: 'password', name: 'token', id: 'token', autocomplete: 'current-password', required: true, class: 'input' });
  const err = h('p', { class: 'login-error', role: 'alert' }, message ?? '');
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign in');
  const form = h(
    'form',
    { class: 'login card' },
    h('img', { src: FAVICON, alt: '', width: '40', height: '40', class: 'login-logo' }),
    h('h1', null, 'Sign in to delayq'),
    h('p', { class: 'muted' }, 'This dashboard needs its access token (DELAYQ_TOKEN).'),
    h('label', { for: 'token', class: 'label' }, 'Token'),
    input,
    err,
    submit,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    replace(err, '');
    try {
      await api.login(input.value);
      location.reload();
    } catch (ex) {
      replace(err, ex.message);
      submit.disabled = false;
      input.select();
    }
  });
  replace(main, form);
  input.focus();
}

async function boot() {
  replace(main, loading('Connecting to the dashboard…'));
  let s;
  try {
    s = await api.session();
  } catch (err) {
    if (err.status === 401) {
      status.hidden = true;
      loginPage();
      return;
    }
    replace(
      main,
      errorNote(err, 'The dashboard could not start'),
      h('p', { class: 'center' }, h('button', { type: 'button', class: 'btn', onclick: () => location.reload() }, 'Try again')),
    );
    return;
  }
  setCsrfToken(s.csrfToken);
  Object.assign(session, {
    version: s.version,
    user: s.user,
    maxBulk: s.maxBulk,
    readOnly: s.readOnly,
    canWrite: !s.readOnly && s.canWrite,
    redacted: s.redacted === true,
  });
  const extras = [h('span', { class: 'version hide-sm' }, `v${s.version}`)];
  if (!session.canWrite)
    extras.unshift(h('span', { class: 'badge badge-muted', title: 'Actions are hidden: this dashboard is read-only for you' }, 'Read-only'));
  headerRight.prepend(...extras);
  if (s.user === 'session') {
    headerRight.append(
      h('button', { type: 'button', class: 'btn btn-small btn-ghost', onclick: () => api.logout().finally(() => location.reload()) }, 'Sign out'),
    );
  }
  live.on('status', showStatus);
  startRouter(render);
  setInterval(() => tickTimes(), 1000);
}

boot();
