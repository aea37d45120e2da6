/**
 * The tables: jobs (columns chosen by the state being listed), schedules, groups, workers and shards.
 * Ids are links in monospace (a job's group beside its id); times tick; the less important columns
 * hide on a phone (.hide-sm).
 */
import { h, icon } from './dom.js';
import { duration, firstLine, localTime, num, preview, relTime, serverNow } from './format.js';
import { holdLeft, rateText, rateUseText } from './pages-groups.js';
import { href } from './router.js';
import { button, displayState, stateChip } from './ui.js';

/**
 * A table. opts.stack: on a phone each row becomes a card, each cell a line led by its column's
 * name (`data-label`), so every column shows without sideways scroll (app.css `.table-stack`).
 */
function table(head, rows, caption, opts = {}) {
  if (opts.stack) {
    for (const row of rows) {
      [...row.children].forEach((cell, i) => {
        const label = head[i]?.[0];
        if (typeof label === 'string') cell.dataset.label = label;
      });
    }
  }
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: ['table', opts.stack && 'table-stack'], tabindex: '-1' },
      caption ? h('caption', { class: 'sr-only' }, caption) : null,
      h('thead', null, h('tr', null, ...head.map(([label, cls]) => h('th', { scope: 'col', class: cls }, label)))),
      h('tbody', null, ...rows),
    ),
  );
}

const td = (cls, ...children) => h('td', { class: cls }, ...children);

export function attempts(job) {
  return job.maxAttempts ? `${num(job.attempt)} / ${num(job.maxAttempts)}` : num(job.attempt);
}

/** Progress as a small meter when it is a number or has a `percent`, else as JSON text. */
export function progressView(progress) {
  if (progress === undefined || progress === null) return h('span', { class: 'muted' }, '–');
  const pct = typeof progress === 'number' ? progress : typeof progress?.percent === 'number' ? progress.percent : undefined;
  if (pct === undefined) return h('span', { class: 'mono small' }, preview(progress, 40));
  const clamped = Math.max(0, Math.min(100, pct));
  return h(
    'span',
    { class: 'progress' },
    h('progress', { max: '100', value: String(clamped), 'aria-label': `${clamped}% done` }),
    h('span', null, `${Math.round(clamped)}%`),
  );
}

/**
 * Jobs of one listing. opts: { selectable, selected: Set, onSelect(), rowActions(job) → buttons }.
 */
export function jobTable(queue, state, jobs, opts = {}) {
  const cols = COLUMNS[state] ?? COLUMNS.search;
  const head = [];
  let all;
  if (opts.selectable) {
    all = h('input', { type: 'checkbox', 'aria-label': 'Select every job on this page' });
    all.checked = jobs.length > 0 && jobs.every((j) => opts.selected.has(j.id));
    head.push([all, 'col-check']);
  }
  head.push(['Id', 'col-id']);
  for (const c of cols) head.push([c.label, c.cls]);
  if (opts.rowActions) head.push([h('span', { class: 'sr-only' }, 'Actions'), 'col-actions']);

  const boxes = [];
  const rows = jobs.map((job) => {
    const cells = [];
    if (opts.selectable) {
      const box = h('input', { type: 'checkbox', 'aria-label': `Select ${job.id}`, checked: opts.selected.has(job.id) });
      box.addEventListener('change', () => {
        if (box.checked) opts.selected.add(job.id);
        else opts.selected.delete(job.id);
        all.checked = boxes.every((b) => b.checked);
        opts.onSelect?.();
      });
      boxes.push(box);
      cells.push(td('col-check', box));
    }
    cells.push(
      td(
        'col-id',
        h('a', { href: href.job(queue, job.id), class: 'mono id-link' }, job.id),
        job.name === undefined ? null : nameTag(queue, job.name),
        job.group === undefined ? null : groupTag(job.group),
      ),
    );
    for (const c of cols) cells.push(td(c.cls, c.cell(job)));
    if (opts.rowActions) cells.push(td('col-actions', h('div', { class: 'row-actions' }, ...opts.rowActions(job))));
    return h('tr', null, ...cells);
  });
  all?.addEventListener('change', () => {
    for (const [i, box] of boxes.entries()) {
      box.checked = all.checked;
      if (all.checked) opts.selected.add(jobs[i].id);
      else opts.selected.delete(jobs[i].id);
    }
    opts.onSelect?.();
  });
  return table(head, rows, `${state} jobs`);
}

/** The lease deadline; one that passed is flagged: its holder is gone or stalled, and the next claim of any worker recovers the job. */
function leaseEnds(j) {
  if (j.leaseExpiresAtMs === undefined) return h('span', { class: 'muted' }, '–');
  if (j.leaseExpiresAtMs > serverNow()) return relTime(j.leaseExpiresAtMs);
  return h(
    'span',
    { class: 'late', title: 'Its worker stopped renewing it: the next claim of a live worker takes the job back' },
    'expired ',
    relTime(j.leaseExpiresAtMs),
    ' · recovered at the next claim',
  );
}

/** How long this attempt has run; past the job's own timeout it says so (the worker's own timeout is not known here). */
function runningFor(j) {
  if (j.runningSinceMs === undefined) return h('span', { class: 'muted' }, '–');
  const ran = Math.max(0, serverNow() - j.runningSinceMs);
  const over = j.timeoutMs !== undefined && ran > j.timeoutMs;
  return h(
    'span',
    { class: over ? 'late' : undefined, title: `since ${localTime(j.runningSinceMs)}` },
    duration(ran),
    over ? ` · past its ${duration(j.timeoutMs)} timeout` : '',
  );
}

const payload = { label: 'Payload', cls: 'col-data hide-sm', cell: (j) => h('code', { class: 'data-preview' }, preview(j.data)) };
const due = { label: 'Due', cls: 'col-time', cell: (j) => relTime(j.dueAtMs) };
const tries = { label: 'Attempts', cls: 'col-num hide-sm', cell: attempts };

const COLUMNS = {
  scheduled: [due, { label: 'Priority', cls: 'col-num hide-sm', cell: (j) => (j.priority ? num(j.priority) : h('span', { class: 'muted' }, '0')) }, payload],
  ready: [{ label: 'Due', cls: 'col-time', cell: (j) => h('span', { class: 'late' }, relTime(j.dueAtMs)) }, tries, payload],
  active: [
    { label: 'Running for', cls: 'col-time', cell: runningFor },
    { label: 'Worker', cls: 'col-worker hide-sm', cell: (j) => h('span', { class: 'mono small' }, j.workerId ?? '–') },
    { label: 'Progress', cls: 'col-progress', cell: (j) => progressView(j.progress) },
    { label: 'Lease ends', cls: 'col-time hide-sm', cell: leaseEnds },
    tries,
  ],
  dead: [
    { label: 'Died', cls: 'col-time', cell: (j) => relTime(j.finishedAtMs ?? j.dueAtMs) },
    tries,
    // Kept on a phone: the error is what a person looks at the dead set for.
    {
      label: 'Last error',
      cls: 'col-error',
      cell: (j) => h('span', { class: 'error-text', title: firstLine(j.lastError) || undefined }, firstLine(j.lastError) || '–'),
    },
  ],
  completed: [
    { label: 'Finished', cls: 'col-time', cell: (j) => relTime(j.finishedAtMs) },
    {
      label: 'Took',
      cls: 'col-num hide-sm',
      cell: (j) => (j.startedAtMs && j.finishedAtMs ? duration(j.finishedAtMs - j.startedAtMs) : '–'),
    },
    { label: 'Result', cls: 'col-data hide-sm', cell: (j) => h('code', { class: 'data-preview' }, j.result === undefined ? '–' : preview(j.result)) },
  ],
  search: [{ label: 'State', cls: 'col-state', cell: (j) => stateChip(displayState(j)) }, due, payload],
};

/** Relative time over the local time, for occurrences (when exactly matters as much as how soon). */
function stacked(atMs) {
  if (!atMs) return h('span', { class: 'muted' }, atMs === undefined ? 'not yet' : '–');
  return h('span', { class: 'stacked' }, relTime(atMs), h('span', { class: 'muted small' }, localTime(atMs)));
}

export function schedulesTable(list, onRemove) {
  const head = [
    ['Name', 'col-id'],
    ['Runs', ''],
    ['Time zone', 'hide-sm'],
    ['Next', 'col-time'],
    ['Last', 'col-time hide-sm'],
    ['Data', 'col-data hide-sm'],
  ];
  if (onRemove) head.push([h('span', { class: 'sr-only' }, 'Actions'), 'col-actions']);
  const rows = list.map((sch) =>
    h(
      'tr',
      null,
      td('col-id', h('span', { class: 'mono strong' }, sch.name)),
      td('', sch.cron ? h('code', { class: 'cron' }, sch.cron) : `every ${duration(sch.every)}`),
      td('hide-sm', sch.tz),
      td(
        'col-time',
        sch.overdueAtMs === undefined
          ? stacked(sch.nextRunAtMs)
          : h(
              'span',
              { class: 'stacked overdue' },
              h('span', { class: 'badge badge-danger' }, icon('alert'), 'Not being enqueued'),
              h('span', { class: 'small' }, 'due ', relTime(sch.overdueAtMs), ' · is a Scheduler running?'),
            ),
      ),
      td('col-time hide-sm', stacked(sch.lastRunAtMs)),
      td('col-data hide-sm', h('code', { class: 'data-preview' }, preview(sch.data))),
      onRemove
        ? td(
            'col-actions',
            button('Remove', () => onRemove(sch), { small: true, tone: 'danger-ghost', icon: 'trash', ariaLabel: `Remove the schedule ${sch.name}` }),
          )
        : null,
    ),
  );
  return table(head, rows, 'Schedules');
}

/**
 * A group's rate cell: "3 / 10 per 1 min" (tokens used of the limit that applies: its own, or the
 * queue's marked so), a Held badge while a RateLimitSignal holds it; "none" without a rate limit.
 */
function groupRate(g, sharedRate) {
  const limit = g.rateLimit ?? sharedRate;
  const used = g.rate?.used ?? 0;
  const held = holdLeft(g.rate);
  const parts = [];
  if (limit === undefined) parts.push(h('span', { class: 'muted' }, used > 0 ? `${num(used)} used · none` : 'none'));
  else
    parts.push(
      h(
        'span',
        { class: g.rateLimit !== undefined ? 'strong' : 'muted', title: g.rate ? rateUseText(g.rate) : undefined },
        `${num(used)} / ${rateText(limit)}${g.rateLimit === undefined ? " (queue's)" : ''}`,
      ),
    );
  if (held !== undefined) parts.push(' ', h('span', { class: 'badge badge-warning', title: 'Held back by a RateLimitSignal' }, `Held ${duration(held)}`));
  return h('span', null, ...parts);
}

/** A job's group, under its id in a row: text, never markup, like the id. */
/** A job's name (add({ name })), a link to the search for its other jobs of that name. */
export function nameTag(queue, name) {
  return h('a', { class: 'name-tag', href: href.search(queue, { name }), title: `Jobs named ${name}` }, h('span', { class: 'sr-only' }, 'name '), name);
}

export function groupTag(group) {
  return h('span', { class: 'group-tag', title: `Group ${group}` }, h('span', { class: 'sr-only' }, 'group '), group);
}

/**
 * The groups of a queue: running (of its limit, when it has one), waiting, the limit that applies
 * (its own, else the queue's groupConcurrency), the rate limit that applies (its own, else the
 * queue's groupRateLimit) with the tokens used and a hold, and paused. opts: { limits,
 * rowActions(group) → buttons }.
 */
export function groupsTable(list, opts = {}) {
  const shared = opts.limits?.groupConcurrency;
  const sharedRate = opts.limits?.groupRateLimit;
  const head = [
    ['Group', 'col-id'],
    ['Running', 'col-progress'],
    ['Waiting', 'col-num'],
    ['Limit', 'col-num'],
    ['Rate', 'col-rate'],
    ['Paused', ''],
  ];
  if (opts.rowActions) head.push([h('span', { class: 'sr-only' }, 'Actions'), 'col-actions']);
  const rows = list.map((g) => {
    const limit = g.concurrency ?? shared;
    return h(
      'tr',
      { 'data-group': g.id, class: g.paused ? 'row-paused' : undefined },
      td('col-id', h('span', { class: 'mono strong wrap' }, g.id)),
      td(
        'col-progress',
        limit === undefined
          ? num(g.running)
          : h(
              'span',
              { class: 'progress' },
              // A full group's bar is amber, not green: `high` just under the limit puts a full
              // meter outside the optimum region (the browser's "suboptimal" colour).
              h('meter', {
                min: '0',
                max: String(limit),
                low: '0',
                high: String(limit - 0.5),
                optimum: String((limit - 0.5) / 2),
                value: String(Math.min(g.running, limit)),
                'aria-label': `${g.running} of ${limit} running${g.running >= limit ? ', at its limit' : ''}`,
              }),
              h('span', null, `${num(g.running)} / ${num(limit)}`),
            ),
      ),
      td('col-num', num(g.waiting)),
      td(
        'col-num',
        g.concurrency !== undefined
          ? h('span', { class: 'strong' }, num(g.concurrency))
          : shared !== undefined
            ? h('span', { class: 'muted', title: "The queue's limit per group" }, `${num(shared)} (queue's)`)
            : h('span', { class: 'muted' }, 'none'),
      ),
      td('col-rate', groupRate(g, sharedRate)),
      td('', g.paused ? h('span', { class: 'badge badge-warning' }, icon('pause'), 'Paused') : h('span', { class: 'muted' }, 'no')),
      opts.rowActions ? td('col-actions', h('div', { class: 'row-actions' }, ...opts.rowActions(g))) : null,
    );
  });
  // On a phone every column shows, each group a card (its id, running, waiting, limit, rate, paused, actions).
  return table(head, rows, 'Groups', { stack: true });
}

export function workersTable(list) {
  const head = [
    ['Host', ''],
    ['PID', 'col-num'],
    ['Running', 'col-progress'],
    ['Last seen', 'col-time'],
    ['Started', 'col-time hide-sm'],
    ['Version', 'hide-sm'],
    ['Id', 'col-worker hide-sm'],
  ];
  const rows = list.map((w) =>
    h(
      'tr',
      null,
      td('', h('span', { class: 'strong' }, w.host)),
      td('col-num mono', String(w.pid)),
      td(
        'col-progress',
        h(
          'span',
          { class: 'progress' },
          h('meter', { min: '0', max: String(w.concurrency), value: String(w.running), 'aria-label': `${w.running} of ${w.concurrency} slots busy` }),
          h('span', null, `${num(w.running)} / ${num(w.concurrency)}`),
        ),
      ),
      td('col-time', relTime(w.lastSeenAtMs)),
      td('col-time hide-sm', relTime(w.startedAtMs)),
      td('hide-sm mono small', w.language ? `${w.language} ${w.version}` : w.version),
      td('col-worker hide-sm', h('span', { class: 'mono small' }, w.id)),
    ),
  );
  return table(head, rows, 'Workers');
}

const ROLE_TEXT = {
  current: ['new jobs go here', 'badge-current'],
  draining: ['draining: a reshard left it', 'badge-warning'],
  home: ["the queue's own keys", 'badge-muted'],
};

/**
 * A sharded queue's shards: where each lives, what it holds and how far its due jobs lag. The
 * meter shows each current shard's share of the scheduled jobs, so a skewed spread (one hot
 * dedup key, a few huge tenants) stands out.
 */
export function shardsTable(list) {
  const head = [
    ['Shard', ''],
    ['Role', 'hide-sm'],
    ['Node', ''],
    ['Scheduled', 'col-progress'],
    ['Ready', 'col-num'],
    ['Active', 'col-num'],
    ['Dead', 'col-num'],
    ['Completed', 'col-num hide-sm'],
    ['Lag', 'col-num'],
  ];
  const total = list.reduce((a, f) => a + f.scheduled, 0);
  const rows = list.map((f) => {
    const [roleText, roleClass] = ROLE_TEXT[f.role] ?? [f.role, 'badge-muted'];
    return h(
      'tr',
      { 'data-shard': f.name },
      td('', h('span', { class: 'mono strong' }, f.name)),
      td('hide-sm', h('span', { class: ['badge', roleClass] }, roleText)),
      td('mono small', f.node ?? '–'),
      td(
        'col-progress',
        h(
          'span',
          { class: 'progress' },
          h('meter', {
            min: '0',
            max: String(Math.max(1, total)),
            value: String(f.scheduled),
            'aria-label': `${num(f.scheduled)} of ${num(total)} scheduled jobs`,
          }),
          h('span', null, num(f.scheduled)),
        ),
      ),
      td('col-num', num(f.ready)),
      td('col-num', num(f.active)),
      td(f.dead > 0 ? 'col-num num-dead' : 'col-num', num(f.dead)),
      td('col-num hide-sm', num(f.completed)),
      td('col-num', f.oldestDueAgeMs === undefined ? '–' : duration(f.oldestDueAgeMs)),
    );
  });
  return table(head, rows, 'Shards');
}
