import { describe, expect, it } from 'vitest';
import { repetition, saferRep3, tinkerRepetitionRatio, wordOrSymbolTokens } from './repetition';

describe('Tinker repetition ratio', () => {
  it('distinct repeated 3-grams / distinct 3-grams', () => {
    // the cat sat the cat sat on mat -> 6 trigrams, 5 distinct, one ("the cat sat") repeated: 1/5.
    expect(tinkerRepetitionRatio('the cat sat the cat sat on mat')).toBeCloseTo(0.2, 10);
  });
  it('n is configurable', () => {
    // bigrams: the-cat x2, cat-sat x2, sat-the, sat-on, on-mat -> 5 distinct, 2 repeated: 2/5.
    expect(tinkerRepetitionRatio('the cat sat the cat sat on mat', { n: 2 })).toBeCloseTo(0.4, 10);
  });
  it('a loop scores 1, fewer than n words score 0, extra whitespace is ignored', () => {
    expect(tinkerRepetitionRatio('a b c a b c a b')).toBe(1);
    expect(tinkerRepetitionRatio('only two')).toBe(0);
    expect(tinkerRepetitionRatio('  the cat\n sat\tthe  cat sat on mat ')).toBeCloseTo(0.2, 10);
  });
  it('case-sensitive unless asked', () => {
    // The/the differ: trigrams all distinct -> 0; lowercased -> 0.2.
    expect(tinkerRepetitionRatio('The cat sat the cat sat on mat')).toBe(0);
    expect(tinkerRepetitionRatio('The cat sat the cat sat on mat', { lowercase: true })).toBeCloseTo(0.2, 10);
  });
});

describe('SaFeR rep3', () => {
  const loop24 = Array(8).fill('x y z').join(' '); // 24 tokens
  it('tokenises like re.findall(r"\\w+|\\S")', () => {
    expect(wordOrSymbolTokens('Hi, there! né_1 ok')).toEqual(['Hi', ',', 'there', '!', 'né_1', 'ok']);
  });
  it('sum (count - 1) / #trigrams', () => {
    // 24 tokens -> 22 trigrams, 3 distinct (xyz, yzx, zxy) -> 19 / 22.
    expect(saferRep3(loop24)).toBeCloseTo(19 / 22, 10);
    // The Tinker ratio of the same text is 3/3: the two metrics measure different things.
    expect(repetition(loop24, 'tinker')).toBe(1);
  });
  it('0 below 24 tokens', () => {
    expect(saferRep3(Array(23).fill('x').join(' '))).toBe(0);
    expect(saferRep3(Array(24).fill('x').join(' '))).toBeCloseTo(21 / 22, 10); // 22 trigrams, 1 distinct
  });
  it('punctuation are tokens', () => {
    // "a ." x 12 = 24 tokens, alternating: trigrams (a . a) x 11 and (. a .) x 11 -> 20 / 22.
    expect(saferRep3(Array(12).fill('a .').join(' '))).toBeCloseTo(20 / 22, 10);
  });
  it('registry rejects unknown names', () => {
    expect(() => repetition('x', 'rep4' as 'tinker')).toThrow(/unknown repetition metric "rep4"/);
  });
});
