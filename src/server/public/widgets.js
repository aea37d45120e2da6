/**
 * Queue-level pieces shared by the overview and a queue's page: the warning badges, the
 * counts per state, and the last-hour charts (throughput and lateness).
 */
import { areaChart, barChart } from './charts.js';
import { h, icon } from './dom.js';
import { clock, duration, num, plural, relTime, serverNow } from './format.js';
import { href } from './router.js';
import { badge, stat } from './ui.js';

/** Jobs are due and no worker is alive to take them: the one thing an operator must not miss. */
export function stranded(stats) {
  return stats.ready > 0 && stats.workers === 0;
}

/**
 * The queue's warnings: due jobs and no live worker, paused, and (given the schedules) a schedule
 * whose occurrence is overdue and not enqueued, which means no Scheduler is running it. Beside
 * them, not a warning, the held jobs (waiting for other jobs or a signal): they have no tab, since
 * the store keeps no listing of them.
 */
export function queueBadges(stats, { name, schedules = [] } = {}) {
  const late = schedules.filter((x) => x.overdueAtMs !== undefined);
  return [
    stranded(stats) ? badge(`No live workers · ${plural(stats.ready, 'job')} due`, 'danger', 'alert') : null,
    stats.paused ? badge('Paused', 'warning', 'pause') : null,
    stats.heldJobs > 0 ? badge(`${plural(stats.heldJobs, 'held job')} · waiting for other jobs or a signal`, 'muted', 'clock') : null,
    late.length
      ? h(
          'a',
          { href: href.queue(name, 'schedules'), class: 'badge badge-danger badge-link', title: late.map((x) => x.name).join(', ') },
          icon('calendar'),
          late.length === 1
            ? `Schedule ${late[0].name} not being enqueued · is a Scheduler running?`
            : `${late.length} schedules not being enqueued · is a Scheduler running?`,
        )
      : null,
  ];
}

/**
 * The counts per state as stat cards linking to their tabs. One meaning per word, as in stats()
 * and /metrics: scheduled = every job waiting to run = ready (due) + upcoming (not due yet). The
 * cards show ready and upcoming apart, each saying the scheduled total they add up to.
 */
export function countCards(name, stats) {
  const upcoming = stats.scheduled - stats.ready;
  return [
    stat('Upcoming', upcoming, {
      href: href.queue(name, 'scheduled'),
      tone: 'scheduled',
      note: `of ${num(stats.scheduled)} scheduled${upcoming && stats.nextDueInMs !== undefined && stats.ready === 0 ? ` · next in ${duration(stats.nextDueInMs)}` : ''}`,
    }),
    stat('Ready', stats.ready, {
      href: href.queue(name, 'ready'),
      tone: stats.ready > 0 && stats.workers === 0 ? 'danger' : 'ready',
      note: stats.oldestDueAgeMs === undefined ? 'nothing due' : `due · oldest waiting ${duration(stats.oldestDueAgeMs)}`,
    }),
    stat('Active', stats.active, { href: href.queue(name, 'active'), tone: 'active', note: plural(stats.workers, 'worker') }),
    stat('Dead', stats.dead, { href: href.queue(name, 'dead'), tone: 'dead', note: stats.dead ? 'need a look' : 'all clear' }),
    stat('Completed', stats.completed, { href: href.queue(name, 'completed'), tone: 'completed', note: `${num(stats.completedTotal)} all time` }),
  ];
}

const NO_SAMPLE = 'no data for this minute';
const EMPTY_HISTORY = 'No data yet';

/**
 * Throughput (completed per minute) and lateness (worst wait of a due job) over the last hour,
 * from the queue's history kept in Redis and the dashboard's samples. opts.since: where the
 * figures start; while that is less than an hour ago (a store that keeps no history: the samples
 * start with the dashboard) they say "since 11:03", not "in the last hour".
 */
export function historyCharts(history, opts = {}) {
  const points = history ?? [];
  const partial = opts.since === undefined || opts.since > serverNow() - 3_600_000 + 60_000;
  const span = opts.since === undefined ? 'no samples yet' : partial ? `since ${clock(opts.since)}` : 'in the last hour';
  const ticks = points.length ? [clock(points[0].t), clock(points[Math.floor(points.length / 2)].t), 'now'] : undefined;
  const completed = points.map((p) => p.completed);
  const lag = points.map((p) => p.lagMaxMs);
  const total = completed.reduce((a, v) => a + (v ?? 0), 0);
  const worst = Math.max(0, ...lag.filter((v) => Number.isFinite(v)));
  return [
    h(
      'section',
      { class: 'panel chart-panel' },
      h(
        'header',
        { class: 'panel-head' },
        h('h3', null, 'Throughput'),
        h('span', { class: 'panel-sub' }, opts.since === undefined ? span : `${num(total)} completed ${span}`),
      ),
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
        h('span', { class: 'panel-sub' }, worst ? `worst wait ${duration(worst)} ${span}` : `nothing waited past its due time ${span}`),
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

/**
 * What holds due jobs, one phrase each (as describeHeld in src/store/held.ts): "1 group paused with
 * 3 waiting", "1 group at its limit with 28 waiting", "rate limit holding until 17:05:02".
 */
export function heldPhrases(held) {
  if (!held) return [];
  const floor = held.groupsComplete ? '' : ' (in the first 200 groups read)';
  const out = [];
  if (held.queueAtLimit) out.push('queue at its concurrency limit');
  if (held.pausedGroups > 0) out.push(`${plural(held.pausedGroups, 'group')} paused with ${num(held.pausedGroupsWaiting)} waiting${floor}`);
  if (held.groupsAtLimit > 0)
    out.push(
      `${plural(held.groupsAtLimit, 'group')} at ${held.groupsAtLimit === 1 ? 'its' : 'their'} limit with ${num(held.groupsAtLimitWaiting)} waiting${floor}`,
    );
  if (held.rateLimitedUntilMs !== undefined) out.push(`rate limit holding until ${clock(held.rateLimitedUntilMs)}`);
  return out;
}

/** One line on what is next: "next due in 4 min", "12 due now, oldest waiting 3 min · held: 1 group paused with 3 waiting". */
export function dueLine(stats) {
  const why = heldPhrases(stats.held);
  if (stats.ready > 0)
    return h(
      'span',
      { class: 'due-now' },
      `${plural(stats.ready, 'job')} due now · oldest waiting `,
      h('strong', null, duration(stats.oldestDueAgeMs)),
      why.length > 0 ? h('span', { class: 'held-why' }, ` · held: ${why.join(' · ')}`) : null,
    );
  if (stats.nextDueInMs !== undefined) return h('span', null, 'Next job due ', relTime(serverNow() + stats.nextDueInMs));
  return h('span', null, 'Nothing scheduled');
}
