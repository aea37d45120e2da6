/**
 * The memory store's twin of claim.lua's pick_in_turns: on a queue with groups, lanes (each group,
 * and the jobs of no group) take turns. Each lane at the head of the rotation gives one job per
 * round, up to its room, until the hand-out is full; a lane served goes to the tail while it has
 * more due and room, and leaves the rotation when it has not. Within a lane: priority, then due
 * time, then add order. The same steps in the same order as the script, so both stores answer
 * alike (test/model/differential.test.ts).
 */
import { UNGROUPED_LANE } from '../lifecycle.js';
import type { MemJob, MemoryQueue } from './memory-queue.js';

export interface Turns {
  /** The jobs to hand out, in turn order. */
  picked: MemJob[];
  /** After the hand-out (the slots taken): the lanes served to the tail or out of the rotation. */
  rotate(): void;
}

export function pickInTurns(q: MemoryQueue, now: number, want: number): Turns {
  // Due jobs go to their lanes; lanes that now have due jobs and room join the rotation's tail in
  // the order of their earliest job (the lane of no group first when it has ready jobs none of
  // which came due here).
  const promoted = q.promoteDue(now);
  const joining: string[] = [];
  if (q.readyCount() > 0 && !promoted.includes(UNGROUPED_LANE)) joining.push(UNGROUPED_LANE);
  for (const lane of promoted) if (lane === UNGROUPED_LANE || q.groupRoom(q.group(lane)) > 0) joining.push(lane);
  q.lanesJoin(joining);

  // The lanes at the head of the rotation, and how many jobs each may give.
  const lanes: { id: string; avail: number; take: number }[] = [];
  const gone: string[] = [];
  for (const id of [...q.lanes.keys()].slice(0, want)) {
    const g = id === UNGROUPED_LANE ? undefined : q.groups.get(id);
    const avail = id === UNGROUPED_LANE ? q.readyCount() : g ? Math.min(Math.max(0, q.groupRoom(g)), g.waiting) : 0;
    if (avail > 0) lanes.push({ id, avail, take: 0 });
    else gone.push(id);
  }
  // Rounds: each lane one job per round while it has more, until the hand-out is full.
  const turns: number[] = [];
  for (let round = 1; turns.length < want; round++) {
    let any = false;
    lanes.forEach((l, i) => {
      if (turns.length < want && l.avail >= round) {
        l.take++;
        turns.push(i);
        any = true;
      }
    });
    if (!any) break;
  }
  // Each lane's jobs from its line, in its order; then the hand-out in turn order.
  const taken = lanes.map((l) => {
    const out: MemJob[] = [];
    const g = l.id === UNGROUPED_LANE ? undefined : q.groups.get(l.id)!;
    for (let n = 0; n < l.take; n++) {
      const job = g ? q.popWaiting(g) : q.popReady();
      if (!job) break;
      out.push(job);
    }
    return out;
  });
  const next = new Array<number>(lanes.length).fill(0);
  const picked: MemJob[] = [];
  for (const i of turns) {
    const job = taken[i]![next[i]!++];
    if (job) picked.push(job);
  }
  return {
    picked,
    rotate() {
      const tail: string[] = [];
      for (const l of lanes) {
        const g = l.id === UNGROUPED_LANE ? undefined : q.groups.get(l.id);
        const more = l.id === UNGROUPED_LANE ? q.readyCount() > 0 : g !== undefined && q.groupEligible(g);
        (more ? tail : gone).push(l.id);
      }
      for (const id of gone) q.lanes.delete(id);
      q.lanesToTail(tail);
    },
  };
}
