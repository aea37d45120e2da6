/**
 * What a wrong token costs: a second per try (by default), whatever way the token comes (a
 * bearer header, another scheme, the sign-in form, a forged session cookie), one try at a time
 * per client address, while other addresses and the right token are not slowed. Real sockets
 * from several loopback addresses (127.0.0.2, 127.0.0.3, …) to a served dashboard, so the
 * server tells clients apart as it would in production: by the peer address.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { createDashboard, type Dashboard } from '../../src/server/dashboard.js';
import { serveDashboard, type RunningDashboard } from '../../src/server/serve.js';
import { addressFromHeader, clientKey, WrongTokenCost } from '../../src/server/wrong-token-cost.js';
import { uniqueName } from '../helpers/names.js';
import { within } from '../helpers/wait.js';
import { serverBackends } from './backends.js';

const TOKEN = 'correct-horse-battery-staple';
const [, redis] = serverBackends();

interface Reply {
  status: number;
  ms: number;
  /** When the answer was in (performance.now()): what the tests compare, rather than bounds a loaded machine may miss. */
  end: number;
  body: string;
  cookies: string[];
  retryAfter: string | undefined;
}

/** One HTTP request from a given local address, timed. */
function call(url: string, from: string, opts: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Reply> {
  const t0 = performance.now();
  return within(
    new Promise<Reply>((resolve, reject) => {
      const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
      const req = request(
        url,
        {
          method: opts.method ?? 'GET',
          localAddress: from,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            'sec-fetch-site': 'same-origin',
            ...opts.headers,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
          res.on('end', () => {
            const end = performance.now();
            resolve({
              status: res.statusCode ?? 0,
              ms: end - t0,
              end,
              body: text,
              cookies: res.headers['set-cookie'] ?? [],
              retryAfter: res.headers['retry-after'],
            });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    }),
    20_000,
    `${opts.method ?? 'GET'} ${url} from ${from}`,
  );
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const firstEnd = (replies: { end: number }[]) => Math.min(...replies.map((r) => r.end));
const lastEnd = (replies: Reply[]) => Math.max(...replies.map((r) => r.end));

async function serve(extra: Parameters<typeof serveDashboard>[1] = {}): Promise<{ running: RunningDashboard; url: string; name: string }> {
  const name = uniqueName('guess');
  const q = redis!.track(new Queue(name, redis!.options()));
  await q.add({ x: 1 }, { id: 'j1', delay: 60_000 });
  const running = redis!.track(await serveDashboard({ ...redis!.options(), token: TOKEN, port: 0 }, extra));
  return { running, url: running.url.replace(/\/$/, ''), name };
}

describe('a wrong token costs the guesser time', () => {
  test('the default: a wrong bearer token takes a second, three at once from one address take three, while another address and the right token go straight through', async () => {
    const { url, name } = await serve();
    const path = `${url}/api/queues/${name}/jobs/j1`;
    // The first request opens the dashboard's Redis connection: not part of what is measured.
    assert.equal((await call(path, '127.0.0.3', { headers: bearer(TOKEN) })).status, 200);
    const guesses = [1, 2, 3].map((i) => call(path, '127.0.0.2', { headers: bearer(`wrong-guess-number-${i}`) }));
    // While the guesser waits: the right token from elsewhere, then a wrong one from elsewhere.
    const right = await call(path, '127.0.0.3', { headers: bearer(TOKEN) });
    const other = call(path, '127.0.0.4', { headers: bearer('another-wrong-guess') });
    const answered = await Promise.all(guesses);
    assert.deepEqual(
      answered.map((a) => a.status),
      [401, 401, 401],
    );
    assert.equal(right.status, 200);
    assert.ok(right.end < firstEnd(answered), 'the right token from another address was answered before the guesser got its first answer');
    const times = answered.map((a) => a.ms).sort((a, b) => a - b);
    assert.ok(times[0]! >= 950, `the first wrong try took ${Math.round(times[0]!)} ms`);
    assert.ok(times[2]! >= 2900, `three wrong tries at once took ${Math.round(times[2]!)} ms: one at a time`);
    const o = await other;
    assert.equal(o.status, 401);
    assert.ok(o.ms >= 950, `a wrong try from another address took ${Math.round(o.ms)} ms`);
    assert.ok(o.end < lastEnd(answered), "its own second, not a place behind the guesser's line");
  });

  test('every way a token is presented costs the same: a bearer header, another scheme, the sign-in form, a forged session cookie', async () => {
    const delayMs = 300;
    const { url, name } = await serve({ wrongTokenDelayMs: delayMs });
    const path = `${url}/api/queues/${name}/jobs/j1`;
    // Presenting nothing, and the right token at the form, from other addresses at the same time.
    const none = call(path, '127.0.0.10');
    const login = call(`${url}/api/login`, '127.0.0.11', { method: 'POST', body: { token: TOKEN }, headers: { origin: url } });
    const tries: [string, Promise<Reply>][] = [
      ['bearer', call(path, '127.0.0.5', { headers: bearer('wrong-token-wrong-token') })],
      ['basic', call(path, '127.0.0.6', { headers: { authorization: `Basic ${Buffer.from(`x:${TOKEN}x`).toString('base64')}` } })],
      ['empty bearer', call(path, '127.0.0.7', { headers: { authorization: 'Bearer' } })],
      ['login', call(`${url}/api/login`, '127.0.0.8', { method: 'POST', body: { token: 'wrong-token-wrong-token' }, headers: { origin: url } })],
      ['cookie', call(path, '127.0.0.9', { headers: { cookie: `dq_session=${Date.now() + 60_000}.forged-signature` } })],
    ];
    const wrong: Reply[] = [];
    for (const [how, p] of tries) {
      const r = await p;
      wrong.push(r);
      assert.equal(r.status, 401, how);
      assert.ok(r.ms >= delayMs - 10, `${how}: answered in ${Math.round(r.ms)} ms`);
      // A session cookie this process did not sign (a forged one, or one from before a restart
      // with a random secret) is cleared with the answer, so an open page pays once, not per call.
      if (how === 'cookie')
        assert.ok(
          r.cookies.some((c) => /^dq_session=;/.test(c) && /Max-Age=0/i.test(c)),
          r.cookies.join(' | '),
        );
    }
    const n = await none;
    assert.equal(n.status, 401);
    assert.ok(n.end < firstEnd(wrong), 'a request presenting nothing guessed nothing: refused at once');
    const l = await login;
    assert.equal(l.status, 200);
    assert.ok(l.end < firstEnd(wrong), 'the right token at the form is not slowed');
  });

  test('parallel wrong sign-ins from one address are answered one at a time; a flood past the line is refused at once without a check (429), and the address gets in once its line is through', async () => {
    const delayMs = 300;
    // In process, not over sockets: requests sent over five connections reach the server in
    // whatever order the sockets are read (on a loaded machine the sixth came first and got in),
    // while dash.fetch calls run their checks in the order they were made.
    const dash = redis!.track(createDashboard({ ...redis!.options(), token: TOKEN }, { wrongTokenDelayMs: delayMs, maxWaitingTries: 5 }));
    const login = (token: string) =>
      within(
        (async () => {
          const res = await dash.fetch(
            new Request('http://127.0.0.1/api/login', {
              method: 'POST',
              headers: { host: '127.0.0.1', origin: 'http://127.0.0.1', 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
              body: JSON.stringify({ token }),
            }),
          );
          const body = await res.text();
          return {
            status: res.status,
            end: performance.now(),
            body,
            retryAfter: res.headers.get('retry-after') ?? undefined,
            cookies: res.headers.getSetCookie(),
          };
        })(),
        10_000,
        'a sign-in',
      );
    const t0 = performance.now();
    const five = Array.from({ length: 5 }, (_, i) => login(`wrong-token-number-${i}`));
    // The line is full: a sixth try is refused without being checked, even the right token.
    const flood = await login(TOKEN);
    assert.equal(flood.status, 429, flood.body);
    assert.equal(flood.retryAfter, '1', 'a 429 says when to come back');
    const answered = await Promise.all(five);
    assert.ok(flood.end < firstEnd(answered), 'refused at once, before the first wrong try was answered');
    assert.ok(
      answered.every((a) => a.status === 401),
      answered.map((a) => a.status).join(),
    );
    assert.ok(performance.now() - t0 >= 5 * delayMs - 10, `five wrong tries took ${Math.round(performance.now() - t0)} ms`);
    const later = await login(TOKEN);
    assert.equal(later.status, 200);
    assert.ok(later.cookies.some((c) => c.startsWith('dq_session=')));
  });
});

describe('clients behind a reverse proxy', () => {
  test('with clientAddress, clients that share the peer address are told apart: a guesser does not hold up another client', async () => {
    const delayMs = 300;
    const name = uniqueName('proxy');
    const q = redis!.track(new Queue(name, redis!.options()));
    await q.add({ x: 1 }, { id: 'j1', delay: 60_000 });
    const ask = (dash: Dashboard, ip: string, token: string) =>
      within(
        (async () => {
          const t0 = performance.now();
          const res = await dash.fetch(
            new Request(`http://127.0.0.1/api/queues/${name}/jobs/j1`, { headers: { host: '127.0.0.1', 'x-real-ip': ip, authorization: `Bearer ${token}` } }),
          );
          await res.text();
          const end = performance.now();
          return { status: res.status, ms: end - t0, end };
        })(),
        10_000,
        `a request as ${ip}`,
      );
    // In-process (no socket): without clientAddress every request is one client.
    const shared = redis!.track(createDashboard({ ...redis!.options(), token: TOKEN }, { wrongTokenDelayMs: delayMs }));
    const guess = ask(shared, '10.0.0.1', 'wrong-token-wrong-token');
    const held = await ask(shared, '10.0.0.2', TOKEN);
    assert.equal(held.status, 200);
    assert.ok(held.ms >= delayMs - 10, `one line for all: the right token waited ${Math.round(held.ms)} ms`);
    await guess;
    const apart = redis!.track(
      createDashboard({ ...redis!.options(), token: TOKEN, clientAddress: addressFromHeader('x-real-ip') }, { wrongTokenDelayMs: delayMs }),
    );
    assert.equal((await ask(apart, '10.0.0.3', TOKEN)).status, 200, 'the first request opens the connection');
    const guess2 = ask(apart, '10.0.0.1', 'wrong-token-wrong-token');
    const fast = await ask(apart, '10.0.0.2', TOKEN);
    assert.equal(fast.status, 200);
    const g = await guess2;
    assert.equal(g.status, 401);
    assert.ok(fast.end < g.end, `the right token from another client (${Math.round(fast.ms)} ms) came before the guess's answer`);
  });

  test('addressFromHeader takes the entry the nearest proxy added', () => {
    const get = addressFromHeader('x-forwarded-for');
    const req = (v?: string) => new Request('http://x/', { headers: v === undefined ? {} : { 'x-forwarded-for': v } });
    assert.equal(get(req('1.2.3.4, 10.0.0.9')), '10.0.0.9', 'what the client wrote before it is not trusted');
    assert.equal(get(req('10.0.0.9')), '10.0.0.9');
    assert.equal(get(req('')), undefined);
    assert.equal(get(req()), undefined);
  });
});

describe('the per-client record of wrong tries', () => {
  test('is bounded: more guessing addresses than it keeps share one line, and an address is forgotten once its line is through', async () => {
    const cost = new WrongTokenCost({ delayMs: 50, maxClients: 3, maxWaiting: 4 });
    const t0 = performance.now();
    const tries = Promise.allSettled(Array.from({ length: 10 }, (_, i) => cost.check(`10.0.0.${i}`, () => false)));
    assert.equal(cost.size, 3, 'three clients kept apart');
    const settled = await tries;
    assert.deepEqual(
      settled.slice(0, 3).map((r) => r.status === 'fulfilled' && r.value),
      [false, false, false],
    );
    // Seven addresses over the bound share the overflow line: one try at a time, and its cap.
    const over = settled.slice(3);
    assert.equal(over.filter((r) => r.status === 'fulfilled').length, 4, 'the overflow line took as many as one line holds');
    assert.equal(over.filter((r) => r.status === 'rejected').length, 3, 'the rest were refused at once');
    assert.ok(performance.now() - t0 >= 4 * 50 - 10);
    assert.equal(cost.size, 0, 'nothing is kept once every line is through');
    assert.equal(await cost.check('10.0.0.1', () => true), true);
  });

  test('an IPv6 client is its /64, an IPv4-mapped address is its IPv4 address', () => {
    assert.equal(clientKey('2001:db8:1:2::1'), clientKey('2001:0db8:0001:0002:ffff:eeee:dddd:cccc'));
    assert.notEqual(clientKey('2001:db8:1:2::1'), clientKey('2001:db8:1:3::1'));
    assert.equal(clientKey('::ffff:127.0.0.2'), clientKey('127.0.0.2'));
    assert.notEqual(clientKey('127.0.0.2'), clientKey('127.0.0.3'));
    assert.equal(clientKey(undefined), clientKey(''));
  });
});
