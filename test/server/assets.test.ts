/**
 * The pages' files: compressed when the client accepts it, cached for good under a versioned
 * path (the page itself revalidated on every load, naming that version).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { MemoryStore } from '../../src/index.js';
import { createDashboard } from '../../src/server/dashboard.js';

const dash = createDashboard({ store: new MemoryStore() });
after(() => dash.close());
const get = (path: string, headers: Record<string, string> = {}) =>
  dash.fetch(new Request(`http://127.0.0.1:8787${path}`, { headers: { host: '127.0.0.1:8787', ...headers } }));

test('the page names its assets by version and is revalidated; the assets are immutable for a year', async () => {
  const page = await get('/');
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('cache-control'), 'no-cache');
  const html = await page.text();
  const m = /href="assets\/([A-Za-z0-9_-]{12})\/app\.css"/.exec(html);
  assert.ok(m, html);
  const version = m[1]!;
  assert.match(html, new RegExp(`src="assets/${version}/app\\.js"`));
  const js = await get(`/assets/${version}/app.js`);
  assert.equal(js.status, 200);
  assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  assert.equal((await get(`/assets/AAAAAAAAAAAA/app.js`)).status, 404, 'another version is not this one');
  assert.equal((await get(`/assets/${version}/index.html`)).status, 404);
  const plain = await get('/assets/app.js');
  assert.equal(plain.headers.get('cache-control'), 'no-cache', 'the unversioned path is revalidated');
  const again = await get('/', { 'if-none-match': page.headers.get('etag')! });
  assert.equal(again.status, 304);
});

test('text assets go out as brotli or gzip when accepted, as they are otherwise, and decode to the same bytes', async () => {
  const page = await (await get('/')).text();
  const version = /assets\/([A-Za-z0-9_-]{12})\//.exec(page)![1]!;
  const path = `/assets/${version}/pages-queue.js`;
  const identity = await get(path);
  assert.equal(identity.headers.get('content-encoding'), null);
  const raw = Buffer.from(await identity.arrayBuffer());
  const br = await get(path, { 'accept-encoding': 'gzip, deflate, br' });
  assert.equal(br.headers.get('content-encoding'), 'br');
  assert.equal(br.headers.get('vary'), 'accept-encoding');
  const brBody = Buffer.from(await br.arrayBuffer());
  assert.ok(brBody.length < raw.length / 3, `${brBody.length} of ${raw.length} bytes`);
  assert.deepEqual(brotliDecompressSync(brBody), raw);
  const gz = await get(path, { 'accept-encoding': 'gzip' });
  assert.equal(gz.headers.get('content-encoding'), 'gzip');
  assert.deepEqual(gunzipSync(Buffer.from(await gz.arrayBuffer())), raw);
  assert.equal((await get(path, { 'accept-encoding': 'br;q=0, gzip;q=0' })).headers.get('content-encoding'), null);
  assert.notEqual(br.headers.get('etag'), identity.headers.get('etag'), 'each encoding has its own ETag');
  assert.equal((await get(path, { 'accept-encoding': 'br', 'if-none-match': br.headers.get('etag')! })).status, 304);
});
