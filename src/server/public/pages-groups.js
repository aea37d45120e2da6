/**
 * Flow control on a queue's page: the line that shows the queue's limits (concurrency, and
 * groupConcurrency: the most of any one group; rateLimit and groupRateLimit: the most tokens in a
 * window) and its rate limiter now, with the dialog that sets them, and the actions on one group
 * of the Groups tab (pause, resume, a limit and a rate limit of its own). Every change goes
 * through a dialog that says what it does; the limits and the pauses hold on every worker at its
 * next claim.
 */
import { api } from './api.js';
import { h, icon } from './dom.js';
import { duration, num, plural, serverNow } from './format.js';
import { act, button, confirmAction, dialog, session, toast } from './ui.js';

/** The most a limit may be (the library's MAX_CONCURRENCY). */
const LIMIT_MAX = 100_000;

/** The most a rate limit's tokens and window may be (the library's MAX_RATE_TOKENS, MAX_RATE_WINDOW_MS). */
const RATE_MAX = 1_000_000;
const RATE_WINDOW_MAX = 7 * 24 * 3600 * 1000;

/** A limit as a person reads it. */
const limitText = (v) => (v === undefined || v === null ? 'no limit' : num(v));

/** A rate limit ({ max, perMs }) as a person reads it: "100 per 1 s". */
export const rateText = (r) => (r === undefined || r === null ? 'no limit' : `${num(r.max)} per ${duration(r.perMs)}`);

/** A hold (a RateLimitSignal) still to run, on the server's clock; undefined when none. */
export const holdLeft = (use) => (use?.heldUntilMs !== undefined && use.heldUntilMs > serverNow() ? use.heldUntilMs - serverNow() : undefined);

/** Two number fields for a rate limit: tokens, and the window in ms; both empty means none. */
function rateInputs(name, label, value) {
  const field = (suffix, what, max, v, placeholder) =>
    h('input', {
      type: 'number',
      name: `${name}.${suffix}`,
      min: '1',
      max: String(max),
      step: '1',
      value: v ?? '',
      placeholder,
      'aria-label': `${label} ${what}`,
      class: 'input',
    });
  return h(
    'div',
    { class: 'field-row' },
    field('max', 'tokens', RATE_MAX, value?.max, 'tokens'),
    h('span', { class: 'muted field-sep' }, 'per'),
    field('perMs', 'window (ms)', RATE_WINDOW_MAX, value?.perMs, 'window, ms'),
  );
}

/**
 * The rate limit the dialog's two fields say: both empty is none (null), else { max, perMs } as
 * typed (a field left empty beside a filled one goes as null: the server's answer names it).
 */
function rateValue(values, name) {
  const max = values[`${name}.max`]?.trim() ?? '';
  const perMs = values[`${name}.perMs`]?.trim() ?? '';
  if (max === '' && perMs === '') return null;
  return { max: max === '' ? null : Number(max), perMs: perMs === '' ? null : Number(perMs) };
}

/** Whether two limits are the same: numbers, or rate limits ({ max, perMs }); null and undefined (none) alike. */
const sameLimit = (a, b) =>
  a === undefined || a === null || b === undefined || b === null
    ? (a ?? null) === (b ?? null)
    : typeof a === 'object'
      ? typeof b === 'object' && a.max === b.max && a.perMs === b.perMs
      : a === b;

/**
 * Of the limits a dialog's fields say, only those the person changed from what the form showed:
 * the form was filled as the page loaded them, and a limit set elsewhere since (another tab, the
 * CLI, an app) must not be reverted by a field nobody touched (issue 34, item 16d). The API
 * leaves a limit left out as it is.
 */
function changedOnly(shown, typed) {
  return Object.fromEntries(Object.entries(typed).filter(([k, v]) => !sameLimit(shown[k], v)));
}

/** "3 used · held 12 s · next back in 40 s": a limiter's figures now (rateStatus().queue, or a group's rate). */
export function rateUseText(use) {
  if (!use) return '';
  const held = holdLeft(use);
  return [
    `${num(use.used)} used`,
    held !== undefined ? `held ${duration(held)}` : null,
    use.nextRefillMs !== undefined ? `next back in ${duration(Math.max(0, use.nextRefillMs - serverNow()))}` : null,
  ]
    .filter(Boolean)
    .join(' · ');
}

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
 * "Concurrency 10 · per group 2", then the rate limits ("Rate 100 per 1 s · group rate 10 per 1
 * min") and the limiter now when there is one to show, with "Set limits…" for a person who may
 * write. `limits` is the queue detail's ({ concurrency?, groupConcurrency?, rateLimit?,
 * groupRateLimit? }), `rate` its rateStatus; `changed()` reloads what shows them.
 */
export function limitsLine(name, limits, changed, rate) {
  const rated = limits.rateLimit !== undefined || limits.groupRateLimit !== undefined;
  const held = holdLeft(rate?.queue);
  const busy = rate && (rate.queue.used > 0 || held !== undefined || rate.groupsHeld > 0);
  return [
    icon('cpu'),
    h('span', null, 'Concurrency ', h('strong', null, limitText(limits.concurrency)), ' · per group ', h('strong', null, limitText(limits.groupConcurrency))),
    rated || busy
      ? h(
          'span',
          { class: 'rate-line' },
          // On a phone the rate goes on a line of its own, without the dot that would lead it.
          h('span', { class: 'lead-sep' }, ' · '),
          'Rate ',
          h('strong', null, rateText(limits.rateLimit)),
          ' · group rate ',
          h('strong', null, rateText(limits.groupRateLimit)),
        )
      : null,
    busy
      ? h(
          'span',
          { class: held !== undefined ? 'rate-status rate-held' : 'rate-status muted', title: "The queue's rate limiter now (server clock)" },
          ` (${rateUseText(rate.queue)}${rate.groupsHeld > 0 ? ` · ${plural(rate.groupsHeld, 'group')} held back` : ''})`,
        )
      : null,
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
      h('p', null, 'Rate: the most tokens the queue’s jobs take in any window (a job takes 1, or its cost):'),
      rateInputs('rateLimit', 'Rate', limits.rateLimit),
      h('p', null, 'Rate per group: the most tokens any one group takes in any window (unless the group has a rate limit of its own):'),
      rateInputs('groupRateLimit', 'Rate per group', limits.groupRateLimit),
      h(
        'p',
        { class: 'muted small' },
        `Now: ${limitText(limits.concurrency)} at once, ${limitText(limits.groupConcurrency)} per group; rate ${rateText(limits.rateLimit)}, ${rateText(limits.groupRateLimit)} per group.`,
      ),
    ],
  });
  if (!values) return;
  const change = changedOnly(limits, {
    concurrency: limitValue(values.concurrency),
    groupConcurrency: limitValue(values.groupConcurrency),
    rateLimit: rateValue(values, 'rateLimit'),
    groupRateLimit: rateValue(values, 'groupRateLimit'),
  });
  if (Object.keys(change).length === 0) return toast(`Nothing changed: the limits of ${name} were left as they are.`);
  await act(
    () => api.setLimits(name, change),
    (r) =>
      r.changed
        ? `Limits of ${name}: ${limitText(r.limits.concurrency)} at once, ${limitText(r.limits.groupConcurrency)} per group; rate ${rateText(r.limits.rateLimit)}, ${rateText(r.limits.groupRateLimit)} per group.`
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
    const sharedRate = limits.groupRateLimit;
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
        h('p', null, `The most tokens the jobs of ${id} take in any window (a job takes 1, or its cost):`),
        rateInputs('rateLimit', `Rate of ${id}`, group.rateLimit),
        h(
          'p',
          { class: 'muted small' },
          `Leave both empty for no rate limit of its own: then the queue's applies (${sharedRate === undefined ? 'none is set' : `${rateText(sharedRate)} per group`}). Now: ${rateUseText(group.rate) || 'nothing used'}.`,
        ),
      ],
    });
    if (!values) return;
    // Only what the person changed: the group's other limit may have been set elsewhere since.
    const change = changedOnly(group, { concurrency: limitValue(values.concurrency), rateLimit: rateValue(values, 'rateLimit') });
    if (Object.keys(change).length === 0) {
      toast(`Nothing changed: the limits of ${id} were left as they are.`);
      return changed();
    }
    await act(
      () => api.setGroupLimit(name, id, change),
      (r) =>
        !r.changed
          ? `${id} already had these limits.`
          : `${id}: ${r.group.concurrency === undefined ? 'no limit of its own' : `at most ${num(r.group.concurrency)} at once`}, ${r.group.rateLimit === undefined ? 'no rate limit of its own' : `rate ${rateText(r.group.rateLimit)}`}.`,
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
