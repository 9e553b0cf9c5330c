import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { recipeNames } from '../../src/recipes/registry';
import { FIELDS_BEGIN, FIELDS_END, currentBlock, fieldsBlock, recipePage, withFields } from './recipeFields';

// A page's fields block is what the schema gives; `npm run docs:fields` rewrites a stale one.
describe('docs/recipes fields blocks', () => {
  it('there is a page for each of the nine recipes', () => {
    expect(recipeNames()).toHaveLength(9);
  });
  for (const name of recipeNames()) {
    it(`${name}: the page's block equals --help (run npm run docs:fields if not)`, () => {
      const file = recipePage(name);
      expect(currentBlock(readFileSync(file, 'utf8'), file)).toBe(fieldsBlock(name));
    });
  }
  it('replaces only the block and refuses a page without one', () => {
    const page = `# x\n\nbefore\n${FIELDS_BEGIN}\nstale\n${FIELDS_END}\nafter\n`;
    const next = withFields(page, 'redteam', 'x.md');
    expect(next.startsWith('# x\n\nbefore\n')).toBe(true);
    expect(next.endsWith('\nafter\n')).toBe(true);
    expect(next).toContain('defenderWeights');
    expect(() => withFields('# no block', 'redteam', 'y.md')).toThrow(/y\.md: no/);
  });
});
