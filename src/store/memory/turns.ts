/**
 * The memory store's twin of _claim_turns.lua (claim's turns between groups): on a queue with
 * groups, lanes (each group, and the jobs of no group) take turns. Each lane at the head of the rotation gives one job per
 * round, up to its room, until the hand-out is full; a lane served goes to the tail while it has
 * more due and room, and leaves the rotation when it has not; a lane whose picks were all put
 * back for want of the queue's tokens was not served, and keeps its place. Within a lane: priority, then due
 * time, then add order. The same steps in the same order as the script, so both stores answer
 * alike (test/model/differential.test.ts).
 */
import { LIMIT, UNGROUPED_LANE } from '../lifecycle.js';
import type { MemJob, MemoryQueue } from './memory-queue.js';

export interface Turns {
  /** The jobs to hand out, in turn order. */
  picked: MemJob[];
  /** Groups held back by their rate limit in this claim: they leave the rotation, rate-wake brings them back. */
  blocked: Set<string>;
  /**
   * After the hand-out (the slots taken): the lanes served to the tail or out of the rotation.
   * `got` (on a queue with rate limits): the lanes that kept a job; one whose picks were all put
   * back for want of the queue's tokens was not served and keeps its place at the head.
   */
  rotate(got: ReadonlySet<string> | undefined): void;
}

/** Whether job x came due before y (due time, then add order): the order lanes join in. */
function earlier(x: MemJob, y: MemJob): boolean {
  return x.due < y.due || (x.due === y.due && x.seq < y.seq);
}

export function pickInTurns(q: MemoryQueue, now: number, want: number): Turns {
  // Due jobs go to their lanes; lanes that now have due jobs and room join the rotation's tail in
  // the order of their earliest job promoted here; the lane of no group by the earlier of that
  // and its first ready job from before (_claim_turns.lua: where a due job waited must not change
  // its turn, and a Redis claim of a queue without groups leaves due jobs it does not take in the
  // scheduled set, where this store moved them to the ready heap).
  const waited = q.readyHead();
  const firsts = new Map<string, MemJob>();
  const promoted = q.promoteDue(now, firsts);
  const ordered = [...promoted];
  if (waited) {
    const mine = firsts.get(UNGROUPED_LANE);
    if (!mine || earlier(waited, mine)) firsts.set(UNGROUPED_LANE, waited);
    if (!mine) ordered.push(UNGROUPED_LANE);
    ordered.sort((a, b) => (earlier(firsts.get(a)!, firsts.get(b)!) ? -1 : 1));
  }
  // Groups whose tokens come back or whose hold ends now (rate-wake): tokens given back, the next
  // look booked, and those with due jobs and room join after the lanes that got jobs here.
  const visited = q.rated ? q.rates.dueVisits(now, LIMIT.rate_visits) : [];
  for (const g of visited) {
    q.rates.trim(g, now);
    const at = q.rates.freeAt(g);
    if (at !== undefined) q.rates.book(g, at, 'set');
  }
  const joining: string[] = [];
  for (const lane of ordered) if (lane === UNGROUPED_LANE || q.groupRoom(q.group(lane)) > 0) joining.push(lane);
  for (const g of visited) {
    const st = q.groups.get(g);
    if (!promoted.includes(g) && st && q.groupEligible(st)) joining.push(g);
  }
  q.lanesJoin(joining);

  // The lanes at the head of the rotation, and how many jobs each may give.
  const lanes: { id: string; avail: number; take: number }[] = [];
  const gone: string[] = [];
  const blocked = new Set<string>();
  for (const id of [...q.lanes.keys()].slice(0, want)) {
    const g = id === UNGROUPED_LANE ? undefined : q.groups.get(id);
    let avail = id === UNGROUPED_LANE ? q.readyCount() : g ? Math.min(Math.max(0, q.groupRoom(g)), g.waiting) : 0;
    // A group's tokens (a job takes at least one): one with none leaves the rotation until they come back.
    if (q.rated && g && avail > 0) {
      const tokens = q.rates.tokens(id, q.groupRate(g), now);
      if (tokens < avail) avail = Math.max(0, tokens);
      if (avail === 0) blocked.add(id);
    }
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
    blocked,
    rotate(got) {
      const tail: string[] = [];
      for (const l of lanes) {
        const g = l.id === UNGROUPED_LANE ? undefined : q.groups.get(l.id);
        const more = l.id === UNGROUPED_LANE ? q.readyCount() > 0 : g !== undefined && !blocked.has(l.id) && q.groupEligible(g);
        if (!more) gone.push(l.id);
        else if (!got || got.has(l.id)) tail.push(l.id);
      }
      for (const id of gone) q.lanes.delete(id);
      q.lanesToTail(tail);
      // Held back by their rate limit: looked at again when a token comes back or the hold ends.
      for (const id of gone) if (blocked.has(id)) q.rates.book(id, q.rates.freeAt(id) ?? now + 1000, 'LT');
    },
  };
}
