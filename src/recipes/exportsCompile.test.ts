// Every .py a recipe folder ships, and every .py file of every recipe's export (reward.py, the TRL
// script, the multiturn interaction), compiles with python3 -m py_compile.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EXPORT_RECIPES, exportVerl } from './exports';
import { getRecipe } from './registry';

// Compiled files go to a temporary folder, not __pycache__ beside the sources.
const PYCACHE = mkdtempSync(join(tmpdir(), 'pycache-'));

const RECIPES = fileURLToPath(new URL('./', import.meta.url));
const pyCompile = (files: string[]) =>
  execFileSync('python3', ['-m', 'py_compile', ...files], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONPYCACHEPREFIX: PYCACHE },
  });

describe('recipe Python compiles', () => {
  const shipped = readdirSync(RECIPES, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.py'));

  it('the recipe folders ship their reward.py', () => {
    expect(shipped.filter((f) => f.endsWith('reward.py')).length).toBeGreaterThanOrEqual(6);
  });

  it('every .py under src/recipes/ compiles', () => {
    expect(() => pyCompile(shipped.map((f) => join(RECIPES, f)))).not.toThrow();
  });

  // attacker-sft's export is an SFT job with no Python.
  for (const name of Object.keys(EXPORT_RECIPES)) {
    it(`${name}: every .py file of its export compiles`, () => {
      const ex = exportVerl({ recipe: getRecipe(name), config: {}, seed: 1, steps: 5 });
      const dir = mkdtempSync(join(tmpdir(), `verl-${name}-`));
      const py = Object.keys(ex.files).filter((f) => f.endsWith('.py'));
      expect(py).toContain('reward.py');
      for (const f of py) {
        mkdirSync(dirname(join(dir, f)), { recursive: true });
        writeFileSync(join(dir, f), ex.files[f]);
      }
      expect(() => pyCompile(py.map((f) => join(dir, f)))).not.toThrow();
    });
  }
});
