/**
 * Every argument of every script is checked before the script's first write, proved by a table
 * generated from the published manifest: for each script, each argument and item field whose
 * rule (`accepts`, wire.ts ARG_RULES) refuses something, and each value the rule refuses
 * ('nan', 'inf', '0x1A', a bound plus one, a control character…), run the script as a foreign
 * client would (EVALSHA with hand-made ARGV) and check that it fails naming the argument and that
 * every key of the queue is byte for byte what it was (DUMP), request memos and the queue
 * registry included. Redis keeps the writes a script made before an error, so a check made after
 * a write shows here. A bad item field goes in the last item but one or the last, after an item
 * that writes (a replace): a check made per item as it is written shows too.
 *
 * A new script needs a baseline below (the test fails without one); a new argument needs a rule
 * (wire.ts argRule throws without one) and is then covered here by that rule.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RedisStore } from '../../src/index.js';
import { protocolManifest } from '../../src/store/redis/protocol.js';
import type { ArgRule, ScriptName } from '../../src/store/redis/wire.js';
import { uniqueName } from '../helpers/names.js';
import { callHead, callScript } from '../helpers/protocol-call.js';
import { runScript } from '../../src/store/redis/scripts.js';
import { newJob } from '../helpers/new-job.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { queueDump } from '../helpers/queue-dump.js';

const fx = useRedis();
const manifest = protocolManifest();

type Values = Record<string, string | number>;
interface Baseline {
  /** Writes the state the call runs against; returns values the call needs (a lease token). */
  seed: (s: RedisStore, q: string) => Promise<Values>;
  args: (seeded: Values) => Values;
  items?: (seeded: Values) => Values[];
  /** The item a bad value of this field goes in (default: the last). */
  itemOf?: (field: string) => number;
}

const later = (id: string) => newJob(id, { delayMs: 60_000 });
const leased = async (s: RedisStore, q: string): Promise<Values> => {
  await s.add(q, [newJob('a'), later('b')]);
  const c = await s.claim(q, 1, 60_000, 3);
  return { token: c.jobs[0]!.token };
};
const scheduled = async (s: RedisStore, q: string): Promise<Values> => {
  await s.add(q, [later('a'), later('b')]);
  return {};
};
const DEBOUNCE = new Set(['debounce_key', 'debounce_ms', 'debounce_max_ms']);
const HOLD = new Set(['depends_on', 'deadline_ms', 'deadline_at', 'on_child_failure']);

/** A valid call of each script; the table changes one value of it. */
const BASELINES: Record<ScriptName, Baseline> = {
  add: {
    seed: scheduled,
    args: () => ({ request_id: 'r1', memo_ms: 60_000, item_fields: 'holds' }),
    // The first item replaces a scheduled job (a write that would come first), the second takes a
    // dedup key with a group and a cost, the third debounces.
    items: (): Values[] => [
      { id: 'a', data: '1', delay_ms: 0, priority: 0, replace: '1' },
      {
        id: 'x',
        data: '2',
        delay_ms: 0,
        priority: 5,
        max_attempts: 3,
        replace: '0',
        dedup_key: 'k',
        dedup_ms: 60_000,
        name: 'send-email',
        group: 'g',
        cost: 2,
      },
      { id: 'y', data: '3', delay_ms: 0, priority: 0, replace: '0', debounce_key: 'd', debounce_ms: 100, debounce_max_ms: 1000 },
      // The fourth waits for the first (docs/flows.md).
      { id: 'z', data: '4', delay_ms: 0, priority: 0, replace: '0', depends_on: 'a', deadline_ms: 60_000, on_child_failure: 'ignore' },
    ],
    itemOf: (f) => (DEBOUNCE.has(f) ? 3 : HOLD.has(f) ? 4 : 2),
  },
  claim: {
    seed: scheduled,
    args: () => ({ count: 2, lease_ms: 60_000, default_max: 3, promote_limit: 1000, reap_limit: 100, request_id: 'r1', worker: 'w', packed: '1' }),
  },
  complete: { seed: leased, args: () => ({ packed: '1' }), items: (v) => [{ id: 'a', token: v.token!, result: '1' }] },
  extend: { seed: leased, args: () => ({ lease_ms: 60_000, worker: 'w', info: '{}', ttl_ms: 1000 }), items: (v) => [{ id: 'a', token: v.token! }] },
  release: { seed: leased, args: () => ({ hold_ms: 0 }), items: (v) => [{ id: 'a', token: v.token! }] },
  fail: { seed: leased, args: (v) => ({ id: 'a', token: v.token!, error: 'e', retry_ms: 0, dead: '0', default_max: 3, history: 10 }) },
  snooze: { seed: leased, args: (v) => ({ id: 'a', token: v.token!, delay_ms: 1000, deadline: '' }) },
  cancel: { seed: leased, args: () => ({ request_id: 'r1', memo_ms: 60_000, running: '1', reason: 'r' }), items: () => [{ id: 'a' }, { id: 'b' }] },
  'fail-now': {
    seed: leased,
    args: () => ({ id: 'a', reason: 'r', dead: '0', retry_ms: 0, default_max: 3, history: 10, request_id: 'r1', memo_ms: 60_000 }),
  },
  watch: { seed: scheduled, args: () => ({ wait_ms: 60_000, expect: '1' }), items: () => [{ id: 'a' }, { id: 'b' }] },
  reschedule: { seed: scheduled, args: () => ({ id: 'a', delay_ms: 1000, run_at: '', request_id: 'r1', memo_ms: 60_000 }) },
  get: { seed: scheduled, args: () => ({ logs: '1' }), items: () => [{ id: 'a' }] },
  'child-results': { seed: scheduled, args: () => ({ id: 'a' }) },
  'wait-signal': { seed: leased, args: (v) => ({ id: 'a', token: v.token!, name: 'payment', timeout_ms: 60_000 }) },
  signal: { seed: scheduled, args: () => ({ id: 'a', name: 'payment', data: '{"x":1}', request_id: 'r1', memo_ms: 60_000 }) },
  list: { seed: scheduled, args: () => ({ state: 'scheduled', limit: 10, order: 'asc' }) },
  stats: { seed: scheduled, args: () => ({ window_ms: 1000 }) },
  timeline: { seed: scheduled, args: () => ({ from: '', bucket_ms: 1000, buckets: 10 }) },
  update: { seed: leased, args: (v) => ({ id: 'a', token: v.token!, progress: '1', log_cap: 10 }), items: () => [{ line: 'l1' }, { line: 'l2' }] },
  'worker-beat': { seed: scheduled, args: () => ({ worker: 'w', info: '{}', ttl_ms: 1000 }) },
  workers: { seed: scheduled, args: () => ({ limit: 10 }) },
  drain: { seed: scheduled, args: () => ({ due_before: '', limit: 10, ready_rank: 0, waiting_rank: 0 }) },
  obliterate: { seed: scheduled, args: () => ({ force: '1', epoch: '' }) },
  'dead-list': { seed: scheduled, args: () => ({ offset: 0, limit: 10 }) },
  'dead-retry': { seed: scheduled, args: () => ({ mode: 'all', limit: 10 }) },
  purge: { seed: scheduled, args: () => ({ set: 'dead', mode: 'all', limit: 10, age_ms: 0 }) },
  'set-meta': { seed: scheduled, args: () => ({ what: 'paused', value: '1' }) },
  migrate: { seed: scheduled, args: () => ({ count: 10 }) },
  layout: { seed: scheduled, args: () => ({ expected: '', next: '{}', epoch: '' }) },
  limits: { seed: scheduled, args: () => ({ concurrency: 5, cursor: '0' }) },
  groups: { seed: scheduled, args: () => ({ cursor: '', count: 10 }) },
  'schedule-set': { seed: scheduled, args: () => ({ name: 'n', definition: '{}' }) },
};

/** Values each kind of rule refuses. */
function badValues(r: ArgRule): string[] {
  const unsetBad = 'unset' in r && r.unset ? [] : [''];
  if ('int' in r) {
    const [lo, hi] = r.int;
    return ['nan', 'inf', '-inf', '0x1A', '1.5', ' 1', '1e3', 'x', String(lo - 1), String(hi + 1), ...unsetBad];
  }
  if ('flag' in r) return ['2', 'true', ...unsetBad];
  if ('oneOf' in r) return ['bogus', `${r.oneOf[0]} `, ...unsetBad];
  if ('digits' in r) return ['x', '-1', '1 ', ...unsetBad];
  if ('id' in r) return ['a\u0001b', 'a\u007fb', 'a\u0085b', 'x'.repeat(257), '\u{1F600}'.repeat(129), ...unsetBad];
  return [];
}

const snapshot = (q: string) => queueDump(fx.client, q);

interface Case {
  field: string;
  item?: number;
  value: string;
}

function casesOf(name: ScriptName, b: Baseline, items: number): Case[] {
  const s = manifest.scripts[name];
  const out: Case[] = [];
  for (const a of s.args) for (const value of badValues(a.accepts)) out.push({ field: a.name, value });
  for (const f of s.items?.fields ?? []) {
    const item = b.itemOf?.(f.name) ?? items;
    for (const value of badValues(f.accepts)) out.push({ field: f.name, item, value });
  }
  return out;
}

describe('every script refuses each bad argument before its first write (generated from the manifest)', () => {
  test('every script of the manifest has a baseline here', () => {
    assert.deepEqual(Object.keys(manifest.scripts).sort(), Object.keys(BASELINES).sort());
  });

  for (const name of Object.keys(manifest.scripts) as ScriptName[]) {
    test(name, async () => {
      const b = BASELINES[name];
      const store = fx.track(new RedisStore({ connection: fx.redis.url }));
      const q = uniqueName('refuse');
      const seeded = await b.seed(store, q);
      const args = b.args(seeded);
      const items = b.items?.(seeded) ?? [];
      const before = await snapshot(q);
      const failures: string[] = [];
      for (const c of casesOf(name, b, items.length)) {
        const a = { ...args };
        const its = items.map((it) => ({ ...it }));
        if (c.item === undefined) a[c.field] = c.value;
        else its[c.item - 1]![c.field] = c.value;
        const where = c.item === undefined ? c.field : `${c.field} of item ${c.item}`;
        const shown = `${where} = ${JSON.stringify(c.value).slice(0, 30)}`;
        let error: unknown;
        try {
          await callScript(fx.client, name, q, a, its);
        } catch (err) {
          error = err;
        }
        if (!(error instanceof Error)) failures.push(`${shown}: accepted`);
        else if (!error.message.includes(`delayq: argument ${where} `)) failures.push(`${shown}: ${error.message}`);
        const after = await snapshot(q);
        if (JSON.stringify(after) !== JSON.stringify(before)) {
          const changed = Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);
          failures.push(`${shown}: wrote ${changed.join(', ')}`);
          break; // later cases would compare against a changed queue
        }
      }
      assert.deepEqual(failures, []);
      // The baseline itself is a valid call: each case differs from one only by its value.
      await callScript(fx.client, name, q, args, items);
    });
  }
});

describe('a call whose KEYS[1] is not its root followed by scheduled is refused before anything is read or written (protocol 8: the other keys come from the root)', () => {
  for (const name of Object.keys(manifest.scripts) as ScriptName[]) {
    test(name, async () => {
      const b = BASELINES[name];
      const store = fx.track(new RedisStore({ connection: fx.redis.url }));
      const q = uniqueName('root');
      const other = uniqueName('other');
      const seeded = await b.seed(store, q);
      const args = b.args(seeded);
      const items = b.items?.(seeded) ?? [];
      const before = await snapshot(q);
      for (const first of [`dq:{${other}}:scheduled`, `dq:{${q}}:ready`, '']) {
        const { keys, argv } = callHead(name, q, args);
        for (const item of items) for (const f of manifest.scripts[name].items!.fields) argv.push(String(item[f.name] ?? ''));
        keys[0] = first;
        await assert.rejects(
          runScript(fx.client, name, keys, argv),
          /delayq protocol: KEYS\[1\] must be the queue key root/,
          `${name} with KEYS[1] = ${first}`,
        );
      }
      assert.deepEqual(await snapshot(q), before);
      assert.equal(await fx.client.exists(`dq:{${other}}:scheduled`), 0);
    });
  }
});

describe('the base keys the library builds from a root are kept for a bounded number of short roots', () => {
  const functionsMemory = async () => Number(/used_memory_vm_functions:(\d+)/.exec(await fx.client.info('memory'))![1]);

  test('hand-made calls with long roots are answered, and their keys are not kept (a caller cannot grow the library by its choice of root)', async () => {
    const store = fx.track(new RedisStore({ connection: fx.redis.url }));
    await store.stats(uniqueName('warm'), 0); // the library is loaded
    const before = await functionsMemory();
    // 25 keys a root: kept, 200 roots of 20 KB would hold ~100 MB of the library's memory.
    for (let i = 0; i < 200; i++) {
      const q = `${'x'.repeat(20_000)}${i}`;
      const { keys, argv } = callHead('get', q, { logs: '1' });
      argv.push('a');
      assert.equal(((await runScript(fx.client, 'get', keys, argv)) as unknown[]).length > 0, true);
    }
    const grown = (await functionsMemory()) - before;
    assert.ok(grown < 20_000_000, `the library's memory grew by ${grown} bytes`);
  });
});
