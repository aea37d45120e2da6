/**
 * Queue-level pieces shared by the overview and a queue's page: the warning badges, the
 * counts per state, and the last-hour charts (throughput and lateness).
 */
import { areaChart, barChart } from './charts.js';
import { h } from './dom.js';
import { clock, duration, num, plural, relTime, serverNow } from './format.js';
import { href } from './router.js';
import { badge, stat } from './ui.js';

/** Jobs are due and no worker is alive to take them: the one thing an operator must not miss. */
export function stranded(stats) {
  return stats.ready > 0 && stats.workers === 0;
}

export function queueBadges(stats) {
  return [
    stranded(stats) ? badge(`No live workers · ${plural(stats.ready, 'job')} due`, 'danger', 'alert') : null,
    stats.paused ? badge('Paused', 'warning', 'pause') : null,
  ];
}

/**
 * The counts per state as stat cards linking to their tabs. `scheduled` in the stats counts
 * the ready jobs too; the cards show them apart (waiting vs due) so the numbers add up.
 */
export function countCards(name, stats) {
  const waiting = stats.scheduled - stats.ready;
  return [
    stat('Scheduled', waiting, {
      href: href.queue(name, 'scheduled'),
      tone: 'scheduled',
      note: !waiting
        ? 'none waiting'
        : stats.ready > 0 || stats.nextDueInMs === undefined
          ? 'waiting for their time'
          : `next in ${duration(stats.nextDueInMs)}`,
    }),
    stat('Ready', stats.ready, {
      href: href.queue(name, 'ready'),
      tone: stats.ready > 0 && stats.workers === 0 ? 'danger' : 'ready',
      note: stats.oldestDueAgeMs === undefined ? 'nothing due' : `oldest waiting ${duration(stats.oldestDueAgeMs)}`,
    }),
    stat('Active', stats.active, { href: href.queue(name, 'active'), tone: 'active', note: plural(stats.workers, 'worker') }),
    stat('Dead', stats.dead, { href: href.queue(name, 'dead'), tone: 'dead', note: stats.dead ? 'need a look' : 'all clear' }),
    stat('Completed', stats.completed, { href: href.queue(name, 'completed'), tone: 'completed', note: `${num(stats.completedTotal)} all time` }),
  ];
}

const NO_SAMPLE = 'no sample (the dashboard was not running)';
const EMPTY_HISTORY = 'Collecting… the history starts with the dashboard';

/** Throughput (completed per minute) and lateness (worst wait of a due job) over the last hour. */
export function historyCharts(history, opts = {}) {
  const points = history ?? [];
  const ticks = points.length ? [clock(points[0].t), clock(points[Math.floor(points.length / 2)].t), 'now'] : undefined;
  const completed = points.map((p) => p.completed);
  const lag = points.map((p) => p.lagMaxMs);
  const total = completed.reduce((a, v) => a + (v ?? 0), 0);
  const worst = Math.max(0, ...lag.filter((v) => Number.isFinite(v)));
  return [
    h(
      'section',
      { class: 'panel chart-panel' },
      h('header', { class: 'panel-head' }, h('h3', null, 'Throughput'), h('span', { class: 'panel-sub' }, `${num(total)} completed in the last hour`)),
      barChart(completed, {
        label: 'Jobs completed per minute, last hour',
        ticks,
        tone: 'completed',
        emptyText: EMPTY_HISTORY,
        small: opts.small,
        format: (v) => `${num(v)}/min`,
        tooltip: (i, v) => `${clock(points[i].t)}: ${v === undefined ? NO_SAMPLE : `${num(v)} completed`}`,
      }),
    ),
    h(
      'section',
      { class: 'panel chart-panel' },
      h(
        'header',
        { class: 'panel-head' },
        h('h3', null, 'Lateness'),
        h('span', { class: 'panel-sub' }, worst ? `worst wait ${duration(worst)}` : 'nothing waited past its due time'),
      ),
      areaChart(lag, {
        label: 'Worst wait of a due job per minute, last hour',
        ticks,
        tone: 'ready',
        emptyText: EMPTY_HISTORY,
        small: opts.small,
        floor: 1000,
        format: duration,
        tooltip: (i, v) => `${clock(points[i].t)}: ${v === undefined ? NO_SAMPLE : `worst wait ${duration(v)}`}`,
      }),
    ),
  ];
}

/** One line on what is next: "next due in 4 min", "12 due now, oldest waiting 3 min". */
export function dueLine(stats) {
  if (stats.ready > 0) return h('span', null, `${plural(stats.ready, 'job')} due now · oldest waiting `, h('strong', null, duration(stats.oldestDueAgeMs)));
  if (stats.nextDueInMs !== undefined) return h('span', null, 'Next job due ', relTime(serverNow() + stats.nextDueInMs));
  return h('span', null, 'Nothing scheduled');
}
