/**
 * `delayq serve`'s probes: /healthz (the process answers) and /readyz (Redis reachable, the scripts
 * run), without credentials, naming no address or queue, in the OpenAPI document; on a real
 * redis-server, after the library was flushed, and with Redis gone.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { serveDashboard, type RunningDashboard } from '../../src/server/serve.js';
import { freePort } from '../helpers/redis-server.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();
const TOKEN = 'health-probe-token-0123456789';
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const open: RunningDashboard[] = [];
after(async () => {
  for (const d of open) await d.close().catch(() => {});
});

async function serve(connection: string): Promise<RunningDashboard> {
  const d = await serveDashboard({ connection, port: 0, token: TOKEN, logger: quiet, sampleMs: 60_000 });
  open.push(d);
  return d;
}

async function get(d: RunningDashboard, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path.slice(1), d.url), { headers, signal: AbortSignal.timeout(15_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('delayq serve: /healthz and /readyz', () => {
  test('both answer without credentials; /readyz says ready while Redis answers, also after the library was flushed', async () => {
    const d = await serve(fx.redis.url);
    assert.deepEqual(await get(d, '/healthz'), { status: 200, body: { status: 'ok' } });
    assert.deepEqual(await get(d, '/readyz'), { status: 200, body: { status: 'ready', checks: { redis: 'ok', scripts: 'ok' } } });
    // The library gone (a restart without persistence, FUNCTION FLUSH): the probe loads it again.
    const admin = new Redis(fx.redis.url);
    try {
      await admin.call('FUNCTION', 'FLUSH');
      assert.equal((await get(d, '/readyz')).status, 200);
      const libs = (await admin.call('FUNCTION', 'LIST')) as unknown[];
      assert.ok(libs.length > 0, 'the library is loaded again');
    } finally {
      admin.disconnect();
    }
    // The API itself still wants the token.
    assert.equal((await get(d, '/api/queues')).status, 401);
  });

  test('/readyz answers 503, naming no address, while Redis is unreachable; /healthz still 200', async () => {
    const port = await freePort();
    const d = await serve(`redis://127.0.0.1:${port}`);
    const started = Date.now();
    const r = await get(d, '/readyz');
    assert.equal(r.status, 503);
    assert.deepEqual(r.body, { status: 'not ready', checks: { redis: 'unreachable', scripts: 'unknown' } });
    assert.ok(Date.now() - started < 4_000, `within its 2 s bound (${Date.now() - started} ms)`);
    assert.doesNotMatch(JSON.stringify(r.body), new RegExp(String(port)));
    assert.deepEqual(await get(d, '/healthz'), { status: 200, body: { status: 'ok' } });
  });

  test('the OpenAPI document has both, without security', async () => {
    const d = await serve(fx.redis.url);
    const doc = await get(d, '/openapi.json', { authorization: `Bearer ${TOKEN}` });
    const paths = doc.body.paths as Record<string, { get: { security: unknown[]; responses: Record<string, unknown> } }>;
    for (const p of ['/healthz', '/readyz']) {
      assert.ok(paths[p], `${p} in the document`);
      assert.deepEqual(paths[p]!.get.security, []);
    }
    assert.ok(paths['/readyz']!.get.responses['503']);
  });
});
