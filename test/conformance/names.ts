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
