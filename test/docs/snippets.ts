/**
 * The code blocks of the README and docs/*.md, with the tag written on the line before each:
 *
 *   <!-- snippet: name -->          the block runs as it is (test/docs/snippets.test.ts runs it)
 *   <!-- fragment: why it does not --> the block is part of something larger: not run, and says why
 *
 * A TypeScript or JavaScript block, and a shell block that runs `delayq`, must carry one of the
 * two, so a new block cannot go untested without saying so. Blocks of other languages (JSON,
 * YAML, Redis commands, output samples) are left alone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export type Lang = 'ts' | 'js' | 'sh' | 'other';

export interface Block {
  /** Page and line of the opening fence, e.g. `docs/api.md:27`. */
  where: string;
  page: string;
  line: number;
  lang: Lang;
  /** The info string as written (`ts`, `sh`, ``). */
  info: string;
  /** The block's text, its fence's indentation removed. */
  code: string;
  tag?: { kind: 'snippet' | 'fragment'; value: string };
}

export interface Page {
  page: string;
  blocks: Block[];
  /** Tags that are not on the line before a fence (a tag lost in an edit). */
  strayTags: string[];
}

const TAG = /^\s*<!--\s*(snippet|fragment)\s*:\s*(.*?)\s*-->\s*$/;
const FENCE = /^(\s*)(`{3,}|~{3,})\s*([^`\s]*)/;

function langOf(info: string): Lang {
  const l = info.toLowerCase();
  if (l === 'ts' || l === 'typescript') return 'ts';
  if (l === 'js' || l === 'javascript' || l === 'mjs') return 'js';
  if (l === 'sh' || l === 'bash' || l === 'shell' || l === 'console') return 'sh';
  return 'other';
}

export function parsePage(page: string, text: string): Page {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  const strayTags: string[] = [];
  let pendingTag: { kind: 'snippet' | 'fragment'; value: string; line: number } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const tag = TAG.exec(line);
    if (tag) {
      if (pendingTag) strayTags.push(`${page}:${pendingTag.line}`);
      pendingTag = { kind: tag[1] as 'snippet' | 'fragment', value: tag[2]!, line: i + 1 };
      continue;
    }
    const open = FENCE.exec(line);
    if (!open) {
      if (pendingTag && line.trim() !== '') {
        strayTags.push(`${page}:${pendingTag.line}`);
        pendingTag = undefined;
      }
      continue;
    }
    const [, indent = '', fence = '```', info = ''] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]!);
      if (close && close[2]![0] === fence[0] && close[2]!.length >= fence.length && close[3] === '') break;
      body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!.trimStart());
    }
    blocks.push({
      where: `${page}:${i + 1}`,
      page,
      line: i + 1,
      lang: langOf(info),
      info,
      code: `${body.join('\n')}\n`,
      ...(pendingTag ? { tag: { kind: pendingTag.kind, value: pendingTag.value } } : {}),
    });
    pendingTag = undefined;
    i = j;
  }
  if (pendingTag) strayTags.push(`${page}:${pendingTag.line}`);
  return { page, blocks, strayTags };
}

/** README.md and every page of docs/, from the repository at `root`. */
export function readPages(root: string): Page[] {
  const names = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ];
  return names.map((page) => parsePage(page, readFileSync(join(root, page), 'utf8')));
}

/** Whether a shell block runs the CLI: a command `delayq …` or `npx delayq …`, or a `$ delayq …` transcript line. */
export function runsCli(code: string): boolean {
  return /(^|[|;&(])\s*(\$\s+)?(npx\s+)?delayq\s/m.test(code);
}

/** Whether the block must carry a tag: TypeScript, JavaScript, and anything that runs the CLI. */
export function needsTag(b: Block): boolean {
  return b.lang === 'ts' || b.lang === 'js' || runsCli(b.code);
}
