/**
 * What bench:worker and bench:producer share to measure a Node process's work per job: the
 * bytes a pass allocated, exactly, from a GC-traced child; V8's CPU profiler's top functions by
 * self time; its sampling heap profiler's top allocation sites; the script calls Redis ran.
 */
import { execFileSync } from 'node:child_process';
import { Session } from 'node:inspector/promises';
import type { Redis } from 'ioredis';

/** A forced GC (the process runs with --expose-gc), or nothing. */
export const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/** A profile's call frame as `function file:line`, paths from node_modules or dist on. */
function siteOf(f: CallFrame): string {
  return `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules|dist)\//, '$1/')}:${f.lineNumber + 1}`;
}

/** The top `n` of `bySite`, largest first. */
function top(bySite: Map<string, number>, n: number): [string, number][] {
  return [...bySite].sort((a, b) => b[1] - a[1]).slice(0, n);
}

/**
 * Runs this script again as a child with --trace-gc-nvp (`args` make it the child, which prints
 * `<mark> start` and `<mark> end` around its measured pass, between two forced GCs) and sums the
 * `allocated` of each GC between the marks: every byte the JS heap took in, exactly.
 */
export function gcTracedBytes(script: string, args: string[], mark: string): number {
  const trace = execFileSync(process.execPath, ['--expose-gc', '--trace-gc-nvp', script, ...args], { encoding: 'utf8', maxBuffer: 1 << 28 });
  const window = trace.slice(trace.indexOf(`${mark} start`), trace.indexOf(`${mark} end`));
  let bytes = 0;
  for (const m of window.matchAll(/ allocated=(\d+)/g)) bytes += Number(m[1]);
  return bytes;
}

/** A child's measured pass: `<mark> start`, then `pass`, then `<mark> end`, each after a forced GC. */
export async function markedPass(mark: string, pass: () => Promise<void>): Promise<void> {
  gc();
  console.log(`${mark} start`);
  await pass();
  gc();
  console.log(`${mark} end`);
}

/** Script calls the server ran so far (FCALL, EVALSHA, EVAL), from INFO commandstats. */
export async function scriptCalls(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

export interface CpuProfile {
  /** The top functions by self time, as shares (%) of the busy samples. */
  sites: { site: string; share: number }[];
  /**
   * The busy samples by owner, shares (%): each sample goes to the nearest frame up its stack that
   * is delayq's (`delayq <file>`), the Redis client's (`ioredis`), the garbage collector's or
   * V8's own (`(program)`); Node's work called from one of those (a socket write, Buffer
   * methods) is its caller's, and the rest (timers, the event loop's own) is `node`. The CPU
   * profiler's own work (the inspector's `dispatch`) is left out.
   */
  owners: { owner: string; share: number }[];
  /** Of the samples owned by `ioredis`, the functions they ran (shares of all busy samples). */
  clientLeaves: { site: string; share: number }[];
}

/** A frame's owner (CpuProfile.owners), or undefined for Node's and anonymous frames. */
function ownerOf(f: CallFrame): string | undefined {
  if (f.functionName === '(garbage collector)' || f.functionName === '(program)') return f.functionName;
  if (f.url.includes('/node_modules/ioredis/')) return 'ioredis';
  const ours = /\/dist\/src\/(.*)$/.exec(f.url);
  return ours ? `delayq ${ours[1]}` : undefined;
}

/**
 * Starts V8's CPU profiler (`intervalUs`: its sampling interval, or V8's default); the function
 * it returns stops it and gives the top `n` functions by self time and the owners of the busy
 * samples (CpuProfile). The first sample is the profiler's own start (the inspector's dispatch):
 * left out, as is every sample of the inspector's dispatch.
 */
export async function cpuProfile(n: number, intervalUs?: number): Promise<() => Promise<CpuProfile>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  if (intervalUs !== undefined) await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as unknown as {
      profile: { nodes: { id: number; callFrame: CallFrame }[]; samples: number[]; timeDeltas: number[] };
    };
    session.disconnect();
    const self = new Map<string, number>();
    const owners = new Map<string, number>();
    const clientLeaves = new Map<string, number>();
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes as { id: number; children?: number[] }[]) for (const c of node.children ?? []) parent.set(c, node.id);
    const add = (m: Map<string, number>, k: string, us: number) => m.set(k, (m.get(k) ?? 0) + us);
    for (let i = 1; i < profile.samples.length; i++) {
      const leaf = byId.get(profile.samples[i]!)!.callFrame;
      const site = siteOf(leaf);
      if (site.startsWith('(idle)') || leaf.functionName === 'dispatch') continue;
      const us = profile.timeDeltas[i]!;
      add(self, site, us);
      let owner: string | undefined;
      for (let id: number | undefined = profile.samples[i]; id !== undefined && owner === undefined; id = parent.get(id))
        owner = ownerOf(byId.get(id)!.callFrame);
      add(owners, owner ?? 'node', us);
      if (owner === 'ioredis') add(clientLeaves, site, us);
    }
    const busy = [...self.values()].reduce((a, us) => a + us, 0);
    const shares = <K extends string>(m: Map<string, number>, key: K, k: number) =>
      top(m, k).map(([name, us]) => ({ [key]: name, share: Number(((us / busy) * 100).toFixed(1)) }) as { [P in K]: string } & { share: number });
    return { sites: shares(self, 'site', n), owners: shares(owners, 'owner', n), clientLeaves: shares(clientLeaves, 'site', 8) };
  };
}

/**
 * Starts V8's sampling heap profiler (one sample per `intervalBytes` on average, keeping the
 * samples of objects the minor and major GCs collected: an estimate of every byte allocated, not
 * only of what survived); the function it returns stops it and gives the bytes sampled in all
 * and the top `n` allocation sites by self bytes.
 */
export async function heapSampling(intervalBytes: number, n: number): Promise<() => Promise<{ total: number; top: [string, number][] }>> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: intervalBytes,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return async () => {
    interface HeapNode {
      callFrame: CallFrame;
      selfSize: number;
      children: HeapNode[];
    }
    const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: HeapNode } };
    session.disconnect();
    const bySite = new Map<string, number>();
    let total = 0;
    const walk = (node: HeapNode): void => {
      if (node.selfSize > 0) {
        const site = siteOf(node.callFrame);
        bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
        total += node.selfSize;
      }
      for (const c of node.children) walk(c);
    };
    walk(profile.head);
    return { total, top: top(bySite, n) };
  };
}
