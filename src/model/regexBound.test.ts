import { describe, expect, it } from 'vitest';
import { LLAMA3_PATTERN } from '../../dev/test/testdata/llamaGuardFixture';
import { QWEN2_PATTERN } from '../../dev/test/testdata/qwen2Fixture';
import { catastrophicRegex, MAX_REGEX_CHARS, tokenizerRegexes } from './regexBound';

describe('tokenizer regex check', () => {
  it('refuses a group repeated without bound that holds an unbounded repeat or an alternation', () => {
    for (const r of ['(a+)+$', '(a|aa)+$', '(a*)*', '(?:\\s+)+x', '((ab)+c)*', '(x{2,})+', '(?:[ab]|c)*$'])
      expect(catastrophicRegex(r), r).toMatch(/^the repeated group at character \d+ .* itself/);
    expect(catastrophicRegex('a'.repeat(MAX_REGEX_CHARS + 1))).toMatch(/over the 4096-character limit/);
    // Chained unbounded repeats backtrack polynomially: at most three in one branch.
    for (const r of ['a+a+a+a+', '(a+){3}a+', '(a+){0,3}(a+)', '\\s*(?:a+b*)c+d*'])
      expect(catastrophicRegex(r), r).toMatch(/chains \d unbounded repeats in one branch, over the limit of 3/);
    expect(catastrophicRegex('a+a+a+|b+b+b+')).toBeNull();
  });

  it("accepts the real tokenizers' patterns and bounded repeats", () => {
    const gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
    for (const r of [gpt2, LLAMA3_PATTERN, QWEN2_PATTERN, '\\p{N}{1,3}', '(?:ab)+', '(?:a|b)?c', '(a+){2}', '[(+)]+'])
      expect(catastrophicRegex(r), r).toBeNull();
  });

  it('finds every pattern.Regex with its field path, and skips the vocabulary', () => {
    const json = {
      normalizer: { type: 'Sequence', normalizers: [{ type: 'Replace', pattern: { Regex: 'x' }, content: 'y' }] },
      pre_tokenizer: { type: 'Split', pattern: { Regex: '\\s+' } },
      model: { vocab: { Regex: 1 }, merges: [] },
    };
    expect(tokenizerRegexes(json)).toEqual([
      { field: 'normalizer.normalizers[0].pattern.Regex', source: 'x' },
      { field: 'pre_tokenizer.pattern.Regex', source: '\\s+' },
    ]);
  });
});
