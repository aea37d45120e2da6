/** --json everywhere: every command that prints gives JSON on stdout, one document per line. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';
import { type Run, run, start } from './run-cli.js';

const fx = useRedis();

const FAILING = fileURLToPath(new URL('./fixtures/failing-handler.js', import.meta.url));

let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'delayq-json-'));
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
});

/** Every line of stdout is a JSON document; returns them. */
function jsonLines(r: Run, what: string): unknown[] {
  assert.notEqual(r.stdout, '', `${what}: printed something`);
  return r.stdout
    .trim()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as unknown;
      } catch {
        return assert.fail(`${what}: not JSON: ${JSON.stringify(line)}`);
      }
    });
}

describe('delayq --json', () => {
  test('every command that prints, in order, on one queue', async () => {
    const q = uniqueName('json');
    const g = ['--redis', fx.redis.url, '--queue', q, '--json'];
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await queue.schedules.upsert('nightly', { cron: '0 2 * * *' });
      const file = join(dir, `${q}.ndjson`);
      writeFileSync(file, '{"data":1,"opts":{"id":"n1"}}\n{"data":2,"opts":{"id":"n2","delay":60000}}\n');
      const steps: string[][] = [
        ['events', 'enable'],
        ['add', '{"a":1}', '--id', 'j1', '--delay', '1h'],
        ['add', '{"a":2}', '--id', 'j2', '--delay', '1h', '--group', 'tenant-a'],
        ['add', '--ndjson', '--file', file],
        ['get', 'j1'],
        ['get', 'missing'],
        ['reschedule', 'j1', '--delay', '2h'],
        ['promote', 'j1'],
        ['cancel', 'j1'],
        ['stats'],
        ['pause'],
        ['resume'],
        ['limits', 'set', '--group-concurrency', '2'],
        ['limits'],
        ['groups', 'pause', 'tenant-a'],
        ['groups', 'limit', 'tenant-a', '3'],
        ['groups', 'ls'],
        ['groups', 'get', 'tenant-a'],
        ['groups', 'resume', 'tenant-a'],
        ['monitor', '--count', '1'],
        ['dead', 'list'],
        ['dead', 'retry', '--all'],
        ['dead', 'purge', '--all'],
        ['cron', 'ls'],
        ['events', 'follow', '--after', '0', '--count', '2'],
        ['events', 'disable'],
      ];
      for (const step of steps) {
        const r = await run([...g, ...step]);
        assert.ok(r.code === 0 || r.code === 2, `${step.join(' ')}: exit ${r.code} ${r.stderr}`);
        jsonLines(r, step.join(' '));
      }
    } finally {
      await queue.close();
    }
  });

  test('worker --json reports failures, dead jobs and its start and stop as JSON lines', async () => {
    const q = uniqueName('json');
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await queue.add('x', { id: 'doomed', attempts: 1 });
      const w = start(['--redis', fx.redis.url, '--queue', q, 'worker', '--handler', FAILING, '--json']);
      let out = '';
      w.child.stdout!.on('data', (d) => (out += d));
      await until(() => out.includes('"event":"dead"'), 'the dead event');
      w.child.kill('SIGTERM');
      const r = await w.done;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, '', 'with --json nothing goes to stderr');
      const events = jsonLines(r, 'worker') as { event: string; id?: string; reason?: string }[];
      assert.deepEqual(
        events.map((e) => e.event),
        ['started', 'failed', 'dead', 'stopped'],
      );
      assert.equal(events[2]!.id, 'doomed');
      assert.match(events[2]!.reason ?? '', /no such order/);
    } finally {
      await queue.close();
    }
  });
});
