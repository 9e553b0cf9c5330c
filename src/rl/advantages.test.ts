import { describe, expect, it } from 'vitest';
import {
  computeAdvantages,
  discountedReturns,
  GRPO_EPS_TRL,
  GRPO_EPS_VERL,
  grpoSequenceAdvantages,
  rlooSequenceAdvantages,
  zeroAdvantageRows,
} from './advantages';
import { placeOutcomeRewards } from './placement';
import { expectAllClose, flat } from '../../dev/test/rlHelpers';
import { ADVANTAGE_ESTIMATOR_NAMES, fromRows, toRows } from './types';

describe('grpo sequence advantages', () => {
  // Groups: a = [1, 2, 3] (mean 2, Bessel std sqrt((1+0+1)/2) = 1), b = [5, 5] (std 0), c = [4] alone.
  const scores = [1, 2, 3, 5, 5, 4];
  const index = ['a', 'a', 'a', 'b', 'b', 'c'];

  it('normalises by the Bessel std of each group, eps 1e-6 (veRL)', () => {
    const a = grpoSequenceAdvantages(scores, index);
    // a: (-1, 0, 1) / (1 + 1e-6); b: 0 / (0 + 1e-6) = 0 exactly; c: group of one -> mean 0, std 1 -> 4 / (1 + 1e-6).
    const d = 1 + GRPO_EPS_VERL;
    expectAllClose(a, [-1 / d, 0, 1 / d, 0, 0, 4 / d], 6);
    expect(a[3]).toBe(0);
  });

  it('eps is an option: TRL 1e-4', () => {
    const a = grpoSequenceAdvantages([0, 1], [0, 0], { epsilon: GRPO_EPS_TRL });
    // mean 0.5, std sqrt((0.25+0.25)/1) = 0.7071068 -> +-0.5 / 0.7072068 = +-0.7070068
    expectAllClose(a, [-0.7070068, 0.7070068], 6);
  });

  it('norm_adv_by_std=false is Dr. GRPO: s - mean', () => {
    expectAllClose(grpoSequenceAdvantages(scores, index, { normAdvByStd: false }), [-1, 0, 1, 0, 0, 4], 7);
  });

  it('scale_rewards=batch uses the group mean and one batch std (TRL)', () => {
    // [1,2,3,5,5]: batch mean 3.2, squared devs 4.84+1.44+0.04+3.24+3.24 = 12.8, /4 = 3.2, std = 1.7888544
    const a = grpoSequenceAdvantages([1, 2, 3, 5, 5], [0, 0, 0, 1, 1], { scaleRewards: 'batch', epsilon: 1e-4 });
    const s = Math.sqrt(3.2) + 1e-4;
    expectAllClose(a, [-1 / s, 0, 1 / s, 0, 0], 6);
  });

  it('scale_rewards=none leaves the centred rewards', () => {
    expectAllClose(grpoSequenceAdvantages([1, 3], [0, 0], { scaleRewards: 'none' }), [-1, 1], 7);
  });
});

describe('rloo', () => {
  it('is n/(n-1) (s - mean), i.e. s minus the mean of the others', () => {
    // [1, 2, 3]: 1.5 x (-1, 0, 1); check row 0: 1 - (2+3)/2 = -1.5. Singleton keeps its score (veRL).
    expectAllClose(rlooSequenceAdvantages([1, 2, 3, 7], [0, 0, 0, 1]), [-1.5, 0, 1.5, 7], 6);
  });
});

describe('token-level estimators', () => {
  it('grpo: outcome score on the last response token, advantage broadcast over the mask', () => {
    const mask = fromRows([
      [1, 1, 0],
      [1, 1, 1],
    ]);
    const rewards = placeOutcomeRewards([2, 1], mask);
    expect(toRows(rewards)).toEqual([
      [0, 2, 0],
      [0, 0, 1],
    ]);
    const out = computeAdvantages('grpo', { tokenLevelRewards: rewards, responseMask: mask, index: [0, 0] });
    // scores [2, 1]: mean 1.5, std 0.7071068 -> +-0.5/0.7071078 = +-0.7071058 on unmasked tokens, 0 on padding.
    const a = 0.5 / (Math.SQRT1_2 + 1e-6);
    expectAllClose(out.advantages.data, [a, a, 0, -a, -a, -a], 6);
  });

  it('grpo with an all-masked row gives zeros, no NaN', () => {
    const mask = fromRows([
      [0, 0],
      [1, 1],
    ]);
    const out = computeAdvantages('grpo', {
      tokenLevelRewards: placeOutcomeRewards([9, 1], mask),
      responseMask: mask,
      index: [0, 0],
    });
    // the masked row earns nothing (score 0), so scores are [0, 1]: +-0.7071058; masked row x 0 = 0.
    const a = 0.5 / (Math.SQRT1_2 + 1e-6);
    expectAllClose(out.advantages.data, [0, 0, a, a], 6);
  });

  it('discounted returns reset past the mask', () => {
    // row 1: r = [0, 2, 5], m = [1, 1, 0], gamma 0.5. t=2: G = 5 then reset; t=1: G = 2; t=0: 0.5 x 2 = 1.
    // Without the reset t=1 would be 2 + 0.5 x 5 = 4.5.
    const g = discountedReturns(fromRows([[0, 2, 5]]), fromRows([[1, 1, 0]]), 0.5);
    expectAllClose(g.data, [1, 2, 5], 6);
  });

  it('reinforce_plus_plus: discounted returns whitened over the batch', () => {
    const r = fromRows([
      [0, 0, 1],
      [0, 2, 5],
    ]);
    const m = fromRows([
      [1, 1, 1],
      [1, 1, 0],
    ]);
    const out = computeAdvantages('reinforce_plus_plus', { tokenLevelRewards: r, responseMask: m }, { gamma: 0.5 });
    // returns: row0 [0.25, 0.5, 1], row1 [1, 2, (5 masked)].
    expectAllClose(out.returns.data, [0.25, 0.5, 1, 1, 2, 5], 6);
    // unmasked {0.25, 0.5, 1, 1, 2}: mean 0.95; squared devs 0.49+0.2025+0.0025+0.0025+1.1025 = 1.8;
    // var 1.8/5 = 0.36, Bessel x 5/4 = 0.45, std 0.6708204.
    const s = Math.sqrt(0.45);
    expectAllClose(out.advantages.data, [-0.7 / s, -0.45 / s, 0.05 / s, 0.05 / s, 1.05 / s, 0], 5);
  });

  it('reinforce_plus_plus_baseline: group-centred score tiled, then batch-whitened', () => {
    const m = fromRows([
      [1, 1],
      [1, 0],
      [1, 1],
    ]);
    const r = placeOutcomeRewards([3, 1, 2], m);
    const out = computeAdvantages('reinforce_plus_plus_baseline', {
      tokenLevelRewards: r,
      responseMask: m,
      index: ['a', 'a', 'b'],
    });
    // centred: a mean 2 -> [1, -1]; b alone -> mean 0 -> 2. Tiled, unmasked entries {1, 1, -1, 2, 2}:
    // mean 1, squared devs 0+0+4+1+1 = 6, var 6/5 x 5/4 = 1.5, std 1.2247449.
    const s = Math.sqrt(1.5);
    expectAllClose(out.advantages.data, [0, 0, -2 / s, 0, 1 / s, 1 / s], 5);
  });

  it('remax: reverse cumsum of masked rewards minus the greedy baseline', () => {
    // r x m = [0, 1, 0]; reverse cumsum [1, 1, 0]; minus b = 0.5 on unmasked tokens -> [0.5, 0.5, 0].
    const out = computeAdvantages('remax', {
      tokenLevelRewards: fromRows([[0, 1, 2]]),
      responseMask: fromRows([[1, 1, 0]]),
      rewardBaselines: [0.5],
    });
    expectAllClose(out.returns.data, [1, 1, 0], 6);
    expectAllClose(out.advantages.data, [0.5, 0.5, 0], 6);
  });

  it('gae with gamma = lambda = 1: returns equal the reward-to-go', () => {
    const input = {
      tokenLevelRewards: fromRows([[0, 0, 1]]),
      responseMask: fromRows([[1, 1, 1]]),
      values: fromRows([[0.5, 0.6, 0.7]]),
    };
    const raw = computeAdvantages('gae', input, { whiten: false });
    // t=2: 1 - 0.7 = 0.3; t=1: 0.7 - 0.6 + 0.3 = 0.4; t=0: 0.6 - 0.5 + 0.4 = 0.5; returns A + V = 1, 1, 1.
    expectAllClose(raw.advantages.data, [0.5, 0.4, 0.3], 6);
    expectAllClose(raw.returns.data, [1, 1, 1], 6);
    // whitened: mean 0.4, Bessel var (0.01 + 0 + 0.01)/2 = 0.01 -> [1, 0, -1].
    expectAllClose(computeAdvantages('gae', input).advantages.data, [1, 0, -1], 4);
  });

  it('gae with gamma 0.9, lambda 0.5', () => {
    const out = computeAdvantages(
      'gae',
      {
        tokenLevelRewards: fromRows([[0, 0, 1]]),
        responseMask: fromRows([[1, 1, 1]]),
        values: fromRows([[0.5, 0.6, 0.7]]),
      },
      { gamma: 0.9, lam: 0.5, whiten: false },
    );
    // t=2: 0.3. t=1: delta 0.9x0.7 - 0.6 = 0.03, A = 0.03 + 0.45x0.3 = 0.165.
    // t=0: delta 0.9x0.6 - 0.5 = 0.04, A = 0.04 + 0.45x0.165 = 0.11425. returns = A + V.
    expectAllClose(out.advantages.data, [0.11425, 0.165, 0.3], 6);
    expectAllClose(out.returns.data, [0.61425, 0.765, 1.0], 6);
  });

  it('gae skips masked positions (a masked user turn with a wild value does not leak)', () => {
    const out = computeAdvantages(
      'gae',
      {
        tokenLevelRewards: fromRows([[0, 0, 0, 1]]),
        responseMask: fromRows([[1, 0, 1, 1]]),
        values: fromRows([[0.5, 9, 0.6, 0.7]]),
      },
      { whiten: false },
    );
    // t=3: 0.3; t=2: 0.7-0.6+0.3 = 0.4; t=1 masked: carries V_next 0.6 and A 0.4; t=0: 0.6-0.5+0.4 = 0.5.
    expectAllClose(out.advantages.data, [0.5, 0, 0.4, 0.3], 6);
  });

  it('every registered name runs', () => {
    const m = fromRows([[1, 1]]);
    for (const name of ADVANTAGE_ESTIMATOR_NAMES) {
      const out = computeAdvantages(name, {
        tokenLevelRewards: placeOutcomeRewards([1], m),
        responseMask: m,
        index: [0],
        values: fromRows([[0, 0]]),
        rewardBaselines: [0],
      });
      expect(out.advantages.data.every((x) => Number.isFinite(x))).toBe(true);
    }
    expect(() => computeAdvantages('nope' as 'grpo', { tokenLevelRewards: m, responseMask: m })).toThrow(
      /unknown advantage estimator "nope"/,
    );
    expect(() => computeAdvantages('grpo', { tokenLevelRewards: m, responseMask: m })).toThrow(/group index/);
  });
});

describe('zero-advantage groups', () => {
  const m = fromRows([
    [1, 1],
    [1, 1],
    [1, 1],
    [1, 1],
  ]);
  const input = {
    tokenLevelRewards: placeOutcomeRewards([1, 1, 0, 1], m),
    responseMask: m,
    index: ['x', 'x', 'y', 'y'],
  };

  it('identical rewards give zero advantage (no NaN) and the group is flagged', () => {
    const out = computeAdvantages('grpo', input);
    expect(Array.from(out.zeroAdvantageRows)).toEqual([1, 1, 0, 0]);
    expect(out.advantages.data.slice(0, 4).every((x) => x === 0)).toBe(true);
    expect(out.mask).toBe(m); // flagged only
  });

  it('skip option zeroes the mask of flagged rows only', () => {
    const out = computeAdvantages('grpo', input, { skipZeroAdvantageGroups: true });
    expect(flat(toRows(out.mask))).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
  });

  it('a group is flagged only when all its rows are zero', () => {
    const adv = fromRows([
      [0, 0],
      [0, 0.5],
    ]);
    expect(
      Array.from(
        zeroAdvantageRows(
          adv,
          fromRows([
            [1, 1],
            [1, 1],
          ]),
          [0, 0],
        ),
      ),
    ).toEqual([0, 0]);
    // but a nonzero advantage on a masked token does not count
    expect(
      Array.from(
        zeroAdvantageRows(
          adv,
          fromRows([
            [1, 1],
            [1, 0],
          ]),
          [0, 0],
        ),
      ),
    ).toEqual([1, 1]);
  });
});
