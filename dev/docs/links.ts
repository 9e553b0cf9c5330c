// Relative links and images in the project's Markdown: every target must exist in the repository,
// and every #anchor into a Markdown file must name one of its headings (GitHub's slugs).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

/** The pages the check covers: the three top-level ones and everything under docs/. */
export function markdownPages(root = '.'): string[] {
  const pages = ['README.md', 'BENCHMARKS.md', 'EXPERIMENTS.md'].filter((f) => existsSync(join(root, f)));
  const walk = (dir: string): void => {
    if (!existsSync(join(root, dir))) return;
    for (const e of readdirSync(join(root, dir)).sort()) {
      const p = join(dir, e);
      if (statSync(join(root, p)).isDirectory()) walk(p);
      else if (p.endsWith('.md')) pages.push(p);
    }
  };
  walk('docs');
  return pages;
}

/** Text with fenced blocks blanked (a heading or link inside one is an example, not a page's own). */
function withoutFences(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** ... and inline code too, so a link shown as code is not checked. */
function withoutCode(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, '');
}

/** Link and image targets: [text](target "title"), ![alt](target), [ref]: target, <img src="target">. */
export function linkTargets(text: string): string[] {
  const t = withoutCode(text);
  const out: string[] = [];
  for (const m of t.matchAll(/!?\[(?:[^\]\n]|\][^(\n])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]!);
  for (const m of t.matchAll(/^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm)) out.push(m[1]!);
  for (const m of t.matchAll(/<img\b[^>]*\bsrc="([^"]+)"/g)) out.push(m[1]!);
  return out;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
export function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const m of withoutFences(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .replace(/<[^>]+>/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n ? `${base}-${n}` : base);
  }
  return anchors;
}

const external = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

/** The broken links of one page (`file` relative to `root`), each as "file: target (why)". */
export function brokenLinks(file: string, text: string, root = '.'): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(text)) {
    if (external.test(target)) continue;
    const [rawPath, anchor] = target.split('#', 2) as [string, string | undefined];
    const path = decodeURIComponent(rawPath);
    const resolved = path ? normalize(join(dirname(file), path)) : file;
    if (resolved.startsWith('..') || path.startsWith('/')) {
      broken.push(`${file}: ${target} (points outside the repository)`);
      continue;
    }
    if (path && !existsSync(join(root, resolved))) {
      broken.push(`${file}: ${target} (no such file or folder: ${relative('.', resolved)})`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md')) {
      const headings = headingAnchors(path ? readFileSync(join(root, resolved), 'utf8') : text);
      if (!headings.has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  return broken;
}
