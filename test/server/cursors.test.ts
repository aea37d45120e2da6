/**
 * Cursors through the API: every cursor the library hands out is taken back (search cursors
 * anchored on long ids, listing cursors of queues with many shards, also through `delayq
 * serve`'s HTTP server), and an edited or forged one is a 400 that says so, never a 500 with a
 * Redis error or a silent empty page. On both stores.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { createDashboard } from '../../src/server/dashboard.js';
import { serveDashboard } from '../../src/server/serve.js';
import { uniqueName } from '../helpers/names.js';
import { serverBackends } from './backends.js';
import { ApiClient } from './client.js';

/** The longest cursor the library takes back (src/inspect/cursor.ts). */
const LIBRARY_LIST_CURSOR_MAX = 65_536;

for (const backend of serverBackends()) {
  describe(`cursors through the API (${backend.name})`, () => {
    function setUp(shards?: number) {
      const name = uniqueName('cur');
      const q = backend.track(new Queue(name, { ...backend.options(), shards }));
      const dash = backend.track(createDashboard({ ...backend.options(), sampleMs: 60_000 }));
      return { name, q, dash, api: new ApiClient(dash) };
    }

    test('a search cursor anchored on a UUID id (over 40 characters) is taken back, page after page', async () => {
      const { name, q, api } = setUp();
      const ids = new Set<string>();
      for (let i = 0; i < 30; i++) ids.add((await q.add({ i }, { id: randomUUID() })).id);
      const seen: string[] = [];
      let cursor: string | undefined;
      let longest = 0;
      let calls = 0;
      do {
        const r = await api.get(`/api/queues/${name}/search?text=-&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, `page ${calls + 1} with cursor ${cursor}: ${JSON.stringify(r.body)}`);
        seen.push(...r.body.jobs.map((j: { id: string }) => j.id));
        cursor = r.body.cursor;
        longest = Math.max(longest, cursor?.length ?? 0);
      } while (cursor && ++calls < 100);
      assert.ok(longest > 40, `the longest cursor had ${longest} characters`);
      assert.deepEqual(new Set(seen), ids, 'every job once');
      assert.equal(seen.length, 30);
    });

    test('the listing cursors of a 32-shard queue (over 2,000 characters) are taken back, page after page', async () => {
      const { name, q, api } = setUp(32);
      const ids = new Set<string>();
      for (let i = 0; i < 96; i++) ids.add((await q.add({ i }, { id: randomUUID(), delay: 60_000 + i })).id);
      const listed: string[] = [];
      let cursor: string | undefined;
      let longest = 0;
      let calls = 0;
      do {
        const r = await api.get(`/api/queues/${name}/jobs?state=scheduled&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        assert.equal(r.status, 200, `page ${calls + 1}, cursor of ${cursor?.length} characters: ${JSON.stringify(r.body)}`);
        listed.push(...r.body.jobs.map((j: { id: string }) => j.id));
        cursor = r.body.cursor;
        longest = Math.max(longest, cursor?.length ?? 0);
      } while (cursor && ++calls < 100);
      assert.ok(longest > 2000, `the longest cursor had ${longest} characters`);
      assert.equal(listed.length, 96);
      assert.deepEqual(new Set(listed), ids);
    });

    test('through the served dashboard, the cursors of a 256-shard queue fit in a request', async () => {
      const name = uniqueName('wide');
      const q = backend.track(new Queue(name, { ...backend.options(), shards: 256 }));
      // Ids of about 80 characters: a place per shard then makes the cursor well over Node's 16 KiB
      // once half the shards have one, and under the library's 64 KiB with all of them.
      await q.addBulk(Array.from({ length: 512 }, (_, i) => ({ data: { i }, opts: { id: `${randomUUID()}-${randomUUID()}-${i}`, delay: 60_000 + i } })));
      const running = backend.track(await serveDashboard({ ...backend.options(), port: 0, sampleMs: 60_000 }));
      let cursor: string | undefined;
      let longest = 0;
      let listed = 0;
      let calls = 0;
      do {
        const res = await fetch(`${running.url}api/queues/${name}/jobs?state=scheduled&limit=60${cursor ? `&cursor=${cursor}` : ''}`);
        const text = await res.text();
        assert.equal(res.status, 200, `page ${calls + 1}, cursor of ${cursor?.length} characters: ${text.slice(0, 200)}`);
        const body = JSON.parse(text) as { jobs: unknown[]; cursor?: string };
        listed += body.jobs.length;
        cursor = body.cursor;
        longest = Math.max(longest, cursor?.length ?? 0);
      } while (cursor && ++calls < 100);
      assert.equal(listed, 512);
      assert.ok(longest > 16_384, `the longest cursor had ${longest} characters (more than Node's default header limit)`);
    });

    /** Asks for a page with a forged cursor: 400 naming the cursor, with a message a person can act on. */
    async function refused(api: ApiClient, path: string, what: string): Promise<void> {
      const r = await api.get(path);
      assert.equal(r.status, 400, `${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      assert.match(r.body.error.field, /cursor$/, what);
      assert.match(r.body.error.message, /cursor/, what);
    }

    test('an edited or forged cursor is a 400 that names the cursor, on a plain and on a sharded queue', async () => {
      for (const shards of [undefined, 4]) {
        const { name, q, api } = setUp(shards);
        for (let i = 0; i < 6; i++) await q.add({ i }, { id: `job-${i}`, delay: 60_000 + i });
        const list = (cursor: string) => `/api/queues/${name}/jobs?state=scheduled&limit=2&cursor=${encodeURIComponent(cursor)}`;
        const search = (cursor: string) => `/api/queues/${name}/search?text=job&limit=2&cursor=${encodeURIComponent(cursor)}`;
        const real = (await api.get(`/api/queues/${name}/jobs?state=scheduled&limit=2`)).body.cursor as string;
        const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
        const where = shards ? 'sharded' : 'plain';
        for (const [what, cursor] of [
          ['not base64url', 'not a cursor!'],
          ['base64url of no JSON', Buffer.from('hello').toString('base64url')],
          ['a cursor cut short', real.slice(0, -3)],
          ['a cursor with a byte changed', `${real.slice(0, 10)}${real[10] === 'A' ? 'B' : 'A'}${real.slice(11)}`],
          ['another listing', b64(['dead', 'dead', '1', 'x'])],
          ['not four strings', b64(['scheduled', 1, 2])],
          ['a score that is no number', b64(['scheduled', 'scheduled', 'soon', 'x'])],
          ['a sharded place that is no place', b64(['scheduled', 'shards', '0', '{"a":5}'])],
          ['a sharded place that is no JSON', b64(['scheduled', 'shards', '0', 'nope'])],
        ] as const) {
          await refused(api, list(cursor), `${where} listing, ${what}`);
        }
        for (const [what, cursor] of [
          ['letters', 'abc'],
          ['an anchor that is not base64url', '5~!!'],
          ['two anchors', '5~YQ~YQ'],
          ['a fraction', '1.2.3'],
          ['a number too long', '1'.repeat(30)],
        ] as const) {
          await refused(api, search(cursor), `${where} search, ${what}`);
        }
      }
    });

    test('a forged cursor the library reads as a real one is a 400 too, never a Redis error or a silent empty page', async () => {
      const { name, q, api } = setUp();
      for (let i = 0; i < 6; i++) await q.add({ i }, { id: `job-${i}`, delay: 60_000 + i });
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
      // A phase of another listing: read as "nothing left" (a silent empty page).
      await refused(api, `/api/queues/${name}/jobs?state=scheduled&cursor=${b64(['scheduled', 'dead', '1', 'x'])}`, 'a phase of another listing');
      // A sharded cursor on a queue that is not sharded: a Redis error (500) or an empty page.
      const sharded = b64(['scheduled', 'shards', '0', JSON.stringify({ [name]: ['scheduled', 'abc', 'x'] })]);
      await refused(api, `/api/queues/${name}/jobs?state=scheduled&cursor=${sharded}`, 'a sharded cursor on a plain queue');
      // A scan cursor Redis never handed out: ERR invalid cursor (500) on Redis, an empty page in memory.
      await refused(api, `/api/queues/${name}/search?text=job&cursor=${'9'.repeat(20)}`, 'a scan cursor past 2^64');
    });

    test('a cursor longer than any the library takes back is refused by the API (400, query.cursor); one within it reaches the library', async () => {
      const { name, q, api } = setUp();
      await q.add({ x: 1 });
      const over = await api.get(`/api/queues/${name}/jobs?state=scheduled&cursor=${'A'.repeat(LIBRARY_LIST_CURSOR_MAX + 1)}`);
      assert.equal(over.status, 400);
      assert.equal(over.body.error.field, 'query.cursor');
      const within = await api.get(`/api/queues/${name}/jobs?state=scheduled&cursor=${'A'.repeat(LIBRARY_LIST_CURSOR_MAX)}`);
      assert.equal(within.status, 400);
      assert.equal(within.body.error.field, 'cursor', 'refused by the library, which read it');
      const search = await api.get(`/api/queues/${name}/search?text=x&cursor=${'1'.repeat(5000)}`);
      assert.equal(search.status, 400);
      assert.equal(search.body.error.field, 'query.cursor');
    });
  });
}
