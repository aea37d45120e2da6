/**
 * The server's physical limit, measured with redis-benchmark (redis-tools) against the same
 * redis-server the systems run on: pipelined ZADD, and EVALSHA of a script that does nothing
 * (`return 1`), the floor of any Lua-based queue's call. A system's dispatch divided by the
 * EVALSHA rate says how much of the server's script-call budget one job costs (a batched claim
 * moves many jobs per call, so it can pass 100 %). Without redis-benchmark the figures are absent.
 */
import { execFile } from 'node:child_process';
import type { Redis } from 'ioredis';

export interface Limits {
  /** ZADD of random members, ops/s. */
  zaddPerSec?: number;
  /** EVALSHA of `return 1`, no keys, ops/s. */
  evalshaPerSec?: number;
  /** The redis-benchmark arguments every measure shares. */
  args: string;
}

/**
 * One test's requests per second from redis-benchmark's --csv output
 * (`"test","rps",…` then `"<test>","<rps>",…`), or from its -q line
 * (`<test>: <rps> requests per second, p50=…`, after \r-separated progress lines).
 */
export function parseRedisBenchmark(out: string): number | undefined {
  for (const line of out.split(/\r\n|\r|\n/)) {
    const m = /^\s*"((?:[^"]|"")*)"\s*,\s*"?([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"?\s*(?:,|$)/.exec(line);
    if (m && m[1] !== 'test') return Number(m[2]);
  }
  const q = [...out.matchAll(/:\s*([0-9]+(?:\.[0-9]+)?)\s+requests per second/g)].at(-1);
  return q ? Number(q[1]) : undefined;
}

function redisBenchmark(args: string[]): Promise<number | undefined> {
  return new Promise((resolve) => {
    execFile('redis-benchmark', args, { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => {
      // Missing (ENOENT), failed (an error reply, a timeout) or unparsable: no figure, no failure.
      if (err) resolve(undefined);
      else {
        const v = parseRedisBenchmark(String(stdout));
        resolve(v !== undefined && Number.isFinite(v) && v > 0 ? v : undefined);
      }
    });
  });
}

/** Runs both measures with `requests` requests each (50 clients, 64 commands per pipeline). */
export async function physicalLimits(url: string, admin: Redis, requests: number): Promise<Limits> {
  const u = new URL(url);
  const common = ['-h', u.hostname, '-p', u.port, '-n', String(requests), '-c', '50', '-P', '64', '--csv'];
  const key = 'bench:limits:z';
  const zaddPerSec = await redisBenchmark([...common, '-r', '1000000', 'zadd', key, '__rand_int__', 'member:__rand_int__']);
  await admin.del(key);
  const sha = (await admin.script('LOAD', 'return 1')) as string;
  const evalshaPerSec = await redisBenchmark([...common, 'evalsha', sha, '0']);
  const out: Limits = { args: common.slice(4, -1).join(' ') };
  if (zaddPerSec !== undefined) out.zaddPerSec = zaddPerSec;
  if (evalshaPerSec !== undefined) out.evalshaPerSec = evalshaPerSec;
  return out;
}
