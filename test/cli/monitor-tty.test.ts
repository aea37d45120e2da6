/**
 * `delayq monitor` in a real pseudo-terminal (tmux): it draws the counts in place, shows
 * "reconnecting" with a clock that keeps moving while Redis is down, and recovers when Redis is
 * back. Every wait polls the pane against a deadline; nothing sleeps and hopes.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { Queue } from '../../src/index.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { BIN } from './run-cli.js';

const hasTmux = (() => {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

// A tmux server of our own (its own socket), so no session of the person running the tests is touched.
const SOCKET = `delayq-test-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const EXITED = '[monitor exited';

/** Polls the pane until `check` holds; fails at the deadline, or at once if the monitor exited, with the pane in the message. */
async function waitForPane(session: string, what: string, check: (pane: string) => boolean, timeoutMs = 8000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let pane = '';
  for (;;) {
    pane = tmux('capture-pane', '-p', '-t', session);
    if (check(pane)) return pane;
    if (pane.includes(EXITED)) assert.fail(`the monitor exited while waiting for ${what}:\n${pane}`);
    if (Date.now() > deadline) assert.fail(`no ${what} within ${timeoutMs} ms; the pane:\n${pane}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const headerTime = (pane: string) => /delayq monitor — \S+\s+(\S+Z)/.exec(pane)?.[1];

// An append-only file, so the restarted server has the same jobs as before.
const fx = useRedis({ args: ['--appendonly', 'yes'] });

describe('delayq monitor in a terminal', { skip: !hasTmux && 'tmux is not installed' }, () => {
  test('counts, then reconnecting with a moving clock while Redis is down, then the counts again', async () => {
    const q = uniqueName('tty');
    const queue = new Queue(q, { connection: fx.redis.url });
    try {
      await queue.addBulk(Array.from({ length: 3 }, (_, i) => ({ data: i, opts: { id: `j${i}`, delay: 3_600_000 } })));
      await queue.add('due', { id: 'due' });
    } finally {
      await queue.close();
    }
    const session = uniqueName('monitor');
    const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const monitor = [process.execPath, BIN, '--redis', fx.redis.url, '--queue', q, 'monitor', '--interval', '200ms'].map(shq).join(' ');
    // If the monitor dies, the pane says so (and keeps its last output) instead of vanishing.
    tmux('new-session', '-d', '-s', session, '-x', '120', '-y', '30', `${monitor}; echo "${EXITED} $?]"; read _`);
    try {
      const counts = (pane: string) => /scheduled\s+4\s+ready\s+1\s+upcoming\s+3\s+active\s+0\s+dead\s+0/.test(pane);
      const first = await waitForPane(session, 'the counts', counts);
      assert.match(first, /lag \d+(\.\d)? (ms|s) \(the oldest due job/);
      assert.match(first, /last sample \S+Z \(\d+ ms ago\)/);
      // Drawn in place: one screen, not one per refresh.
      await waitForPane(session, 'a second refresh', (pane) => headerTime(pane) !== headerTime(first));
      assert.equal((tmux('capture-pane', '-p', '-S', '-', '-t', session).match(/delayq monitor —/g) ?? []).length, 1, 'the screen is redrawn, not appended');

      await fx.stop();
      const down = await waitForPane(session, '"reconnecting…"', (pane) => pane.includes('reconnecting…'));
      assert.match(down, /last sample \S+Z \([\d.]+ (ms|s) ago\): the figures above are from then/);
      // The clock moves while Redis is away: the header and the age of the last sample change
      // between two refreshes (each failing one takes its 2 s timeout), so within 1.5 s.
      const age = (pane: string) => /last sample \S+ \(([^)]+) ago\)/.exec(pane)?.[1];
      await waitForPane(
        session,
        'the clock to move while reconnecting',
        (pane) => pane.includes('reconnecting…') && headerTime(pane) !== headerTime(down) && age(pane) !== age(down),
        1500,
      );

      await fx.start();
      const back = await waitForPane(session, 'the counts after Redis is back', (pane) => counts(pane) && !pane.includes('reconnecting'), 10_000);
      assert.match(back, /last sample \S+Z \(\d+ ms ago\)/);
    } finally {
      try {
        tmux('kill-session', '-t', session);
      } catch {
        // Already gone: nothing to clean up.
      }
    }
  });
});
