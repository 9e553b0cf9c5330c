import { describe, expect, it } from 'vitest';
import { maskedMean, maskedRowMeans, maskedVar, maskedWhiten, mean, std } from './stats';
import { expectAllClose } from '../../dev/test/rlHelpers';
import { fromRows } from './types';

describe('stats', () => {
  it('mean and Bessel std; degenerate sizes give 0', () => {
    expect(mean([1, 2, 6])).toBe(3);
    // [1, 2, 6]: squared devs 4 + 1 + 9 = 14, /2 = 7
    expect(std([1, 2, 6])).toBeCloseTo(Math.sqrt(7), 12);
    expect(std([1, 2, 6], false)).toBeCloseTo(Math.sqrt(14 / 3), 12);
    expect(std([5])).toBe(0);
    expect(mean([])).toBe(0);
  });
  it('masked mean / var over unmasked entries only', () => {
    const x = fromRows([
      [1, 100],
      [3, 5],
    ]);
    const m = fromRows([
      [1, 0],
      [1, 1],
    ]);
    // {1, 3, 5}: mean 3, squared devs 4 + 0 + 4 = 8, biased 8/3, Bessel 8/3 x 3/2 = 4
    expect(maskedMean(x, m)).toBeCloseTo(3, 6);
    expect(maskedVar(x, m)).toBeCloseTo(4, 6);
    expectAllClose(maskedWhiten(x, m).data, [-1, 0, 0, 1], 5);
  });
  it('per-row masked means (sequence KL, mean entropy)', () => {
    // row 0: (1 + 3)/2 = 2; row 1: empty -> 0
    expectAllClose(
      maskedRowMeans(
        fromRows([
          [1, 3, 9],
          [4, 4, 4],
        ]),
        fromRows([
          [1, 1, 0],
          [0, 0, 0],
        ]),
      ),
      [2, 0],
      6,
    );
  });
  it('one unmasked entry or none whitens to zeros, not NaN', () => {
    const x = fromRows([[7, 8]]);
    expectAllClose(maskedWhiten(x, fromRows([[0, 1]])).data, [0, 0], 6);
    expectAllClose(maskedWhiten(x, fromRows([[0, 0]])).data, [0, 0], 6);
  });
});
