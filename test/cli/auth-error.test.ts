/** A wrong or missing Redis password is said to be an authentication error, not "is Redis running there?". */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { assertFailure, run } from './run-cli.js';

let redis: RedisServer;
before(async () => {
  redis = await startRedis();
  // The password is set once the server is up (the start-up probe pings without one).
  const admin = redis.client();
  await admin.config('SET', 'requirepass', 'right-password');
  admin.disconnect();
});
after(async () => {
  await redis.kill9();
});

describe('Redis refuses the credentials', () => {
  for (const [what, url] of [
    ['a wrong password', () => `redis://:wrong-password@127.0.0.1:${redis.port}`],
    ['a wrong user', () => `redis://nobody:right-password@127.0.0.1:${redis.port}`],
    ['no password', () => `redis://127.0.0.1:${redis.port}`],
  ] as const) {
    test(`${what}: exit 1 within seconds, "authentication failed", a hint about the password, and the password never printed`, async () => {
      const started = Date.now();
      const r = await run(['--redis', url(), '--queue', 'orders', 'stats']);
      const { message, hint } = assertFailure(r, 1, what);
      assert.ok(Date.now() - started < 10_000, 'within seconds');
      assert.match(message, /^authentication failed: /);
      assert.match(hint ?? '', /password \(or user\) is wrong or missing/);
      assert.doesNotMatch(hint ?? '', /is Redis running there/);
      assert.doesNotMatch(r.stderr, /wrong-password|right-password/);
    });
  }

  test('the right password works; a closed port still asks whether Redis runs there', async () => {
    const ok = await run(['--redis', `redis://:right-password@127.0.0.1:${redis.port}`, '--queue', 'orders', 'stats']);
    assert.equal(ok.code, 0, ok.stderr);
    const closed = await run(['--redis', 'redis://:x@127.0.0.1:1', '--queue', 'orders', 'stats']);
    assert.match(assertFailure(closed, 1, 'closed port').hint ?? '', /is Redis running there/);
  });
});
