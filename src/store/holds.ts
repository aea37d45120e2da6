/**
 * Holds (docs/flows.md), what both stores and the Queue share: how a dependency's end reads
 * back (wire.ts CHILD_OUTCOME), and the order an add sends jobs with dependencies in (each
 * after the jobs of the call it waits for, as the scripts require), refusing a cycle by name.
 */
import { ValidationError } from '../errors.js';
import type { StoredChildOutcome, StoredHold } from './store.js';

/** HOLD_STATE's phase letter (wire.ts) as StoredHold names it; both stores use it. */
export const HOLD_PHASE = { h: 'held', r: 'released', t: 'timedOut', d: 'failed' } as const;

/** HOLD_STATE (wire.ts) as a StoredHold without its deadline and children; undefined when it does not read. */
export function parseHoldState(text: string): Omit<StoredHold, 'deadlineAtMs' | 'children'> | undefined {
  const m = /^(\d+):(\d+):([fi]):(\d+):([hrtd])(?::(.+))?$/.exec(text);
  if (!m) return undefined;
  const phase = HOLD_PHASE[m[5] as keyof typeof HOLD_PHASE];
  return { phase, pending: Number(m[1]), failed: Number(m[2]), onChildFailure: m[3] === 'i' ? 'ignore' : 'fail', dueAtMs: Number(m[4]), signal: m[6] };
}

/** One dependency's end as stored (wire.ts CHILD_OUTCOME; '' while it has not ended). */
export function childOutcome(id: string, text: string): StoredChildOutcome {
  const value = text.slice(1);
  switch (text[0]) {
    case 'c':
      return { id, outcome: 'completed', value };
    case 'd':
      return { id, outcome: 'dead', value };
    case 'x':
      return { id, outcome: 'cancelled', value };
    default:
      return { id, outcome: undefined, value: '' };
  }
}

/**
 * The order to send jobs in so that each comes after the jobs of the same call it depends on:
 * the given order when it already is (the common case, and what addFlow makes), else a stable
 * topological order. A cycle among the call's jobs is refused, naming it; dependencies outside
 * the call are the store's to check (they must exist).
 */
export function dependencyOrder<T extends { id: string; dependsOn: readonly string[] | undefined }>(jobs: readonly T[]): number[] {
  const at = new Map<string, number>();
  jobs.forEach((j, i) => {
    if (!at.has(j.id)) at.set(j.id, i);
  });
  const inOrder = jobs.every((j, i) => (j.dependsOn ?? []).every((d) => (at.get(d) ?? -1) < i));
  if (inOrder) return jobs.map((_, i) => i);
  const out: number[] = [];
  const state = new Array<0 | 1 | 2>(jobs.length).fill(0); // 0 new, 1 on the path, 2 placed
  const path: number[] = [];
  const visit = (i: number) => {
    if (state[i] === 2) return;
    if (state[i] === 1) {
      const cycle = path.slice(path.indexOf(i)).map((k) => jobs[k]!.id);
      throw new ValidationError('dependsOn', `a cycle: ${[...cycle, jobs[i]!.id].map((id) => JSON.stringify(id)).join(' -> ')}`);
    }
    state[i] = 1;
    path.push(i);
    for (const d of jobs[i]!.dependsOn ?? []) {
      const k = at.get(d);
      if (k !== undefined && k !== i) visit(k);
    }
    path.pop();
    state[i] = 2;
    out.push(i);
  };
  for (let i = 0; i < jobs.length; i++) visit(i);
  return out;
}
