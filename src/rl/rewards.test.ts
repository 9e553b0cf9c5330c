import { describe, expect, it } from 'vitest';
import { placeOutcomeRewards, placeTurnRewards, maskTruncatedCompletions, turnResponseMask } from './placement';
import {
  earlyStop,
  meanResponseEntropy,
  mtsaDefenderReward,
  positiveAdvantageMask,
  saferTurnScore,
  tinkerRedTeamReward,
  tokenBuncherReward,
} from './rewards';
import { zScore } from './stats';
import { expectAllClose } from '../../dev/test/rlHelpers';
import { fromRows, toRows } from './types';

describe('Tinker red-team reward', () => {
  it('clip(harm - 0.3 rep - 0.1 KL, 0, 1)', () => {
    // 0.9 - 0.3 x 0.5 - 0.1 x 1 = 0.65
    expect(tinkerRedTeamReward({ harm: 0.9, repetition: 0.5, kl: 1 })).toBeCloseTo(0.65, 10);
    // example config rp 0.15, beta 0.03: 0.9 - 0.075 - 0.03 = 0.795
    expect(
      tinkerRedTeamReward({ harm: 0.9, repetition: 0.5, kl: 1 }, { repetitionPenalty: 0.15, klBeta: 0.03 }),
    ).toBeCloseTo(0.795, 10);
  });
  it('clips to [0, 1]', () => {
    expect(tinkerRedTeamReward({ harm: 0.1, repetition: 1, kl: 0 })).toBe(0); // 0.1 - 0.3 < 0
    expect(tinkerRedTeamReward({ harm: 1, repetition: 0, kl: -5 })).toBe(1); // 1 + 0.5 > 1
  });
  it('early stop on mean reward > 0.8 or repetition > 0.5', () => {
    expect(earlyStop({ meanReward: 0.81, meanRepetition: 0 })).toEqual({ stop: true, reason: 'reward' });
    expect(earlyStop({ meanReward: 0.8, meanRepetition: 0.51 })).toEqual({ stop: true, reason: 'repetition' });
    expect(earlyStop({ meanReward: 0.8, meanRepetition: 0.5 })).toEqual({ stop: false, reason: null });
  });
  it('per-batch z-score with Bessel std; identical rewards give zeros', () => {
    // [1, 2, 3]: mean 2, std 1
    expectAllClose(zScore([1, 2, 3]), [-1, 0, 1], 6);
    expect(zScore([0.4, 0.4])).toEqual([0, 0]);
  });
});

describe('entropy rewards', () => {
  const H = fromRows([
    [1, 3, 100],
    [2, 2, 2],
  ]);
  const m = fromRows([
    [1, 1, 0],
    [0, 0, 0],
  ]);
  it('mean response entropy ignores padding; an empty row is 0', () => {
    expectAllClose(meanResponseEntropy(H, m), [2, 0], 6);
  });
  it('Token Buncher: defence -H, attack harm, adaptive attack harm + min(H, 3)', () => {
    expect(tokenBuncherReward(2, 'defence')).toBe(-2);
    expect(tokenBuncherReward(2, 'attack', { harm: 0.7 })).toBe(0.7);
    expect(tokenBuncherReward(2, 'adaptive_attack', { harm: 0.7 })).toBeCloseTo(2.7, 10);
    expect(tokenBuncherReward(5, 'adaptive_attack', { harm: 0.7 })).toBeCloseTo(3.7, 10);
    expect(() => tokenBuncherReward(1, 'attack')).toThrow(/harm/);
  });
  it('MTSA: P(safe) - w mean H - beta KL', () => {
    // 0.9 - 1 x 0.5 - 0.001 x 2 = 0.398
    expect(mtsaDefenderReward({ pSafe: 0.9, meanEntropy: 0.5, klSum: 2 })).toBeCloseTo(0.398, 10);
    // w = 0.1: 0.9 - 0.05 = 0.85
    expect(mtsaDefenderReward({ pSafe: 0.9, meanEntropy: 0.5 }, { entropyWeight: 0.1 })).toBeCloseTo(0.85, 10);
  });
  it('positive-advantage mask keeps A >= 0 on unmasked tokens', () => {
    const out = positiveAdvantageMask(fromRows([[0.5, -0.1, 0, 2]]), fromRows([[1, 1, 1, 0]]));
    expect(toRows(out)).toEqual([[1, 0, 1, 0]]);
  });
});

describe('SaFeR turn score', () => {
  it('format + (0.4 s + 0.4 u + 0.2 f)/10 - 0.2 rep3, floored at 0', () => {
    // 1 + (0.4x8 + 0.4x6 + 0.2x10)/10 = 1 + 7.6/10 = 1.76; - 0.2 x 0.5 = 1.66
    expect(saferTurnScore({ format: 1, safety: 8, usefulness: 6, faithfulness: 10, rep3: 0.5 })).toBeCloseTo(1.66, 10);
    // 0 + (0.4 + 0.4 + 0.2)/10 = 0.1; - 0.2 x 0.9 = -0.08 -> 0
    expect(saferTurnScore({ format: 0, safety: 1, usefulness: 1, faithfulness: 1, rep3: 0.9 })).toBe(0);
  });
});

describe('reward placement', () => {
  it('outcome score on the last response token; all-masked row gets nothing', () => {
    const m = fromRows([
      [1, 1, 0, 0],
      [0, 1, 1, 1],
      [0, 0, 0, 0],
    ]);
    expect(toRows(placeOutcomeRewards([0.5, 2, 7], m))).toEqual([
      [0, 0.5, 0, 0],
      [0, 0, 0, 2],
      [0, 0, 0, 0],
    ]);
  });
  it("turn scores on each turn's last token; judge turns (-1) masked; missing scores dropped", () => {
    // turn 0 on t 0-1, a judge-written user turn on t 2-3, turn 1 on t 4, turn 2 on t 5-6.
    const turnIndex = fromRows([[0, 0, -1, -1, 1, 2, 2]]);
    const r = placeTurnRewards([[0.25, null, 0.75]], turnIndex);
    expect(toRows(r)).toEqual([[0, 0.25, 0, 0, 0, 0, 0.75]]);
    expect(toRows(turnResponseMask(turnIndex))).toEqual([[1, 1, 0, 0, 1, 1, 1]]);
  });
  it('mask_truncated_completions zeroes rows without EOS', () => {
    const m = fromRows([
      [1, 1],
      [1, 1],
    ]);
    expect(toRows(maskTruncatedCompletions(m, [true, false]))).toEqual([
      [1, 1],
      [0, 0],
    ]);
  });
});
