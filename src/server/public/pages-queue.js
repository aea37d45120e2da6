/**
 * A queue: its counts and warnings, the next hour ahead (timeline) and the last hour behind
 * (throughput, lateness), pause/resume and drain, and tabs: a paginated list per state (dead and
 * completed newest first, either way, pages both ways, and filtered by error text), the search,
 * its schedules, its groups (pages-groups.js), its workers and (when sharded) its shards. Its
 * limits show under its title. Moving between tabs keeps the head
 * and its charts (update()), so only the list below reloads. A search, or an error filter, on a
 * large queue reads on by itself for up to SEARCH_TIME_MS, showing how far it got, until it has a
 * page of matches.
 */
import { api } from './api.js';
import { barChart } from './charts.js';
import { h, icon, replace } from './dom.js';
import { clock, num, plural, serverNow } from './format.js';
import * as live from './live.js';
import { go, href, STATES } from './router.js';
import { groupActions, limitsLine } from './pages-groups.js';
import { groupsTable, jobTable, schedulesTable, shardsTable, workersTable } from './tables.js';
import { act, button, confirmAction, emptyState, errorNote, loading, session } from './ui.js';
import { countCards, dueLine, historyCharts, queueBadges } from './widgets.js';

const PAGE_SIZE = 25;
const SLOW_REFRESH_MS = 30_000;
/** How long a search (or an error filter) reads on by itself for a page of matches. */
const SEARCH_TIME_MS = 2000;
/** Jobs one call of an error filter, or of a search, reads: small enough that the progress moves. */
const FILTER_BUDGET = 20_000;
const SEARCH_BUDGET = 5000;

/** The order a listing starts in: the retained sets newest first, the others in their state's order. */
const defaultOrder = (state) => (state === 'dead' || state === 'completed' ? 'desc' : 'asc');
/** The order chosen per state on this page (kept across tabs while the page is open). */
const orders = {};

const TAB_LABELS = {
  // The listing named `scheduled` (its API name kept) holds the jobs not due yet: upcoming.
  scheduled: 'Upcoming',
  ready: 'Ready',
  active: 'Active',
  dead: 'Dead',
  completed: 'Completed',
  schedules: 'Schedules',
  groups: 'Groups',
  workers: 'Workers',
  shards: 'Shards',
};

/** How many jobs a tab holds, from the stats (`stats.scheduled` is ready + upcoming). */
function tabCount(tab, stats) {
  if (!stats) return undefined;
  if (tab === 'scheduled') return stats.scheduled - stats.ready;
  if (tab === 'workers') return stats.workers;
  return stats[tab];
}

export function queuePage(main, route) {
  const name = route.queue;
  document.title = `${name} · delayq`;
  live.followQueue(name);

  let stats;
  /** The queue's schedules, for the warning of one that no Scheduler enqueues. */
  let schedules = [];
  // From the queue's detail: shards new jobs go to, and old shard sets still draining. The
  // Shards tab is shown for a sharded queue (or one that drains after a reshard) only.
  let shards = { count: 1, draining: 0 };
  /** The queue's limits, from its detail: { concurrency?, groupConcurrency?, rateLimit?, groupRateLimit? }. */
  let limits;
  /** The queue's rate limiter now, from its detail (rateStatus): { nowMs, queue: { used, heldUntilMs?, nextRefillMs? }, groupsHeld }. */
  let rate;
  let current = route;
  let stopped = false;
  /** The queue does not exist: the page says so and loads nothing more. */
  let gone = false;
  let view; // the tab's own state: { tab, cursor, pages, selected, lastCount, reload }

  // ---- the head ----
  const badges = h('div', { class: 'badges' });
  const actions = h('div', { class: 'page-actions' });
  const due = h('p', { class: 'due-line' });
  const limitsEl = h('p', { class: 'due-line limits-line', hidden: true });
  const counts = h('div', { class: 'stats stats-5' }, loading());
  const timeline = h('section', { class: 'panel chart-panel' }, panelHead('Upcoming', 'what falls due in the next hour'), loading());
  const history = h('div', { class: 'charts-2' }, ...historyCharts([]));
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Job states' });
  let searchBox = searchForm(name, route.params, route.tab);
  const body = h('div', { class: 'tab-body' });
  const events = h('section', { class: 'panel events-panel', hidden: true });

  replace(
    main,
    h(
      'div',
      { class: 'page-head' },
      h(
        'div',
        null,
        h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: href.overview() }, 'Queues'), h('span', { 'aria-hidden': 'true' }, '/')),
        h('div', { class: 'title-row' }, h('h1', null, name), badges),
        due,
        limitsEl,
      ),
      actions,
    ),
    counts,
    // On a phone the list comes first and the charts after it (CSS order).
    h(
      'div',
      { class: 'queue-body' },
      h('div', { class: 'charts-3 queue-charts' }, timeline, history),
      h('div', { class: 'queue-list-part' }, h('div', { class: 'tabs-row' }, tabs, searchBox), body),
    ),
    events,
  );

  function renderHead() {
    if (!stats) return;
    replace(badges, ...queueBadges(stats, { name, schedules }));
    replace(due, icon('clock'), dueLine(stats));
    if (limits) {
      limitsEl.hidden = false;
      replace(limitsEl, ...limitsLine(name, limits, reloadAll, rate));
    }
    replace(counts, ...countCards(name, stats));
    renderTabs();
    if (session.canWrite) {
      replace(
        actions,
        stats.paused
          ? button('Resume', () => act(() => api.resume(name), `Resumed ${name}: workers claim again.`).then(refreshStats), { icon: 'play', tone: 'primary' })
          : button('Pause', () => act(() => api.pause(name), `Paused ${name}: workers stop claiming.`).then(refreshStats), { icon: 'pause' }),
        button('Drain…', drain, {
          icon: 'trash',
          tone: 'danger',
          disabled: stats.scheduled === 0 || stats.scheduled > session.maxBulk,
          title:
            stats.scheduled === 0
              ? 'Nothing is scheduled'
              : stats.scheduled > session.maxBulk
                ? `More than ${num(session.maxBulk)} jobs are scheduled: drain from the CLI (delayq drain)`
                : 'Remove every scheduled job',
        }),
      );
    }
  }

  function renderTabs() {
    const scrolled = tabs.scrollLeft;
    replace(
      tabs,
      ...Object.keys(TAB_LABELS)
        .filter((tab) => tab !== 'shards' || shards.count > 1 || shards.draining > 0 || current.tab === 'shards')
        .map((tab) => {
          const n = tab === 'shards' ? shards.count : tabCount(tab, stats);
          const on = current.tab === tab;
          return h(
            'a',
            { href: href.queue(name, tab), class: ['tab', on && 'tab-on', tab === 'schedules' && 'tab-gap'], 'aria-current': on ? 'page' : undefined },
            TAB_LABELS[tab],
            n === undefined || tab === 'schedules' ? null : h('span', { class: ['tab-count', tab === 'dead' && n > 0 && 'tab-count-dead'] }, num(n)),
          );
        }),
      current.tab === 'search' ? h('span', { class: 'tab tab-on', 'aria-current': 'page' }, 'Search results') : null,
    );
    // On a phone the strip scrolls: keep the current tab in sight (without scrolling the page).
    const on = tabs.querySelector('.tab-on');
    tabs.scrollLeft = on && (on.offsetLeft < scrolled || on.offsetLeft + on.offsetWidth > scrolled + tabs.clientWidth) ? on.offsetLeft - 12 : scrolled;
  }

  async function drain() {
    const n = stats.scheduled;
    const ok = await confirmAction(
      `Drain ${name}?`,
      `This removes all ${plural(n, 'scheduled job')}${stats.ready ? ` (${num(stats.ready)} of them due now)` : ''}. Active, dead and completed jobs stay. It cannot be undone.`,
      `Remove ${plural(n, 'job')}`,
    );
    if (ok)
      await act(
        () => api.drain(name, n),
        (r) => `Removed ${plural(r.count, 'scheduled job')}.`,
      );
    refreshStats();
  }

  async function refreshStats() {
    try {
      const detail = await api.queue(name);
      if (stopped) return;
      stats = detail.stats;
      // An older server's detail has no limits: the line stays hidden.
      limits = detail.limits;
      rate = detail.rate;
      const sharded = { count: detail.shards, draining: detail.drainingShards };
      if (sharded.count !== shards.count || sharded.draining !== shards.draining) {
        shards = sharded;
        renderTabs();
      }
      renderHead();
      replace(history, ...historyCharts(detail.history, { since: detail.historySince }));
    } catch (err) {
      if (stopped || stats) return;
      if (err.status === 404) {
        // No such queue: say so, with nothing to act on.
        gone = true;
        document.title = `No such queue · delayq`;
        replace(
          main,
          h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: href.overview() }, 'Queues'), h('span', { 'aria-hidden': 'true' }, '/')),
          h('h1', { class: 'sr-only' }, 'No such queue'),
          emptyState('No such queue', `There is no queue named “${name}”: nothing was ever added to it, or it was obliterated.`, 'search'),
          h('p', { class: 'center' }, h('a', { href: href.overview() }, 'Back to all queues')),
        );
        return;
      }
      replace(counts, errorNote(err, 'Could not load the queue'));
    }
  }

  async function refreshSchedules() {
    try {
      const list = await api.schedules(name);
      if (stopped) return;
      schedules = list;
      renderHead();
    } catch {
      // The badge waits for the next refresh.
    }
  }

  async function refreshTimeline() {
    try {
      const t = await loadTimeline(name);
      if (stopped) return;
      const total = t.counts.reduce((a, b) => a + b, 0);
      replace(
        timeline,
        panelHead('Upcoming', `${plural(total, 'job')} due in the next hour${t.estimated ? ' (est.)' : ''}`),
        barChart(t.counts, {
          label: 'Scheduled jobs falling due per minute, next hour',
          tone: 'scheduled',
          ticks: ['now', '+15 min', '+30 min', '+45 min', '+60 min'],
          format: (v) => `${num(v)}/min`,
          tooltip: (i, v) => `${clock(t.fromMs + i * t.bucketMs)}: ${plural(v, 'job')} due`,
        }),
      );
    } catch (err) {
      if (!stopped) replace(timeline, panelHead('Upcoming', ''), errorNote(err, 'The timeline is not available'));
    }
  }

  // ---- the tab body ----

  function openTab(r) {
    current = r;
    renderTabs();
    const error = r.params?.get('error') || undefined;
    view = {
      tab: r.tab,
      cursor: undefined,
      pages: [],
      selected: new Set(),
      lastCount: tabCount(r.tab, stats),
      order: orders[r.tab] ?? defaultOrder(r.tab),
      error: (r.tab === 'dead' || r.tab === 'completed') && error ? error : undefined,
    };
    // The form names what it searches on this tab (the error text of dead or completed jobs).
    const fresh = searchForm(name, view.error || r.page === 'search' ? r.params : undefined, r.tab);
    searchBox.replaceWith(fresh);
    searchBox = fresh;
    if (view.error) return loadFiltered(r.tab);
    if (r.page === 'search') return loadSearch(r.params, undefined);
    if (r.tab === 'schedules') return loadSchedules();
    if (r.tab === 'groups') return loadGroups();
    if (r.tab === 'workers') return loadWorkers();
    if (r.tab === 'shards') return loadShards();
    return loadList(r.tab);
  }

  /**
   * What every tab body shares: a spinner (unless a quiet live reload), the answer dropped when
   * the person moved on meanwhile, the live reload for this view, and an error note.
   */
  async function fill(v, { quiet = false, spinner, load, reload, render, failure }) {
    if (!quiet) replace(body, loading(spinner));
    try {
      const data = await load();
      if (stopped || v !== view) return;
      if (reload) v.reload = reload;
      replace(body, render(data));
    } catch (err) {
      if (!stopped && v === view) replace(body, errorNote(err, failure));
    }
  }

  function loadList(state, quiet = false) {
    const v = view;
    return fill(v, {
      quiet,
      load: () => api.jobs(name, state, { limit: PAGE_SIZE, cursor: v.cursor, order: v.order }),
      reload: () => loadList(state, true),
      render: (page) => {
        v.lastCount = page.total;
        // Drop selections that left the page (retried, purged, moved on).
        const ids = new Set(page.jobs.map((j) => j.id));
        for (const id of v.selected) if (!ids.has(id)) v.selected.delete(id);
        return listView(state, page, v);
      },
      failure: `Could not load the ${state} jobs`,
    });
  }

  function listView(state, page, v) {
    const bulkSet = state === 'dead' || state === 'completed' ? state : undefined;
    const selectable = session.canWrite && bulkSet !== undefined;
    if (page.jobs.length === 0 && v.pages.length === 0) return emptyState(...EMPTY[state]);
    const toolbar = selectable ? bulkToolbar(bulkSet, page, v) : null;
    const toggle = orderToggle(state, v);
    const table = jobTable(name, state, page.jobs, {
      selectable,
      selected: v.selected,
      onSelect: () => replace(toolbarSlot, selectable ? bulkToolbar(bulkSet, page, v) : ''),
      rowActions: session.canWrite ? (job) => rowActions(state, job) : undefined,
    });
    const toolbarSlot = h('div', null, toolbar);
    const first = v.pages.length * PAGE_SIZE + 1;
    const pager = h(
      'div',
      { class: 'pager' },
      h('span', { class: 'muted' }, `${num(first)}–${num(first + page.jobs.length - 1)} of ${num(page.total)}`),
      pagerButtons(v, page.cursor, () => loadList(v.tab)),
    );
    return h('div', { class: 'list' }, h('div', { class: 'list-head' }, toggle, toolbarSlot), table, pager);
  }

  /** Newest first or oldest first, for the states where that reads naturally; a change starts from the first page. */
  function orderToggle(state, v) {
    const [descLabel, ascLabel] =
      state === 'dead' || state === 'completed'
        ? ['Newest first', 'Oldest first']
        : state === 'scheduled'
          ? ['Latest first', 'Soonest first']
          : state === 'ready'
            ? ['Back of the line first', 'Next to run first']
            : ['Lease ends latest first', 'Lease ends soonest first'];
    const pick = (order) => {
      if (v.order === order) return;
      orders[state] = order;
      v.order = order;
      v.pages = [];
      v.cursor = undefined;
      v.selected.clear();
      (v.error ? loadFiltered(state) : loadList(state)).then(() => body.querySelector(`.seg [aria-pressed="true"]`)?.focus());
    };
    return h(
      'div',
      { class: 'seg', role: 'group', 'aria-label': 'Order' },
      h('button', { type: 'button', class: 'seg-btn', 'aria-pressed': String(v.order === 'desc'), onclick: () => pick('desc') }, descLabel),
      h('button', { type: 'button', class: 'seg-btn', 'aria-pressed': String(v.order === 'asc'), onclick: () => pick('asc') }, ascLabel),
    );
  }

  /** First, previous and next page: the cursors of the pages before are kept, so paging goes both ways. */
  function pagerButtons(v, next, reload) {
    const go = (cursor, pages) => {
      v.selected.clear();
      v.pages = pages;
      v.cursor = cursor;
      reload().then(() => body.querySelector('table')?.focus());
    };
    return h(
      'div',
      { class: 'pager-buttons' },
      button('First page', () => go(undefined, []), { disabled: v.pages.length === 0, small: true, icon: 'back' }),
      button('Previous page', () => go(v.pages.at(-1), v.pages.slice(0, -1)), { disabled: v.pages.length === 0, small: true }),
      button('Next page', () => go(next, [...v.pages, v.cursor]), { disabled: !next, small: true }),
    );
  }

  /**
   * Reads on with the cursor until `enough(found)` or SEARCH_TIME_MS passed, showing how far it
   * got; `call(cursor)` is one request, answering { jobs, scanned, total, cursor }.
   */
  async function readOn(v, call, cursor, progress) {
    const started = Date.now();
    const found = { jobs: [], scanned: 0, total: 0, cursor };
    do {
      const answer = await call(found.cursor);
      if (stopped || v !== view) return undefined;
      found.jobs.push(...answer.jobs);
      found.scanned += answer.scanned ?? answer.jobs.length;
      found.total = answer.total;
      found.cursor = answer.cursor;
      progress(found);
    } while (found.cursor && found.jobs.length < PAGE_SIZE && Date.now() - started < SEARCH_TIME_MS);
    return found;
  }

  /** Progress of a search that reads on: "searched 40,000 of 1,200,000". */
  function searching(found) {
    return h(
      'div',
      { class: 'loading', role: 'status' },
      h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      `Searching… searched ${num(found.scanned)} of ${num(found.total)} · ${plural(found.jobs.length, 'match', 'matches')} so far`,
    );
  }

  /** Dead or completed jobs whose last error contains the text, with bulk actions on exactly those. */
  function loadFiltered(state, quiet = false) {
    const v = view;
    const text = v.error;
    return fill(v, {
      quiet,
      load: async () => {
        const found = await readOn(
          v,
          (cursor) => api.jobs(name, state, { limit: PAGE_SIZE, cursor, order: v.order, errorContains: text, budget: FILTER_BUDGET }),
          v.cursor,
          (f) => {
            if (v === view && !quiet) replace(body, searching(f));
          },
        );
        if (!found) throw new Error('left');
        const count = session.canWrite && found.jobs.length ? await api.count(name, state, text).catch(() => undefined) : undefined;
        return { found, count };
      },
      reload: () => loadFiltered(state, true),
      render: ({ found, count }) => {
        v.lastCount = found.total;
        const what = `whose last error contains “${text}”`;
        const note = h(
          'p',
          { class: 'search-note' },
          `${state === 'dead' ? 'Dead' : 'Completed'} jobs ${what} · looked through ${num(found.scanned)} of ${num(found.total)}`,
          found.cursor ? ' (more to look through: next page)' : '',
          ' · ',
          h('a', { href: href.queue(name, state) }, 'clear the filter'),
        );
        const bulk = count && session.canWrite ? filterBulkbar(state, text, count) : null;
        const pager = h(
          'div',
          { class: 'pager' },
          h('span', { class: 'muted' }, plural(found.jobs.length, 'match', 'matches')),
          pagerButtons(v, found.cursor, () => loadFiltered(state)),
        );
        return h(
          'div',
          { class: 'list' },
          h('div', { class: 'list-head' }, orderToggle(state, v), bulk),
          note,
          found.jobs.length
            ? jobTable(name, state, found.jobs, { rowActions: session.canWrite ? (job) => rowActions(state, job) : undefined })
            : emptyState(
                'No matches',
                found.cursor ? 'Nothing matched in what was read so far; look further with "Next page".' : `No ${state} job ${what}.`,
                'search',
              ),
          pager,
        );
      },
      failure: 'The filter failed',
    });
  }

  /** "Retry all 212 whose error contains ETIMEDOUT": the count the server gave, confirmed with expect. */
  function filterBulkbar(set, text, count) {
    const verbs = set === 'dead' ? ['retry', 'purge'] : ['purge'];
    const run = async (verb) => {
      const ok = await confirmAction(
        `${verb === 'retry' ? 'Retry' : 'Purge'} ${plural(count.count, set === 'dead' ? 'dead job' : 'completed job')} whose error contains “${text}”?`,
        verb === 'retry'
          ? `${plural(count.count, 'job')} go back to the queue, due now, with fresh attempts. If more match by the time it runs, nothing is done.`
          : `${plural(count.count, 'job')} and their history are deleted for good. If more match by the time it runs, nothing is done.`,
        `${verb === 'retry' ? 'Retry' : 'Purge'} ${plural(count.count, 'job')}`,
        verb === 'retry' ? 'primary' : 'danger',
      );
      if (!ok) return;
      await act(
        () => api.bulk(name, set, verb, { errorContains: text, expect: count.count }),
        (r) => `${verb === 'retry' ? 'Retried' : 'Purged'} ${plural(r.count, 'job')}.`,
      );
      reloadAll();
    };
    const over = count.more;
    const note = over ? `more than ${num(session.maxBulk)} match: over the dashboard's bulk limit (use the CLI)` : '';
    return h(
      'div',
      { class: 'bulkbar', role: 'toolbar', 'aria-label': 'Bulk actions on the matches' },
      h('span', { class: 'bulkbar-count' }, over ? `More than ${num(session.maxBulk)} match` : `${plural(count.count, 'job')} match in all`),
      h(
        'div',
        { class: 'bulkbar-buttons' },
        ...verbs.map((verb) =>
          button(`${verb === 'retry' ? 'Retry' : 'Purge'} all ${num(count.count)} whose error contains “${text}”`, () => run(verb), {
            small: true,
            disabled: over || count.count === 0,
            title: note || undefined,
            tone: verb === 'purge' ? 'danger' : 'primary',
            icon: verb === 'retry' ? 'retry' : 'trash',
          }),
        ),
      ),
      over ? h('p', { class: 'bulkbar-note' }, icon('alert'), note) : null,
    );
  }

  function rowActions(state, job) {
    if (state === 'dead') {
      return [
        button('Retry', () => act(() => api.retry(name, job.id), `Retrying ${job.id}.`).then(reloadAll), {
          small: true,
          compact: true,
          icon: 'retry',
          ariaLabel: `Retry ${job.id}`,
        }),
        button('Purge', () => purgeOne(job), { small: true, compact: true, tone: 'danger-ghost', icon: 'trash', ariaLabel: `Purge ${job.id}` }),
      ];
    }
    if (state === 'completed')
      return [button('Purge', () => purgeOne(job), { small: true, compact: true, tone: 'danger-ghost', icon: 'trash', ariaLabel: `Purge ${job.id}` })];
    if (state === 'scheduled' || state === 'ready') {
      return [
        button('Run now', () => act(() => api.promote(name, job.id), `${job.id} is due now.`).then(reloadAll), {
          small: true,
          compact: true,
          icon: 'bolt',
          ariaLabel: `Run ${job.id} now`,
          disabled: state === 'ready',
          title: state === 'ready' ? 'Already due' : undefined,
        }),
      ];
    }
    return [];
  }

  async function purgeOne(job) {
    if (!(await confirmAction(`Purge ${job.id}?`, 'The job and its history are deleted for good.', 'Purge 1 job'))) return;
    await act(() => api.remove(name, job.id), `Purged ${job.id}.`);
    reloadAll();
  }

  /** Retry/purge the selected rows, or all of the set; with the bulk cap stated when it bites. */
  function bulkToolbar(set, page, v) {
    const n = v.selected.size;
    const over = page.total > session.maxBulk;
    const allNote = over
      ? `${num(page.total)} jobs is over the dashboard's bulk limit of ${num(session.maxBulk)}: select a page at a time, or use the CLI`
      : '';
    const verbs = set === 'dead' ? ['retry', 'purge'] : ['purge'];
    const run = async (verb, target, count) => {
      const what = set === 'dead' ? 'dead job' : 'completed job';
      const ok = await confirmAction(
        `${verb === 'retry' ? 'Retry' : 'Purge'} ${plural(count, what)}?`,
        verb === 'retry'
          ? `${plural(count, 'job')} go back to the queue, due now, with fresh attempts.`
          : `${plural(count, 'job')} and ${count === 1 ? 'its' : 'their'} history are deleted for good.`,
        `${verb === 'retry' ? 'Retry' : 'Purge'} ${plural(count, 'job')}`,
        verb === 'retry' ? 'primary' : 'danger',
      );
      if (!ok) return;
      await act(
        () => api.bulk(name, set, verb, target),
        (r) => `${verb === 'retry' ? 'Retried' : 'Purged'} ${plural(r.count, 'job')}.`,
      );
      v.selected.clear();
      reloadAll();
    };
    return h(
      'div',
      { class: 'bulkbar', role: 'toolbar', 'aria-label': 'Bulk actions' },
      h('span', { class: 'bulkbar-count' }, n ? `${num(n)} selected` : 'Select jobs to act on several at once'),
      h(
        'div',
        { class: 'bulkbar-buttons' },
        ...verbs.map((verb) =>
          button(`${verb === 'retry' ? 'Retry' : 'Purge'} selected`, () => run(verb, { ids: [...v.selected] }, n), {
            small: true,
            disabled: n === 0,
            tone: verb === 'purge' ? 'danger-ghost' : undefined,
            icon: verb === 'retry' ? 'retry' : 'trash',
          }),
        ),
        ...verbs.map((verb) =>
          button(`${verb === 'retry' ? 'Retry' : 'Purge'} all (${num(page.total)})`, () => run(verb, { all: true, expect: page.total }, page.total), {
            small: true,
            disabled: over || page.total === 0,
            title: allNote || undefined,
            tone: verb === 'purge' ? 'danger' : 'primary',
          }),
        ),
      ),
      over ? h('p', { class: 'bulkbar-note' }, icon('alert'), allNote) : null,
    );
  }

  function loadSearch(params, cursor) {
    const v = view;
    const query = Object.fromEntries(params.entries());
    const what = query.path ? `${query.path} = ${query.equals ?? ''}` : query.text ? `“${query.text}”` : `jobs named “${query.name ?? ''}”`;
    if (cursor !== undefined) v.cursor = cursor;
    return fill(v, {
      spinner: 'Searching…',
      load: async () => {
        const found = await readOn(
          v,
          (c) => api.search(name, { ...query, limit: PAGE_SIZE, cursor: c, budget: SEARCH_BUDGET }),
          v.cursor,
          (f) => {
            if (v === view) replace(body, searching(f));
          },
        );
        if (!found) throw new Error('left');
        return found;
      },
      render: (found) =>
        h(
          'div',
          { class: 'list' },
          h(
            'p',
            { class: 'search-note' },
            `Jobs matching ${what} · searched ${num(found.scanned)} of ${num(found.total)} jobs${found.cursor ? ' (more to search: next page)' : ''}`,
          ),
          found.jobs.length
            ? jobTable(name, 'search', found.jobs, {})
            : emptyState(
                'No matches',
                found.cursor
                  ? `Nothing matched in ${Math.round(SEARCH_TIME_MS / 1000)} s of searching; look further with "Next page".`
                  : session.redacted
                    ? 'Payloads are redacted: the search matches ids only.'
                    : 'Try part of an id, a word from the payload, or a field and its value. Search the error text from the Dead tab.',
                'search',
              ),
          h(
            'div',
            { class: 'pager' },
            h('span', { class: 'muted' }, plural(found.jobs.length, 'match', 'matches')),
            pagerButtons(v, found.cursor, () => loadSearch(params)),
          ),
        ),
      failure: 'The search failed',
    });
  }

  function loadSchedules(quiet = false) {
    const remove = async (sched) => {
      if (!(await confirmAction(`Remove the schedule ${sched.name}?`, 'No more jobs are enqueued for it; jobs it already enqueued stay.', 'Remove schedule')))
        return;
      await act(() => api.removeSchedule(name, sched.name), `Removed the schedule ${sched.name}.`);
      loadSchedules(true);
    };
    return fill(view, {
      quiet,
      load: () => api.schedules(name),
      reload: () => loadSchedules(true),
      render: (list) => {
        schedules = list;
        renderHead();
        return list.length
          ? schedulesTable(list, session.canWrite ? remove : undefined)
          : emptyState(
              'No schedules',
              'Recurring jobs appear here once stored with queue.schedules.upsert(name, { cron }) and run by a Scheduler.',
              'calendar',
            );
      },
      failure: 'Could not load the schedules',
    });
  }

  /** A page of the groups, with first / previous / next (the server's sealed cursors kept per page). */
  function loadGroups(quiet = false) {
    const v = view;
    return fill(v, {
      quiet,
      load: () => api.groups(name, { limit: PAGE_SIZE, cursor: v.cursor }),
      reload: () => loadGroups(true),
      render: (page) => {
        if (page.groups.length === 0 && v.pages.length === 0) {
          return emptyState(
            'No groups',
            'A group shows here while its jobs run or wait for a slot (add them with { group }), and while it has a limit of its own or is paused.',
            'list',
          );
        }
        const table = groupsTable(page.groups, {
          limits,
          rowActions: session.canWrite ? (g) => groupActions(name, g, limits ?? {}, reloadAll) : undefined,
        });
        return h(
          'div',
          { class: 'list' },
          table,
          h(
            'div',
            { class: 'pager' },
            h('span', { class: 'muted' }, `${plural(page.groups.length, 'group')} on this page${page.cursor ? ' · more on the next' : ''}`),
            pagerButtons(v, page.cursor, () => loadGroups()),
          ),
        );
      },
      failure: 'Could not load the groups',
    });
  }

  function loadWorkers(quiet = false) {
    return fill(view, {
      quiet,
      load: () => api.workers(name),
      reload: () => loadWorkers(true),
      render: (list) =>
        list.length
          ? workersTable(list)
          : emptyState(
              'No live workers',
              stats?.ready
                ? `${plural(stats.ready, 'job')} ${stats.ready === 1 ? 'is' : 'are'} due and nobody is taking them. Start a Worker on this queue.`
                : 'Workers appear here while their heartbeat is live (every 10 s).',
              'cpu',
            ),
      failure: 'Could not load the workers',
    });
  }

  function loadShards(quiet = false) {
    return fill(view, {
      quiet,
      load: () => api.shards(name),
      reload: () => loadShards(true),
      render: (list) =>
        h(
          'div',
          null,
          shardsTable(list),
          h(
            'p',
            { class: 'muted small table-note' },
            shards.draining > 0
              ? 'Draining shards take no new jobs; they leave the layout once they hold none (retry or purge their dead jobs). Reshard with queue.reshard(n) or delayq shards --set n.'
              : 'Jobs go to a shard by a hash of their id (or dedup key). Reshard with queue.reshard(n) or delayq shards --set n.',
          ),
        ),
      failure: 'Could not load the shards',
    });
  }

  function reloadAll() {
    refreshStats();
    view?.reload?.();
  }

  // ---- live ----

  const offStats = live.on('stats', (data) => {
    const q = data.queues.find((x) => x.name === name);
    if (stopped || data.error || !q) return;
    stats = q.stats;
    renderHead();
    // A list on its first page, with nothing selected, follows the counts; a person paging
    // or picking rows is not pulled from under.
    const n = tabCount(view?.tab, stats);
    const quietTab = view && (STATES.includes(view.tab) || view.tab === 'groups' || view.tab === 'workers' || view.tab === 'shards');
    const followsEveryTick = view?.tab === 'active' || view?.tab === 'groups' || view?.tab === 'workers' || view?.tab === 'shards';
    if (quietTab && view.pages.length === 0 && view.selected.size === 0 && (n !== view.lastCount || followsEveryTick)) {
      view.lastCount = n;
      view.reload?.();
    }
    if (q.stats.eventStreamLength === undefined) events.hidden = true;
  });

  const recent = [];
  const offEvents = live.on('events', (data) => {
    if (stopped) return;
    recent.unshift(...data.events.reverse());
    recent.length = Math.min(recent.length, 12);
    events.hidden = false;
    replace(
      events,
      panelHead('Live events', data.dropped ? `${num(data.dropped)} more not shown` : 'newest first'),
      h(
        'ol',
        { class: 'events' },
        ...recent.map((e) =>
          h(
            'li',
            null,
            h('span', { class: ['chip', `chip-event-${e.event}`] }, e.event),
            e.id ? h('a', { href: href.job(name, e.id), class: 'mono' }, e.id) : h('span', { class: 'muted' }, 'queue'),
            h('span', { class: 'muted event-time' }, clock(Number(e.cursor.split('-')[0]))),
          ),
        ),
      ),
    );
  });

  const slow = setInterval(() => {
    if (gone) return;
    refreshTimeline();
    refreshStats();
    refreshSchedules();
  }, SLOW_REFRESH_MS);

  refreshStats().then(() => {
    if (gone) return;
    openTab(route);
    refreshTimeline();
    refreshSchedules();
  });

  return {
    update(r) {
      if (r.queue !== name || gone) return false;
      openTab(r);
      return true;
    },
    cleanup() {
      stopped = true;
      offStats();
      offEvents();
      clearInterval(slow);
    },
  };
}

const EMPTY = {
  scheduled: ['Nothing upcoming', 'Jobs added with a delay or a runAt wait here until they fall due.', 'clock'],
  ready: ['Nothing waiting', 'No job is past its due time: the workers are keeping up.', 'bolt'],
  active: ['Nothing running', 'Jobs show here while a worker holds their lease.', 'cpu'],
  dead: ['No dead jobs', 'Jobs that run out of attempts land here with their errors, to retry or purge.', 'alert'],
  completed: [
    'No completed jobs kept',
    'Completed jobs are deleted at once unless the queue keeps them: queue.setRetention({ completed: { count: 1000 } }).',
    'list',
  ],
};

function panelHead(title, sub) {
  return h('header', { class: 'panel-head' }, h('h3', null, title), h('span', { class: 'panel-sub' }, sub));
}

/**
 * The next hour by minute. The timeline route may be missing on older servers; then the
 * buckets are counted here from the scheduled list (its first 1,000 jobs, in due order).
 */
async function loadTimeline(name) {
  try {
    return await api.timeline(name);
  } catch (err) {
    if (err.status !== 500 && err.status !== 404) throw err;
  }
  const bucketMs = 60_000;
  const fromMs = Math.floor(serverNow() / bucketMs) * bucketMs;
  const counts = new Array(60).fill(0);
  const page = await api.jobs(name, 'scheduled', { limit: 1000 });
  for (const j of page.jobs) {
    const i = Math.floor((j.dueAtMs - fromMs) / bucketMs);
    if (i >= 0 && i < 60) counts[i]++;
  }
  return { fromMs, bucketMs, counts, estimated: true };
}

/**
 * Search by id or payload text, by a field's value, or (dead and completed jobs) by the text of
 * their last error; submitting navigates (a real URL). With payloads redacted the server matches
 * ids only and refuses a field search, so the form offers neither; the error text is never
 * redacted, so it may be searched.
 */
function searchForm(name, params, tab) {
  const initial = params?.get('path') ? 'path' : params?.get('error') ? 'error' : params?.get('name') && !params?.get('text') ? 'name' : 'text';
  const mode = h(
    'select',
    { name: 'mode', 'aria-label': 'Search by' },
    h('option', { value: 'text', selected: initial === 'text' }, session.redacted ? 'Id' : 'Id or text'),
    h('option', { value: 'name', selected: initial === 'name' }, 'Job name'),
    h('option', { value: 'error', selected: initial === 'error' }, 'Error text'),
    session.redacted ? null : h('option', { value: 'path', selected: initial === 'path' }, 'Field ='),
  );
  const placeholders = {
    text: session.redacted ? 'Search id…' : 'Search id or payload…',
    error: tab === 'completed' ? 'Last error of completed jobs contains…' : 'Last error of dead jobs contains…',
    name: 'Job name (exactly)…',
  };
  const labels = { error: 'Error text', name: 'Job name', text: session.redacted ? 'Id' : 'Id or payload text' };
  const text = h('input', {
    type: 'search',
    name: 'text',
    placeholder: placeholders[initial === 'path' ? 'text' : initial],
    'aria-label': labels[initial === 'path' ? 'text' : initial],
    value: params?.get(initial === 'path' ? 'text' : initial) ?? '',
    hidden: initial === 'path',
  });
  const path = h('input', {
    type: 'text',
    name: 'path',
    placeholder: 'customer.email',
    'aria-label': 'Field path',
    value: params?.get('path') ?? '',
    hidden: initial !== 'path',
  });
  const equals = h('input', {
    type: 'text',
    name: 'equals',
    placeholder: 'value (JSON or word)',
    'aria-label': 'Field value',
    value: params?.get('equals') ?? '',
    hidden: initial !== 'path',
  });
  mode.addEventListener('change', () => {
    const p = mode.value === 'path';
    text.hidden = p;
    path.hidden = !p;
    equals.hidden = !p;
    if (!p) {
      text.placeholder = placeholders[mode.value];
      text.setAttribute('aria-label', labels[mode.value]);
    }
    (p ? path : text).focus();
  });
  const form = h(
    'form',
    { class: 'search', role: 'search' },
    mode,
    text,
    path,
    equals,
    h('button', { type: 'submit', class: 'btn btn-small', 'aria-label': 'Search' }, icon('search'), h('span', { class: 'hide-sm' }, 'Search')),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (mode.value === 'error') {
      const t = text.value.trim();
      if (t) go(href.queue(name, tab === 'completed' ? 'completed' : 'dead', { error: t }));
      return;
    }
    if (mode.value === 'name') {
      const n = text.value.trim();
      if (n) go(href.search(name, { name: n }));
      return;
    }
    const p = mode.value === 'path' ? { path: path.value.trim(), equals: equals.value } : { text: text.value.trim() };
    if (mode.value === 'path' ? !p.path : !p.text) return;
    go(href.search(name, p));
  });
  return form;
}
