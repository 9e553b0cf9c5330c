// `npm run check:layers`: every import in src/ against the layer rule (dev/layers/layers.ts);
// prints each violation and exits 1 when there is one.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { checkLayers, importsOf } from './layers';

const ROOT = join(import.meta.dirname, '../..');

function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name.startsWith('.')) return [];
    if (statSync(join(ROOT, path)).isDirectory()) return walk(path);
    return [path];
  });
}

const files = new Set(['src', 'dev', 'e2e'].flatMap(walk).map((p) => relative(ROOT, join(ROOT, p))));
const code = [...files].filter((p) => p.startsWith('src/') && /\.(tsx?|mjs)$/.test(p));
const edges = code.flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8'), files));
const violations = checkLayers(edges);
for (const v of violations) console.log(`${v.from} -> ${v.to}: ${v.rule}`);
console.log(
  violations.length
    ? `check:layers: ${violations.length} violation(s) in ${edges.length} imports of ${code.length} modules`
    : `check:layers: ok (${edges.length} imports of ${code.length} modules)`,
);
process.exit(violations.length ? 1 : 0);
