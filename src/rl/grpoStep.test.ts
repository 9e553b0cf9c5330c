import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { computeAdvantages } from './advantages';
import { placeOutcomeRewards } from './placement';
import { ppoClipLoss } from './policyLoss';
import { fromRows, toTensor2D } from './types';
import { expectAllClose } from '../../dev/test/rlHelpers';

describe('one GRPO step through the rl modules', () => {
  it('scores -> token rewards -> advantages -> PPO loss gradient', () => {
    // 2 prompts x 2 samples; T = 3. Rewards [1, 0 | 0.5, 0.5] (second group identical -> skipped).
    const mask = fromRows([
      [1, 1, 0],
      [1, 1, 1],
      [1, 0, 0],
      [1, 1, 0],
    ]);
    const rewards = placeOutcomeRewards([1, 0, 0.5, 0.5], mask);
    const adv = computeAdvantages(
      'grpo',
      { tokenLevelRewards: rewards, responseMask: mask, index: [0, 0, 1, 1] },
      { skipZeroAdvantageGroups: true },
    );
    // group 0: mean 0.5, std 0.7071068 -> +-0.7071058; group 1: all zero, rows masked out.
    const a = 0.5 / (Math.SQRT1_2 + 1e-6);
    expectAllClose(adv.advantages.data, [a, a, 0, -a, -a, -a, 0, 0, 0, 0, 0, 0], 6);
    expect(Array.from(adv.mask.data)).toEqual([1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0]);

    // On-policy: old = logp (separate constant), ratio 1, no clipping. token-mean over 5 tokens:
    // dL/dlogp = -A m / 5 -> -a/5 on row 0 tokens, +a/5 on row 1 tokens, 0 elsewhere.
    const logpValues = [-1, -2, -3, -1, -1, -1, -2, -2, -2, -1, -1, -1];
    const logp = tf.tensor2d(logpValues, [4, 3]);
    const old = tf.tensor2d(logpValues, [4, 3]);
    const A = toTensor2D(adv.advantages);
    const M = toTensor2D(adv.mask);
    const g = tf.grad((l: tf.Tensor) => ppoClipLoss({ logp: l, oldLogp: old, advantages: A, mask: M }).loss)(logp);
    const d = a / 5;
    expectAllClose(g.dataSync(), [-d, -d, 0, d, d, d, 0, 0, 0, 0, 0, 0], 6);
  });
});
