/** `delayq serve` as a person starts it: against a real redis-server, stopped by SIGTERM. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { freePort } from '../helpers/redis-server.js';
import { until, within } from '../helpers/wait.js';
import { assertFailure, run, start } from './run-cli.js';

const fx = useRedis();

test('serves the API for the queues under the prefix, audits writes on stderr, and exits 0 on SIGTERM', async () => {
  const name = uniqueName('serve');
  const q = new Queue(name, { connection: fx.redis.url });
  await q.add({ orderId: 'S-1' }, { id: 'order:S-1', delay: 60_000 });
  const port = await freePort();
  const server = start(['serve', '--redis', fx.redis.url, '--port', String(port), '--json'], {});
  let stdout = '';
  server.child.stdout!.on('data', (d) => (stdout += d));
  const listening = await until(() => stdout.split('\n').find((l) => l.includes('"listening"')), 'the listening line');
  assert.deepEqual(JSON.parse(listening), { event: 'listening', url: `http://127.0.0.1:${port}/`, readOnly: false, auth: false });

  const base = `http://127.0.0.1:${port}`;
  const queues = await until(async () => {
    const list = (await (await fetch(`${base}/api/queues`)).json()) as { name: string; stats: { scheduled: number } }[];
    return list.find((x) => x.name === name);
  }, 'the queue listed');
  assert.equal(queues.stats.scheduled, 1);
  const session = await fetch(`${base}/api/session`);
  const { csrfToken } = (await session.json()) as { csrfToken: string };
  const cookie = session.headers.getSetCookie()[0]!.split(';')[0]!;
  const cancel = await fetch(`${base}/api/queues/${name}/jobs/order%3AS-1/cancel`, {
    method: 'POST',
    headers: { cookie, 'x-csrf-token': csrfToken, origin: base, 'sec-fetch-site': 'same-origin' },
  });
  assert.equal(cancel.status, 200);
  assert.equal(await q.get('order:S-1'), null);

  server.child.kill('SIGTERM');
  const r = await within(server.done, 5000, 'serve to stop');
  assert.equal(r.code, 0, r.stderr);
  const audit = JSON.parse(r.stderr.trim().split('\n').at(-1)!);
  assert.equal(audit.audit, true);
  assert.equal(audit.action, 'job.cancel');
  assert.equal(audit.summary, 'Cancels a scheduled job');
  assert.equal(audit.queue, name);
  assert.equal(audit.target, 'order:S-1');
  await q.close();
});

test('--client-ip-header: clients behind one proxy address pay for their own wrong tokens', async () => {
  const name = uniqueName('proxied');
  const q = new Queue(name, { connection: fx.redis.url });
  await q.add({ x: 1 }, { id: 'p1', delay: 60_000 });
  const port = await freePort();
  const token = 'proxied-token-0123456789';
  const server = start(['serve', '--redis', fx.redis.url, '--port', String(port), '--token', token, '--client-ip-header', 'x-real-ip', '--json'], {});
  let stdout = '';
  server.child.stdout!.on('data', (d) => (stdout += d));
  try {
    await until(() => stdout.includes('"listening"'), 'the listening line');
    const url = `http://127.0.0.1:${port}/api/queues/${name}/jobs/p1`;
    const timed = async (ip: string, bearer: string) => {
      const t0 = performance.now();
      const res = await fetch(url, { headers: { 'x-real-ip': ip, authorization: `Bearer ${bearer}` } });
      await res.text();
      const end = performance.now();
      return { status: res.status, ms: end - t0, end };
    };
    assert.equal((await within(timed('198.51.100.9', token), 5000, 'a first request')).status, 200);
    const guess = timed('198.51.100.7', 'wrong-token-wrong-token');
    const right = await within(timed('198.51.100.8', token), 5000, 'the right token');
    const wrong = await within(guess, 5000, 'the wrong token');
    assert.equal(right.status, 200);
    assert.equal(wrong.status, 401);
    assert.ok(wrong.ms >= 950, `the wrong token took ${Math.round(wrong.ms)} ms`);
    assert.ok(right.end < wrong.end, `the right token from another client (${Math.round(right.ms)} ms) came before the wrong one's answer`);
  } finally {
    server.child.kill('SIGTERM');
    await within(server.done, 5000, 'serve to stop');
    await q.close();
  }
});

test('refuses a public address without a token (exit 64), and a short token', async () => {
  const open = await run(['serve', '--redis', fx.redis.url, '--host', '0.0.0.0', '--port', '0']);
  const { message } = assertFailure(open, 64, 'serve on 0.0.0.0');
  assert.match(message, /refusing to listen on 0\.0\.0\.0 without authentication/);
  const short = await run(['serve', '--redis', fx.redis.url, '--port', '0', '--token', 'abc']);
  assert.match(assertFailure(short, 64, 'a short token').message, /at least 16 characters/);
});

test('does not start against an unreachable Redis: exit 1 within seconds, naming the address', async () => {
  const dead = await freePort();
  const from = performance.now();
  const r = await within(run(['serve', '--redis', `redis://127.0.0.1:${dead}`, '--port', '0']), 10_000, 'serve to give up');
  const f = assertFailure(r, 1, 'serve against a closed port');
  assert.match(f.message, new RegExp(`^Redis at 127\\.0\\.0\\.1:${dead}: `));
  assert.equal(r.stdout, '', 'never said it was listening');
  assert.ok(performance.now() - from < 5_000, `gave up after ${Math.round(performance.now() - from)} ms`);
});

test('a port in use is said in words, with a hint (exit 1)', async () => {
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  const port = (taken.address() as { port: number }).port;
  try {
    const r = await within(run(['serve', '--redis', fx.redis.url, '--port', String(port)]), 10_000, 'serve to give up');
    const f = assertFailure(r, 1, 'serve on a taken port');
    assert.equal(f.message, `port ${port} on 127.0.0.1 is in use`);
    assert.match(f.hint ?? '', /--port/);
  } finally {
    await new Promise((r) => taken.close(r));
  }
});
