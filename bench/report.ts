/** Turns results into the printed table, the JSON file and the SVG chart of lateness. */
import type { Limits } from './limits.js';
import { type Cost, type Dispatch, type Enqueue, type Lateness, SINGLE_IN_FLIGHT } from './scenarios.js';

/** One run of every scenario for one system. */
export interface RunResult {
  load?: Lateness;
  low?: Lateness;
  dispatch?: Dispatch;
  /** The same with two worker processes (scenarios.ts dispatchWorkers). */
  dispatch2?: Dispatch;
  enqueue?: Enqueue;
  cost?: Cost;
  scale?: Lateness;
}

/** A system's runs (--repeat n: n of them, each scenario run n times in a row). */
export interface SystemResult {
  system: string;
  runs: RunResult[];
}

/** What a row may need besides its own run: the server's limits (medians over their runs). */
interface Context {
  evalshaPerSec?: number;
}

interface Row {
  label: string | ((results: SystemResult[], limits: Limits[]) => string);
  value: (r: RunResult, ctx: Context) => number | undefined;
  /** A figure of the server, not of a system: the same in every column, from the limit runs. */
  server?: (l: Limits) => number | undefined;
  unit: string;
  /** How delayq should compare: a ratio to BullMQ or an absolute bound. */
  goal?: { kind: 'max' | 'min' | 'ratioMin'; bound: number; text: string };
  lowerIsBetter: boolean;
}

const ROWS: Row[] = [
  {
    label: (_, l) => `server limit: ZADD, redis-benchmark ${l[0]?.args ?? ''}`,
    server: (l) => l.zaddPerSec,
    value: () => undefined,
    unit: 'ops/s',
    lowerIsBetter: false,
  },
  {
    label: (_, l) => `server limit: EVALSHA of return 1, redis-benchmark ${l[0]?.args ?? ''}`,
    server: (l) => l.evalshaPerSec,
    value: () => undefined,
    unit: 'ops/s',
    lowerIsBetter: false,
  },
  { label: 'lateness p50 @10k/s', value: (r) => r.load?.p50, unit: 'ms', lowerIsBetter: true },
  { label: 'lateness p99 @10k/s', value: (r) => r.load?.p99, unit: 'ms', goal: { kind: 'max', bound: 5, text: '≤ 5 ms' }, lowerIsBetter: true },
  { label: 'lateness max @10k/s', value: (r) => r.load?.max, unit: 'ms', lowerIsBetter: true },
  { label: 'Redis CPU per job @10k/s (a worker keeping up)', value: (r) => r.load?.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'enqueue overran the 10k/s window', value: (r) => r.load?.enqueueOverrunMs, unit: 'ms', lowerIsBetter: true },
  { label: 'lateness p50 @400/s', value: (r) => r.low?.p50, unit: 'ms', lowerIsBetter: true },
  { label: 'lateness p99 @400/s', value: (r) => r.low?.p99, unit: 'ms', lowerIsBetter: true },
  { label: 'Redis CPU per job @400/s (a worker keeping up: claims of a job or two)', value: (r) => r.low?.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: '  script calls per job @400/s (claims, acks, empty claims)', value: (r) => r.low?.scriptCallsPerJob, unit: 'calls', lowerIsBetter: true },
  {
    label: 'max dispatch with ack',
    value: (r) => r.dispatch?.perSec,
    unit: 'jobs/s',
    goal: { kind: 'ratioMin', bound: 5, text: '≥ 5× BullMQ' },
    lowerIsBetter: false,
  },
  { label: 'bulk enqueue', value: (r) => r.enqueue?.perSec, unit: 'jobs/s', goal: { kind: 'ratioMin', bound: 5, text: '≥ 5× BullMQ' }, lowerIsBetter: false },
  {
    label: 'dispatch as a share of the EVALSHA limit',
    value: (r, ctx) => (r.dispatch && ctx.evalshaPerSec ? (r.dispatch.perSec / ctx.evalshaPerSec) * 100 : undefined),
    unit: '%',
    lowerIsBetter: false,
  },
  { label: 'Redis CPU per job, dispatch (claims + acks)', value: (r) => r.dispatch?.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'worker process CPU per job, dispatch', value: (r) => r.dispatch?.workerCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'dispatch with ack, warm (a second backlog, same worker process)', value: (r) => r.dispatch?.warm?.perSec, unit: 'jobs/s', lowerIsBetter: false },
  { label: '  Redis CPU per job, dispatch, warm', value: (r) => r.dispatch?.warm?.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: '  worker process CPU per job, dispatch, warm', value: (r) => r.dispatch?.warm?.workerCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'dispatch with ack, 2 worker processes', value: (r) => r.dispatch2?.perSec, unit: 'jobs/s', lowerIsBetter: false },
  { label: 'Redis CPU per job, dispatch, 2 workers', value: (r) => r.dispatch2?.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'workers’ CPU per job (summed), dispatch, 2 workers', value: (r) => r.dispatch2?.workerCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'Redis CPU per job, bulk enqueue', value: (r) => r.enqueue?.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'producer process CPU per job, bulk enqueue', value: (r) => r.enqueue?.producerCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: `single adds, ${SINGLE_IN_FLIGHT} in flight`, value: (r) => r.enqueue?.single.perSec, unit: 'jobs/s', lowerIsBetter: false },
  { label: 'Redis CPU per job, single adds', value: (r) => r.enqueue?.single.redisCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'producer process CPU per job, single adds', value: (r) => r.enqueue?.single.producerCpuUsPerJob, unit: 'µs', lowerIsBetter: true },
  { label: 'commands/job, enqueue', value: (r) => r.cost?.enqueueCommandsPerJob, unit: '', lowerIsBetter: true },
  { label: 'commands/job, processing', value: (r) => r.cost?.processCommandsPerJob, unit: '', lowerIsBetter: true },
  {
    label: 'commands/job, end to end',
    value: (r) => (r.cost ? r.cost.enqueueCommandsPerJob + r.cost.processCommandsPerJob : undefined),
    unit: '',
    goal: { kind: 'max', bound: 1, text: '≤ 1' },
    lowerIsBetter: true,
  },
  {
    label: (rs) => {
      const c = rs.flatMap((r) => r.runs).find((r) => r.cost)?.cost;
      return c ? `bytes per pending job (used_memory Δ / ${count(c.memoryJobs)}, id job-N, ${c.memoryPayloadBytes} B payload)` : 'bytes per pending job';
    },
    value: (r) => r.cost?.bytesPerPendingJob,
    unit: 'B',
    goal: { kind: 'max', bound: 250, text: '≤ 250 B' },
    lowerIsBetter: true,
  },
  { label: '  of which keyspace (dict entries, buckets, key objects)', value: (r) => r.cost?.keyspaceBytesPerPendingJob, unit: 'B', lowerIsBetter: true },
  { label: '  keys per pending job (DBSIZE Δ / jobs)', value: (r) => r.cost?.keysPerPendingJob, unit: '', lowerIsBetter: true },
  { label: '  plus expiring keys right after the adds (memos)', value: (r) => r.cost?.transientBytesPerJob, unit: 'B/job', lowerIsBetter: true },
  {
    label: 'idle commands/s, 1 worker',
    value: (r) => r.cost?.idleCommandsPerSec,
    unit: '/s',
    goal: { kind: 'max', bound: 0, text: '0' },
    lowerIsBetter: true,
  },
  { label: 'lateness p99, 1M pending', value: (r) => r.scale?.p99, unit: 'ms', lowerIsBetter: true },
  { label: 'worker script µs/call, 1M pending', value: (r) => r.scale?.scriptUsecPerCall, unit: 'µs', lowerIsBetter: true },
  { label: '  the same per job that fell due (delayq hands out several a call)', value: (r) => r.scale?.scriptUsecPerJob, unit: 'µs', lowerIsBetter: true },
];

/** Median and spread of one figure over the runs that have it. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: (number | undefined)[]): Spread | undefined {
  const v = values.filter((x): x is number => x !== undefined && !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  return { median, min: v[0]!, max: v.at(-1)!, n: v.length };
}

/** One row of the table, as the JSON keeps it. */
export interface SummaryRow {
  label: string;
  unit: string;
  values: Record<string, Spread | undefined>;
  /** delayq / BullMQ, of the medians. */
  ratio?: number;
  goal?: string;
  met?: boolean;
}

export function summary(results: SystemResult[], limits: Limits[]): SummaryRow[] {
  const ctx: Context = {};
  const evalsha = spread(limits.map((l) => l.evalshaPerSec));
  if (evalsha) ctx.evalshaPerSec = evalsha.median;
  return ROWS.map((row) => {
    const values: Record<string, Spread | undefined> = {};
    for (const r of results) values[r.system] = row.server ? spread(limits.map(row.server)) : spread(r.runs.map((run) => row.value(run, ctx)));
    const dv = values.delayq?.median;
    const bv = values.bullmq?.median;
    const out: SummaryRow = { label: typeof row.label === 'string' ? row.label : row.label(results, limits), unit: row.unit, values };
    if (!row.server && dv !== undefined && bv !== undefined && bv !== 0) out.ratio = dv / bv;
    if (row.goal) {
      out.goal = row.goal.text;
      if (row.goal.kind === 'ratioMin') {
        if (out.ratio !== undefined) out.met = out.ratio >= row.goal.bound;
      } else if (dv !== undefined) out.met = row.goal.kind === 'max' ? dv <= row.goal.bound : dv >= row.goal.bound;
    }
    return out;
  });
}

/** 200000 → 200k. */
function count(n: number): string {
  return n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n);
}

export function fmt(v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return '—';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 10) return v.toFixed(1).replace(/\.0$/, '');
  return v.toFixed(2).replace(/\.?0+$/, '') || '0';
}

/** The median, and the spread (min–max) when there was more than one run: "36,470 (35,100–37,900)". */
function cell(s: Spread | undefined): string {
  if (!s) return '—';
  return s.n > 1 ? `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})` : fmt(s.median);
}

export function table(results: SystemResult[], limits: Limits[]): string {
  const systems = results.map((r) => r.system);
  const header = ['figure', ...systems, 'delayq/BullMQ', 'goal', 'met'];
  const lines = [header];
  for (const row of summary(results, limits)) {
    lines.push([
      `${row.label}${row.unit ? ` (${row.unit})` : ''}`,
      ...systems.map((s) => cell(row.values[s])),
      row.ratio === undefined ? '—' : `${row.ratio.toFixed(2)}×`,
      row.goal ?? '',
      row.met === undefined ? '' : row.met ? 'yes' : 'no',
    ]);
  }
  return markdownTable(lines);
}

/** A Markdown table of rows (the first is the header): the first column left-aligned, the rest right. */
export function markdownTable(lines: string[][]): string {
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  const render = (l: string[]) => `| ${l.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  return [
    render(lines[0]!),
    `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...lines.slice(1).map(render),
  ].join('\n');
}

/** A CDF of lateness per system (log x axis), hand-written SVG: no chart library for one chart. */
export function latenessSvg(results: SystemResult[], title: string): string {
  const W = 720;
  const H = 420;
  const left = 60;
  const bottom = 50;
  const top = 40;
  const right = 150;
  const colours = ['#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e'];
  const xMin = 0.1;
  const xMax = 10_000;
  const x = (ms: number) =>
    left + ((Math.log10(Math.min(xMax, Math.max(xMin, ms))) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * (W - left - right);
  const y = (f: number) => H - bottom - f * (H - bottom - top);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${left}" y="24" font-size="14" font-weight="bold">${title}</text>`,
  ];
  for (const ms of [0.1, 1, 10, 100, 1000, 10_000]) {
    parts.push(
      `<line x1="${x(ms)}" y1="${top}" x2="${x(ms)}" y2="${H - bottom}" stroke="#ddd"/>`,
      `<text x="${x(ms)}" y="${H - bottom + 16}" text-anchor="middle">${ms}</text>`,
    );
  }
  for (const f of [0, 0.5, 0.9, 0.99, 1])
    parts.push(
      `<line x1="${left}" y1="${y(f)}" x2="${W - right}" y2="${y(f)}" stroke="#eee"/>`,
      `<text x="${left - 6}" y="${y(f) + 4}" text-anchor="end">${f}</text>`,
    );
  parts.push(`<text x="${(left + W - right) / 2}" y="${H - 12}" text-anchor="middle">lateness, ms (handler start − due time), log scale</text>`);
  results.forEach((r, i) => {
    const s = r.runs[0]?.load?.samples;
    if (!s || s.length === 0) return;
    const step = Math.max(1, Math.floor(s.length / 400));
    const pts: string[] = [];
    for (let k = 0; k < s.length; k += step) pts.push(`${x(s[k]!).toFixed(1)},${y(k / s.length).toFixed(1)}`);
    pts.push(`${x(s.at(-1)!).toFixed(1)},${y(1).toFixed(1)}`);
    const c = colours[i % colours.length]!;
    parts.push(`<polyline fill="none" stroke="${c}" stroke-width="2" points="${pts.join(' ')}"/>`);
    parts.push(
      `<rect x="${W - right + 12}" y="${top + i * 20}" width="12" height="12" fill="${c}"/>`,
      `<text x="${W - right + 30}" y="${top + i * 20 + 11}">${r.system} (p99 ${fmt(spread(r.runs.map((run) => run.load?.p99))?.median)} ms)</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}
