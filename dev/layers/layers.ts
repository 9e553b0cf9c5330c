// The layer rule of docs/architecture.md as data, and the check that enforces it.
//
// Why our own ~150 lines and not dependency-cruiser: dependency-cruiser 17 reads TypeScript only
// through the `typescript` package below 7 (the project is on TypeScript 7, whose native compiler
// has no JS API), and its swc parser rejects .tsx. Imports here are plain ES syntax, so a small
// scanner sees every edge, type-only ones included.
import { dirname, join, normalize } from 'node:path';

/** Top to bottom: a module may import its own layer, any layer below it, and contract/. */
export const LAYERS = [
  'ui',
  'store',
  'worker',
  'recipes',
  'export',
  'rl',
  'judges',
  'data',
  'storage',
  'model',
  'engine',
] as const;

/** Entry points a user runs: may import any product layer but the page's (ui, store). */
const ENTRY = 'cli';
/** What ui/ and store/ may import besides contract/, store/ and ui/. */
const PAGE_MAY_IMPORT = ['src/worker/client.ts'];
const PAGE = ['ui', 'store'];
/** The one module of src/engine/ the layers above import. */
const ENGINE_ENTRY = 'src/engine/index.ts';

export interface Edge {
  from: string;
  to: string;
  /** `import type` / `export type`: counts for cycles and layers alike. */
  typeOnly: boolean;
}

export interface Violation {
  from: string;
  to: string;
  rule: string;
}

const IMPORT =
  /(?:^|[\s;])(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|new\s+URL\(\s*['"](\.[^'"]+)['"]\s*,\s*import\.meta\.url/g;
const EXTS = ['', '.ts', '.tsx', '.mjs', '.js', '/index.ts', '/index.tsx'];

/** Relative imports of one source file, resolved against the set of known files (repo-relative paths). */
export function importsOf(file: string, source: string, files: ReadonlySet<string>): Edge[] {
  const edges: Edge[] = [];
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[3] ?? m[4] ?? m[5];
    if (!spec || !spec.startsWith('.')) continue;
    const base = normalize(join(dirname(file), spec.split('?')[0]));
    const to = EXTS.map((e) => base + e).find((p) => files.has(p));
    if (to) edges.push({ from: file, to, typeOnly: Boolean(m[2]) });
  }
  return edges;
}

/** 'ui', 'engine', 'contract', 'cli', 'dev', 'e2e', ... for a repo-relative path. */
export function layerOf(path: string): string {
  const [top, second] = path.split('/');
  return top === 'src' ? second : top;
}

const isTest = (path: string) => /\.test\.tsx?$/.test(path);

/** Every import that breaks the rule, and every import cycle (type-only edges included). */
export function checkLayers(edges: Edge[]): Violation[] {
  const out: Violation[] = [];
  for (const { from, to } of edges) {
    const a = layerOf(from);
    const b = layerOf(to);
    if (!from.startsWith('src/')) continue; // dev/, e2e/: tests and tools may import anything
    if (to.startsWith('dev/') || to.startsWith('e2e/')) {
      if (!isTest(from)) out.push({ from, to, rule: 'product code never imports dev/ or e2e/ (only *.test.ts may)' });
      continue;
    }
    if (a === b || isTest(from)) continue;
    if (a === 'contract') {
      out.push({ from, to, rule: 'contract/ imports nothing of the project' });
      continue;
    }
    if (b === 'contract') continue;
    if (PAGE.includes(a)) {
      if (!PAGE.includes(b) && !PAGE_MAY_IMPORT.includes(to))
        out.push({ from, to, rule: `${a}/ imports only contract/, store/, ui/ and the worker client` });
      continue;
    }
    if (b === ENTRY) {
      out.push({ from, to, rule: 'nothing imports cli/ (entry points)' });
      continue;
    }
    if (a === ENTRY) {
      if (PAGE.includes(b)) out.push({ from, to, rule: 'cli/ does not import the page (ui/, store/)' });
      continue;
    }
    if (b === 'engine' && to !== ENGINE_ENTRY) {
      out.push({ from, to, rule: `the engine is imported through its entry, ${ENGINE_ENTRY}` });
      continue;
    }
    const ia = LAYERS.indexOf(a as (typeof LAYERS)[number]);
    const ib = LAYERS.indexOf(b as (typeof LAYERS)[number]);
    if (ia < 0 || ib < 0) {
      out.push({ from, to, rule: `unknown layer (${ia < 0 ? a : b}): add it to LAYERS in dev/layers/layers.ts` });
      continue;
    }
    if (ib < ia) out.push({ from, to, rule: `upward import: ${a} is below ${b} (${LAYERS.join(' > ')})` });
  }
  for (const cycle of cycles(edges.filter((e) => e.from.startsWith('src/') && e.to.startsWith('src/')))) {
    out.push({ from: cycle[0], to: cycle[1], rule: `import cycle among ${cycle.join(', ')}` });
  }
  return out;
}

/** Strongly connected components of more than one module (Tarjan): each is one or more cycles. */
export function cycles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}
