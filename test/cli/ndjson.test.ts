/** `add --ndjson`: all or nothing for bad input, errors by line, progress bars only on a terminal. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { assertFailure, BIN, run } from './run-cli.js';

const fx = useRedis();

let dir: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'delayq-ndjson-'));
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
});

/** `n` lines of jobs, with blank lines at 10 and 500 so that line numbers and job indexes differ. */
function lines(n: number, bad?: { line: number; text: string }): string {
  const out: string[] = [];
  for (let line = 1; line <= n; line++) {
    if (line === bad?.line) out.push(bad.text);
    else if (line === 10 || line === 500) out.push('');
    else out.push(JSON.stringify({ data: { line }, opts: { id: `job-${line}`, delay: 3_600_000 } }));
  }
  return `${out.join('\n')}\n`;
}

async function scheduled(q: string): Promise<number> {
  const queue = new Queue(q, { connection: fx.redis.url });
  try {
    return (await queue.stats()).scheduled;
  } finally {
    await queue.close();
  }
}

describe('delayq add --ndjson', () => {
  test('a bad line 1201 of 1500 writes nothing, and the error names line 1201', async () => {
    const q = uniqueName('ndjson');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const bads = [
      // Caught by addBulk's validation: its jobs[1198] is line 1201 (two blank lines before it).
      { text: JSON.stringify({ data: 1, opts: { id: 'bad', delay: -5 } }), message: /^line 1201: opts\.delay / },
      { text: JSON.stringify({ data: 1, opts: { id: '' } }), message: /^line 1201: opts\.id must not be empty/ },
      { text: '{"data": 1, "opts": ', message: /^line 1201: not JSON/ },
      { text: '{"data": 1, "opts": 7}', message: /^line 1201: opts must be an object/ },
      // A misplaced id would vanish: an envelope holds data and opts, nothing else.
      { text: '{"data": 1, "id": "order-7"}', message: /^line 1201: .*"id".*opts/ },
      { text: '{"data": 1, "opts": {}, "dealy": 5}', message: /^line 1201: .*"dealy"/ },
    ];
    for (const bad of bads) {
      const file = join(dir, `${q}.ndjson`);
      writeFileSync(file, lines(1500, { line: 1201, text: bad.text }));
      const r = await run([...g, 'add', '--ndjson', '--file', file]);
      const f = assertFailure(r, 64, bad.text);
      assert.match(f.message, bad.message);
      assert.equal(f.hint, 'nothing was added: fix that line and run the import again');
      assert.doesNotMatch(r.stderr, /jobs\[/);
      assert.equal(await scheduled(q), 0, `${bad.text}: nothing written`);
    }
  });

  test('a good file is added whole; adding it again adds nothing and exits 2', async () => {
    const q = uniqueName('ndjson');
    const g = ['--redis', fx.redis.url, '--queue', q];
    const file = join(dir, `${q}.ndjson`);
    writeFileSync(file, lines(1500));
    const first = await run([...g, 'add', '--ndjson', '--file', file, '--json']);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout), { added: 1498, existing: 0 });
    assert.equal(first.stderr, '', 'no progress bar off a terminal');
    assert.equal(await scheduled(q), 1498);
    const again = await run([...g, 'add', '--ndjson', '--file', file]);
    assert.equal(again.code, 2);
    assert.match(again.stdout, /^added 0 jobs, 1498 existed already/);
    const withId = assertFailure(await run([...g, 'add', '--ndjson', '--id', 'x', '--file', file]), 64, '--ndjson --id');
    assert.match(withId.message, /--id names one job/);
  });

  test("a line's own runAt or delay replaces the --delay default instead of refusing the file", async () => {
    const q = uniqueName('ndjson');
    const file = join(dir, `${q}.ndjson`);
    const at = Date.now() + 7_200_000;
    writeFileSync(
      file,
      [
        JSON.stringify({ data: 1, opts: { id: 'at', runAt: at } }),
        JSON.stringify({ data: 2, opts: { id: 'soon', delay: 1_000 } }),
        JSON.stringify({ data: 3, opts: { id: 'default' } }),
      ].join('\n'),
    );
    const from = Date.now();
    const r = await run(['--redis', fx.redis.url, '--queue', q, 'add', '--ndjson', '--file', file, '--delay', '1h', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      assert.equal((await queue.get('at'))?.dueAtMs, at);
      const soon = (await queue.get('soon'))!.dueAtMs;
      assert.ok(soon >= from + 1_000 - 50 && soon < from + 60_000, `soon: due in ${soon - from} ms`);
      const byDefault = (await queue.get('default'))!.dueAtMs;
      assert.ok(byDefault >= from + 3_600_000 - 50, `default: due in ${byDefault - from} ms`);
    } finally {
      await queue.close();
    }
  });

  test('on a terminal the import draws progress bars on stderr', async () => {
    const q = uniqueName('ndjson');
    const file = join(dir, `${q}.ndjson`);
    writeFileSync(file, lines(3000));
    const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [process.execPath, BIN, '--redis', fx.redis.url, '--queue', q, 'add', '--ndjson', '--file', file].map(quote).join(' ');
    // script(1) runs the command in a pseudo-terminal and copies what it drew to stdout.
    const { stdout } = await promisify(execFile)('script', ['-qfec', command, '/dev/null'], { env: { ...process.env, TERM: 'xterm', NO_COLOR: '1' } });
    assert.match(stdout, /reading \[/);
    assert.match(stdout, /adding \[.*\] \d+% \d+\/2998 jobs/);
    assert.match(stdout, /added 2998 jobs/);
    assert.equal(await scheduled(q), 2998);
  });
});
