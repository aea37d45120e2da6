/**
 * Where the jobs of an add with dependencies go on a sharded queue (docs/flows.md): a job and
 * every job it waits for live on one shard, so each edge settles in one script. The jobs of the
 * call joined by dependencies go together: to the shard of the jobs they wait for that exist
 * already, else to the shard the last of them (a flow's root) routes to. Dependencies spread over
 * shards, or on a shard that takes no adds (a retired one), are refused, naming them; so is a
 * job of such a group whose group, dedup or debounce key routes elsewhere.
 */
import { ValidationError } from '../../errors.js';
import type { NewJob, Store } from '../store.js';
import { shardFor } from './layout.js';
import type { Resolved } from './layout-cache.js';

/**
 * The shard of each job of the call joined to another by a dependency (by index), for the
 * routing of this layout; jobs with no edge in the call and no dependency are absent (routed as
 * usual). `routeKey` is the router's key of a job alone.
 */
export async function holdRoutes(
  inner: Store,
  queue: string,
  r: Resolved,
  jobs: readonly NewJob[],
  left: readonly number[],
  routeKey: (job: NewJob) => string,
): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  const withHold = left.filter((i) => jobs[i]!.hold !== undefined);
  if (withHold.length === 0) return out;
  // Components of the call's jobs joined by dependencies (union-find over indices).
  const at = new Map<string, number>();
  for (const i of left) if (!at.has(jobs[i]!.id)) at.set(jobs[i]!.id, i);
  const parent = new Map<number, number>();
  const find = (i: number): number => {
    let p = parent.get(i) ?? i;
    while (p !== (parent.get(p) ?? p)) p = parent.get(p) ?? p;
    parent.set(i, p);
    return p;
  };
  const external = new Map<number, Set<string>>();
  for (const i of withHold) {
    for (const dep of jobs[i]!.hold!.dependsOn) {
      const k = at.get(dep);
      if (k !== undefined) parent.set(find(k), find(i));
      else external.set(i, (external.get(i) ?? new Set()).add(dep));
    }
  }
  const members = new Map<number, number[]>();
  for (const i of left) {
    const root = find(i);
    if (root === i && !parent.has(i) && !external.has(i) && jobs[i]!.hold === undefined) continue;
    members.set(root, [...(members.get(root) ?? []), i]);
  }
  // Where the existing dependencies are: each shard of the layout is asked for them.
  const outside = [...new Set([...external.values()].flatMap((s) => [...s]))];
  const home = new Map<string, string>();
  if (outside.length > 0) {
    await Promise.all(
      r.members.map(async (member) => {
        const found = await inner.getMany(member, outside, false);
        found.forEach((job, k) => {
          if (job) home.set(outside[k]!, member);
        });
      }),
    );
  }
  const current = new Set(
    r.layout.current === null ? [queue] : Array.from({ length: r.layout.current.count }, (_, k) => `${queue}#${r.layout.current!.from + k}`),
  );
  for (const group of members.values()) {
    const deps = [...new Set(group.flatMap((i) => [...(external.get(i) ?? [])]))];
    const shards = new Set(deps.map((d) => home.get(d)).filter((m): m is string => m !== undefined));
    if (shards.size > 1)
      throw new ValidationError(
        'dependsOn',
        `names jobs on different shards of a sharded queue (${deps.map((d) => JSON.stringify(d)).join(', ')}): a job and every job it waits for must be on one shard; add them together (addFlow, or one addBulk)`,
      );
    const last = group[group.length - 1]!;
    const shard = shards.size === 1 ? [...shards][0]! : shardFor(queue, r.layout.current, routeKey(jobs[last]!));
    if (!current.has(shard))
      throw new ValidationError('dependsOn', `names jobs on a shard that takes no new jobs since a reshard (${deps.map((d) => JSON.stringify(d)).join(', ')})`);
    for (const i of group) {
      const j = jobs[i]!;
      if ((j.group !== undefined || j.dedup !== undefined || j.debounce !== undefined) && shardFor(queue, r.layout.current, routeKey(j)) !== shard)
        throw new ValidationError(
          'dependsOn',
          `joins job ${JSON.stringify(j.id)} to a flow on another shard: its group, dedup or debounce key routes elsewhere on this sharded queue`,
        );
      out.set(i, shard);
    }
  }
  return out;
}
