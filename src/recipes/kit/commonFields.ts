// Schema fields the training recipes share — LoRA, AdamW, the policy-gradient algorithm — and the
// adapter and optimiser those fields configure. Ranges are the same in every recipe; defaults that
// differ and the help text that documents each recipe's source are the callers' arguments.
import type { LlamaModel } from '../../model/llama';
import { attachLora, type LoraSet } from '../../model/lora';
import { AdamW } from '../../rl/optim';
import { KL_ESTIMATOR_NAMES, LOSS_AGG_MODES, TRL_LOSS_TYPES, type AdvantageEstimatorName } from '../../rl/types';
import { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from '../../contract/loraTargets';
import { bool, int, num, oneOf } from '../../contract/schema';

export { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from '../../contract/loraTargets';

/** LoRA fields with the given defaults (each recipe documents its source's values in the help). */
export function loraFields(d: { rank: number; alpha: number }, sourceNote: string) {
  return {
    loraRank: int(d.rank, `LoRA rank r (${sourceNote})`, { min: 1, max: 256 }),
    loraAlpha: num(d.alpha, 'LoRA alpha; scale = alpha / r', { min: 1e-6, max: 4096 }),
    loraTargets: oneOf(
      LORA_TARGET_SETS,
      'all',
      'projections that get adapters: all (q k v o gate up down), attention, mlp',
    ),
    loraDropout: num(0, 'LoRA dropout on the adapter input while training (seeded; resumes exactly)', {
      min: 0,
      max: 0.9,
    }),
    loraUseRslora: bool(
      false,
      'rank-stabilised LoRA: scale alpha / sqrt(r) instead of alpha / r (PEFT use_rslora; off in PEFT, veRL and the sources)',
    ),
  };
}

/** The adapter loraFields configure, attached to `model`; `seed` seeds its init and dropout. */
export function attachConfiguredLora(
  model: LlamaModel,
  c: { loraRank: number; loraAlpha: number; loraTargets: LoraTargetSet; loraDropout: number; loraUseRslora?: boolean },
  seed: number,
): LoraSet {
  return attachLora(model, {
    r: c.loraRank,
    alpha: c.loraAlpha,
    targets: loraTargets(c.loraTargets),
    dropout: c.loraDropout,
    useRslora: c.loraUseRslora ?? false,
    seed,
  });
}

/**
 * AdamW's betas and weight decay, and the gradient-norm clip (the learning rate stays with each
 * recipe: its name and its source note differ). A note replaces the text in the help's parentheses.
 */
export function adamFields(
  notes: { beta1?: string; beta2?: string; weightDecay?: string } = {},
  d: { beta2: number } = { beta2: 0.999 },
) {
  return {
    beta1: num(0.9, `Adam beta1 (${notes.beta1 ?? 'first-moment decay'})`, { min: 0, max: 0.99999 }),
    beta2: num(
      d.beta2,
      `Adam beta2 (${notes.beta2 ?? 'second-moment decay; veRL and TRL 0.999, the Tinker red-team trainer 0.95'})`,
      { min: 0, max: 0.99999 },
    ),
    weightDecay: num(
      0,
      `AdamW decoupled weight decay${notes.weightDecay === undefined ? '' : ` (${notes.weightDecay})`}`,
      { min: 0, max: 1 },
    ),
    maxGradNorm: num(1, 'global gradient-norm clip', { min: 1e-6, max: 1e6 }),
  };
}

/** The optimiser adamFields configure, at learning rate `lr`. */
export function adamWFor(c: { beta1: number; beta2: number; weightDecay: number }, lr: number): AdamW {
  return new AdamW({ lr, beta1: c.beta1, beta2: c.beta2, weightDecay: c.weightDecay });
}

export type PolicyLoss = 'ppo' | 'importance_sampling';

/**
 * The policy-gradient fields: advantage estimator (of `estimators`), std normalisation, policy
 * loss (its default listed first) and PPO clip. `help.advantage` and `help.policyLoss` are the
 * whole help lines; `stdNote` and `clipNote` go in the parentheses of the shared ones.
 */
export function policyGradientFields<const A extends AdvantageEstimatorName>(
  estimators: readonly A[],
  d: { advantage: NoInfer<A>; normAdvByStd: boolean; policyLoss: PolicyLoss },
  help: { advantage: string; stdNote: string; policyLoss: string; clipNote?: string },
) {
  const losses: readonly PolicyLoss[] =
    d.policyLoss === 'ppo' ? ['ppo', 'importance_sampling'] : ['importance_sampling', 'ppo'];
  return {
    advantage: oneOf(estimators, d.advantage, help.advantage),
    normAdvByStd: bool(d.normAdvByStd, `divide group-centred rewards by the group std (${help.stdNote})`),
    policyLoss: oneOf(losses, d.policyLoss, help.policyLoss),
    clipRatio: num(0.2, `PPO clip epsilon${help.clipNote === undefined ? '' : ` (${help.clipNote})`}`, {
      min: 0,
      max: 10,
    }),
  };
}

/**
 * The learning options every policy-gradient recipe shares (common.ts OutcomeLearning reads them
 * by these names). Defaults are veRL's; `skipZeroAdvantageGroups` is the recipe's choice (on for
 * the Tinker-based redteam, off for the veRL-based ones). Single-turn recipes add klLossFields
 * and maskTruncatedField too (multiturn has its own KL loss pair, and multi-turn rows no single cut).
 */
export function trainingFields(d: { skipZeroAdvantageGroups: boolean; skipNote: string }) {
  return {
    skipZeroAdvantageGroups: bool(
      d.skipZeroAdvantageGroups,
      `leave groups whose advantages are all zero out of the policy loss's denominator (${d.skipNote}; the Tinker red-team trainer skips them, veRL keeps them); a step where every group is skipped and no KL or entropy term is on takes no optimiser step`,
    ),
    ppoEpochs: int(
      1,
      'PPO epochs: passes over each rollout batch (veRL ppo_epochs 1, TRL num_iterations 1); from the second update on the ratio differs from 1 and the clip binds',
      { min: 1, max: 64 },
    ),
    ppoMiniBatches: int(
      1,
      'optimiser steps per pass: the batch split into this many mini-batches (veRL train_batch / ppo_mini_batch_size)',
      { min: 1, max: 1024 },
    ),
    clipRatioHigh: num(0, 'PPO upper clip eps_high (DAPO clip-higher, veRL clip_ratio_high); 0 = clipRatio', {
      min: 0,
      max: 10,
    }),
    clipRatioC: num(
      3,
      'dual-clip constant c: the loss of a negative-advantage token is capped at -c A (veRL clip_ratio_c 3; MTSA 3); ppo only',
      { min: 1, max: 100 },
    ),
    lossAggMode: oneOf(
      ['auto', ...LOSS_AGG_MODES],
      'auto',
      'veRL loss_agg_mode: auto = token-mean for ppo (veRL default), token-sum for importance_sampling (Tinker); seq-mean-token-sum, seq-mean-token-mean, seq-mean-token-sum-norm (Dr. GRPO)',
    ),
    trlLossType: oneOf(
      ['off', ...TRL_LOSS_TYPES],
      'off',
      'TRL loss_type, replacing lossAggMode: grpo (per-sequence mean), bnpo, dr_grpo, dapo (TRL default now); off = lossAggMode',
    ),
    entropyCoeff: num(0, 'entropy bonus: loss -= coeff x agg(H) (veRL entropy_coeff, default 0)', { min: 0, max: 10 }),
    lrWarmupSteps: int(
      0,
      'linear learning-rate warm-up over this many optimiser steps, from 0 (HF / veRL lr_warmup_steps; default none)',
      { min: 0, max: 1000000 },
    ),
    lrSchedule: oneOf(
      ['constant', 'cosine'],
      'constant',
      'learning-rate schedule after warm-up: constant (veRL default) or cosine decay to lrMinRatio x lr over lrTotalSteps',
    ),
    lrTotalSteps: int(1000, 'cosine horizon in optimiser steps, warm-up included (lrSchedule = cosine)', {
      min: 1,
      max: 10000000,
    }),
    lrMinRatio: num(0, 'cosine floor as a share of lr (veRL min_lr_ratio 0)', { min: 0, max: 1 }),
    scaleRewards: oneOf(
      ['group', 'batch', 'none'],
      'group',
      'TRL scale_rewards: divide by the group std (group, veRL and TRL default), the batch std (batch) or not at all (none); normAdvByStd = false means none',
    ),
    advantageEpsilon: num(1e-6, 'epsilon in (r - mean) / (std + eps) (veRL 1e-6, TRL 1e-4)', { min: 0, max: 1 }),
    topEntropyQuantile: num(
      1,
      'the share of response tokens the policy term learns from, the highest-entropy ones (TRL top_entropy_quantile; "Beyond the 80/20 Rule" trains on 0.2); 1 = every token (default); the KL and entropy terms keep all; batch/high_entropy_tokens reports the share kept',
      { min: 0, max: 1 },
    ),
  };
}

/**
 * DAPO's dynamic sampling (veRL algorithm.filter_groups: enable, metric, max_num_gen_batches); off
 * by default, as in veRL. `unit` names what the recipe's groups are drawn from (QA items, goals).
 */
export function filterGroupsFields(unit: string, acc?: string) {
  return {
    filterGroups: bool(
      false,
      `DAPO dynamic sampling (veRL algorithm.filter_groups.enable): drop every group whose filterGroupsMetric is equal on all its rows (GRPO gives it advantage 0) and sample more ${unit} until the step holds its batch of groups or maxNumGenBatches batches were drawn; at the cap veRL stops with an error, the lab trains on the groups it kept (filter/short = 1); filter/dropped_groups and filter/gen_batches report it`,
    ),
    filterGroupsMetric: oneOf(
      acc ? ['seq_reward', 'seq_final_reward', 'acc'] : ['seq_reward', 'seq_final_reward'],
      'seq_reward',
      `what must vary inside a kept group (veRL algorithm.filter_groups.metric): seq_reward, the score before the KL penalty, or seq_final_reward, after it${acc ? `; acc (DAPO's choice): ${acc}` : ''}`,
    ),
    maxNumGenBatches: int(
      4,
      'dynamic sampling: generation batches per step at most (veRL algorithm.filter_groups.max_num_gen_batches; veRL <= 0 = no cap, the lab needs a cap)',
      { min: 1, max: 64 },
    ),
  };
}

/** KL to the reference as a loss term (veRL use_kl_loss, TRL beta); off by default. */
export function klLossFields() {
  return {
    klLossCoef: num(
      0,
      'KL to the reference as a loss term, + coef x agg(kl) (veRL use_kl_loss, 0.001 when on; TRL beta, default 0 = off)',
      { min: 0, max: 10 },
    ),
    klLossEstimator: oneOf(KL_ESTIMATOR_NAMES, 'k3', 'estimator of the KL loss term (veRL low_var_kl = k3, TRL k3)'),
  };
}

/**
 * veRL's KL controller of a KL-in-the-reward coefficient; fixed by default. `beta` names the
 * coefficient field(s) it drives (klBeta; arena's two), `note` what the recipe's source does.
 */
export function klControllerFields(beta = 'klBeta', note = 'the sources') {
  return {
    klController: oneOf(
      ['fixed', 'adaptive'],
      'fixed',
      `KL-in-reward coefficient: fixed ${beta} (veRL kl_ctrl.type fixed; ${note}) or adaptive (veRL kl_ctrl.type adaptive): beta <- beta (1 + clip(KL / klTarget - 1, -0.2, 0.2) x batch / klHorizon) after each step, KL = the step's mean sampled-token k1`,
    ),
    klTarget: num(0.1, 'adaptive KL controller: target KL (veRL target_kl 0.1)', { min: 1e-9, max: 1e6 }),
    klHorizon: num(10000, 'adaptive KL controller: horizon in samples (veRL horizon 10000)', { min: 1, max: 1e12 }),
  };
}

/** The PPO critic of the gae estimator (a value head with its own AdamW); used only when advantage = gae. */
export function criticFields() {
  return {
    criticLr: num(
      1e-3,
      'critic (value head) learning rate, advantage = gae (veRL trains the critic with its own optimiser; its example uses 10x the actor lr)',
      { min: 0, max: 1 },
    ),
    gaeGamma: num(1, 'GAE discount gamma (veRL 1)', { min: 0, max: 1 }),
    gaeLambda: num(1, 'GAE lambda (veRL 1)', { min: 0, max: 1 }),
    vfCoef: num(0.5, 'value-loss weight (veRL / TRL 0.5)', { min: 0, max: 100 }),
    cliprangeValue: num(0.5, 'value clip range around the rollout values (veRL cliprange_value 0.5)', {
      min: 0,
      max: 100,
    }),
    criticGradClip: oneOf(
      ['separate', 'joint'] as const,
      'separate',
      "gradient clip with advantage = gae: separate = the actor's and the critic's gradients each clipped to maxGradNorm on its own (veRL: actor and critic optim.clip_grad, grad/critic_norm reports the critic's norm); joint = one global norm over both (the lab's earlier rule: a value loss near 2,000 then shrinks the actor's step by the critic's gradient)",
    ),
  };
}

/** TRL mask_truncated_completions; off by default. */
export function maskTruncatedField() {
  return {
    maskTruncatedCompletions: bool(
      false,
      'TRL mask_truncated_completions: answers cut at the length cap (no stop token) earn and cost nothing (TRL default off)',
    ),
  };
}
