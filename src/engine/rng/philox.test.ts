import { describe, expect, it } from 'vitest';
import { philox4x32, samplerUniform, seedKey, toUnitFloat } from './philox';

const hex = (xs: number[]) => xs.map((x) => x.toString(16).padStart(8, '0'));

describe('Philox4x32-10', () => {
  // Known-answer vectors published with Random123 (kat_vectors, philox4x32 10 rounds).
  it('matches the Random123 known-answer vectors', () => {
    expect(hex(philox4x32([0, 0, 0, 0], [0, 0]))).toEqual(['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']);
    expect(hex(philox4x32([0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [0xffffffff, 0xffffffff]))).toEqual([
      '408f276d',
      '41c83b0e',
      'a20bc7c6',
      '6d5451fd',
    ]);
    expect(hex(philox4x32([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]))).toEqual([
      'd16cfe09',
      '94fdcceb',
      '5001e420',
      '24126ea1',
    ]);
  });

  it('maps words to [0, 1) with 24 bits', () => {
    expect(toUnitFloat(0)).toBe(0);
    expect(toUnitFloat(0xffffffff)).toBe(16777215 / 16777216);
    expect(toUnitFloat(0x80000000)).toBe(0.5);
  });

  it('splits seeds into key words and rejects bad seeds', () => {
    expect(seedKey(5)).toEqual([5, 0]);
    expect(seedKey(2 ** 32 + 7)).toEqual([7, 1]);
    expect(() => seedKey(-1)).toThrow(/seed/);
  });

  it('gives uniform-looking draws (mean 1/2, variance 1/12) over 20k counters', () => {
    let s = 0;
    let s2 = 0;
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const u = samplerUniform(42, i % 97, Math.floor(i / 97));
      s += u;
      s2 += u * u;
    }
    const mean = s / n;
    // Standard error of the mean is sqrt(1/12 / n) = 0.002; allow 5 of them.
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(s2 / n - mean * mean - 1 / 12)).toBeLessThan(0.005);
  });
});
