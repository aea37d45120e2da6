/**
 * The claim planner of a sharded queue alone: which shards a claim asks, and how many jobs each.
 * A claim's Redis cost is mostly per call, so in a backlog a claim asks one shard for a whole
 * batch, in turn; shards whose jobs merely fell due are all asked at once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ClaimPlan, ClaimPlanner } from '../../src/store/sharded/claim-planner.js';
import type { ClaimedJob, ClaimResult } from '../../src/store/store.js';

const SHARDS = ['a', 'b', 'c'];
const answer = (got: number, more: boolean): ClaimResult =>
  ({ nowMs: Date.now(), jobs: Array.from({ length: got }, () => ({}) as ClaimedJob), unreadable: [], more, nextWakeMs: undefined }) as ClaimResult;
const asked = (plans: ClaimPlan[]) => Object.fromEntries(plans.map((p) => [p.shard, p.count]));

test('a first claim asks every shard, the count split evenly', () => {
  const p = new ClaimPlanner();
  assert.deepEqual(asked(p.plan(SHARDS, 100).plans), { a: 34, b: 33, c: 33 });
});

test('in a backlog each claim asks one shard for the whole batch, each shard in turn, also while claims are in flight', () => {
  const p = new ClaimPlanner();
  for (const plan of p.plan(SHARDS, 99).plans) p.observe(plan, answer(plan.count, true), performance.now());
  // Two claims sent before either answers, then a third: three shards, one each.
  const first = p.plan(SHARDS, 100).plans;
  const second = p.plan(SHARDS, 100).plans;
  assert.equal(first.length, 1);
  assert.equal(second.length, 1);
  assert.equal(first[0]!.count, 100);
  assert.notEqual(first[0]!.shard, second[0]!.shard, 'the second claim in flight goes to another shard');
  p.observe(first[0]!, answer(100, true), performance.now());
  const third = p.plan(SHARDS, 100).plans;
  assert.equal(third.length, 1);
  assert.deepEqual(new Set([first, second, third].map((x) => x[0]!.shard)), new Set(SHARDS), 'no shard waits two turns');
  // A claim of 200 asks two shards for 100 each.
  assert.deepEqual(Object.values(asked(p.plan(SHARDS, 200).plans)), [100, 100]);
});

test('a shard that gave fewer jobs than asked is no backlog: the shards due are all asked again', () => {
  const p = new ClaimPlanner();
  const plans = p.plan(SHARDS, 99).plans;
  // a and b gave all they were asked and have more; c has more but gave less (a job or two due).
  for (const plan of plans) p.observe(plan, plan.shard === 'c' ? answer(5, true) : answer(plan.count, true), performance.now());
  assert.deepEqual(asked(p.plan(SHARDS, 99).plans), { a: 33, b: 33, c: 33 });
});

test('shards whose jobs fell due (their claims left nothing) are all asked at once', () => {
  const p = new ClaimPlanner();
  for (const plan of p.plan(SHARDS, 99).plans) p.observe(plan, answer(3, false), performance.now());
  for (const s of SHARDS) p.dueAt(s, Date.now() - 1);
  assert.equal(p.plan(SHARDS, 99).plans.length, 3);
});
