/**
 * The conformance suite of job names (`add(data, { name })`): kept with the job through every
 * read and hand-out, replaced with it, searched by, refused when bad (nothing written), and the
 * Worker's handlers by name: the job's own handler, `default`, or a failed attempt that says
 * which name had no handler. Run on every store by the files that run the group suite.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ValidationError, type Job } from '../../src/index.js';
import { deferred, within } from '../helpers/wait.js';
import { useHarness } from './harness.js';
import type { StoreKind } from './suite.js';

export function nameConformance(kind: StoreKind): void {
  describe(`job names [${kind.name}]`, () => {
    const { queue, worker } = useHarness(kind, 'nm');

    test('a name is kept through add, addBulk, get, listings, search and the hand-out; replace takes the new one', async () => {
      const q = queue<number>();
      await q.add(1, { id: 'a', name: 'send-email', delay: 60_000 });
      await q.addBulk([
        { data: 2, opts: { id: 'b', name: 'é名🙂', delay: 60_000 } },
        { data: 3, opts: { id: 'c', delay: 60_000 } },
      ]);
      assert.equal((await q.get('a'))?.name, 'send-email');
      assert.equal((await q.get('b'))?.name, 'é名🙂');
      assert.equal((await q.get('c'))?.name, undefined);
      const page = await q.jobs.list({ state: 'scheduled', limit: 10 });
      assert.deepEqual(Object.fromEntries(page.jobs.map((j) => [j.id, j.name])), { a: 'send-email', b: 'é名🙂', c: undefined });

      const byName = await q.jobs.search({ name: 'é名🙂' });
      assert.deepEqual(
        byName.jobs.map((j) => j.id),
        ['b'],
      );
      // With text: both must match.
      assert.deepEqual(
        (await q.jobs.search({ name: 'send-email', text: '1' })).jobs.map((j) => j.id),
        ['a'],
      );
      assert.deepEqual((await q.jobs.search({ name: 'send-email', text: '2' })).jobs, []);

      await q.add(4, { id: 'a', name: 'charge', replace: true, delay: 0 });
      assert.equal((await q.get('a'))?.name, 'charge');
      await q.add(5, { id: 'b', replace: true, delay: 0 });
      assert.equal((await q.get('b'))?.name, undefined, 'a replace without a name leaves none');

      const r = await q.store.claim(q.name, 10, 30_000, 3);
      assert.deepEqual(Object.fromEntries(r.jobs.map((j) => [j.id, j.name])), { a: 'charge', b: undefined });
    });

    test("jobs.list by name: only jobs of that name, in the state's order either way, paged by a cursor that neither repeats nor skips; each call reads at most its budget", async () => {
      const q = queue<number>();
      const nameOf = (i: number) => (i % 3 === 0 ? 'mail' : i % 3 === 1 ? 'charge' : undefined);
      await q.addBulk(
        Array.from({ length: 30 }, (_, i) => ({
          data: i,
          opts: { id: `s${String(i).padStart(2, '0')}`, delay: 60_000 + i * 1_000, name: i === 20 ? 'rare' : nameOf(i) },
        })),
      );
      await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ data: i, opts: { id: `r${i}`, name: nameOf(i) } })));
      const mail = Array.from({ length: 30 }, (_, i) => i)
        .filter((i) => i !== 20 && nameOf(i) === 'mail')
        .map((i) => `s${String(i).padStart(2, '0')}`);

      const walk = async (opts: { state: 'scheduled' | 'ready'; name: string; limit: number; order?: 'asc' | 'desc'; budget?: number }) => {
        const ids: string[] = [];
        const pages: { n: number; scanned: number | undefined; total: number }[] = [];
        let cursor: string | undefined;
        do {
          const page = await q.jobs.list({ ...opts, cursor });
          for (const j of page.jobs) assert.equal(j.name, opts.name, `${j.id} listed under ${opts.name}`);
          ids.push(...page.jobs.map((j) => j.id));
          pages.push({ n: page.jobs.length, scanned: page.scanned, total: page.total });
          cursor = page.cursor;
          assert.ok(pages.length < 100, 'the walk ends');
        } while (cursor);
        return { ids, pages };
      };
      const asc = await walk({ state: 'scheduled', name: 'mail', limit: 4 });
      assert.deepEqual(asc.ids, mail, 'every mail job once, by due time');
      assert.ok(asc.pages.length >= 3, `paged (${asc.pages.length} pages)`);
      assert.ok(
        asc.pages.every((p) => p.n <= 4 && p.total === 30 && p.scanned !== undefined && p.scanned > 0),
        JSON.stringify(asc.pages),
      );
      assert.equal(
        asc.pages.reduce((n, p) => n + p.scanned!, 0),
        30,
        'the whole state read once over the walk',
      );
      assert.deepEqual((await walk({ state: 'scheduled', name: 'mail', limit: 3, order: 'desc' })).ids, [...mail].reverse());
      assert.deepEqual((await walk({ state: 'ready', name: 'mail', limit: 1 })).ids.sort(), ['r0', 'r3']);

      // A budget bounds each call: pages without the one rare job, each with a cursor, then it.
      const rare = await walk({ state: 'scheduled', name: 'rare', limit: 10, budget: 5 });
      assert.deepEqual(rare.ids, ['s20']);
      assert.ok(
        rare.pages.every((p) => p.scanned! <= 5),
        JSON.stringify(rare.pages),
      );
      assert.equal(rare.pages[0]!.n, 0, 'a short page, empty, with a cursor to go on');
      const none = await q.jobs.list({ state: 'scheduled', name: 'nobody', limit: 10 });
      assert.deepEqual([none.jobs, none.cursor, none.scanned], [[], undefined, 30]);

      // Without a name, a listing is as it was (no scanned).
      assert.equal((await q.jobs.list({ state: 'scheduled', limit: 5 })).scanned, undefined);
      await assert.rejects(
        q.jobs.list({ state: 'scheduled', name: '' }),
        (e: Error) => e instanceof ValidationError && /^name must not be empty/.test(e.message),
      );
      await assert.rejects(
        q.jobs.list({ state: 'scheduled', name: 'a\nb' }),
        (e: Error) => e instanceof ValidationError && /name must not contain control characters/.test(e.message),
      );
      await assert.rejects(
        q.jobs.list({ state: 'scheduled', budget: 10 }),
        (e: Error) => e instanceof ValidationError && /budget goes with name/.test(e.message),
      );
      await assert.rejects(
        q.jobs.list({ state: 'scheduled', name: 'mail', budget: 0 }),
        (e: Error) => e instanceof ValidationError && /budget/.test(e.message),
      );
    });

    test('a bad name is refused at the call, naming the field, and nothing is written', async () => {
      const q = queue<number>();
      const bad: [unknown, RegExp][] = [
        ['', /name must not be empty/],
        ['x'.repeat(257), /name must be at most 256 characters/],
        ['send\nemail', /name must not contain control characters/],
        [42, /name/],
        [{ toString: () => 'x' }, /name/],
      ];
      for (const [name, why] of bad) {
        await assert.rejects(q.add(1, { id: 'x', name } as never), (err: Error) => err instanceof ValidationError && why.test(err.message));
        await assert.rejects(
          q.addBulk([
            { data: 1, opts: { id: 'ok' } },
            { data: 2, opts: { id: 'y', name } as never },
          ]),
          (err: Error) => err instanceof ValidationError && /jobs\[1\]\.opts\.name/.test(err.message),
        );
      }
      assert.equal((await q.stats()).scheduled, 0);
      assert.equal(await q.get('ok'), null);
    });

    test('a worker with handlers by name runs each job on its own handler, and default on the others', async () => {
      const q = queue<string>();
      const ran: string[] = [];
      const done = deferred();
      const note = (who: string) => (job: Job<string>) => {
        ran.push(`${who}:${job.id}:${job.name ?? '-'}`);
        if (ran.length === 4) done.resolve();
        return who;
      };
      worker(q, { 'send-email': note('email'), charge: note('charge'), default: note('default') }, { concurrency: 1 });
      await q.add('1', { id: 'e', name: 'send-email' });
      await q.add('2', { id: 'c', name: 'charge' });
      await q.add('3', { id: 'u', name: 'unknown-kind' });
      await q.add('4', { id: 'n' });
      await within(done.promise, 10_000, 'four jobs to run');
      assert.deepEqual(ran.sort(), ['charge:c:charge', 'default:n:-', 'default:u:unknown-kind', 'email:e:send-email']);
    });

    test('without a default, a job whose name has no handler fails its attempt with an error naming it (and the names handled)', async () => {
      const q = queue<string>();
      const dead = deferred<string | undefined>();
      const w = worker(q, { 'send-email': () => 'sent' }, { attempts: 1 });
      w.on('dead', (job) => dead.resolve(job.id));
      await q.add('x', { id: 'u', name: 'charge' });
      assert.equal(await within(dead.promise, 10_000, 'the job to die'), 'u');
      const info = await q.get('u');
      assert.equal(info?.state, 'dead');
      assert.match(info?.lastError ?? '', /no handler for job name "charge": this worker handles "send-email" and has no 'default' handler/);
      const noName = deferred<string | undefined>();
      w.on('dead', (job) => {
        if (job.id === 'plain') noName.resolve(job.id);
      });
      await q.add('y', { id: 'plain' });
      await within(noName.promise, 10_000, 'the unnamed job to die');
      assert.match((await q.get('plain'))?.lastError ?? '', /job has no name: this worker handles "send-email"/);
    });

    test('handlers by name are checked when the worker is made', () => {
      const q = queue<string>();
      assert.throws(() => worker(q, {}), /handlers must name at least one job name/);
      assert.throws(() => worker(q, { a: 'nope' } as never), /handlers\["a"\] must be a function/);
      assert.throws(() => worker(q, null as never), /handler must be a function, or an object of handlers by job name/);
    });
  });
}
