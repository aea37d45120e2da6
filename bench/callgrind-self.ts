/**
 * Self cost per function (instructions a function ran itself, not in its callees) from callgrind
 * dumps: what `bench:scripts -- --top <n>` prints under each scenario. callgrind_annotate cannot
 * read the dumps after the first of a run that `callgrind_control --dump` cut in phases: a later
 * dump names a function by the number an earlier dump gave it (`fn=(12)` after `fn=(12) name`),
 * so the names are read from every dump of the run first.
 *
 * The format (valgrind's callgrind format, version 1): `fn=` starts a function's lines; a cost
 * line is its positions (`positions:`, one by default; `+n`, `-n`, `*` relative) then its costs
 * (`events:`, Ir first); the cost line after a `calls=` line is the inclusive cost of that call,
 * which belongs to the callee and is skipped here.
 */
import { readFileSync } from 'node:fs';

const NAMED = /^c?fn=\((\d+)\) (.+)$/;

/** The function names defined by number across the dumps of one run. */
export function functionNames(files: readonly string[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const file of files) {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const m = NAMED.exec(line);
      if (m) names.set(m[1]!, m[2]!.trim());
    }
  }
  return names;
}

/** Instructions (the first event) each function ran itself, summed over `files`. */
export function selfCosts(files: readonly string[], names: Map<string, string>): Map<string, number> {
  const self = new Map<string, number>();
  for (const file of files) {
    let positions = 1;
    let fn = '?';
    let callCost = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const first = line.charCodeAt(0);
      // A cost line: a digit, or a relative position (+, -, *).
      if ((first >= 48 && first <= 57) || first === 43 || first === 45 || first === 42) {
        if (callCost) {
          callCost = false;
          continue;
        }
        const cost = Number(line.split(' ')[positions] ?? 0);
        if (cost > 0) self.set(fn, (self.get(fn) ?? 0) + cost);
      } else if (line.startsWith('fn=')) {
        const m = /^fn=\((\d+)\)(?: (.+))?$/.exec(line);
        fn = m ? (m[2]?.trim() ?? names.get(m[1]!) ?? `fn ${m[1]}`) : line.slice(3).trim();
      } else if (line.startsWith('calls=')) {
        callCost = true;
      } else if (line.startsWith('positions:')) {
        positions = line.slice('positions:'.length).trim().split(/\s+/).length;
      }
    }
  }
  return self;
}

/** The `n` costliest functions of `self`, most first, with their share of the whole. */
export function topFunctions(self: Map<string, number>, n: number): { fn: string; instructions: number; share: number }[] {
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([fn, instructions]) => ({ fn, instructions, share: total > 0 ? instructions / total : 0 }));
}
