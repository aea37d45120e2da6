/**
 * The Python client installs like a Python package: `pip install ./clients/python` into a fresh
 * virtualenv (test/helpers/python-client.ts: Debian's python3-venv with the system's redis-py,
 * setuptools, wheel and mypy, no network) puts the published protocol and the PEP 561 marker
 * inside the package, so the installed client runs with no path setting and its type hints reach
 * a user's type checker. mypy (strict, pyproject.toml) checks the package's own hints, and a typed
 * program using the installed client (blocking and asyncio) checks clean while one that passes a
 * wrong type is caught. Then the client's driver scripts run from that install, from a directory
 * outside the checkout, beside the Node library: Python adds a named job and a Node worker runs it;
 * Node adds jobs and the installed Python worker runs them. (test/clients/python-client.test.ts
 * runs every other driver against such an install too.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Queue, Worker } from '../../src/index.js';
import { useErrorLog } from '../helpers/errors.js';
import { type InstalledClient, installPythonClient, runOk, SYSTEM_PYTHON } from '../helpers/python-client.js';
import { runDriver } from '../helpers/python-driver.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errors = useErrorLog();
let client: InstalledClient | undefined;
after(() => client?.remove());

/** A driver of clients/python/tests run by the venv's python against the installed package. */
async function driver(c: InstalledClient, script: string, args: string[]): Promise<Record<string, unknown>[]> {
  const r = await runDriver(c.python, join(c.drivers, script), args, { env: c.env, cwd: c.dir });
  assert.equal(r.code, 0, `${script} exited ${r.code}: ${r.stderr}`);
  return r.lines;
}

test('pip installs clients/python into a fresh venv; the installed client carries the protocol and its type hints', () => {
  client = installPythonClient();
  const c = client;
  const where = JSON.parse(
    runOk(
      c.python,
      [
        '-c',
        'import json, delayq_client, delayq_client.protocol as p, delayq_client.asyncio as a; print(json.dumps([delayq_client.__file__, p.find_manifest(), a.__file__]))',
      ],
      { env: { PATH: process.env.PATH }, cwd: c.dir },
    ),
  ) as [string, string, string];
  assert.ok(where[0].startsWith(join(c.dir, 'venv/lib')), `the package imported from the venv: ${where[0]}`);
  assert.equal(where[1], join(where[0], '../protocol/manifest.json'), 'the manifest inside the package');
  assert.ok(existsSync(join(where[0], '../protocol/scripts/add.lua')));
  assert.equal(where[2], join(where[0], '../asyncio.py'), 'delayq_client.asyncio installed');
  assert.ok(existsSync(join(where[0], '../py.typed')), 'the PEP 561 marker installed');
});

test("mypy: the package's own hints check clean (strict); a typed program using the installed client checks clean, and a wrong type in it is caught", () => {
  const mypy = spawnSync(SYSTEM_PYTHON, ['-c', 'import mypy'], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(mypy.status, 0, `the type check needs mypy (Debian: apt-get install python3-mypy): ${mypy.stderr}`);
  client ??= installPythonClient();
  const c = client;
  // The package's own (pyproject.toml: strict, redis-py's calls as Any), from the copy that was built.
  const own = spawnSync(c.python, ['-m', 'mypy', '--no-incremental'], { cwd: c.src, encoding: 'utf8', timeout: 120_000 });
  assert.equal(own.status, 0, `mypy on the package:\n${own.stdout}${own.stderr}`);
  assert.match(own.stdout, /^Success: no issues found in \d+ source files/m);

  const program = (wrong: string) => `from typing import Any, Dict, List, Optional
import redis
import redis.asyncio
from delayq_client import Job, Queue, Worker
from delayq_client.asyncio import Queue as AsyncQueue, Worker as AsyncWorker


def handle(job: Job) -> Dict[str, Any]:
    return {"id": job.id, "attempt": job.attempt + 1, "name": job.name}


q = Queue(redis.Redis(), "orders")
added: Dict[str, Any] = q.add({"orderId": "123"}, id="order:123", delay_ms=60000, name="timeout")
bulk: List[Dict[str, Any]] = q.add_bulk([{"data": 1}])
got: Optional[Dict[str, Any]] = q.get("order:123")
w = Worker(redis.Redis(), "orders", handle, concurrency=2)


async def main() -> None:
    aq = AsyncQueue(redis.asyncio.Redis(), "orders")
    r: Dict[str, Any] = await aq.add({"orderId": "123"}, priority=5)
    await aq.cancel("order:123", running=True)

    async def ahandle(job: Job) -> None:
        return None

    await AsyncWorker(redis.asyncio.Redis(), "orders", ahandle).run_until_idle(idle_ms=100)
${wrong}
`;
  // Debian's redis-py ships no hints (as the package's own config says: calls into it are Any).
  writeFileSync(join(c.dir, 'mypy.ini'), '[mypy]\nstrict = True\n\n[mypy-redis.*]\nignore_missing_imports = True\n');
  const check = (text: string) => {
    writeFileSync(join(c.dir, 'consumer.py'), text);
    // From the project's directory, not the source: mypy finds delayq_client in the venv (PEP 561).
    return spawnSync(c.python, ['-m', 'mypy', '--no-incremental', '--config-file', 'mypy.ini', '--python-executable', c.python, 'consumer.py'], {
      cwd: c.dir,
      encoding: 'utf8',
      timeout: 120_000,
    });
  };
  const good = check(program(''));
  assert.equal(good.status, 0, `a correct program:\n${good.stdout}${good.stderr}`);
  const bad = check(program('q.add({"n": 1}, priority="high")\nq.reschedule("x", delay_ms="soon")\nWorker(redis.Redis(), "orders", handle, concurrency="2")'));
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  assert.match(bad.stdout, /consumer\.py:\d+: error: Argument "priority" to "add" of "Queue" has incompatible type "str"; expected "int"/);
  assert.match(bad.stdout, /consumer\.py:\d+: error: Argument "delay_ms" to "reschedule" of "Queue" has incompatible type "str"; expected "Optional\[float\]"/);
  assert.match(bad.stdout, /consumer\.py:\d+: error: Argument "concurrency" to "Worker" has incompatible type "str"; expected "int"/);
});

test('the installed client works beside Node from outside the checkout: Python adds, Node runs; Node adds, Python runs', async () => {
  client ??= installPythonClient();
  const c = client;
  const name = uniqueName('pypkg');
  const produced = await driver(c, 'produce.py', [fx.redis.url, name]);
  assert.ok(produced.length > 0);
  const ids = produced.filter((l) => typeof l.id === 'string').map((l) => l.id as string);
  const ran = new Set<string>();
  const worker = new Worker(name, (job) => void ran.add(job.id), { connection: fx.redis.url });
  errors.watch(worker);
  fx.track(worker);
  await until(() => ids.every((id) => ran.has(id)), 'the Node worker to run what the installed Python client added');
  await worker.close();

  const back = uniqueName('pypkg-back');
  const queue = fx.track(new Queue<{ n: number }>(back, { connection: fx.redis.url }));
  await queue.addBulk([0, 1, 2].map((n) => ({ data: { n }, opts: { id: `node-${n}` } })));
  const lines = await driver(c, 'work.py', [fx.redis.url, back, '600']);
  assert.deepEqual(
    lines
      .filter((l) => typeof l.ran === 'string')
      .map((l) => l.ran)
      .sort(),
    ['node-0', 'node-1', 'node-2'],
  );
  await until(async () => (await queue.stats()).completedTotal === 3, 'the three acks');
});
