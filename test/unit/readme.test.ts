/**
 * The README and docs/ as a reader meets them (issue 43): the README opens with the two commands for a fresh
 * machine (CI runs the test one), stays a document rather than a measurement diary (no commit hashes: figures and
 * history live in docs/benchmarks.md), and every relative link in the README and docs/*.md reaches an existing
 * file and, for a `#fragment` into a Markdown file, an existing heading.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '../..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

/** The Markdown files whose links are checked: README.md and every docs/*.md (paths relative to the repository). */
function markdownFiles(): string[] {
  const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  return ['README.md', ...docs.sort()];
}

/** `text` without fenced code blocks and inline code spans, whose brackets are not links. */
function withoutCode(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Every inline link and image target (`[text](target)`, `![alt](target "title")`) outside code, in order. */
function linkTargets(text: string): string[] {
  return [...withoutCode(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

/**
 * The anchors GitHub gives a Markdown file's headings: the heading's text (inline code and emphasis marks
 * removed) lower-cased, every character that is not a letter, digit, mark, space, `-` or `_` dropped, spaces
 * made `-`; a repeated anchor gets `-1`, `-2`, ... (github-slugger's rule).
 */
function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const body = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const text = m[1]!.replace(/`([^`]*)`/g, '$1').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[*_]{1,2}([^*_]+)[*_]{1,2}/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

describe('README.md', () => {
  it('opens with exactly the two commands for a fresh machine: start the service, run the whole suite', () => {
    const lines = readme.split('\n');
    expect(lines[0]).toBe('# Quotegate');
    const body = lines.slice(1).filter((l) => l.trim() !== '');
    expect(body.slice(0, 4)).toEqual(['```sh', 'npm ci && npm start', 'npm ci && npm test', '```']);
    const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.start).toMatch(/dist\/src\/cli\/main\.js serve$/);
    expect(scripts.test).toMatch(/vitest run$/);
  });

  it("is the test command CI runs (.ci/run installs with npm ci and runs npm test)", () => {
    const ci = fs.readFileSync(path.join(root, '.ci/run'), 'utf8').split('\n').map((l) => l.trim());
    expect(ci).toContain('npm ci --no-audit --no-fund');
    expect(ci).toContain('npm test');
  });

  it('quotes no commit hashes and stays short (figures and history belong in docs/benchmarks.md)', () => {
    const hashes = withoutCode(readme).match(/\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b/g) ?? [];
    expect(hashes).toEqual([]);
    expect(readme.split('\n').length).toBeLessThan(150);
  });
});

describe('relative links in README.md and docs/*.md', () => {
  for (const file of markdownFiles()) {
    it(`${file}: every relative link reaches a file, and every #fragment a heading`, () => {
      const text = fs.readFileSync(path.join(root, file), 'utf8');
      const broken: string[] = [];
      for (const target of linkTargets(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: ...: not a file of this repository
        const [rawPath, fragment] = target.split('#', 2) as [string, string | undefined];
        const resolved = rawPath === '' ? path.join(root, file) : path.resolve(path.dirname(path.join(root, file)), decodeURIComponent(rawPath));
        if (!resolved.startsWith(root) || !fs.existsSync(resolved)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (fragment !== undefined && resolved.endsWith('.md') && !headingAnchors(fs.readFileSync(resolved, 'utf8')).has(fragment)) {
          broken.push(`${target}: no heading with this anchor`);
        }
      }
      expect(broken).toEqual([]);
    });
  }

  it('finds links, anchors and broken targets as GitHub does (the checker itself)', () => {
    expect(linkTargets('[a](docs/x.md#y) `[b](no.md)` ![i](p.png "t")\n```\n[c](nope.md)\n```\n')).toEqual(['docs/x.md#y', 'p.png']);
    const anchors = headingAnchors('# The command line (`npx quotegate`)\n## Memory flags of `npm start`\n### 2.1 PostgreSQL: two tiers\n## Status\n## Status\n');
    expect([...anchors]).toEqual(['the-command-line-npx-quotegate', 'memory-flags-of-npm-start', '21-postgresql-two-tiers', 'status', 'status-1']);
  });
});
