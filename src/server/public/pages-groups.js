/**
 * Flow control on a queue's page: the line that shows the queue's limits (concurrency, and
 * groupConcurrency: the most of any one group) with the dialog that sets them, and the actions on
 * one group of the Groups tab (pause, resume, a limit of its own). Every change goes through a
 * dialog that says what it does; the limits and the pauses hold on every worker at its next claim.
 */
import { api } from './api.js';
import { h, icon } from './dom.js';
import { num, plural } from './format.js';
import { act, button, confirmAction, dialog, session } from './ui.js';

/** The most a limit may be (the library's MAX_CONCURRENCY). */
const LIMIT_MAX = 100_000;

/** A limit as a person reads it. */
const limitText = (v) => (v === undefined || v === null ? 'no limit' : num(v));

/** A number field for a limit: empty means none. */
function limitInput(name, label, value) {
  return h('input', {
    type: 'number',
    name,
    min: '1',
    max: String(LIMIT_MAX),
    step: '1',
    value: value ?? '',
    placeholder: 'no limit',
    'aria-label': label,
    class: 'input',
  });
}

/** A field of the dialog's form: '' is no limit (null), else the whole number typed. */
const limitValue = (text) => (text === undefined || text.trim() === '' ? null : Number(text));

/**
 * "Concurrency 10 · per group 2", with "Set limits…" for a person who may write. `limits` is the
 * queue detail's ({ concurrency?, groupConcurrency? }); `changed()` reloads what shows them.
 */
export function limitsLine(name, limits, changed) {
  return [
    icon('cpu'),
    h('span', null, 'Concurrency ', h('strong', null, limitText(limits.concurrency)), ' · per group ', h('strong', null, limitText(limits.groupConcurrency))),
    session.canWrite
      ? button('Set limits…', () => setLimits(name, limits).then(changed), { small: true, tone: 'ghost', ariaLabel: 'Set the queue’s limits' })
      : null,
  ];
}

async function setLimits(name, limits) {
  const values = await dialog({
    title: `Limits of ${name}`,
    confirm: 'Set limits',
    body: [
      h('p', null, 'Every worker, on every host, keeps to these from its next claim. Running jobs are not stopped. Leave a field empty for no limit.'),
      h('p', null, 'Most jobs of the queue running at once:'),
      h('div', { class: 'field-row' }, limitInput('concurrency', 'Concurrency', limits.concurrency)),
      h('p', null, 'Most jobs of any one group running at once (unless the group has a limit of its own):'),
      h('div', { class: 'field-row' }, limitInput('groupConcurrency', 'Concurrency per group', limits.groupConcurrency)),
      h('p', { class: 'muted small' }, `Now: ${limitText(limits.concurrency)} at once, ${limitText(limits.groupConcurrency)} per group.`),
    ],
  });
  if (!values) return;
  await act(
    () => api.setLimits(name, { concurrency: limitValue(values.concurrency), groupConcurrency: limitValue(values.groupConcurrency) }),
    (r) =>
      r.changed
        ? `Limits of ${name}: ${limitText(r.limits.concurrency)} at once, ${limitText(r.limits.groupConcurrency)} per group.`
        : 'The limits were already so.',
  );
}

/**
 * Pause or resume, and "Set limit…", for one group's row; each confirms first. `limits` are the
 * queue's (for what "no limit of its own" means); `changed()` reloads the list.
 */
export function groupActions(name, group, limits, changed) {
  const id = group.id;
  const pause = async () => {
    const ok = await confirmAction(
      `Pause the group ${id}?`,
      `No job of ${id} is handed out until it is resumed, on every worker. ${plural(group.running, 'running job')} finish${group.running === 1 ? 'es' : ''}; ${plural(group.waiting, 'waiting job')} stay${group.waiting === 1 ? 's' : ''} in line.`,
      'Pause group',
      'primary',
    );
    if (ok) await act(() => api.pauseGroup(name, id), `Paused ${id}: none of its jobs is handed out.`);
    changed();
  };
  const resume = async () => {
    const ok = await confirmAction(
      `Resume the group ${id}?`,
      group.waiting
        ? `${plural(group.waiting, 'waiting job')} of ${id} ${group.waiting === 1 ? 'is' : 'are'} handed out again at once, within its limit.`
        : `Jobs of ${id} are handed out again as they fall due.`,
      'Resume group',
      'primary',
    );
    if (ok) await act(() => api.resumeGroup(name, id), `Resumed ${id}.`);
    changed();
  };
  const limit = async () => {
    const shared = limits.groupConcurrency;
    const values = await dialog({
      title: `Limit of the group ${id}`,
      confirm: 'Set limit',
      body: [
        h('p', null, `The most jobs of ${id} running at once, on every worker, from their next claim. Running jobs are not stopped.`),
        h('div', { class: 'field-row' }, limitInput('concurrency', `Limit of ${id}`, group.concurrency)),
        h(
          'p',
          { class: 'muted small' },
          `Leave it empty for no limit of its own: then the queue's applies (${shared === undefined ? 'none is set' : `${num(shared)} per group`}).`,
        ),
      ],
    });
    if (!values) return;
    const concurrency = limitValue(values.concurrency);
    await act(
      () => api.setGroupLimit(name, id, concurrency),
      (r) =>
        !r.changed ? `${id} already had that limit.` : concurrency === null ? `${id} has no limit of its own.` : `${id}: at most ${num(concurrency)} at once.`,
    );
    changed();
  };
  return [
    group.paused
      ? button('Resume…', resume, { small: true, compact: true, icon: 'play', ariaLabel: `Resume ${id}` })
      : button('Pause…', pause, { small: true, compact: true, icon: 'pause', ariaLabel: `Pause ${id}` }),
    button('Set limit…', limit, { small: true, compact: true, tone: 'ghost', ariaLabel: `Set the limit of ${id}` }),
  ];
}
