import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// Every kernel is a .wgsl file under shaders/<op>/ whose body the host uses as written: TypeScript
// prepends a typed prelude (constants, structs, bindings, the weight-format loaders and unrolled
// register helpers) and never fills placeholders in a body.
const SHADERS = join(import.meta.dirname, '../../../shaders');
const wgsl = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? wgsl(p) : n.endsWith('.wgsl') ? [p] : [];
  });

describe('shaders/', () => {
  it('holds every kernel in a folder per operation, with no template marks in any body', () => {
    const files = wgsl(SHADERS).map((p) => relative(SHADERS, p));
    expect(files.length).toBeGreaterThan(40);
    expect(files.filter((f) => !f.includes('/'))).toEqual([]);
    expect(files.filter((f) => /\{\{|\}\}/.test(readFileSync(join(SHADERS, f), 'utf8')))).toEqual([]);
  });

  it('is never edited by string replacement in the kernel builders', () => {
    const dir = join(import.meta.dirname);
    const offenders = readdirSync(dir)
      .filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))
      .filter((n) => /\.replace(All)?\(\s*['"`]\{\{/.test(readFileSync(join(dir, n), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
