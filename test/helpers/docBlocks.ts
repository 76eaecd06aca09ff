/**
 * The shell blocks of the README and docs/ that a newcomer pastes, as test/operations/docBlocks.test.ts
 * runs them. A block is marked by an HTML comment on the line before its fence, which GitHub does not
 * render:
 *
 *   <!-- doctest -->                         run it, verbatim, against the suite's server
 *   <!-- doctest: skip <why it cannot> -->   not run here; the reason is required
 *
 * Only fences whose info string is a shell (sh, bash, shell, console) count: a bare fence is a synopsis
 * or an output, never something to paste.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DocBlock {
  /** The file, relative to the repository's root: `README.md`, `docs/streams.md`. */
  file: string;
  /** The 1-based line of the opening fence. */
  line: number;
  /** The block's text, verbatim, without the fences. */
  code: string;
  /** run, skip (with `reason`), or null when the block is not marked at all. */
  mark: 'run' | 'skip' | null;
  reason?: string;
}

const SHELL_FENCE = /^```(sh|bash|shell|console)\b/;
const MARK = /^<!--\s*doctest(?::\s*skip\b\s*(.*?))?\s*-->$/;

/** Every shell block of one Markdown file, in order. */
export function docBlocksOf(root: string, path: string): DocBlock[] {
  const lines = readFileSync(join(root, path), 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})(.*)$/.exec(lines[i] ?? '');
    if (!fence) continue;
    const close = lines.findIndex((text, j) => j > i && text.startsWith(fence[1] ?? '```') && text.trim() === (fence[1] ?? '```'));
    const end = close === -1 ? lines.length : close;
    if (SHELL_FENCE.test(lines[i] ?? '')) {
      const before = [...lines.slice(0, i)].reverse().find((text) => text.trim() !== '')?.trim() ?? '';
      const mark = MARK.exec(before);
      blocks.push({
        file: path,
        line: i + 1,
        code: lines.slice(i + 1, end).join('\n'),
        mark: !mark ? null : before.includes('skip') ? 'skip' : 'run',
        ...(mark?.[1] !== undefined ? { reason: mark[1] } : {}),
      });
    }
    i = end; // a fence inside a block is its text, not a new block
  }
  return blocks;
}

/** The README's blocks, then each docs/*.md file's, in the order a reader meets them. */
export function documentationBlocks(root: string): DocBlock[] {
  const docs = readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).sort();
  return ['README.md', ...docs.map((name) => `docs/${name}`)].flatMap((path) => docBlocksOf(root, path));
}
