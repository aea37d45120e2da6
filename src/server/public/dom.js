/**
 * The only way the pages make elements. Data reaches the page as text nodes and attribute
 * values, never as markup: nothing here parses HTML from a string, so a payload such as
 * `<img src=x onerror=alert(1)>` shows as those characters and runs nothing. Event handlers
 * are attached with addEventListener (the CSP forbids inline ones).
 */

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Sets attributes and listeners on an element. `on*` keys with a function value become
 * listeners; `class` may be an array (falsy entries dropped); `false`/`null`/`undefined`
 * values leave the attribute out, `true` sets it empty (boolean attributes).
 */
function apply(el, attrs) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'class' && Array.isArray(value)) {
      const names = value.filter(Boolean).join(' ');
      if (names) el.setAttribute('class', names);
    } else if (key === 'dataset') {
      for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
    } else if (key === 'value' && 'value' in el) {
      el.value = String(value);
    } else if (key === 'checked' || key === 'disabled' || key === 'selected') {
      el[key] = Boolean(value);
      if (key === 'disabled') el.setAttribute('disabled', '');
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
}

/** Appends children: nodes as they are, strings and numbers as text, arrays flattened, falsy skipped. */
function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false || child === true) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** An HTML element: `h('a', { href: '#/' }, 'Home')`. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** An SVG element (charts, icons): same contract as h(). */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/**
 * What identifies a control across re-renders: its link target, accessible name or form name,
 * else its words without the numbers (a tab's count changes, the tab does not).
 */
function focusKey(el) {
  const id = el.getAttribute('href') ?? el.getAttribute('aria-label') ?? el.getAttribute('name') ?? el.textContent.replace(/[\d,.\s]+/g, '');
  return `${el.tagName}:${id}`;
}

/**
 * Replaces an element's children. Live updates redraw parts of a page every couple of
 * seconds; when the keyboard focus was inside, it moves to the control with the same
 * identity in the new content, so a keyboard user is not thrown back to the page's start.
 */
export function replace(el, ...children) {
  const active = document.activeElement;
  const key = active && active !== el && el.contains(active) ? focusKey(active) : undefined;
  el.replaceChildren();
  append(el, children);
  if (key) {
    const match = [...el.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')].find((n) => focusKey(n) === key);
    match?.focus({ preventScroll: true });
  }
  return el;
}

/** A small inline icon from a path list (24×24 viewBox, stroked), decorative only. */
export function icon(name) {
  const paths = ICONS[name] ?? [];
  return s('svg', { class: 'icon', viewBox: '0 0 24 24', 'aria-hidden': 'true', focusable: 'false' }, ...paths.map((d) => s('path', { d })));
}

const ICONS = {
  back: ['M15 18l-6-6 6-6'],
  next: ['M9 6l6 6-6 6'],
  search: ['M11 19a8 8 0 1 1 0-16 8 8 0 0 1 0 16z', 'M21 21l-4.3-4.3'],
  pause: ['M9 5v14', 'M15 5v14'],
  play: ['M7 5l12 7-12 7z'],
  trash: ['M4 7h16', 'M10 11v6', 'M14 11v6', 'M6 7l1 13h10l1-13', 'M9 7V4h6v3'],
  retry: ['M4 12a8 8 0 0 1 14-5.3L20 9', 'M20 4v5h-5', 'M20 12a8 8 0 0 1-14 5.3L4 15', 'M4 20v-5h5'],
  clock: ['M12 21a9 9 0 1 1 0-18 9 9 0 0 1 0 18z', 'M12 7v5l3 2'],
  bolt: ['M13 3L5 14h6l-1 7 8-11h-6z'],
  alert: ['M12 3l9 16H3z', 'M12 10v4', 'M12 17v.01'],
  x: ['M6 6l12 12', 'M18 6L6 18'],
  up: ['M12 19V5', 'M5 12l7-7 7 7'],
  down: ['M12 5v14', 'M5 12l7 7 7-7'],
  calendar: ['M4 6h16v14H4z', 'M4 10h16', 'M8 3v4', 'M16 3v4'],
  cpu: ['M7 7h10v10H7z', 'M10 3v4', 'M14 3v4', 'M10 17v4', 'M14 17v4', 'M3 10h4', 'M3 14h4', 'M17 10h4', 'M17 14h4'],
  list: ['M8 6h13', 'M8 12h13', 'M8 18h13', 'M3 6h.01', 'M3 12h.01', 'M3 18h.01'],
};
