/**
 * Runs the Lua scripts. The store calls them as functions of one Redis Functions library
 * (FUNCTION LOAD once, then FCALL): the helpers every script includes are made once, when the
 * library loads, instead of on every call as an EVAL script must (its top-level closures and
 * tables are made again each time: ~160k instructions of a one-job add's ~450k, measured with
 * callgrind). The same .lua files also make one self-contained script each (loadScriptSource):
 * the protocol publishes those for other languages to run with EVAL, and the store falls back to
 * them (EVALSHA, then EVAL on NOSCRIPT) when its user may not run FUNCTION or FCALL.
 *
 * The library's name is `dq_` and a hash of its source, and each function's name starts with
 * it, so two versions of delayq (or two builds) never run each other's code, and a library
 * that is already loaded is the very one wanted. A server that lost it (a restart without
 * persistence, FUNCTION FLUSH, a new Cluster node) answers "Function not found": the library
 * is loaded again (on every master of a Cluster) and the call sent once more.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Cluster } from 'ioredis';
import type { Client } from './connection.js';
import { sendPacked } from './packed-command.js';
import { VERSION } from '../../version.js';
import {
  BASE_ARGS,
  PASSED_BASE_KEYS,
  ROOT_NAMES,
  ROOT_REFUSAL,
  LIFECYCLE_LINES,
  LUA_CONSTANTS,
  luaArgChecks,
  luaPrologue,
  luaWireParts,
  type ReplyShape,
  SCRIPT_NAMES,
  type ScriptName,
  WIRE,
} from './wire.js';

export { SCRIPT_NAMES, type ScriptName };

export interface Script {
  readonly name: ScriptName;
  readonly source: string;
  readonly sha: string;
}

const INCLUDE = /^--@include (\S+)\s*$/gm;

/**
 * The most queue key roots the library keeps the base keys of (ROOT_KEYS), and the longest root
 * it keeps: a queue name is at most 100 characters (parseQueueName, a shard's `#<n>` after it) and
 * a prefix a few, so the library's roots are well under 300 bytes; 1,024 of them with their 25
 * keys stay under ~8 MB of Lua strings at worst (well under 1 MB for usual names).
 */
const ROOTS_KEPT = 1024;
const ROOT_BYTES_KEPT = 300;

/** The helper files, in the order a script includes them (each may use those before it). */
const HELPER_FILES = [
  '_helpers.lua',
  '_groups.lua',
  '_rate.lua',
  '_holds.lua',
  '_add_packed.lua',
  '_lifecycle.lua',
  '_claim.lua',
  '_claim_direct.lua',
  '_claim_turns.lua',
  '_claim_rates.lua',
] as const;

function readScript(file: string): string {
  return readFileSync(new URL(`./scripts/${file}`, import.meta.url), 'utf8');
}

/** A script file in parts: the helper files it includes, in order, and its own code after them. */
function scriptParts(name: ScriptName): { includes: string[]; body: string } {
  const raw = readScript(`${name}.lua`);
  const includes = [...raw.matchAll(INCLUDE)].map((m) => m[1]!);
  if (includes.length === 0) throw new Error(`${name}.lua: no --@include line`);
  const last = raw.lastIndexOf('--@include');
  // Nothing but the header comment comes before the includes: the body is everything after them.
  const before = raw.slice(0, raw.indexOf('--@include')).replace(/^--\[\[[\s\S]*?\]\]/, '');
  if (before.trim() !== '') throw new Error(`${name}.lua: code before its --@include lines`);
  const between = raw.slice(raw.indexOf('--@include'), last).replace(INCLUDE, '');
  if (between.trim() !== '') throw new Error(`${name}.lua: code between its --@include lines`);
  return { includes, body: raw.slice(raw.indexOf('\n', last) + 1) };
}

const NOW_MS = 'local function now_ms()\n';

/**
 * With `testClockKey`, now_ms() returns that key's value while it is set: a frozen server clock
 * for tests that step time (the differential test). Production code never carries it.
 */
function withTestClock(source: string, what: string, testClockKey: string | undefined): string {
  if (testClockKey === undefined) return source;
  if (!source.includes(NOW_MS)) throw new Error(`${what}: no now_ms() to replace`);
  return source.replace(NOW_MS, `${NOW_MS}  local fixed = redis.call('GET', ${JSON.stringify(testClockKey)})\n  if fixed then return tonumber(fixed) end\n`);
}

/**
 * One self-contained EVAL script: its generated prologue (wire.ts luaPrologue), the helper files
 * it includes, the check of its own arguments, then its body as a function, as in the library:
 * its locals count against a limit of their own (Lua allows 200 per function), not the
 * helpers'.
 */
export function loadScriptSource(name: ScriptName, testClockKey?: string): string {
  const { includes, body } = scriptParts(name);
  const helpers = includes.map(readScript).join('');
  const packedBy = (WIRE[name].reply as ReplyShape).packedBy;
  const run = packedBy ? `local out = (function()\n${body}\nend)()\n${packedTail(packedBy)}` : `return (function()\n${body}\nend)()\n`;
  const source = `${luaPrologue(name)}${helpers}local check_args = ${luaArgChecks(name)}\ncheck_args()\n${run}`;
  return `-- delayq ${VERSION} ${name}\n${withTestClock(source, `${name}.lua`, testClockKey)}`;
}

/**
 * The end of a script whose reply may come packed (wire.ts ReplyShape.packedBy, PACKED_REPLY):
 * its reply array `out` as one MessagePack string when the caller's flag asks for it.
 */
function packedTail(flag: string): string {
  return `if arg('${flag}') == '1' then return cmsgpack.pack(out) end\nreturn out\n`;
}

/**
 * The names a helper file keeps for one call only (`local name = nil` at its top level: caches
 * such as the queue's meta or the group machinery): a library function sets them back to nil
 * as it enters, so no call sees what another left.
 */
export function perCallNames(helperSource: string): string[] {
  return [...helperSource.matchAll(/^local (\w+) = nil$/gm)].map((m) => m[1]!);
}

export interface Library {
  /** `dq_<hash>`: the library's name in FUNCTION LOAD. */
  readonly name: string;
  /** The library's code, beginning with its `#!lua name=` line. */
  readonly source: string;
}

/** The function that runs a script, in the library named `libraryName`. */
export function functionName(libraryName: string, script: ScriptName): string {
  return `${libraryName}_${script.replace(/-/g, '_')}`;
}

/**
 * The Functions library: the names every call shares (its KEYS and ARGV, the queue's keys, the
 * script's wire tables) as locals of the library that each function points at its own as it
 * enters; the helper files once; then one function per script, its body as the file has it.
 * A script's own keys (after PASSED_BASE_KEYS) are set by its function after it enters.
 */
export function librarySource(testClockKey?: string): Library {
  const helpers = HELPER_FILES.map(readScript);
  const perCall = helpers.flatMap(perCallNames);
  const base = luaWireParts('add').keys.slice(0, PASSED_BASE_KEYS.length);
  // Every script's own keys (after PASSED_BASE_KEYS) too: helpers read some (the worker
  // registry's), so they are the library's names, nil unless this call's script has them.
  const own = [...new Set(SCRIPT_NAMES.flatMap((n) => luaWireParts(n).keys.slice(PASSED_BASE_KEYS.length)))];
  const wireNames = luaWireParts('add').tables.map(([n]) => n);
  const lines = [
    `-- delayq ${VERSION}: every script as a function of one library (src/store/redis/scripts.ts).`,
    'local KEYS, ARGV',
    `local ${[...base, ...own].join(', ')}`,
    'local ROOT, WAKE_CHANNEL',
    `local ${ROOT_NAMES.map(([local]) => local).join(', ')}`,
    `local ${wireNames.join(', ')}`,
    LUA_CONSTANTS,
    LIFECYCLE_LINES,
    ...helpers,
    '-- Points the shared names at this call (its keys; in enter, its KEYS and ARGV and its',
    "-- script's wire), sets the per-call caches back to nil, checks the counts and the script's own",
    '-- arguments. Two functions, as a Lua function may hold at most 60 upvalues.',
    'local function enter_keys(keys)',
    `  ${base.join(', ')} = ${base.map((_, i) => `keys[${i + 1}]`).join(', ')}`,
    `  ${own.join(', ')} = ${own.map(() => 'nil').join(', ')}`,
    'end',
    '-- The names built from the root (wire.ts ROOT_NAMES), made once per root and kept, as',
    '-- building them is most of what passing them cost; at most `max` roots (a Redis serving more',
    '-- queues starts the set afresh, so it never grows past that), each of at most `bytes` (a',
    '-- longer root, which only a hand-made call sends, is built on every call, never kept). One',
    "-- top-level name: the library's are counted (test/redis/lua-limits.test.ts).",
    `local ROOT_KEYS = { max = ${ROOTS_KEPT}, bytes = ${ROOT_BYTES_KEPT}, n = 0, of = {} }`,
    "-- Points the names at this root's; refuses a call whose KEYS[1] is not its (wire.ts ROOT_CHECK).",
    'function ROOT_KEYS.enter(root, scheduled)',
    `  if type(root) ~= 'string' then ${ROOT_REFUSAL} end`,
    '  local k = ROOT_KEYS.of[root]',
    '  if not k then',
    `    k = { root .. 'scheduled', ${ROOT_NAMES.map(([, key]) => `root .. '${key}'`).join(', ')} }`,
    '    if #root <= ROOT_KEYS.bytes then',
    '      if ROOT_KEYS.n >= ROOT_KEYS.max then ROOT_KEYS.of, ROOT_KEYS.n = {}, 0 end',
    '      ROOT_KEYS.of[root] = k',
    '      ROOT_KEYS.n = ROOT_KEYS.n + 1',
    '    end',
    '  end',
    `  if scheduled ~= k[1] then ${ROOT_REFUSAL} end`,
    `  ${ROOT_NAMES.map(([local]) => local).join(', ')} = ${ROOT_NAMES.map((_, i) => `k[${i + 2}]`).join(', ')}`,
    'end',
    'local function enter(w, keys, args)',
    "  if #keys ~= w.nkeys then error('delayq protocol: ' .. w.name .. ' takes ' .. w.nkeys .. ' KEYS, got ' .. #keys) end",
    "  if w.nargs and #args ~= w.nargs then error('delayq protocol: ' .. w.name .. ' takes ' .. w.nargs .. ' ARGV, got ' .. #args) end",
    '  KEYS, ARGV = keys, args',
    '  enter_keys(keys)',
    `  ROOT, WAKE_CHANNEL = args[${BASE_ARGS.indexOf('root') + 1}], args[${BASE_ARGS.indexOf('wake') + 1}]`,
    '  ROOT_KEYS.enter(ROOT, K_SCHEDULED)',
    `  ${wireNames.join(', ')} = ${wireNames.map((n) => `w.${n}`).join(', ')}`,
    perCall.length > 0 ? `  ${perCall.join(', ')} = ${perCall.map(() => 'nil').join(', ')}` : '',
    '  w.check_args()',
    'end',
  ];
  const functions: string[] = [];
  for (const name of SCRIPT_NAMES) {
    const parts = luaWireParts(name);
    const { body } = scriptParts(name);
    const mine = parts.keys.slice(PASSED_BASE_KEYS.length);
    const packedBy = (WIRE[name].reply as ReplyShape).packedBy;
    const wire = [
      `name = '${name}'`,
      `nkeys = ${parts.keys.length}`,
      ...(parts.argCount !== undefined ? [`nargs = ${parts.argCount}`] : []),
      ...parts.tables.map(([n, v]) => `${n} = ${v}`),
    ];
    functions.push(
      [
        'do',
        `local w = { ${wire.join(', ')} }`,
        `w.check_args = ${luaArgChecks(name)}`,
        // A reply that may come packed: the body as a function of its own (made once, at load), its
        // array packed after it returns.
        packedBy ? `local function run()\n${body}\nend` : '',
        `redis.register_function('@FN@${name.replace(/-/g, '_')}', function(keys, args)`,
        'enter(w, keys, args)',
        mine.length > 0 ? `${mine.join(', ')} = ${mine.map((_, i) => `keys[${PASSED_BASE_KEYS.length + i + 1}]`).join(', ')}` : '',
        packedBy ? `local out = run()\n${packedTail(packedBy)}` : body,
        'end)',
        'end',
      ].join('\n'),
    );
  }
  const code = withTestClock(`${lines.join('\n')}\n${functions.join('\n')}\n`, 'the library', testClockKey);
  const name = `dq_${createHash('sha1').update(code).digest('hex').slice(0, 20)}`;
  return { name, source: `#!lua name=${name}\n${code.replaceAll('@FN@', `${name}_`)}` };
}

const caches = new Map<string, Map<ScriptName, Script>>();

export function scripts(testClockKey?: string): Map<ScriptName, Script> {
  let cache = caches.get(testClockKey ?? '');
  if (!cache) {
    cache = new Map();
    for (const name of SCRIPT_NAMES) {
      const source = loadScriptSource(name, testClockKey);
      cache.set(name, { name, source, sha: createHash('sha1').update(source).digest('hex') });
    }
    caches.set(testClockKey ?? '', cache);
  }
  return cache;
}

const libraries = new Map<string, Library>();

export function library(testClockKey?: string): Library {
  let lib = libraries.get(testClockKey ?? '');
  if (!lib) {
    lib = librarySource(testClockKey);
    libraries.set(testClockKey ?? '', lib);
  }
  return lib;
}

/** Clients whose user may not load or call functions: they run the EVAL scripts. */
const evalOnly = new WeakSet<Client>();
/** Loads under way, per client and library, so a burst of "Function not found" loads it once. */
const loads = new WeakMap<Client, Map<string, Promise<void>>>();

/** A refusal by ACL of FUNCTION or FCALL themselves (not of a key). */
const NOT_ALLOWED = /^NOPERM\b.*'(fcall|function\|load|function)'/i;

/** Loads the library on the server, or on every master of a Cluster; one already there is kept. */
async function loadLibrary(client: Client, lib: Library): Promise<void> {
  let perClient = loads.get(client);
  if (!perClient) {
    perClient = new Map();
    loads.set(client, perClient);
  }
  let load = perClient.get(lib.name);
  if (!load) {
    const nodes = client instanceof Cluster ? client.nodes('master') : [client];
    load = Promise.allSettled(
      nodes.map(async (node) => {
        try {
          await node.call('FUNCTION', 'LOAD', lib.source);
        } catch (err) {
          // Loaded meanwhile by another process (or call): the same name is the same code.
          if (!(err instanceof Error && /already exists/i.test(err.message))) throw err;
        }
      }),
    ).then((results) => {
      perClient.delete(lib.name);
      // A master that cannot be reached now (failing over, say) does not fail a call bound for
      // another: the call is sent again, and its own node answers "Function not found" if it
      // still lacks the library. A refusal by ACL, or every node failing, fails it here.
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason as unknown);
      const refused = failed.find((e) => e instanceof Error && NOT_ALLOWED.test(e.message));
      if (refused !== undefined) throw refused;
      if (failed.length > 0 && failed.length === results.length) throw failed[0];
    });
    perClient.set(lib.name, load);
  }
  return load;
}

/**
 * Runs a script by name: FCALL of the library, or EVALSHA/EVAL where functions are refused.
 * `bytes`: the reply's strings as Buffers, as Redis sent them (claim and complete only): the
 * claim reads its jobs' bodies from the bytes (packed.ts readBodyBytes).
 */
export async function runScript(
  client: Client,
  name: ScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
  testClockKey?: string,
  bytes = false,
): Promise<unknown> {
  if (!evalOnly.has(client)) {
    const lib = library(testClockKey);
    const fn = functionName(lib.name, name);
    try {
      return await send(client.fcall, client, name, 'fcall', fn, keys, args, bytes);
    } catch (err) {
      if (!(err instanceof Error)) throw err;
      if (NOT_ALLOWED.test(err.message)) evalOnly.add(client);
      else if (!/^ERR Function not found/i.test(err.message)) throw err;
    }
    if (!evalOnly.has(client)) {
      try {
        await loadLibrary(client, lib);
        return await send(client.fcall, client, name, 'fcall', fn, keys, args, bytes);
      } catch (err) {
        if (!(err instanceof Error && NOT_ALLOWED.test(err.message))) throw err;
        evalOnly.add(client);
      }
    }
  }
  const script = scripts(testClockKey).get(name)!;
  try {
    return await send(client.evalsha, client, name, 'evalsha', script.sha, keys, args, bytes);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return send(client.eval, client, name, 'eval', script.source, keys, args, bytes);
    }
    throw err;
  }
}

/**
 * The calls whose rows are many, sent as PackedCommands (packed-command.ts): the worker's claims
 * and acks of every tick, and adds (ioredis's string building was ~0.8 KB of garbage per job of
 * a batch of single adds, bench/producer-alloc.ts).
 */
const PACKED: ReadonlySet<ScriptName> = new Set(['claim', 'complete', 'add']);

/**
 * FCALL, EVALSHA or EVAL with the keys and arguments as arrays, not spread: ioredis flattens its
 * arguments one level (Command: `args.flat()`) into the one array it sends, so an ack of a
 * hundred jobs is copied once on its way, not three times (our spread, ioredis's rest
 * parameters, its flat).
 */
function send(
  command: Client['fcall'] | Client['evalsha'] | Client['eval'],
  client: Client,
  script: ScriptName,
  commandName: 'fcall' | 'evalsha' | 'eval',
  what: string,
  keys: readonly string[],
  args: readonly (string | number)[],
  bytes: boolean,
): Promise<unknown> {
  // A PackedCommand is written at once: only while nothing waits in ioredis's auto-pipeline
  // (flushed by a setImmediate already scheduled), which it would overtake (a get of the job an
  // ack ends, a cancel of the id an add writes). Otherwise the call joins the pipeline, behind
  // what waits there and ahead of what comes after it.
  if (PACKED.has(script) && client.autoPipelineQueueSize === 0) return sendPacked(client, commandName, what, keys, args, bytes);
  // ioredis's Buffer variants (fcallBuffer, evalshaBuffer, evalBuffer) exist on every client; its
  // types leave them out.
  const run = bytes ? (client as unknown as Record<string, unknown>)[`${commandName}Buffer`] : command;
  return (run as (this: Client, ...a: unknown[]) => Promise<unknown>).call(client, what, keys.length, keys, args);
}
