/**
 * The CLI's flow control against a real redis-server: add --group (and a group per NDJSON line),
 * groups ls | get | pause | resume | limit (--rate too), limits and limits set (--rate, --group-rate),
 * add --cost and --debounce-*. Text and --json output, exit codes, and bad input refused with exit
 * 64 and nothing written: a limit that is not a number, a rate that is not max/perMs, an empty
 * group, a debounce without its key, a queue name never used.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { freePort } from '../helpers/redis-server.js';
import { assertFailure, run } from './run-cli.js';

const fx = useRedis();

/** A printed command line as a shell would split it (words, and '…' quoted ones). */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/'\\''/g, "'") : m[2]!));
}

/** Every key of the server whose name holds `name`. */
async function keysOf(name: string): Promise<string[]> {
  return fx.client.keys(`*${name}*`);
}

/** A group as --json prints it, its next refill time (which moves) put as its type. */
function steady(g: { rate: { nextRefillMs: number | null } }) {
  return { ...g, rate: { ...g.rate, nextRefillMs: g.rate.nextRefillMs === null ? null : typeof g.rate.nextRefillMs } };
}

/** Hands out up to `n` due jobs as a worker's claim would, and returns them (their leases run 30 s). */
async function claim(q: Queue<unknown>, n: number) {
  return (await q.store.claim(q.name, n, 30_000, 1)).jobs;
}

describe('delayq groups and limits', () => {
  test('add --group and a group per NDJSON line; get shows it; groups ls and get show running, waiting, limit, paused', async () => {
    const name = uniqueName('cli-groups');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<unknown>(name, { connection: fx.redis.url });
    try {
      assert.equal((await run([...g, 'add', '{"n":1}', '--id', 'a1', '--group', 'tenant-a'])).code, 0);
      const ndjson = [
        JSON.stringify({ data: { n: 2 }, opts: { id: 'a2' } }),
        JSON.stringify({ data: { n: 3 }, opts: { id: 'a3' } }),
        JSON.stringify({ data: { n: 4 }, opts: { id: 'b1', group: 'tenant-b' } }),
      ].join('\n');
      // --group is every line's default; a line's own group wins.
      const bulk = await run([...g, 'add', '--ndjson', '--group', 'tenant-a', '--json'], { input: ndjson });
      assert.equal(bulk.code, 0, bulk.stderr);
      assert.deepEqual(JSON.parse(bulk.stdout), { added: 3, existing: 0 });
      assert.deepEqual(await Promise.all(['a1', 'a2', 'a3', 'b1'].map(async (id) => (await q.get(id))?.group)), [
        'tenant-a',
        'tenant-a',
        'tenant-a',
        'tenant-b',
      ]);
      assert.match((await run([...g, 'get', 'b1'])).stdout, /\ngroup {6}tenant-b\n/);
      assert.equal((JSON.parse((await run([...g, 'get', 'a1', '--json'])).stdout) as { group: string }).group, 'tenant-a');

      // One job of a group at a time: a claim hands out one of tenant-a's and tenant-b's one.
      await q.setLimits({ groupConcurrency: 1, groupRateLimit: { max: 5, perMs: 600_000 } });
      await q.groups.setLimits('tenant-b', { concurrency: 4, rateLimit: { max: 2, perMs: 600_000 } });
      await q.groups.pause('tenant-c');
      assert.equal((await claim(q, 10)).length, 2);

      const listed = await run([...g, 'groups', 'ls', '--json']);
      assert.equal(listed.code, 0, listed.stderr);
      const page = JSON.parse(listed.stdout) as { groups: { id: string }[]; cursor: string | null };
      assert.equal(page.cursor, null, 'one page: the cursor is null, not left out');
      // Each group's own rate limit (null: the queue's groupRateLimit applies) and its tokens taken.
      const idle = { used: 0, heldUntilMs: null, nextRefillMs: null };
      const one = { used: 1, heldUntilMs: null, nextRefillMs: 'number' };
      assert.deepEqual(
        page.groups.sort((x, y) => x.id.localeCompare(y.id)).map((x) => steady(x as never)),
        [
          { id: 'tenant-a', running: 1, waiting: 2, concurrency: null, rateLimit: null, rate: one, paused: false },
          { id: 'tenant-b', running: 1, waiting: 0, concurrency: 4, rateLimit: { max: 2, perMs: 600_000 }, rate: one, paused: false },
          { id: 'tenant-c', running: 0, waiting: 0, concurrency: null, rateLimit: null, rate: idle, paused: true },
        ],
      );
      const text = await run([...g, 'groups', 'ls']);
      assert.equal(text.code, 0, text.stderr);
      assert.equal(text.stderr, '');
      const lines = text.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, /^GROUP +RUNNING +WAITING +LIMIT +RATE +USED +PAUSED$/);
      assert.deepEqual(lines.slice(1).sort(), [
        'tenant-a  1        2        1 (queue)  5/600000 (queue)  1     -',
        'tenant-b  1        0        4          2/600000          1     -',
        'tenant-c  0        0        1 (queue)  5/600000 (queue)  0     paused',
      ]);

      assert.deepEqual(steady(JSON.parse((await run([...g, 'groups', 'get', 'tenant-a', '--json'])).stdout)), {
        id: 'tenant-a',
        running: 1,
        waiting: 2,
        concurrency: null,
        rateLimit: null,
        rate: one,
        paused: false,
      });
      assert.match(
        (await run([...g, 'groups', 'get', 'tenant-b'])).stdout,
        /^tenant-b\nrunning {2}1\nwaiting {2}0\nlimit {4}4 \(its own\)\nrate {5}2\/600000 \(its own\)\nused {5}1 token in the window, next back in \d+\.\d min\npaused {3}no\n$/,
      );
      assert.equal(
        (await run([...g, 'groups', 'get', 'tenant-c'])).stdout,
        "tenant-c  (paused)\nrunning  0\nwaiting  0\nlimit    1 (the queue's groupConcurrency)\nrate     5/600000 (the queue's groupRateLimit)\nused     0 tokens in the window\npaused   yes\n",
      );
      // A group never seen reads as nothing of each (exit 0: it is an answer), in a queue that is known: no hint.
      const never = await run([...g, 'groups', 'get', 'tenant-z', '--json']);
      assert.deepEqual(
        [never.code, never.stderr, JSON.parse(never.stdout)],
        [0, '', { id: 'tenant-z', running: 0, waiting: 0, concurrency: null, rateLimit: null, rate: idle, paused: false }],
      );
      // stats shows the limits to a person; --json keeps QueueStats as they are.
      assert.match(
        (await run([...g, 'stats'])).stdout,
        /\nlimits: concurrency none {2}groupConcurrency 1\nrate limits: rateLimit none {2}groupRateLimit 5\/600000\n$/,
      );
      assert.equal('limits' in JSON.parse((await run([...g, 'stats', '--json'])).stdout), false);
    } finally {
      await q.close();
    }
  });

  test('groups pause, resume, limit: exit 0 when changed, 2 when it already was so; every worker sees it (the store has it)', async () => {
    const name = uniqueName('cli-groups');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<unknown>(name, { connection: fx.redis.url });
    try {
      await q.add(1, { id: 'j1', group: 'tenant-a' });
      const steps: [string[], number, string | object][] = [
        [['groups', 'pause', 'tenant-a'], 0, `paused group tenant-a of ${name}\n`],
        [['groups', 'pause', 'tenant-a'], 2, `group tenant-a of ${name} was already paused\n`],
        [['groups', 'pause', 'tenant-a', '--json'], 2, { id: 'tenant-a', changed: false }],
        [['groups', 'resume', 'tenant-a', '--json'], 0, { id: 'tenant-a', changed: true }],
        [['groups', 'resume', 'tenant-a'], 2, `group tenant-a of ${name} was already running\n`],
        [['groups', 'limit', 'tenant-a', '3'], 0, `group tenant-a of ${name}: limit 3\n`],
        [['groups', 'limit', 'tenant-a', '3', '--json'], 2, { id: 'tenant-a', concurrency: 3, changed: false }],
        [['groups', 'limit', 'tenant-a', '5', '--json'], 0, { id: 'tenant-a', concurrency: 5, changed: true }],
        [['groups', 'limit', 'tenant-a', 'none'], 0, `group tenant-a of ${name}: own limit removed (the queue's groupConcurrency applies: none)\n`],
        [['groups', 'limit', 'tenant-a', 'none', '--json'], 2, { id: 'tenant-a', concurrency: null, changed: false }],
        // A rate limit of its own: --rate max/perMs, none removes it; with a limit, both at once.
        [['groups', 'limit', 'tenant-a', '--rate', '10/60000'], 0, `group tenant-a of ${name}: rate limit 10/60000\n`],
        [['groups', 'limit', 'tenant-a', '--rate', '10/60000', '--json'], 2, { id: 'tenant-a', rateLimit: { max: 10, perMs: 60000 }, changed: false }],
        [['groups', 'limit', 'tenant-a', '--rate', '10/60000'], 2, `group tenant-a of ${name} already had rate limit 10/60000\n`],
        [
          ['groups', 'limit', 'tenant-a', '--rate', 'none'],
          0,
          `group tenant-a of ${name}: own rate limit removed (the queue's groupRateLimit applies: none)\n`,
        ],
        [
          ['groups', 'limit', 'tenant-a', '--rate', 'none'],
          2,
          `group tenant-a of ${name} had no rate limit of its own (the queue's groupRateLimit applies: none)\n`,
        ],
        [
          ['groups', 'limit', 'tenant-a', '4', '--rate', '3/1000', '--json'],
          0,
          { id: 'tenant-a', concurrency: 4, rateLimit: { max: 3, perMs: 1000 }, changed: true },
        ],
        [
          ['groups', 'limit', 'tenant-a', 'none', '--rate', 'none'],
          0,
          `group tenant-a of ${name}: own limit removed (the queue's groupConcurrency applies: none), own rate limit removed (the queue's groupRateLimit applies: none)\n`,
        ],
      ];
      for (const [args, code, out] of steps) {
        const r = await run([...g, ...args]);
        assert.equal(r.code, code, `${args.join(' ')}: exit ${r.code} ${r.stderr}`);
        assert.equal(r.stderr, '', args.join(' '));
        if (typeof out === 'string') assert.equal(r.stdout, out, args.join(' '));
        else assert.deepEqual(JSON.parse(r.stdout), out, args.join(' '));
      }
      await run([...g, 'groups', 'pause', 'tenant-a']);
      await run([...g, 'groups', 'limit', 'tenant-a', '2', '--rate', '7/5000']);
      const stored = await q.groups.get('tenant-a');
      assert.deepEqual(
        { ...stored, rate: undefined },
        { id: 'tenant-a', running: 0, waiting: 0, concurrency: 2, rateLimit: { max: 7, perMs: 5000 }, rate: undefined, paused: true },
      );
      // Paused: a claim hands out nothing of it.
      assert.equal((await claim(q, 10)).length, 0);
      await run([...g, 'groups', 'resume', 'tenant-a']);
      assert.deepEqual(
        (await claim(q, 10)).map((j) => j.id),
        ['j1'],
      );
    } finally {
      await q.close();
    }
  });

  test('limits shows and limits set changes concurrency and groupConcurrency (none removes, a limit not given stays)', async () => {
    const name = uniqueName('cli-limits');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<unknown>(name, { connection: fx.redis.url });
    const none = { concurrency: null, groupConcurrency: null, rateLimit: null, groupRateLimit: null };
    try {
      await q.add(1);
      const first = JSON.parse((await run([...g, 'limits', '--json'])).stdout) as Record<string, unknown> & { rateStatus: { nowMs: number } };
      assert.equal(typeof first.rateStatus.nowMs, 'number');
      assert.deepEqual(first, {
        ...none,
        rateStatus: { nowMs: first.rateStatus.nowMs, queue: { used: 0, heldUntilMs: null, nextRefillMs: null }, groupsHeld: 0 },
      });
      const set = await run([...g, 'limits', 'set', '--concurrency', '10', '--group-concurrency', '2', '--json']);
      assert.equal(set.code, 0, set.stderr);
      assert.deepEqual(JSON.parse(set.stdout), { ...none, changed: true, concurrency: 10, groupConcurrency: 2 });
      assert.deepEqual(await q.limits(), { concurrency: 10, groupConcurrency: 2, rateLimit: undefined, groupRateLimit: undefined });
      const again = await run([...g, 'limits', 'set', '--concurrency', '10']);
      assert.equal(again.code, 2, 'nothing changed');
      assert.match(again.stdout, new RegExp(`^the limits of ${name} already were so\nconcurrency +10 `));
      const removed = await run([...g, 'limits', 'set', '--concurrency', 'none']);
      assert.equal(removed.code, 0, removed.stderr);
      assert.match(removed.stdout, new RegExp(`^set the limits of ${name}\nconcurrency +none +most jobs of the queue running at once\ngroupConcurrency +2 `));
      assert.deepEqual(await q.limits(), { concurrency: undefined, groupConcurrency: 2, rateLimit: undefined, groupRateLimit: undefined });
      const shown = await run([...g, 'limits']);
      assert.deepEqual([shown.code, shown.stderr], [0, '']);
      assert.match(
        shown.stdout,
        new RegExp(
          `^${name}\nconcurrency +none +most jobs .*\ngroupConcurrency +2 +most jobs of one group running at once, unless it has a limit of its own\nrateLimit +none +.*\ngroupRateLimit +none +.*\nrate now +0 tokens in the window; 0 groups held back\n$`,
        ),
      );

      // Rate limits: max/perMs; a limit not given stays; none removes one.
      const rated = await run([...g, 'limits', 'set', '--rate', '100/1000', '--group-rate', '10/60000', '--json']);
      assert.equal(rated.code, 0, rated.stderr);
      assert.deepEqual(JSON.parse(rated.stdout), {
        changed: true,
        concurrency: null,
        groupConcurrency: 2,
        rateLimit: { max: 100, perMs: 1000 },
        groupRateLimit: { max: 10, perMs: 60000 },
      });
      assert.deepEqual(await q.limits(), {
        concurrency: undefined,
        groupConcurrency: 2,
        rateLimit: { max: 100, perMs: 1000 },
        groupRateLimit: { max: 10, perMs: 60000 },
      });
      assert.equal((await run([...g, 'limits', 'set', '--rate', '100/1000'])).code, 2, 'the same rate: nothing changed');
      // The window as every duration flag takes it: 1s is 1000 ms (the same rate), 1m is 60000.
      assert.equal((await run([...g, 'limits', 'set', '--rate', '100/1s'])).code, 2, '100/1s is 100/1000');
      const perMinute = await run([...g, 'limits', 'set', '--rate', '100/1m', '--group-rate', '10/1.5s']);
      assert.equal(perMinute.code, 0, perMinute.stderr);
      assert.deepEqual((await q.limits()).rateLimit, { max: 100, perMs: 60_000 });
      assert.deepEqual((await q.limits()).groupRateLimit, { max: 10, perMs: 1_500 });
      assert.equal((await run([...g, 'groups', 'limit', 'tenant-x', '--rate', '5/2m'])).code, 0);
      assert.deepEqual((await q.groups.get('tenant-x')).rateLimit, { max: 5, perMs: 120_000 });
      await q.setLimits({ groupRateLimit: { max: 10, perMs: 60_000 } });
      // A job handed out takes a token: `limits` shows it used, and when it comes back.
      await q.setLimits({ rateLimit: { max: 100, perMs: 600_000 } });
      assert.equal((await claim(q, 1)).length, 1);
      const used = await run([...g, 'limits']);
      assert.equal(used.code, 0, used.stderr);
      assert.match(
        used.stdout,
        /\nrateLimit +100\/600000 +most tokens .*\ngroupRateLimit +10\/60000 +.*\nrate now +1 token in the window, next back in \d+\.\d min; 0 groups held back\n$/,
      );
      const status = JSON.parse((await run([...g, 'limits', '--json'])).stdout) as { rateStatus: { queue: { used: number; nextRefillMs: number } } };
      assert.equal(status.rateStatus.queue.used, 1);
      assert.ok(status.rateStatus.queue.nextRefillMs > Date.now() + 500_000, 'the token comes back a window after it was taken');
      const unrated = await run([...g, 'limits', 'set', '--rate', 'none', '--json']);
      assert.equal(unrated.code, 0, unrated.stderr);
      assert.deepEqual(JSON.parse(unrated.stdout).rateLimit, null);
      assert.deepEqual((await q.limits()).groupRateLimit, { max: 10, perMs: 60000 }, 'the one not given stays');
    } finally {
      await q.close();
    }
  });

  test('add --cost takes that many tokens; add --debounce-* folds a burst into one job (exit 0), a line of NDJSON too', async () => {
    const name = uniqueName('cli-debounce');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<unknown>(name, { connection: fx.redis.url });
    try {
      await q.setLimits({ rateLimit: { max: 100, perMs: 600_000 } });
      const costly = await run([...g, 'add', '{"n":1}', '--id', 'c1', '--cost', '40', '--json']);
      assert.equal(costly.code, 0, costly.stderr);
      assert.equal((await claim(q, 10)).length, 1);
      assert.equal((await q.rateStatus()).queue.used, 40, 'the job took its cost in tokens');

      const burst = ['add', '--debounce-key', 'doc:7', '--debounce-ms', '60s', '--json'];
      const a = await run([...g, ...burst, '{"v":1}']);
      assert.equal(a.code, 0, a.stderr);
      const first = JSON.parse(a.stdout) as { id: string; added: boolean };
      assert.equal(first.added, true);
      const b = await run([...g, ...burst, '{"v":2}', '--debounce-max-ms', '5m']);
      assert.equal(b.code, 0, `a debounced add changed the burst's job: exit 0 (${b.stderr})`);
      assert.deepEqual(JSON.parse(b.stdout), { ...JSON.parse(b.stdout), id: first.id, added: false, debounced: true });
      const text = await run([...g, 'add', '{"v":3}', '--debounce-key', 'doc:7', '--debounce-ms', '60000']);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, new RegExp(`^debounced into ${first.id} \\(its data and options now these\\), due \\d{4}-`));
      assert.deepEqual((await q.get(first.id))?.data, { v: 3 }, 'the last add of the burst wins');

      // NDJSON: a line's cost and debounce; the burst's lines count as debounced.
      const ndjson = [
        JSON.stringify({ data: { v: 4 }, opts: { debounce: { key: 'doc:8', delayMs: 60_000 } } }),
        JSON.stringify({ data: { v: 5 }, opts: { debounce: { key: 'doc:8', delayMs: 60_000, maxWaitMs: 120_000 } } }),
        JSON.stringify({ data: { v: 6 }, opts: { id: 'c2', cost: 7 } }),
      ].join('\n');
      const bulk = await run([...g, 'add', '--ndjson', '--json'], { input: ndjson });
      assert.equal(bulk.code, 0, bulk.stderr);
      assert.deepEqual(JSON.parse(bulk.stdout), { added: 2, existing: 0, debounced: 1 });
      // (A delay of a minute: the burst must not fall due before the claim below, however busy the machine.)
      const textBulk = await run([...g, 'add', '--ndjson'], {
        input: JSON.stringify({ data: { v: 7 }, opts: { debounce: { key: 'doc:8', delayMs: 60_000 } } }),
      });
      assert.deepEqual([textBulk.code, textBulk.stdout], [0, "added 0 jobs, 1 debounced into a burst's job\n"]);
      // --debounce-* are every line's default; a line's own delay replaces them.
      const defaults = await run([...g, 'add', '--ndjson', '--debounce-key', 'doc:9', '--debounce-ms', '1m', '--json'], {
        input: [JSON.stringify({ v: 8 }), JSON.stringify({ data: { v: 9 }, opts: { id: 'd9', delay: 60_000 } })].join('\n'),
      });
      assert.equal(defaults.code, 0, defaults.stderr);
      assert.deepEqual(JSON.parse(defaults.stdout), { added: 2, existing: 0 });
      // Due now: c2 alone (the bursts wait for their time), which took its 7 tokens.
      assert.deepEqual(
        (await claim(q, 10)).map((j) => j.id),
        ['c2'],
      );
      assert.equal((await q.rateStatus()).queue.used, 47);
      await q.setLimits({ rateLimit: null });
    } finally {
      await q.close();
    }
  });

  test('groups ls pages with --limit and --cursor: the printed next-page command, pasted, walks every group', async () => {
    const name = uniqueName('cli-pages');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<unknown>(name, { connection: fx.redis.url });
    try {
      // More groups than Redis keeps in a listpack (512), so that a page is about --limit.
      const ids = Array.from({ length: 600 }, (_, i) => `t${i}`);
      for (const id of ids) await q.groups.pause(id);
      await q.add(1);
      const seen = new Set<string>();
      let args = [...g, 'groups', 'ls', '--limit', '100'];
      let pages = 0;
      for (;;) {
        const r = await run(args);
        assert.equal(r.code, 0, r.stderr);
        pages++;
        const lines = r.stdout.trimEnd().split('\n');
        const next = lines.at(-1)!.startsWith('next page: ') ? lines.pop()! : undefined;
        for (const line of lines.slice(1)) seen.add(line.split(/\s+/)[0]!);
        if (!next) break;
        const words = shellWords(next.slice('next page: '.length));
        assert.equal(words[0], 'delayq');
        assert.deepEqual(words.slice(1, 5), g, 'the global options as given');
        assert.deepEqual(words.slice(5, 9), ['groups', 'ls', '--limit', '100']);
        args = words.slice(1);
        assert.ok(pages < 100, 'the walk ends');
      }
      assert.ok(pages > 1, `more than one page (${pages})`);
      assert.equal(seen.size, 600);
      assert.deepEqual([...seen].sort(), [...ids].sort());
      // --json: the cursor in the document, and the same walk.
      const first = JSON.parse((await run([...g, 'groups', 'ls', '--limit', '100', '--json'])).stdout) as { groups: unknown[]; cursor: string | null };
      assert.equal(typeof first.cursor, 'string');
      const second = await run([...g, 'groups', 'ls', '--limit', '100', '--cursor', first.cursor!, '--json']);
      assert.equal(second.code, 0, second.stderr);
    } finally {
      await q.close();
    }
  });

  test('bad input: exit 64 naming the field, within seconds, and nothing written', async () => {
    const name = uniqueName('cli-bad');
    const typo = `${name}-typo`;
    const g = ['--redis', fx.redis.url, '--queue', name];
    const q = new Queue<unknown>(name, { connection: fx.redis.url });
    try {
      await q.add(1, { id: 'j1', group: 'tenant-a' });
      await q.setLimits({ concurrency: 7, rateLimit: { max: 50, perMs: 1000 } });
      await q.groups.setLimits('tenant-a', { concurrency: 3, rateLimit: { max: 5, perMs: 1000 } });
      const before = { limits: await q.limits(), group: await q.groups.get('tenant-a'), stats: await q.stats() };
      const cases: [string[], RegExp, string?][] = [
        [[...g, 'limits', 'set', '--concurrency', 'abc'], /^--concurrency must be a whole number from 1 to 100000, or none \(got "abc"\)$/],
        [[...g, 'limits', 'set', '--concurrency', '0'], /^--concurrency must be a whole number/],
        [[...g, 'limits', 'set', '--concurrency', '1.5'], /^--concurrency must be a whole number/],
        [[...g, 'limits', 'set', '--concurrency', '1e3'], /^--concurrency must be a whole number/],
        [[...g, 'limits', 'set', '--concurrency', '100001'], /^--concurrency must be a whole number/],
        [[...g, 'limits', 'set', '--concurrency', ''], /^--concurrency must be a whole number/],
        // A bad value beside a good one: neither is written.
        [[...g, 'limits', 'set', '--concurrency', '5', '--group-concurrency', 'lots'], /^--group-concurrency must be a whole number .*\(got "lots"\)$/],
        [[...g, 'limits', 'set'], /^give --concurrency, --group-concurrency, --rate, --group-rate or several/],
        [
          [...g, 'limits', 'set', '--rate', 'abc'],
          /^--rate must be <max>\/<window>: 1-1000000 tokens per window of 1-604800000 ms \(a week\), the window in ms or with a unit, e\.g\. 100\/1000, 100\/1s or 6000\/1m, or none \(got "abc"\)$/,
        ],
        [[...g, 'limits', 'set', '--rate', '100'], /^--rate must be <max>\/<window>.*\(got "100"\)$/],
        [[...g, 'limits', 'set', '--rate', '0/1000'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '10/0'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '1000001/1000'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '10/604800001'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '1.5/1000'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '10/1x'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '10/8d'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', '10/-5'], /^--rate must be <max>\/<window>/],
        [[...g, 'limits', 'set', '--rate', ' 10/1000'], /^--rate must be <max>\/<window>/],
        // A bad rate beside good limits: nothing is written.
        [
          [...g, 'limits', 'set', '--concurrency', '5', '--rate', '9/1000', '--group-rate', '10/1000/5'],
          /^--group-rate must be <max>\/<window>.*\(got "10\/1000\/5"\)$/,
        ],
        [[...g, 'groups', 'limit', 'tenant-a', '--rate', 'lots'], /^--rate must be <max>\/<window>.*\(got "lots"\)$/],
        [[...g, 'groups', 'limit', 'tenant-a', '4', '--rate', '-1/1000'], /^--rate must be <max>\/<window>/],
        [[...g, 'groups', 'limit', 'tenant-a', 'x', '--rate', '1/1000'], /^limit must be a whole number/],
        [[...g, 'add', '1', '--id', 'new-job', '--cost', '0'], /^--cost must be a whole number of tokens from 1 to 1000000 \(got "0"\)$/],
        [[...g, 'add', '1', '--id', 'new-job', '--cost', '2.5'], /^--cost must be a whole number of tokens/],
        [[...g, 'add', '1', '--id', 'new-job', '--debounce-ms', '5s'], /^--debounce-ms and --debounce-max-ms need --debounce-key/],
        [[...g, 'add', '1', '--id', 'new-job', '--debounce-key', 'k'], /^--debounce-key needs --debounce-ms/],
        [[...g, 'add', '1', '--id', 'new-job', '--debounce-key', 'k', '--debounce-ms', 'soon'], /^--debounce-ms must be a duration/],
        [
          [...g, 'add', '1', '--id', 'new-job', '--debounce-key', 'k', '--debounce-ms', '1s', '--debounce-max-ms', '0'],
          /debounce\.maxWaitMs must be at least 1/,
        ],
        [[...g, 'add', '1', '--id', 'new-job', '--debounce-key', 'k', '--debounce-ms', '1s', '--delay', '5s'], /debounce cannot be given with delay/],
        [[...g, 'add', '1', '--id', 'new-job', '--debounce-key', '', '--debounce-ms', '1s'], /debounce\.key must not be empty/],
        [[...g, 'add', '--ndjson'], /^line 2: opts\.cost must be at least 1/, '{"data":1,"opts":{"id":"n3","cost":2}}\n{"data":2,"opts":{"cost":0}}\n'],
        [[...g, 'add', '--ndjson'], /^line 1: opts\.debounce must be \{ key, delayMs, maxWaitMs\? \}/, '{"data":1,"opts":{"debounce":"k"}}\n'],
        [[...g, 'add', '--ndjson'], /^line 1: opts\.debounce cannot be given with delay/, '{"data":1,"opts":{"delay":5,"debounce":{"key":"k","delayMs":5}}}\n'],
        [[...g, 'limits', 'set', '--concurency', '5'], /^unknown option '--concurency'/],
        [[...g, 'groups', 'limit', 'tenant-a', 'abc'], /^limit must be a whole number from 1 to 100000, or none \(got "abc"\)$/],
        [[...g, 'groups', 'limit', 'tenant-a', '-1'], /^limit must be a whole number|unknown option '-1'/],
        [[...g, 'groups', 'limit', 'tenant-a'], /^give a limit, --rate or both/],
        [[...g, 'groups', 'limit', '', '5'], /^group must not be empty/],
        [[...g, 'groups', 'pause', ''], /^group must not be empty/],
        [[...g, 'groups', 'resume', 'a\tb'], /^group must not contain control characters/],
        [[...g, 'groups', 'get', ''], /^group must not be empty/],
        [[...g, 'groups', 'ls', '--limit', 'x'], /^--limit must be a number/],
        [[...g, 'groups', 'ls', '--limit', '0'], /^--limit must be a whole number from 1 to 1000/],
        [[...g, 'groups', 'ls', '--cursor', 'abc'], /^--cursor is not a cursor that 'delayq groups ls' printed \(got "abc"\)$/],
        [[...g, 'groups', 'ls', '--cursor', '0:'.padEnd(2000, '9')], /^--cursor is not a cursor that 'delayq groups ls' printed \(got "0:9+"\)$/],
        [[...g, 'add', '1', '--id', 'new-job', '--group', ''], /^group must not be empty/],
        [[...g, 'add', '--ndjson'], /^line 2: opts\.group must not be empty/, '{"data":1,"opts":{"id":"n1","group":"g"}}\n{"data":2,"opts":{"group":""}}\n'],
        [[...g, 'add', '--ndjson'], /^line 1: opts\.group must be a string/, '{"data":1,"opts":{"id":"n2","group":42}}\n'],
        [[...g, 'add', '--ndjson'], /^line 1: "group" beside "data"/, '{"data":1,"group":"g"}\n'],
        // A queue name never used: a typo, refused before anything is written.
        [['--redis', fx.redis.url, '--queue', typo, 'groups', 'pause', 'tenant-a'], /^no queue ".*-typo" under prefix dq: nothing was written$/],
        [['--redis', fx.redis.url, '--queue', typo, 'groups', 'resume', 'tenant-a'], /^no queue ".*-typo"/],
        [['--redis', fx.redis.url, '--queue', typo, 'groups', 'limit', 'tenant-a', '2'], /^no queue ".*-typo"/],
        [['--redis', fx.redis.url, '--queue', typo, 'limits', 'set', '--concurrency', '2'], /^no queue ".*-typo"/],
        [['--redis', fx.redis.url, '--queue', typo, 'limits', 'set', '--rate', '2/1000'], /^no queue ".*-typo"/],
        [['--redis', fx.redis.url, '--queue', typo, 'groups', 'limit', 'tenant-a', '--rate', '2/1000'], /^no queue ".*-typo"/],
        [['--redis', fx.redis.url, '--queue', 'bad name!', 'groups', 'ls'], /queue name must be/],
        [[...g, 'groups', 'lst'], /^unknown command 'lst'/],
        [[...g, 'groups'], /./],
        [[...g, 'limit'], /^unknown command 'limit'/],
      ];
      // Four at a time: each is a node process, and the machine may be busy.
      const batches = Array.from({ length: Math.ceil(cases.length / 4) }, (_, i) => cases.slice(i * 4, i * 4 + 4));
      for (const batch of batches)
        await Promise.all(
          batch.map(async ([args, message, input]) => {
            const started = Date.now();
            const r = await run(args, input === undefined ? {} : { input });
            const what = args.slice(4).join(' ');
            if (args.at(-1) === 'groups') {
              // A command group alone prints its help on stderr and exits 64.
              assert.equal(r.code, 64, what);
              assert.match(r.stderr, /^Usage: delayq groups/);
            } else {
              const f = assertFailure(r, 64, what);
              assert.match(f.message, message, what);
            }
            assert.equal(r.stdout, '', `${what}: nothing on stdout`);
            assert.ok(Date.now() - started < 10_000, `${what}: answered within seconds`);
          }),
        );
      const hints = await run(['--redis', fx.redis.url, '--queue', typo, 'limits', 'set', '--concurrency', '2']);
      assert.match(assertFailure(hints, 64, 'typo').hint ?? '', /delayq queues lists them; --new-queue sets up a queue before its first job/);
      const suggestion = await run([...g, 'limit']);
      assert.equal(assertFailure(suggestion, 64, 'limit').hint, 'did you mean limits?');

      // Nothing was written: the queue as it was, the typo's name holds no key.
      assert.deepEqual(await q.limits(), before.limits);
      assert.deepEqual(await q.groups.get('tenant-a'), before.group);
      assert.deepEqual(await q.groups.get('g'), {
        id: 'g',
        running: 0,
        waiting: 0,
        concurrency: undefined,
        rateLimit: undefined,
        rate: { used: 0, heldUntilMs: undefined, nextRefillMs: undefined },
        paused: false,
      });
      assert.equal((await q.stats()).scheduled, before.stats.scheduled, 'no job added');
      assert.deepEqual(await keysOf(typo), []);
      assert.deepEqual((await q.groups.list()).groups.map((x) => x.id).sort(), ['tenant-a']);
    } finally {
      await q.close();
    }
  });

  test('a queue name never used: reads answer with a hint; --new-queue sets it up before its first job', async () => {
    const name = uniqueName('cli-new');
    const g = ['--redis', fx.redis.url, '--queue', name];
    const hint = /^hint: queue ".*" holds nothing and has no limit or group: is the name right\? \(--queue, --prefix\)\n$/;
    for (const args of [['groups', 'ls'], ['groups', 'get', 'tenant-a'], ['limits']]) {
      const r = await run([...g, ...args]);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, hint, args.join(' '));
    }
    assert.deepEqual(await keysOf(name), [], 'reads write nothing');
    const set = await run([...g, 'limits', 'set', '--group-concurrency', '2', '--new-queue', '--json']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { changed: true, concurrency: null, groupConcurrency: 2, rateLimit: null, groupRateLimit: null });
    // Known from now on: a limit is something the name holds.
    const shown = await run([...g, 'limits']);
    assert.deepEqual([shown.code, shown.stderr], [0, '']);
    assert.equal((await run([...g, 'groups', 'pause', 'tenant-a'])).code, 0);
    const listed = await run([...g, 'groups', 'ls', '--json']);
    assert.deepEqual([listed.code, listed.stderr], [0, '']);
  });

  test('Redis unreachable: exit 1 within seconds; memory:// warns that a write is gone when the command exits', async () => {
    const port = await freePort();
    const started = Date.now();
    const down = await run(['--redis', `redis://127.0.0.1:${port}`, 'groups', 'ls']);
    const f = assertFailure(down, 1, 'groups ls on a closed port');
    assert.match(f.message, new RegExp(`^Redis at 127\\.0\\.0\\.1:${port}`));
    assert.ok(Date.now() - started < 10_000);
    const memory = await run(['--redis', 'memory://', 'limits', 'set', '--concurrency', '3', '--new-queue']);
    assert.equal(memory.code, 0, memory.stderr);
    assert.match(memory.stderr, /^warning: memory:\/\/ keeps jobs in this process only/);
  });
});
