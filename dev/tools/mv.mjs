#!/usr/bin/env node
// Moves files or folders with `git mv` and rewrites every relative import that points at them (or
// out of them), across src/, e2e/, dev/ and the root config files, so a re-cut is one command per
// move instead of hand-edited import paths.
//
//   node dev/tools/mv.mjs OLD NEW [OLD NEW ...]     (paths relative to the repository root)
//   node dev/tools/mv.mjs --check                   (lists relative imports that resolve to nothing)
//   node dev/tools/mv.mjs --repair                  (points each of those at the one file of that name, after a merge)
//
// Handles `from '...'`, `import('...')`, `export ... from '...'`, `vi.mock('...')`,
// `new URL('...', import.meta.url)` and `?raw` / `?url` suffixes; keeps each import's extension
// style (none, .ts, .mjs, a folder's index).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync, readdirSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const SCAN = ['src', 'e2e', 'dev', 'scripts', 'vite.config.ts', 'vitest.config.ts', 'e2e/vitest.config.ts'];
const CODE = /\.(ts|tsx|mjs|js|cjs|mts)$/;
const EXTS = ['', '.ts', '.tsx', '.mjs', '.js', '/index.ts', '/index.tsx'];
const SPEC = /(from\s+|import\s*\(\s*|vi\.mock\(\s*|new URL\(\s*|import\s+)(['"])(\.{1,2}\/[^'"]*)\2/g;

function walk(p, out) {
  const abs = join(ROOT, p);
  if (!existsSync(abs)) return out;
  if (statSync(abs).isDirectory()) {
    for (const e of readdirSync(abs)) if (e !== 'node_modules' && !e.startsWith('.')) walk(join(p, e), out);
  } else if (CODE.test(p)) out.add(abs);
  return out;
}

function resolveSpec(fromFile, spec) {
  const [path, query] = spec.split('?');
  const base = resolve(dirname(fromFile), path);
  for (const ext of EXTS) {
    const cand = base + ext;
    if (existsSync(cand) && statSync(cand).isFile())
      return { target: cand, ext, query: query === undefined ? '' : `?${query}` };
  }
  if (existsSync(base)) return { target: base, ext: '', query: query === undefined ? '' : `?${query}`, dir: true };
  return null;
}

function relSpec(fromFile, target, ext, query, dir) {
  let t = target;
  if (!dir && ext) t = target.slice(0, target.length - ext.length);
  let r = relative(dirname(fromFile), t).split(sep).join('/');
  if (!r.startsWith('.')) r = `./${r}`;
  return r + query;
}

// dev/layers/ holds import statements as test data inside strings: not imports of its own.
const files = [...SCAN.reduce((s, p) => walk(p, s), new Set())].filter(
  (f) => !f.includes(`${sep}dev${sep}layers${sep}`),
);

if (process.argv[2] === '--repair') {
  const byName = new Map();
  for (const f of files) {
    const name = f
      .split(sep)
      .pop()
      .replace(/\.(ts|tsx|mjs|js)$/, '');
    byName.set(name, [...(byName.get(name) ?? []), f]);
  }
  let fixed = 0;
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    let out = text;
    for (const m of text.matchAll(SPEC)) {
      if (resolveSpec(f, m[3])) continue;
      const [path, query] = m[3].split('?');
      const name = path
        .split('/')
        .pop()
        .replace(/\.(ts|tsx|mjs|js)$/, '');
      const ext = (path.match(/\.(ts|tsx|mjs|js)$/) ?? [''])[0];
      const hits = (byName.get(name) ?? []).filter((c) => !ext || c.endsWith(ext));
      if (hits.length !== 1) {
        console.log(`${relative(ROOT, f)}: ${m[3]}: ${hits.length} candidates`);
        continue;
      }
      const target = ext ? hits[0] : hits[0].replace(/\.(ts|tsx|mjs|js)$/, '');
      const ns = relSpec(f, target, '', query === undefined ? '' : `?${query}`, false);
      out = out.split(`'${m[3]}'`).join(`'${ns}'`);
      fixed++;
    }
    if (out !== text) writeFileSync(f, out);
  }
  console.log(`repaired ${fixed} imports`);
  process.exit(0);
}

if (process.argv[2] === '--check') {
  let bad = 0;
  for (const f of files) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(SPEC)) {
      if (!resolveSpec(f, m[3])) {
        bad++;
        console.log(`${relative(ROOT, f)}: ${m[3]}`);
      }
    }
  }
  process.exit(bad ? 1 : 0);
}

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 2) {
  console.error('usage: node dev/tools/mv.mjs OLD NEW [OLD NEW ...]');
  process.exit(2);
}
const moves = [];
for (let i = 0; i < args.length; i += 2) moves.push([resolve(ROOT, args[i]), resolve(ROOT, args[i + 1])]);
const moved = (p) => {
  for (const [a, b] of moves) {
    if (p === a) return b;
    if (p.startsWith(a + sep)) return b + p.slice(a.length);
  }
  return p;
};

// Resolve every import before anything moves.
const plan = files.map((f) => {
  const text = readFileSync(f, 'utf8');
  const hits = [];
  for (const m of text.matchAll(SPEC)) {
    const r = resolveSpec(f, m[3]);
    if (r) hits.push({ spec: m[3], ...r });
  }
  return { f, text, hits };
});

for (const [a, b] of moves) {
  mkdirSync(dirname(b), { recursive: true });
  execFileSync('git', ['mv', a, b], { cwd: ROOT, stdio: 'inherit' });
}

let changed = 0;
for (const { f, text, hits } of plan) {
  const nf = moved(f);
  let out = text;
  for (const h of hits) {
    const nt = moved(h.target);
    if (nt === h.target && nf === f) continue;
    const ns = relSpec(nf, nt, h.ext, h.query, h.dir) + (h.dir && h.spec.split('?')[0].endsWith('/') ? '/' : '');
    if (ns !== h.spec) out = out.split(`'${h.spec}'`).join(`'${ns}'`).split(`"${h.spec}"`).join(`"${ns}"`);
  }
  if (out !== text) {
    writeFileSync(nf, out);
    changed++;
  }
}
console.log(`moved ${moves.length}, rewrote imports in ${changed} files`);
