/**
 * The dashboard's queue cache: bounded, least recently used out, and no room for a name a
 * request made up. On both stores.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { QueueDirectory } from '../../src/server/queue-directory.js';
import { HttpError } from '../../src/server/route.js';
import { openStore } from '../../src/store/open-store.js';
import { uniqueName } from '../helpers/names.js';
import { serverBackends } from './backends.js';

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
