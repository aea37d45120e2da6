/**
 * The overview: one compact row per queue, the queue in trouble first. A queue is in trouble,
 * most first, when:
 *   1. jobs are due and no worker is alive to take them (stranded);
 *   2. its oldest due job has waited longest (lag), whatever holds it (the cell's title says what);
 *   3. more of its jobs went dead in the last hour;
 *   4. more jobs are dead;
 * and queues alike in all of that go by name. Any column sorts the table instead (click it
 * again for the other way). Counts follow the live stream; the last hour of every queue (for
 * "failed, 1 h") comes in one request on load and every 30 s. A queue's page has its cards and
 * charts.
 */
import { api } from './api.js';
import { h, icon, replace } from './dom.js';
import { clock, duration, num, plural, serverNow } from './format.js';
import * as live from './live.js';
import { href } from './router.js';
import { badge, emptyState, errorNote, loading } from './ui.js';
import { heldPhrases, stranded } from './widgets.js';

const HISTORY_EVERY_MS = 30_000;
const HOUR_MS = 3_600_000;

/** The sort the table keeps while the page is left and come back to (this tab only). */
let sorting = { key: 'trouble', desc: true };

/** The trouble of a queue as a tuple, compared left to right, larger first (see the top of this file). */
function trouble(row) {
  return [stranded(row.stats) ? 1 : 0, row.stats.oldestDueAgeMs ?? 0, row.died ?? 0, row.stats.dead];
}

const COLUMNS = [
  { key: 'name', label: 'Queue', cls: 'col-id', value: (r) => r.name },
  { key: 'due', label: 'Due now', cls: 'col-num', value: (r) => r.stats.ready },
  { key: 'wait', label: 'Oldest wait', cls: 'col-num hide-sm', value: (r) => r.stats.oldestDueAgeMs ?? -1 },
  { key: 'running', label: 'Running', cls: 'col-num hide-sm', value: (r) => r.stats.active },
  { key: 'failed', label: 'Failed, 1 h', cls: 'col-num', value: (r) => r.died ?? -1 },
  { key: 'dead', label: 'Dead', cls: 'col-num', value: (r) => r.stats.dead },
  { key: 'workers', label: 'Workers', cls: 'col-num hide-sm', value: (r) => r.stats.workers },
  // Held: waiting for other jobs or a signal (docs/flows.md).
  { key: 'held', label: 'Held', cls: 'col-num hide-sm', value: (r) => r.stats.heldJobs ?? 0 },
  { key: 'paused', label: 'Paused', cls: 'col-state hide-sm', value: (r) => (r.stats.paused ? 1 : 0) },
];

function compare(a, b) {
  if (sorting.key === 'trouble') {
    const ta = trouble(a);
    const tb = trouble(b);
    for (let i = 0; i < ta.length; i++) if (ta[i] !== tb[i]) return tb[i] - ta[i];
    return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
  }
  const col = COLUMNS.find((c) => c.key === sorting.key);
  const va = col.value(a);
  const vb = col.value(b);
  const d = typeof va === 'string' ? va.localeCompare(vb) : va - vb;
  return (sorting.desc ? -d : d) || (a.name < b.name ? -1 : 1);
}

export function overviewPage(main) {
  document.title = 'Queues · delayq';
  const summary = h('p', { class: 'page-sub' }, '');
  const sortNote = h('p', { class: 'muted small table-note' });
  const list = h('div', { class: 'queue-list' }, loading());
  replace(main, h('div', { class: 'page-head' }, h('div', null, h('h1', null, 'Queues'), summary)), list, sortNote);

  let queues = [];
  /** name → { since, completed, died } from the last history answer */
  let hours = new Map();
  let stopped = false;

  function rows() {
    return queues.map((q) => ({ name: q.name, stats: q.stats, ...hours.get(q.name) })).sort(compare);
  }

  function render() {
    const total = queues.reduce(
      (a, q) => ({ due: a.due + q.stats.ready, dead: a.dead + q.stats.dead, workers: a.workers + q.stats.workers, held: a.held + (q.stats.heldJobs ?? 0) }),
      { due: 0, dead: 0, workers: 0, held: 0 },
    );
    const stuck = queues.filter((q) => stranded(q.stats)).length;
    replace(
      summary,
      `${plural(queues.length, 'queue')} · ${plural(total.workers, 'live worker')} · ${num(total.due)} due now · ${num(total.dead)} dead${total.held ? ` · ${num(total.held)} held` : ''}`,
      stuck ? h('span', { class: 'summary-alert' }, ` · ${plural(stuck, 'queue')} with due jobs and no live worker`) : null,
    );
    if (queues.length === 0) {
      replace(list, emptyState('No queues yet', 'A queue shows up here once a job is added to it (queue.add) or a worker starts on it.', 'list'));
      replace(sortNote, '');
      return;
    }
    replace(list, table(rows()));
    // The samples start with the dashboard: say since when "1 h" counts, when it is less.
    const since = Math.max(0, ...[...hours.values()].map((x) => x.since ?? 0));
    const partial = since > serverNow() - HOUR_MS + 60_000;
    replace(
      sortNote,
      sorting.key === 'trouble'
        ? 'Sorted by trouble: due jobs with no live worker first, then the longest wait, then the most failures in the last hour, then the most dead. '
        : '',
      partial ? `Failures are counted since ${clock(since)}: the store keeps no history before that.` : 'Failures: jobs that went dead in the last hour.',
    );
  }

  function table(sorted) {
    const head = COLUMNS.map((c) => {
      const on = sorting.key === c.key;
      const sortBtn = h(
        'button',
        {
          type: 'button',
          class: 'th-sort',
          onclick: () => {
            sorting = on ? { key: c.key, desc: !sorting.desc } : { key: c.key, desc: c.key !== 'name' };
            render();
          },
        },
        c.label,
        on ? icon(sorting.desc ? 'down' : 'up') : null,
      );
      return h('th', { scope: 'col', class: c.cls, 'aria-sort': on ? (sorting.desc ? 'descending' : 'ascending') : undefined }, sortBtn);
    });
    const trouble = h(
      'th',
      { scope: 'col', class: 'col-trouble', 'aria-sort': sorting.key === 'trouble' ? 'descending' : undefined },
      h(
        'button',
        {
          type: 'button',
          class: 'th-sort',
          title: 'Sort by trouble',
          'aria-label': 'Sort by trouble',
          onclick: () => {
            sorting = { key: 'trouble', desc: true };
            render();
          },
        },
        icon('alert'),
      ),
    );
    const body = sorted.map((r) => {
      const s = r.stats;
      const alert = stranded(s);
      const hourTitle = r.since && r.since > serverNow() - HOUR_MS + 60_000 ? `since ${clock(r.since)}` : 'in the last hour';
      return h(
        'tr',
        { class: alert ? 'row-alert' : undefined, 'data-queue': r.name },
        h('td', { class: 'col-trouble' }, alert ? h('span', { class: 'trouble-dot', title: 'Due jobs and no live worker' }, icon('alert')) : null),
        h(
          'td',
          { class: 'col-id' },
          h('a', { href: href.queue(r.name), class: 'mono id-link' }, r.name),
          alert ? h('span', { class: 'sr-only' }, ' (due jobs, no live worker)') : null,
          // On a phone the columns after the dead count are hidden: their figures, as a line here.
          h(
            'span',
            { class: 'show-sm muted small', 'aria-hidden': 'true' },
            [
              s.oldestDueAgeMs === undefined ? null : `oldest wait ${duration(s.oldestDueAgeMs)}`,
              `${num(s.active)} running`,
              s.heldJobs ? `${num(s.heldJobs)} held` : null,
              plural(s.workers, 'worker'),
              s.paused ? 'paused' : null,
            ]
              .filter(Boolean)
              .join(' · '),
          ),
        ),
        h('td', { class: ['col-num', s.ready > 0 && (alert ? 'num-dead' : 'num-ready')] }, num(s.ready)),
        // What holds the due jobs (stats().held), as the cell's title: the row stays one line on a phone.
        h(
          'td',
          { class: 'col-num hide-sm', title: heldPhrases(s.held).length > 0 ? `held: ${heldPhrases(s.held).join(' · ')}` : undefined },
          s.oldestDueAgeMs === undefined ? h('span', { class: 'muted' }, '–') : duration(s.oldestDueAgeMs),
        ),
        h('td', { class: 'col-num hide-sm' }, num(s.active)),
        h(
          'td',
          { class: ['col-num', r.died > 0 && 'num-dead'], title: r.died === undefined ? 'not sampled yet' : `${plural(r.died, 'job')} went dead ${hourTitle}` },
          r.died === undefined ? h('span', { class: 'muted' }, '–') : num(r.died),
        ),
        h('td', { class: ['col-num', s.dead > 0 && 'num-dead'] }, h('a', { href: href.queue(r.name, 'dead'), class: 'num-link' }, num(s.dead))),
        h('td', { class: ['col-num hide-sm', alert && 'num-dead'] }, num(s.workers)),
        h('td', { class: 'col-num hide-sm', title: 'waiting for other jobs or a signal' }, s.heldJobs ? num(s.heldJobs) : h('span', { class: 'muted' }, '0')),
        h('td', { class: 'col-state hide-sm' }, s.paused ? badge('Paused', 'warning', 'pause') : null),
      );
    });
    return h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'table queue-table' },
        h('caption', { class: 'sr-only' }, 'Queues, the one in trouble first'),
        h('thead', null, h('tr', null, trouble, ...head)),
        h('tbody', null, ...body),
      ),
    );
  }

  async function loadHistory() {
    try {
      const answer = await api.history();
      if (stopped) return;
      hours = new Map(answer.queues.map((x) => [x.name, { since: x.since, completed: x.completed, died: x.died }]));
      render();
    } catch {
      // The column keeps its last figures; the live banner reports an outage.
    }
  }

  const offStats = live.on('stats', (data) => {
    if (stopped || data.error) return;
    queues = data.queues;
    render();
  });

  let timer;
  (async () => {
    try {
      const first = await api.queues();
      if (stopped) return;
      queues = first;
      render();
      await loadHistory();
    } catch (err) {
      if (!stopped) replace(list, errorNote(err, 'Could not load the queues'));
    }
    if (!stopped) timer = setInterval(loadHistory, HISTORY_EVERY_MS);
  })();

  return () => {
    stopped = true;
    offStats();
    clearInterval(timer);
  };
}
