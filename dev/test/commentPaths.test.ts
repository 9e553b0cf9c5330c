// Comments that name a file of the project must name one that exists (issue 45: the re-cut left
// about 26 comments pointing at moved files). A path in a comment of src/, dev/, e2e/, shaders/ or
// scripts/ is checked when it starts at a folder of this tree (src/..., kit/..., rl/...) or is a
// bare .ts / .tsx / .wgsl file name: it must exist from the repository root, from the file's own
// folder, or as the tail of some file's path. Paths into other projects (veRL's recipe/dapo/...,
// transformers' modeling_*.py) start elsewhere and are left alone.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = process.cwd();
const SKIP = new Set(['node_modules', 'dist', '.git', '.gpu-bench', 'models']);
const SCANNED = ['src', 'dev', 'e2e', 'shaders', 'scripts'];
const CODE = /\.(ts|tsx|mjs|wgsl|sh)$/;

/** Every file under `dir`, as a path from the root. */
function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const p = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** Folders a project path in a comment may start at: the top level and the layers and their parts. */
const STARTS = new Set([
  ...['src', 'dev', 'docs', 'e2e', 'public', 'shaders', 'scripts'],
  ...['kit', 'rl', 'model', 'engine', 'recipes', 'judges', 'data', 'storage', 'contract', 'worker'],
  ...['ui', 'store', 'cli', 'export', 'plan', 'kernels', 'sandbox', 'planned', 'bench', 'fixtures'],
]);
/** Placeholders, not files: a file named per recipe, an example in a usage line. */
const PLACEHOLDER = /RECIPE|NAME|<|^\.\/x\.wgsl$/;
const PATH = /(?<![\w./@-])((?:\.{1,2}\/)*(?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|tsx|wgsl|md|mjs|sh|json))(?![\w/])/g;

/** The comment paths of the scanned files that resolve to nothing. */
export function danglingCommentPaths(): string[] {
  const all = walk('');
  const files = new Set(all);
  const dirs = new Set(
    all.flatMap((p) =>
      p
        .split('/')
        .slice(0, -1)
        .map((_, i, a) => a.slice(0, i + 1).join('/')),
    ),
  );
  const names = new Set(all.map((p) => p.slice(p.lastIndexOf('/') + 1)));
  const exists = (p: string) => files.has(p) || dirs.has(p);
  const bad: string[] = [];
  for (const f of all.filter((p) => SCANNED.some((d) => p.startsWith(`${d}/`)) && CODE.test(p))) {
    readFileSync(join(ROOT, f), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        const s = line.trim();
        if (!/^(\/\/|\*|\/\*|#)/.test(s)) return;
        for (const [, p] of s.matchAll(PATH)) {
          if (PLACEHOLDER.test(p)) continue;
          const relativeToFile = p.startsWith('./') || p.startsWith('../');
          if (!p.includes('/')) {
            if (/\.(ts|tsx|wgsl)$/.test(p) && !names.has(p)) bad.push(`${f}:${i + 1} ${p}`);
            continue;
          }
          if (!relativeToFile && !STARTS.has(p.split('/')[0])) continue;
          const own = relative(ROOT, normalize(join(ROOT, dirname(f), p)));
          // A command in a comment runs from the repository root: `--import ./src/...` names a root path.
          if (exists(p) || exists(own) || exists(normalize(p)) || all.some((q) => q.endsWith(`/${p}`))) continue;
          bad.push(`${f}:${i + 1} ${p}`);
        }
      });
  }
  return bad;
}

describe('paths named in comments', () => {
  it('exist in the tree', () => {
    expect(danglingCommentPaths()).toEqual([]);
  });
});
