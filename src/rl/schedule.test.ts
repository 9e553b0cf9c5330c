import { describe, expect, it } from 'vitest';
import { lrAt } from './schedule';

describe('LR schedule', () => {
  const cos = { baseLr: 1e-3, warmupSteps: 10, kind: 'cosine' as const, totalSteps: 110 };
  it('linear warm-up from 0', () => {
    expect(lrAt(0, cos)).toBe(0);
    expect(lrAt(5, cos)).toBeCloseTo(5e-4, 12); // 1e-3 x 5/10
    expect(lrAt(10, cos)).toBeCloseTo(1e-3, 12);
  });
  it('half cosine to 0 over the remaining 100 steps', () => {
    expect(lrAt(60, cos)).toBeCloseTo(5e-4, 12); // p 0.5: 0.5 (1 + cos(pi/2)) = 0.5
    expect(lrAt(35, cos)).toBeCloseTo(1e-3 * 0.5 * (1 + Math.SQRT1_2), 12); // p 0.25: cos(pi/4)
    expect(lrAt(110, cos)).toBeCloseTo(0, 12); // cos(pi) = -1
    expect(lrAt(500, cos)).toBeCloseTo(0, 12); // stays at the floor
  });
  it('min_lr_ratio floor', () => {
    expect(lrAt(110, { ...cos, minLrRatio: 0.1 })).toBeCloseTo(1e-4, 12);
    expect(lrAt(60, { ...cos, minLrRatio: 0.1 })).toBeCloseTo(5.5e-4, 12); // 0.1 + 0.9 x 0.5
  });
  it('constant with and without warm-up', () => {
    expect(lrAt(3, { baseLr: 2e-5, warmupSteps: 4 })).toBeCloseTo(1.5e-5, 15);
    expect(lrAt(1000, { baseLr: 2e-5 })).toBe(2e-5);
    expect(lrAt(0, { baseLr: 2e-5 })).toBe(2e-5);
  });
  it('cosine without a horizon throws', () =>
    expect(() => lrAt(0, { baseLr: 1, kind: 'cosine' })).toThrow(/totalSteps/));
});
