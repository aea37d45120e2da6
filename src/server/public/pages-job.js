/**
 * One job: everything the store knows about it (payload as text, times in local time and
 * relative, attempts, its group, every error with its stack, progress, logs, lease holder, result) and
 * the actions its state allows. A job held for other jobs or a signal (docs/flows.md) says what it
 * waits for, until when, and lists its dependencies, each a link to its own page with how it
 * ended. While it can still change (scheduled, active or held) it reloads with each live sample,
 * so a running job's progress and logs move on their own.
 */
import { api } from './api.js';
import { h, replace } from './dom.js';
import { bothTimes, duration, localTime, pretty, relTime, serverNow } from './format.js';
import * as live from './live.js';
import { go, href } from './router.js';
import { attempts, progressView } from './tables.js';
import { act, badge, button, confirmAction, dialog, displayState, emptyState, errorNote, loading, session, stateChip, stateWord } from './ui.js';

export function jobPage(main, route) {
  const { queue, id } = route;
  document.title = `${id} · ${queue} · delayq`;
  live.followQueue(queue);
  let stopped = false;
  let job;
  let loadedOnce = false;
  let busy = false;

  const head = h('div', { class: 'page-head' });
  const content = h('div', { class: 'job' }, loading());
  replace(main, head, content);

  async function load() {
    if (busy) return;
    busy = true;
    try {
      const next = await api.job(queue, id);
      if (stopped) return;
      // Re-render only when something changed: a focused button keeps its focus otherwise
      // (a reason's text counts down — "due in 4 s" — so reasons compare by what they say of the job).
      if (sameness(next) !== sameness(job)) {
        job = next;
        render();
      }
      loadedOnce = true;
    } catch (err) {
      if (stopped) return;
      job = undefined;
      renderHead(undefined);
      if (err.status === 404) {
        replace(
          content,
          emptyState(
            loadedOnce ? 'This job is gone' : 'No such job',
            loadedOnce
              ? 'It was completed without retention, purged or cancelled since you opened it.'
              : 'It may have completed (completed jobs are not kept unless the queue keeps them), or been purged or cancelled.',
            'search',
          ),
        );
      } else replace(content, errorNote(err, 'Could not load the job'));
    } finally {
      busy = false;
    }
  }

  function renderHead(j) {
    const state = j ? displayState(j) : undefined;
    replace(
      head,
      h(
        'div',
        null,
        h(
          'nav',
          { class: 'crumbs', 'aria-label': 'Breadcrumb' },
          h('a', { href: href.overview() }, 'Queues'),
          h('span', { 'aria-hidden': 'true' }, '/'),
          h('a', { href: href.queue(queue) }, queue),
          h('span', { 'aria-hidden': 'true' }, '/'),
          // Held jobs have no listing of their own: the crumb names the state without a link.
          state === 'held' ? h('span', null, 'held') : state ? h('a', { href: href.queue(queue, state) }, stateWord(state)) : null,
        ),
        h('div', { class: 'title-row' }, h('h1', { class: 'mono job-id' }, id), state ? stateChip(state) : null),
      ),
      j && session.canWrite ? h('div', { class: 'page-actions' }, ...actionsFor(j)) : null,
    );
  }

  function render() {
    renderHead(job);
    const j = job;
    const errors = j.errors?.length ? j.errors : j.lastError ? [{ attempt: j.attempt, atMs: j.finishedAtMs, error: j.lastError }] : [];
    replace(
      content,
      h(
        'dl',
        { class: 'facts' },
        // A held job's own due time may be unknown until its release (null): then the fact is left out.
        j.state === 'held' && (j.dueAtMs === null || j.dueAtMs === undefined)
          ? null
          : fact(j.state === 'held' ? 'Due, once released' : j.state === 'scheduled' && !j.ready ? 'Due' : 'Was due', bothTimes(j.dueAtMs)),
        j.why?.length ? fact(j.state === 'held' ? 'Held' : 'Not running because', whyBadges(j.why)) : null,
        j.state === 'held' && j.hold && !j.why?.length ? fact('Held', badge('settling: what it waited for just happened', 'muted')) : null,
        j.hold?.state === 'held' && j.hold.deadlineAtMs !== undefined
          ? fact('Deadline', bothTimes(j.hold.deadlineAtMs), h('span', { class: 'muted small' }, 'it runs anyway then'))
          : null,
        j.hold && j.hold.state !== 'held'
          ? fact('Hold', HOLD_ENDS[j.hold.state], j.hold.signal ? h('span', { class: 'muted small' }, ` signal ${j.hold.signal}`) : null)
          : null,
        fact('Attempts', h('span', { class: 'big' }, attempts(j)), j.maxAttempts ? null : h('span', { class: 'muted small' }, 'limit: the worker default')),
        fact('Priority', String(j.priority)),
        j.timeoutMs === undefined ? null : fact('Timeout', `${duration(j.timeoutMs)} per attempt`),
        // Its name: a link to the search for its queue's jobs of that name.
        j.name !== undefined ? fact('Name', h('a', { href: href.search(queue, { name: j.name }), class: 'mono wrap' }, j.name)) : null,
        // Its group: the Groups tab shows the group's running, waiting, limit and pause.
        j.group !== undefined ? fact('Group', h('a', { href: href.queue(queue, 'groups'), class: 'mono wrap' }, j.group)) : null,
        fact('Created', bothTimes(j.createdAtMs)),
        j.startedAtMs ? fact('Started', bothTimes(j.startedAtMs)) : null,
        j.finishedAtMs ? fact(j.state === 'dead' ? 'Died' : 'Finished', bothTimes(j.finishedAtMs)) : null,
        j.startedAtMs && j.finishedAtMs ? fact('Took', duration(j.finishedAtMs - j.startedAtMs)) : null,
        j.workerId
          ? fact(
              j.state === 'active' ? 'Lease holder' : 'Last worker',
              h('span', { class: 'mono small wrap' }, j.workerId),
              j.leaseExpiresAtMs ? h('span', { class: 'muted small' }, 'lease expires ', relTime(j.leaseExpiresAtMs)) : null,
            )
          : null,
        j.progress !== undefined && j.progress !== null ? fact('Progress', progressView(j.progress)) : null,
      ),
      // Payload beside what came of it (result, progress value) on a wide screen.
      h(
        'div',
        { class: 'job-data' },
        section('Payload', codeBlock(pretty(j.data), 'payload')),
        j.result !== undefined && j.result !== null ? section('Result', codeBlock(pretty(j.result), 'result')) : null,
        typeof j.progress === 'object' && j.progress !== null ? section('Progress value', codeBlock(pretty(j.progress), 'progress')) : null,
      ),
      j.hold?.children.length ? dependencies(queue, j.hold) : null,
      errors.length
        ? section(
            errors.length === 1 ? 'Error' : `Errors (${errors.length})`,
            h(
              'ol',
              { class: 'errors' },
              ...errors.map((e) =>
                h(
                  'li',
                  { class: 'error-item' },
                  h(
                    'div',
                    { class: 'error-head' },
                    h('strong', null, `Attempt ${e.attempt}`),
                    e.atMs ? h('span', { class: 'muted' }, localTime(e.atMs), ' · ', relTime(e.atMs)) : null,
                  ),
                  h('pre', { class: 'code code-error', tabindex: '0' }, e.error),
                ),
              ),
            ),
          )
        : null,
      section(
        'Logs',
        j.logs?.length
          ? h('ol', { class: 'logs', tabindex: '0' }, ...j.logs.map((line) => h('li', null, line)))
          : h('p', { class: 'muted' }, 'No log lines. A handler adds them with job.log("…").'),
      ),
    );
  }

  function actionsFor(j) {
    const reload = () => load();
    if (j.state === 'scheduled') {
      return [
        button('Run now', () => act(() => api.promote(queue, id), `${id} is due now.`).then(reload), {
          icon: 'bolt',
          tone: 'primary',
          disabled: j.ready,
          title: j.ready ? 'Already due' : undefined,
        }),
        button('Reschedule…', reschedule, { icon: 'clock' }),
        button(
          'Cancel job…',
          async () => {
            if (!(await confirmAction(`Cancel ${id}?`, 'The job is removed and will not run.', 'Cancel the job', 'danger', 'Keep the job'))) return;
            if (await act(() => api.cancel(queue, id), `Cancelled ${id}.`)) go(href.queue(queue));
          },
          { icon: 'x', tone: 'danger' },
        ),
      ];
    }
    if (j.state === 'dead') {
      return [
        button('Retry', () => act(() => api.retry(queue, id), `Retrying ${id}: it is due now.`).then(reload), { icon: 'retry', tone: 'primary' }),
        purgeButton(),
      ];
    }
    if (j.state === 'completed') return [purgeButton()];
    if (j.state === 'held') {
      return [
        button(
          'Cancel job…',
          async () => {
            if (
              !(await confirmAction(
                `Cancel ${id}?`,
                'The job is removed and will not run. Its dependencies that have not started and that no other job waits for are cancelled too.',
                'Cancel the job',
                'danger',
                'Keep the job',
              ))
            )
              return;
            if (await act(() => api.cancel(queue, id), `Cancelled ${id}.`)) go(href.queue(queue));
          },
          { icon: 'x', tone: 'danger' },
        ),
      ];
    }
    if (j.state === 'active') {
      return [
        button('Cancel…', () => endRunning('cancel'), { icon: 'x', tone: 'danger' }),
        button('Fail now…', () => endRunning('fail'), { icon: 'bolt', tone: 'danger' }),
      ];
    }
    return [];
  }

  /**
   * Ends a running job from here: cancel (the job is removed) or fail now (retries apply, or dead
   * now). The holder's lease ends at once and its handler is told, on whichever host it runs.
   */
  async function endRunning(how) {
    const cancel = how === 'cancel';
    const values = await dialog({
      title: cancel ? `Cancel ${id} while it runs?` : `Fail ${id} now?`,
      confirm: cancel ? 'Cancel the job' : 'Fail the attempt',
      tone: 'danger',
      dismiss: 'Keep it running',
      body: [
        h(
          'p',
          null,
          cancel
            ? 'Its lease ends now and its handler is told to stop; the job is removed and will not run again.'
            : 'Its lease ends now and its handler is told to stop; the attempt counts as failed and is retried while attempts are left.',
        ),
        h(
          'label',
          { class: 'field' },
          'Reason',
          h('input', { type: 'text', name: 'reason', maxlength: '2000', class: 'input', placeholder: cancel ? 'upstream is down' : 'hung on a dead upstream' }),
        ),
        cancel ? null : h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'dead' }), ' To the dead set now (no retry)'),
      ],
    });
    if (!values) return;
    const reason = String(values.reason ?? '').trim();
    if (cancel) {
      if (await act(() => api.cancel(queue, id, { running: true, ...(reason ? { reason } : {}) }), `Cancelled ${id}; its handler was told.`))
        go(href.queue(queue));
      return;
    }
    const dead = values.dead === 'on' || values.dead === true;
    await act(
      () => api.fail(queue, id, { dead, ...(reason ? { reason } : {}) }),
      (r) => (r.outcome === 'dead' ? `${id} is in the dead set.` : `${id} failed; retry due ${localTime(r.dueAtMs)}.`),
    );
    load();
  }

  function purgeButton() {
    return button(
      'Purge…',
      async () => {
        if (!(await confirmAction(`Purge ${id}?`, 'The job and its history are deleted for good.', 'Purge 1 job'))) return;
        if (await act(() => api.remove(queue, id), `Purged ${id}.`)) go(href.queue(queue, job?.state ?? 'dead'));
      },
      { icon: 'trash', tone: 'danger' },
    );
  }

  async function reschedule() {
    const values = await dialog({
      title: `Reschedule ${id}`,
      confirm: 'Reschedule',
      body: [
        h('p', null, 'Run it this long from now:'),
        h(
          'div',
          { class: 'field-row' },
          h('input', { type: 'number', name: 'amount', min: '0', step: 'any', required: true, value: '10', 'aria-label': 'Delay', class: 'input' }),
          h(
            'select',
            { name: 'unit', 'aria-label': 'Unit', class: 'input' },
            h('option', { value: '1000' }, 'seconds'),
            h('option', { value: '60000', selected: true }, 'minutes'),
            h('option', { value: '3600000' }, 'hours'),
            h('option', { value: '86400000' }, 'days'),
          ),
        ),
        h('p', { class: 'muted small' }, `Now due ${relTime(job.dueAtMs).textContent} (${localTime(job.dueAtMs)}).`),
      ],
    });
    if (!values) return;
    const delay = Math.round(Number(values.amount) * Number(values.unit));
    if (!Number.isFinite(delay) || delay < 0) return;
    await act(
      () => api.reschedule(queue, id, { delay }),
      (r) => `${id} is now due ${localTime(r.dueAtMs ?? serverNow() + delay)}.`,
    );
    load();
  }

  const offStats = live.on('stats', () => {
    if (!stopped && job && (job.state === 'scheduled' || job.state === 'active' || job.state === 'held')) load();
  });
  load();

  return () => {
    stopped = true;
    offStats();
  };
}

/** What decides a re-render: the job, its reasons without their counting-down text. */
function sameness(j) {
  return j === undefined ? '' : JSON.stringify({ ...j, why: j.why?.map(({ text: _text, ...r }) => r) });
}

const WHY_TONE = { no_worker: 'danger', not_due: 'muted', in_line: 'muted', held_dependencies: 'muted', held_signal: 'muted' };

/** How a settled hold ended (the API's hold.state). */
const HOLD_ENDS = {
  released: 'Released: what it waited for happened',
  timedOut: 'Timed out: its deadline came first, it ran anyway',
  failed: 'Failed: a dependency died or was cancelled',
};

/** The most dependencies the page lists (a flow may have thousands). */
const DEPS_SHOWN = 200;

const OUTCOME_TONE = { completed: 'completed', dead: 'dead', cancelled: 'dead', pending: 'scheduled' };

/**
 * A held (or once held) job's dependencies, in the order given: each a link to its own page, how
 * it ended, and its result or the reason. Only what the hold records: a dependency's own
 * dependents are not stored by id, so they are not shown.
 */
function dependencies(queue, hold) {
  const ended = hold.children.filter((c) => c.outcome !== 'pending').length;
  return section(
    `Dependencies (${ended} of ${hold.children.length} ended)`,
    h(
      'p',
      { class: 'muted small' },
      hold.onChildFailure === 'fail' ? 'One that dies or is cancelled fails this job.' : 'One that dies or is cancelled counts as ended.',
    ),
    h(
      'ol',
      { class: 'deps' },
      ...hold.children
        .slice(0, DEPS_SHOWN)
        .map((c) =>
          h(
            'li',
            { class: 'dep' },
            h('a', { href: href.job(queue, c.id), class: 'mono wrap' }, c.id),
            ' ',
            h('span', { class: ['chip', `chip-${OUTCOME_TONE[c.outcome]}`] }, c.outcome),
            c.outcome === 'completed' && c.result !== undefined ? h('code', { class: 'dep-detail mono small' }, c.result) : null,
            c.reason ? h('span', { class: 'dep-detail muted small' }, c.reason.split('\n')[0]) : null,
          ),
        ),
    ),
    hold.children.length > DEPS_SHOWN
      ? h('p', { class: 'muted small' }, `The first ${DEPS_SHOWN} of ${hold.children.length}; the job's API answer (hold.children) has all.`)
      : null,
  );
}

/** Why a scheduled job is not running, one badge a reason (the API's `why`, most binding first). */
function whyBadges(why) {
  return h(
    'div',
    { class: ['badges', 'why-waiting'] },
    ...why.map((r) =>
      badge(
        r.code === 'not_due' ? h('span', null, 'due ', relTime(r.untilMs)) : r.text,
        WHY_TONE[r.code] ?? 'warning',
        r.code === 'no_worker' ? 'alert' : undefined,
      ),
    ),
  );
}

function fact(label, ...value) {
  return h('div', { class: 'fact' }, h('dt', null, label), h('dd', null, ...value));
}

function section(title, ...children) {
  return h('section', { class: 'panel' }, h('header', { class: 'panel-head' }, h('h2', null, title)), ...children);
}

/** JSON or a stack as text in a <pre>: whatever it holds shows as characters, never as markup. */
function codeBlock(text, label) {
  return h('pre', { class: 'code', tabindex: '0', 'aria-label': label }, text === '' ? '(empty)' : text);
}
