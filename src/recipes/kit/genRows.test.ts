import { describe, expect, it } from 'vitest';
import { concatGenRows, selectGenRows, selectMatrixRows, type GenRows } from './genRows';

const batch = (tokens: number[][], tag: number): GenRows => ({
  rows: tokens.map((_, b) => [tag, b]),
  texts: tokens.map((_, b) => `t${tag}.${b}`),
  gen: {
    tokens,
    logprobs: tokens.map((r) => r.map(() => -tag)),
    entropy: tokens.map((r) => r.map(() => tag)),
    mask: tokens.map((r) => r.map(() => 1)),
    lengths: tokens.map((r) => r.length),
  },
});

describe('genRows', () => {
  it('joins batches padded to the longest (pad id in tokens, 0 in mask / log-probs)', () => {
    const j = concatGenRows([batch([[5, 6]], 1), batch([[7, 8, 9]], 2)], 0);
    expect(j.gen.tokens).toEqual([
      [5, 6, 0],
      [7, 8, 9],
    ]);
    expect(j.gen.mask).toEqual([
      [1, 1, 0],
      [1, 1, 1],
    ]);
    expect(j.gen.logprobs).toEqual([
      [-1, -1, 0],
      [-2, -2, -2],
    ]);
    expect(j.gen.lengths).toEqual([2, 3]);
    expect(j.texts).toEqual(['t1.0', 't2.0']);
    expect(j.rows).toEqual([
      [1, 0],
      [2, 0],
    ]);
  });

  it('selects rows in the order asked', () => {
    const s = selectGenRows(batch([[1], [2], [3]], 4), [2, 0]);
    expect(s.gen.tokens).toEqual([[3], [1]]);
    expect(s.texts).toEqual(['t4.2', 't4.0']);
    const m = selectMatrixRows({ data: Float32Array.from([1, 2, 3, 4, 5, 6]), rows: 3, cols: 2 }, [2, 0]);
    expect(m.rows).toBe(2);
    expect([...m.data]).toEqual([5, 6, 1, 2]);
  });
});
