/**
 * Every timer in src/ gets a delay Node can hold: a literal, a CONSTANT_CASE constant, or
 * timerDelay(...) (src/timers.ts). A computed delay past 2^31 - 1 ms fires after 1 ms.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const src = fileURLToPath(new URL('../../../src/', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'public' ? [] : sources(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** Whether a delay argument is safe as written. */
function safeDelay(arg: ts.Expression): boolean {
  if (ts.isNumericLiteral(arg)) return true;
  if (ts.isIdentifier(arg)) return /^[A-Z][A-Z0-9_]*$/.test(arg.text);
  if (ts.isCallExpression(arg)) return ts.isIdentifier(arg.expression) && arg.expression.text === 'timerDelay';
  if (ts.isBinaryExpression(arg)) return safeDelay(arg.left) && safeDelay(arg.right);
  return false;
}

describe('timers', () => {
  test('no raw setTimeout or setInterval in src/ takes a computed delay (use timerDelay or setLongTimeout from timers.ts)', () => {
    const bad: string[] = [];
    for (const file of sources(src)) {
      if (file.endsWith('timers.ts')) continue;
      const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && ['setTimeout', 'setInterval'].includes(node.expression.text)) {
          const delay = node.arguments[1];
          if (delay !== undefined && !safeDelay(delay)) {
            const { line } = sf.getLineAndCharacterOfPosition(node.getStart());
            bad.push(`${file.slice(src.length)}:${line + 1}: ${delay.getText()}`);
          }
        }
        ts.forEachChild(node, visit);
      };
      visit(sf);
    }
    assert.deepEqual(bad, []);
  });
});
