// TRL's own cases for get_high_entropy_mask (trl tests/test_grpo_trainer.py, GetHighEntropyMaskTester:
// test_compute_entropy_mask_0 / _1 / _lower_threshold / _threshold_0 / _threshold_1 / _all_masked),
// copied as data: entropies, mask, threshold (= 1 - top_entropy_quantile) and TRL's expected mask.
import { describe, expect, it } from 'vitest';
import { highEntropyMask, quantileLinear } from './entropyMask';

const m = (rows: number[][]) => ({ data: Float32Array.from(rows.flat()), rows: rows.length, cols: rows[0].length });
const E0 = [
  [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
  [0.7, 0.8, 0.9, 1.0, 1.1, 1.2],
];
const M0 = [
  [1, 1, 1, 1, 1, 1],
  [1, 1, 1, 1, 0, 0],
];
const TRL_CASES: { name: string; e: number[][]; mask: number[][]; threshold: number; want: number[][] }[] = [
  {
    name: 'mask_0',
    e: E0,
    mask: M0,
    threshold: 0.8,
    want: [
      [0, 0, 0, 0, 0, 0],
      [0, 0, 1, 1, 0, 0],
    ],
  },
  {
    name: 'mask_1',
    e: [
      [0.1, 0.2, 0.3, 1.4, 0.5, 0.14],
      [0.5, 0.6, 0.7, 0.8, 0.9, 1.0],
    ],
    mask: [
      [1, 1, 1, 1, 0, 0],
      [1, 1, 1, 1, 0, 0],
    ],
    threshold: 0.8,
    want: [
      [0, 0, 0, 1, 0, 0],
      [0, 0, 0, 1, 0, 0],
    ],
  },
  {
    name: 'lower_threshold',
    e: E0,
    mask: M0,
    threshold: 0.5,
    want: [
      [0, 0, 0, 0, 0, 1],
      [1, 1, 1, 1, 0, 0],
    ],
  },
  { name: 'threshold_0', e: E0, mask: M0, threshold: 0, want: M0 },
  {
    name: 'threshold_1',
    e: E0,
    mask: M0,
    threshold: 1,
    want: [
      [0, 0, 0, 0, 0, 0],
      [0, 0, 0, 1, 0, 0],
    ],
  },
  {
    name: 'all_masked',
    e: E0,
    mask: [
      [0, 0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0],
    ],
    threshold: 0.5,
    want: [
      [0, 0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0],
    ],
  },
];

describe('highEntropyMask (TRL get_high_entropy_mask)', () => {
  it.each(TRL_CASES)("TRL's case $name", ({ e, mask, threshold, want }) => {
    expect(Array.from(highEntropyMask(m(e), m(mask), threshold).data)).toEqual(want.flat());
  });

  it('quantileLinear interpolates between order statistics as torch.quantile does', () => {
    // torch.quantile([1, 2, 3, 4], 0.5) = 2.5; at 0.8: position 2.4 -> 3.4.
    expect(quantileLinear([4, 1, 3, 2], 0.5)).toBe(2.5);
    expect(quantileLinear([4, 1, 3, 2], 0.8)).toBeCloseTo(3.4, 12);
    expect(quantileLinear([7], 0.3)).toBe(7);
  });
});
