// The lab's loss aggregation as veRL's loss_agg_mode and TRL's loss_type. The lab reads trlLossType
// when it is set, else lossAggMode (auto: token-mean for ppo, token-sum for importance_sampling);
// src/rl/aggregate.ts defines each, veRL's agg_loss (core_algos.py) and TRL's compute_loss
// (grpo_trainer.py) theirs.
import type { Cfg } from './entry';

export interface LossMapping {
  /** The lab's effective aggregation (a veRL mode, token-sum, or a TRL loss type). */
  lab: string;
  verl: 'token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';
  trl: 'grpo' | 'bnpo' | 'dr_grpo' | 'dapo';
  /** Where veRL's aggregation differs from the lab's. */
  verlNotes: string[];
  /** Where the TRL script's differs. */
  trlNotes: string[];
}

export function labAggregation(c: Cfg): string {
  if (typeof c.trlLossType === 'string' && c.trlLossType !== 'off') return c.trlLossType;
  if (typeof c.lossAggMode === 'string' && c.lossAggMode !== 'auto') return c.lossAggMode;
  return c.policyLoss === 'importance_sampling' ? 'token-sum' : 'token-mean';
}

/** TRL's bnpo is the token mean of one optimiser step's batch on a device: the lab's token-mean. */
export function lossMapping(c: Cfg): LossMapping {
  const lab = labAggregation(c);
  switch (lab) {
    case 'token-mean':
    case 'bnpo':
      return { lab, verl: 'token-mean', trl: 'bnpo', verlNotes: [], trlNotes: [] };
    case 'dapo':
      // TRL's dapo divides by the tokens of the whole generation batch (all mini-batches); the lab's by the mini-batch's.
      return {
        lab,
        verl: 'token-mean',
        trl: 'dapo',
        verlNotes: [],
        trlNotes:
          c.ppoMiniBatches !== undefined && (c.ppoMiniBatches as number) > 1
            ? [
                `loss dapo with ${String(c.ppoMiniBatches)} mini-batches: TRL divides each mini-batch's token sum by the tokens of the whole generation batch, the lab and veRL (token-mean) by the mini-batch's own.`,
              ]
            : [],
      };
    case 'grpo':
    case 'seq-mean-token-mean':
      return { lab, verl: 'seq-mean-token-mean', trl: 'grpo', verlNotes: [], trlNotes: [] };
    case 'dr_grpo':
    case 'seq-mean-token-sum-norm':
      return {
        lab,
        verl: 'seq-mean-token-sum-norm',
        trl: 'dr_grpo',
        verlNotes: [],
        trlNotes: [
          `loss ${lab}: TRL's dr_grpo divides the token sum by batch rows x max_completion_length; veRL's seq-mean-token-sum-norm by loss_scale_factor (the response length) alone, a constant factor of the batch size apart (Adam's update is the same up to its epsilon and the gradient clip).`,
        ],
      };
    case 'seq-mean-token-sum':
      return {
        lab,
        verl: 'seq-mean-token-sum',
        trl: 'dr_grpo',
        verlNotes: [],
        trlNotes: [
          'loss seq-mean-token-sum: TRL has no per-sequence token sum; the TRL script uses dr_grpo (token sum / (rows x max_completion_length)), which differs by the constant max_completion_length.',
        ],
      };
    case 'token-sum':
      return {
        lab,
        verl: 'seq-mean-token-sum',
        trl: 'dr_grpo',
        // importance_sampling's own note (entry.ts POLICY_LOSS_NOTES) already says this for veRL.
        verlNotes:
          c.policyLoss === 'importance_sampling'
            ? []
            : [
                "loss token-sum (summed over the batch's tokens): veRL has no unnormalised sum, so the export uses seq-mean-token-sum (the sum / rows): the same gradient direction, scaled by a constant (Adam's update is the same up to its epsilon and the gradient clip).",
              ],
        trlNotes: [
          "loss token-sum (summed over the batch's tokens): TRL has no unnormalised sum; the TRL script uses dr_grpo (the sum / (rows x max_completion_length)): the same gradient direction, scaled by a constant (Adam's update is the same up to its epsilon and the gradient clip).",
        ],
      };
    default:
      throw new Error(`export-verl: loss aggregation "${lab}" has no veRL / TRL mapping`);
  }
}
