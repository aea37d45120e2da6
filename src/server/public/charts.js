/**
 * Charts as inline SVG built with DOM calls: no library, nothing from a CDN, nothing the CSP
 * would refuse. The SVG stretches to its box (preserveAspectRatio="none"), so it holds shapes
 * only; every word (axis labels, the peak) is HTML around it and stays crisp at any width.
 * Each bar carries a <title>, the tooltip a mouse or screen reader gets.
 */
import { h, s } from './dom.js';

const W = 600;
const H = 100;

/** The largest value, at least `floor` so an idle hour does not draw noise as mountains. */
function peak(values, floor) {
  return Math.max(floor, ...values.filter((v) => Number.isFinite(v)));
}

/**
 * A bar per value. values: (number | undefined)[] (undefined: no sample, drawn as a faint
 * tick); opts: { label, tooltip(i, v), ticks: [left, …, right], tone, format(v), floor, small }.
 */
export function barChart(values, opts = {}) {
  const n = Math.max(values.length, 1);
  const max = peak(values, opts.floor ?? 1);
  const slot = W / n;
  const gap = Math.min(slot * 0.25, 3);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', class: 'chart-svg', 'aria-hidden': 'true' });
  // Guide lines at half and full height.
  svg.append(s('line', { x1: 0, x2: W, y1: H / 2, y2: H / 2, class: 'chart-grid', 'vector-effect': 'non-scaling-stroke' }));
  svg.append(s('line', { x1: 0, x2: W, y1: H - 0.5, y2: H - 0.5, class: 'chart-axis', 'vector-effect': 'non-scaling-stroke' }));
  values.forEach((v, i) => {
    const x = i * slot + gap / 2;
    const tip = opts.tooltip ? opts.tooltip(i, v) : String(v ?? 'no data');
    if (!Number.isFinite(v)) {
      svg.append(s('rect', { x, y: H - 2, width: slot - gap, height: 2, class: 'bar-empty' }, s('title', null, tip)));
      return;
    }
    const bh = v === 0 ? 0 : Math.max(2, (v / max) * (H - 4));
    // A full-height transparent hit area makes thin bars easy to hover.
    svg.append(
      s(
        'g',
        { class: 'bar' },
        s('rect', { x: i * slot, y: 0, width: slot, height: H, class: 'bar-hit' }),
        s('rect', { x, y: H - bh, width: slot - gap, height: bh, class: ['bar-fill', opts.tone && `tone-${opts.tone}`] }),
        s('title', null, tip),
      ),
    );
  });
  return frame(svg, values, max, opts);
}

/** A filled line (lateness): same options as barChart. Gaps (undefined) break the line. */
export function areaChart(values, opts = {}) {
  const n = Math.max(values.length, 2);
  const max = peak(values, opts.floor ?? 1);
  const step = W / (n - 1);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', class: 'chart-svg', 'aria-hidden': 'true' });
  svg.append(s('line', { x1: 0, x2: W, y1: H / 2, y2: H / 2, class: 'chart-grid', 'vector-effect': 'non-scaling-stroke' }));
  svg.append(s('line', { x1: 0, x2: W, y1: H - 0.5, y2: H - 0.5, class: 'chart-axis', 'vector-effect': 'non-scaling-stroke' }));
  // Runs of consecutive samples, each drawn as its own area and line.
  let run = [];
  const runs = [];
  values.forEach((v, i) => {
    if (Number.isFinite(v)) run.push([i * step, H - (v / max) * (H - 4)]);
    else if (run.length) {
      runs.push(run);
      run = [];
    }
  });
  if (run.length) runs.push(run);
  for (const r of runs) {
    const pts = r.length === 1 ? [r[0], [r[0][0] + step / 2, r[0][1]]] : r;
    const line = pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
    svg.append(
      s('polygon', { points: `${pts[0][0].toFixed(1)},${H} ${line} ${pts.at(-1)[0].toFixed(1)},${H}`, class: ['area-fill', opts.tone && `tone-${opts.tone}`] }),
    );
    svg.append(s('polyline', { points: line, class: ['area-line', opts.tone && `tone-${opts.tone}`], 'vector-effect': 'non-scaling-stroke' }));
  }
  // Hover targets with tooltips, one per point.
  values.forEach((v, i) => {
    const tip = opts.tooltip ? opts.tooltip(i, v) : String(v ?? 'no data');
    svg.append(s('rect', { x: Math.max(0, i * step - step / 2), y: 0, width: step, height: H, class: 'bar-hit' }, s('title', null, tip)));
  });
  return frame(svg, values, max, opts);
}

/** The HTML around a chart: its accessible name, the peak, and the tick labels under it. */
function frame(svg, values, max, opts) {
  const fmt = opts.format ?? String;
  const known = values.filter((v) => Number.isFinite(v));
  const summary = known.length === 0 ? 'no data yet' : `peak ${fmt(Math.max(...known))}`;
  return h(
    'figure',
    { class: ['chart', opts.small && 'chart-small'], role: 'img', 'aria-label': `${opts.label ?? 'chart'}: ${summary}` },
    opts.small ? null : h('div', { class: 'chart-peak' }, known.length ? fmt(max) : ''),
    // No figure at all (nothing recorded yet): say so rather than draw a flat line.
    known.length === 0 && opts.emptyText ? h('div', { class: 'chart-empty' }, h('span', null, opts.emptyText)) : null,
    h('div', { class: 'chart-plot' }, svg),
    opts.ticks ? h('div', { class: 'chart-ticks', 'aria-hidden': 'true' }, ...opts.ticks.map((t) => h('span', null, t))) : null,
  );
}
