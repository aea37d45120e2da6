/**
 * The dashboard's queue cache: bounded, least recently used out, and no room for a name a
 * request made up; a registry entry that is no queue name breaks nothing. On both stores.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { QueueDirectory } from '../../src/server/queue-directory.js';
import { HttpError } from '../../src/server/route.js';
import { openStore } from '../../src/store/open-store.js';
import { uniqueName } from '../helpers/names.js';
import { serverBackends } from './backends.js';
import { ApiClient } from './client.js';

for (const backend of serverBackends()) {
  describe(`the dashboard's queue cache (${backend.name})`, () => {
    test('holds at most its capacity, drops the least recently used, and never opens a name that is not a queue', async () => {
      const { store, owned } = openStore(backend.options());
      if (owned) backend.track(store);
      const names = Array.from({ length: 10 }, (_, i) => `${uniqueName('lru')}-${i}`);
      for (const n of names) await backend.track(new Queue(n, backend.options())).add({ n });
      const dir = new QueueDirectory(store, undefined, 3);
      const first = await dir.find(names[0]!);
      for (const n of names.slice(1, 3)) await dir.find(n);
      assert.equal(await dir.find(names[0]!), first, 'a queue in the cache is the same object');
      for (const n of names.slice(3)) {
        await dir.find(n);
        assert.ok(dir.size <= 3, `${dir.size} queues open`);
      }
      assert.notEqual(await dir.find(names[0]!), first, 'the least recently used went out (and comes back as a new one)');
      assert.equal((await (await dir.find(names[0]!)).stats()).scheduled, 1, 'a queue opened again reads the same data');

      const sizeBefore = dir.size;
      for (let i = 0; i < 50; i++) {
        await assert.rejects(dir.find(uniqueName('made-up')), (err: unknown) => err instanceof HttpError && err.status === 404);
      }
      assert.equal(dir.size, sizeBefore, 'made-up names take no room');
      await assert.rejects(dir.find('no spaces allowed'), /queue name/);
      await dir.close();
      assert.equal(dir.size, 0);
    });

    test('a registry entry that is no queue name is left out of the overview, the samples and the metrics', async () => {
      const { store, owned } = openStore(backend.options());
      if (owned) backend.track(store);
      const good = uniqueName('good');
      await backend.track(new Queue(good, backend.options())).add({ x: 1 });
      await store.register('not a queue name!');
      const dir = new QueueDirectory(store, undefined, 10);
      const names = await dir.names();
      assert.ok(names.includes(good));
      assert.ok(!names.includes('not a queue name!'));
      const api = new ApiClient(backend.track(createDashboard({ ...backend.options(), sampleMs: 60_000 })));
      const queues = await api.get('/api/queues');
      assert.equal(queues.status, 200, JSON.stringify(queues.body));
      assert.ok(queues.body.some((x: { name: string }) => x.name === good));
      const metrics = await api.get('/metrics');
      assert.equal(metrics.status, 200, String(metrics.body).slice(0, 200));
    });

    test('with a configured list, only those names are shown, registered or not', async () => {
      const { store, owned } = openStore(backend.options());
      if (owned) backend.track(store);
      const configured = uniqueName('configured');
      const other = uniqueName('other');
      await backend.track(new Queue(other, backend.options())).add({ x: 1 });
      const dir = new QueueDirectory(store, [configured], 10);
      assert.equal((await dir.find(configured)).name, configured);
      await assert.rejects(dir.find(other), (err: unknown) => err instanceof HttpError && err.status === 404);
      assert.deepEqual(await dir.names(), [configured]);
    });
  });
}
