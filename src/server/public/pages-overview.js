/**
 * The overview: every queue as a card with its counts, warnings, when the next job is due,
 * and its last hour (throughput and lateness). Counts follow the live stream; the charts'
 * per-minute history is fetched on load and every 30 s (it changes once a minute).
 */
import { api } from './api.js';
import { h, icon, replace } from './dom.js';
import { num, plural } from './format.js';
import * as live from './live.js';
import { href } from './router.js';
import { emptyState, errorNote, loading } from './ui.js';
import { countCards, dueLine, historyCharts, queueBadges, stranded } from './widgets.js';

const HISTORY_EVERY_MS = 30_000;

export function overviewPage(main) {
  document.title = 'Queues · delayq';
  const summary = h('p', { class: 'page-sub' }, '');
  const grid = h('div', { class: 'queue-list' }, loading());
  replace(main, h('div', { class: 'page-head' }, h('div', null, h('h1', null, 'Queues'), summary)), grid);

  /** name → { card parts, last stats, history } */
  const cards = new Map();
  let shown = '';
  let stopped = false;

  function renderAll(queues) {
    const total = queues.reduce((a, q) => ({ due: a.due + q.stats.ready, dead: a.dead + q.stats.dead, workers: a.workers + q.stats.workers }), {
      due: 0,
      dead: 0,
      workers: 0,
    });
    replace(summary, `${plural(queues.length, 'queue')} · ${plural(total.workers, 'live worker')} · ${num(total.due)} due now · ${num(total.dead)} dead`);
    if (queues.length === 0) {
      cards.clear();
      shown = '';
      replace(grid, emptyState('No queues yet', 'A queue shows up here once a job is added to it (queue.add) or a worker starts on it.', 'list'));
      return;
    }
    // Keep cards that still exist (their charts stay), add new ones, drop the gone.
    const names = new Set(queues.map((q) => q.name));
    for (const name of cards.keys()) if (!names.has(name)) cards.delete(name);
    for (const q of queues) {
      let card = cards.get(q.name);
      if (!card) {
        card = makeCard(q.name);
        cards.set(q.name, card);
      }
      updateCard(card, q.stats);
    }
    // Re-append only when the set or order changed: moving a card would drop the focus in it.
    const order = queues.map((q) => q.name).join('\n');
    if (order !== shown) {
      shown = order;
      replace(grid, ...queues.map((q) => cards.get(q.name).el));
    }
  }

  async function loadHistory() {
    await Promise.all(
      [...cards.values()].map(async (card) => {
        try {
          const detail = await api.queue(card.name);
          card.history = detail.history;
          replace(card.charts, ...historyCharts(card.history, { small: true }));
        } catch {
          // The charts keep their last state; the live banner reports an outage.
        }
      }),
    );
  }

  const offStats = live.on('stats', (data) => {
    if (!stopped && !data.error) renderAll(data.queues);
  });

  let timer;
  (async () => {
    try {
      const queues = await api.queues();
      if (stopped) return;
      renderAll(queues);
      await loadHistory();
    } catch (err) {
      if (!stopped) replace(grid, errorNote(err, 'Could not load the queues'));
    }
    if (!stopped) timer = setInterval(loadHistory, HISTORY_EVERY_MS);
  })();

  return () => {
    stopped = true;
    offStats();
    clearInterval(timer);
  };
}

function makeCard(name) {
  const badges = h('div', { class: 'badges' });
  const due = h('p', { class: 'due-line' });
  const counts = h('div', { class: 'stats stats-5' });
  const charts = h('div', { class: 'charts-2' }, ...historyCharts([], { small: true }));
  const el = h(
    'article',
    { class: 'card queue-card' },
    h('header', { class: 'queue-card-head' }, h('h2', null, h('a', { href: href.queue(name), class: 'queue-link' }, name, icon('next'))), badges),
    due,
    counts,
    charts,
  );
  return { name, el, badges, due, counts, charts, history: [] };
}

function updateCard(card, stats) {
  card.el.classList.toggle('queue-card-alert', stranded(stats));
  replace(card.badges, ...queueBadges(stats));
  replace(card.due, icon('clock'), dueLine(stats));
  replace(card.counts, ...countCards(card.name, stats));
}
