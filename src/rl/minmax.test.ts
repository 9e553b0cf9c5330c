import { describe, expect, it } from 'vitest';
import { dualAscentStep, minmaxFidelity, minmaxMonitorReward, minmaxPolicyReward, tturSchedule } from './minmax';

describe('MinMax formulas', () => {
  it('policy reward 0.5 clamp(RM) + 2.5 J', () => {
    expect(minmaxPolicyReward(20, 'correct')).toBeCloseTo(10, 10); // 0.5 x 15 + 2.5
    expect(minmaxPolicyReward(-3, 'incorrect')).toBeCloseTo(-4, 10); // -1.5 - 2.5
    expect(minmaxPolicyReward(4, 'unclear')).toBeCloseTo(2, 10); // 2 + 0
  });
  it('fidelity 9 x MSE + 0.4 x (-clamp(mean RM))', () => {
    // verdict values [1, 0, 0.2] vs truth [1, 1, 0]: squared errors [0, 1, 0.04], MSE 1.04/3 -> x 9 = 3.12
    // critique RM mean (2 + 4 + 30)/3 = 12 (inside the clamp) -> -4.8. F = -1.68
    expect(minmaxFidelity(['correct', 'incorrect', 'unclear'], [1, 1, 0], [2, 4, 30])).toBeCloseTo(-1.68, 10);
    // clamp applies to the mean: mean 40 -> 15 -> -6; MSE 0
    expect(minmaxFidelity(['correct'], [1], [40])).toBeCloseTo(-6, 10);
    expect(() => minmaxFidelity([], [], [])).toThrow(/non-empty/);
  });
  it('dual ascent clip(lambda + 0.25 (F - (-3.6)), 0, 30)', () => {
    expect(dualAscentStep(10, -1.68)).toBeCloseTo(10.48, 10); // 10 + 0.25 x 1.92
    expect(dualAscentStep(29.9, 10)).toBe(30); // 29.9 + 3.4 -> clipped
    expect(dualAscentStep(0.1, -10)).toBe(0); // 0.1 - 1.6 -> clipped
    expect(dualAscentStep(1, 1, { step: 1, delta: 0, lambdaMax: 100 })).toBe(2);
  });
  it('monitor reward: code -10 J - lambda F; readme -R - lambda F', () => {
    expect(minmaxMonitorReward({ verdict: 'correct', fidelity: -1.68 }, 10)).toBeCloseTo(6.8, 10); // -10 + 16.8
    expect(minmaxMonitorReward({ verdict: 'correct', fidelity: -1.68, policyReward: 4 }, 10, 'readme')).toBeCloseTo(
      12.8,
      10,
    ); // -4 + 16.8
    expect(() => minmaxMonitorReward({ verdict: 'correct', fidelity: 0 }, 1, 'readme')).toThrow(/policyReward/);
  });
});

describe('two-timescale schedule', () => {
  it('5 monitor updates at 4e-6, then 1 policy update at 1e-6', () => {
    const players = Array.from({ length: 12 }, (_, s) => tturSchedule(s).player);
    expect(players).toEqual([
      'monitor',
      'monitor',
      'monitor',
      'monitor',
      'monitor',
      'policy',
      'monitor',
      'monitor',
      'monitor',
      'monitor',
      'monitor',
      'policy',
    ]);
    expect(tturSchedule(0).lr).toBe(4e-6);
    expect(tturSchedule(5)).toEqual({ player: 'policy', lr: 1e-6, cycle: 0, phase: 5 });
    expect(tturSchedule(7)).toEqual({ player: 'monitor', lr: 4e-6, cycle: 1, phase: 1 });
  });
  it('k is an option; k = 0 trains the policy only', () => {
    expect([0, 1, 2].map((s) => tturSchedule(s, { monitorStepsPerPolicy: 1 }).player)).toEqual([
      'monitor',
      'policy',
      'monitor',
    ]);
    expect(tturSchedule(3, { monitorStepsPerPolicy: 0 }).player).toBe('policy');
    expect(() => tturSchedule(0, { monitorStepsPerPolicy: 1.5 })).toThrow(/integer/);
  });
});
