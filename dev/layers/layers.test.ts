import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkLayers, cycles, importsOf, type Edge } from './layers';

const files = new Set([
  'src/ui/App.tsx',
  'src/store/runStore.ts',
  'src/worker/client.ts',
  'src/worker/runs.ts',
  'src/recipes/redteam/recipe.ts',
  'src/rl/advantages.ts',
  'src/model/llama.ts',
  'src/engine/index.ts',
  'src/contract/report.ts',
  'src/cli/lab.ts',
  'dev/test/mutate.ts',
]);
const edge = (from: string, to: string, typeOnly = false): Edge => ({ from, to, typeOnly });
const rules = (edges: Edge[]) => checkLayers(edges).map((v) => v.rule);

describe('importsOf', () => {
  it('resolves value, type-only, re-export, dynamic and worker-URL imports; skips packages and comments', () => {
    const src = [
      "import { a } from '../../rl/advantages';",
      "import type { StepReport } from '../../contract/report.ts';",
      "export { llama } from '../../model/llama';",
      "const e = await import('../../engine');",
      "// import { x } from '../../ui/App';",
      "import * as tf from '@tensorflow/tfjs';",
      "const w = new Worker(new URL('../../worker/client.ts', import.meta.url));",
    ].join('\n');
    expect(importsOf('src/recipes/redteam/recipe.ts', src, files)).toEqual([
      edge('src/recipes/redteam/recipe.ts', 'src/rl/advantages.ts'),
      edge('src/recipes/redteam/recipe.ts', 'src/contract/report.ts', true),
      edge('src/recipes/redteam/recipe.ts', 'src/model/llama.ts'),
      edge('src/recipes/redteam/recipe.ts', 'src/engine/index.ts'),
      edge('src/recipes/redteam/recipe.ts', 'src/worker/client.ts'),
    ]);
  });
});

describe('checkLayers', () => {
  it('allows imports down the layers, into contract/, and the page to the worker client', () => {
    expect(
      rules([
        edge('src/recipes/redteam/recipe.ts', 'src/rl/advantages.ts'),
        edge('src/rl/advantages.ts', 'src/engine/index.ts'),
        edge('src/engine/index.ts', 'src/contract/report.ts'),
        edge('src/ui/App.tsx', 'src/store/runStore.ts'),
        edge('src/store/runStore.ts', 'src/worker/client.ts'),
        edge('src/ui/App.tsx', 'src/contract/report.ts', true),
        edge('src/cli/lab.ts', 'src/recipes/redteam/recipe.ts'),
      ]),
    ).toEqual([]);
  });

  it('fails an upward import, type-only or not', () => {
    expect(rules([edge('src/model/llama.ts', 'src/rl/advantages.ts')])).toEqual([
      expect.stringMatching(/^upward import: model is below rl/),
    ]);
    expect(rules([edge('src/engine/index.ts', 'src/model/llama.ts', true)])).toEqual([
      expect.stringMatching(/^upward import: engine is below model/),
    ]);
  });

  it('keeps the page to contract/, store/ and the worker client', () => {
    expect(rules([edge('src/ui/App.tsx', 'src/recipes/redteam/recipe.ts', true)])).toEqual([
      'ui/ imports only contract/, store/, ui/ and the worker client',
    ]);
    expect(rules([edge('src/store/runStore.ts', 'src/worker/runs.ts')])).toEqual([
      'store/ imports only contract/, store/, ui/ and the worker client',
    ]);
  });

  it('keeps contract/ free of the project, dev/ out of product code, and cli/ un-imported', () => {
    expect(rules([edge('src/contract/report.ts', 'src/engine/index.ts')])).toEqual([
      'contract/ imports nothing of the project',
    ]);
    expect(rules([edge('src/rl/advantages.ts', 'dev/test/mutate.ts')])).toEqual([
      'product code never imports dev/ or e2e/ (only *.test.ts may)',
    ]);
    expect(rules([edge('src/rl/advantages.test.ts', 'dev/test/mutate.ts')])).toEqual([]);
    expect(rules([edge('src/worker/runs.ts', 'src/cli/lab.ts')])).toEqual(['nothing imports cli/ (entry points)']);
  });

  it('sends every import of the engine from above through its entry', () => {
    expect(rules([edge('src/model/llama.ts', 'src/engine/kernels/rope/rope.ts')])).toEqual([
      'the engine is imported through its entry, src/engine/index.ts',
    ]);
    expect(rules([edge('src/engine/index.ts', 'src/engine/kernels/rope/rope.ts')])).toEqual([]);
  });

  it('fails a cycle, type-only edges included', () => {
    const loop = [
      edge('src/model/llama.ts', 'src/model/generate.ts', true),
      edge('src/model/generate.ts', 'src/model/decode.ts'),
      edge('src/model/decode.ts', 'src/model/llama.ts'),
    ];
    expect(cycles(loop)).toEqual([['src/model/decode.ts', 'src/model/generate.ts', 'src/model/llama.ts']]);
    expect(rules(loop)).toEqual([
      expect.stringMatching(/^import cycle among src\/model\/decode.ts, src\/model\/generate.ts/),
    ]);
    expect(rules(loop.slice(0, 2))).toEqual([]);
  });
});

// The repository itself: the same check `npm run check:layers` runs, so `npm test` fails on it too.
describe('the source tree', () => {
  it('has no import against the layer rule', () => {
    const ROOT = join(import.meta.dirname, '../..');
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir)).flatMap((n) =>
        statSync(join(ROOT, dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)],
      );
    const all = new Set(['src', 'dev', 'e2e'].flatMap(walk));
    const code = [...all].filter((p) => p.startsWith('src/') && /\.(tsx?|mjs)$/.test(p));
    const violations = checkLayers(code.flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8'), all)));
    expect(violations.map((v) => `${v.from} -> ${v.to}: ${v.rule}`)).toEqual([]);
  });
});
