/**
 * Pieces every page uses: state chips, stat cards, empty states, error notes, toasts, and
 * confirmation dialogs. Dialogs are native <dialog> opened with showModal(): the browser
 * traps focus inside, Esc cancels, and focus returns to the button that opened it.
 */
import { h, icon } from './dom.js';
import { num } from './format.js';

/** What the session allows; set once at start-up (app.js). */
export const session = { canWrite: false, readOnly: true, maxBulk: 1000, version: '', user: '', redacted: false };

/**
 * The state a person thinks of: a scheduled job whose time has come is "ready"; one whose time has
 * not come is listed under 'scheduled' (the listing's name) and shown as "upcoming".
 */
export function displayState(job) {
  return job.state === 'scheduled' && job.ready ? 'ready' : job.state;
}

/** A state's word on the page: the listing named `scheduled` holds the upcoming jobs. */
export function stateWord(state) {
  return state === 'scheduled' ? 'upcoming' : state;
}

export function stateChip(state) {
  return h('span', { class: ['chip', `chip-${state}`] }, stateWord(state));
}

export function badge(text, tone, iconName) {
  return h('span', { class: ['badge', `badge-${tone}`] }, iconName ? icon(iconName) : null, text);
}

/** A stat card: the label, a big number, and an optional line under it. */
export function stat(label, value, opts = {}) {
  return h(
    opts.href ? 'a' : 'div',
    { class: ['stat', opts.tone && `stat-${opts.tone}`], href: opts.href },
    h('span', { class: 'stat-label' }, label),
    h('span', { class: 'stat-value' }, typeof value === 'number' ? num(value) : value),
    opts.note ? h('span', { class: 'stat-note' }, opts.note) : null,
  );
}

export function emptyState(title, sentence, iconName = 'list') {
  return h('div', { class: 'empty' }, icon(iconName), h('p', { class: 'empty-title' }, title), sentence ? h('p', { class: 'empty-text' }, sentence) : null);
}

/** An error as a note in the page (message as text, never markup). */
export function errorNote(err, what) {
  return h(
    'div',
    { class: 'note note-error', role: 'alert' },
    icon('alert'),
    h('div', null, what ? h('strong', null, what) : null, h('p', null, err?.message ?? String(err))),
  );
}

export function loading(text = 'Loading…') {
  return h('div', { class: 'loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

export function button(label, onClick, opts = {}) {
  return h(
    'button',
    {
      type: opts.type ?? 'button',
      class: ['btn', opts.tone && `btn-${opts.tone}`, opts.small && 'btn-small', opts.compact && 'btn-compact'],
      onclick: onClick,
      disabled: opts.disabled,
      title: opts.title,
      'aria-label': opts.ariaLabel,
    },
    opts.icon ? icon(opts.icon) : null,
    // Icon buttons may drop their words on a phone (.btn-compact); the aria-label keeps the name.
    h('span', { class: 'btn-label' }, label),
  );
}

// ---- toasts ----

let toasts;

/** A short message in the corner; errors stay until dismissed, the rest fade after 5 s. */
export function toast(message, tone = 'info') {
  if (!toasts) {
    toasts = h('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(toasts);
  }
  const close = h('button', { type: 'button', class: 'toast-close', 'aria-label': 'Dismiss' }, icon('x'));
  const el = h('div', { class: ['toast', `toast-${tone}`] }, h('span', null, message), close);
  close.addEventListener('click', () => el.remove());
  toasts.append(el);
  if (tone !== 'error') setTimeout(() => el.remove(), 5000);
}

/** Runs a write; on success toasts `done(result)`, on failure the server's message. */
export async function act(fn, done) {
  try {
    const result = await fn();
    if (done) toast(typeof done === 'function' ? done(result) : done, 'success');
    return result;
  } catch (err) {
    toast(err.message ?? String(err), 'error');
    return undefined;
  }
}

// ---- dialogs ----

/**
 * A modal dialog with `body` (nodes) and two buttons; resolves with the form's values when
 * confirmed, or undefined when cancelled. The confirm button is focused first unless the body
 * has an input (then that is).
 */
export function dialog({ title, body, confirm = 'Confirm', tone = 'primary', dismiss = 'Cancel' }) {
  return new Promise((resolve) => {
    // `dismiss` names the way out where "Cancel" would read as the action (cancelling a job).
    const cancelBtn = h('button', { type: 'button', class: 'btn', value: 'cancel' }, dismiss);
    const okBtn = h('button', { type: 'submit', class: ['btn', `btn-${tone}`], value: 'ok' }, confirm);
    const form = h(
      'form',
      { method: 'dialog', class: 'dialog-form' },
      h('h2', { class: 'dialog-title' }, title),
      h('div', { class: 'dialog-body' }, body),
      h('div', { class: 'dialog-actions' }, cancelBtn, okBtn),
    );
    const dlg = h('dialog', { class: 'dialog', 'aria-label': title }, form);
    let result;
    form.addEventListener('submit', (e) => {
      if (!form.reportValidity()) {
        e.preventDefault();
        return;
      }
      result = Object.fromEntries(new FormData(form).entries());
    });
    cancelBtn.addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(result);
    });
    document.body.append(dlg);
    dlg.showModal();
    (form.querySelector('input, select') ?? okBtn).focus();
  });
}

/** A yes/no confirmation; resolves true when confirmed. */
export async function confirmAction(title, sentence, confirm, tone = 'danger', dismiss = 'Cancel') {
  return (await dialog({ title, body: h('p', null, sentence), confirm, tone, dismiss })) !== undefined;
}
