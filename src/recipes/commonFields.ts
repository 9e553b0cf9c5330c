// Schema fields the training recipes share — LoRA, AdamW, the policy-gradient algorithm — and the
// adapter and optimiser those fields configure. Ranges are the same in every recipe; defaults that
// differ and the help text that documents each recipe's source are the callers' arguments.
import type { LlamaModel } from '../model/llama.ts';
import { attachLora, type LoraSet } from '../model/lora.ts';
import { AdamW } from '../rl/optim.ts';
import type { AdvantageEstimatorName } from '../rl/types.ts';
import { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from './loraTargets.ts';
import { bool, int, num, oneOf } from './schema.ts';

export { LORA_TARGET_SETS, loraTargets, type LoraTargetSet } from './loraTargets.ts';

/** LoRA fields with the given defaults (each recipe documents its source's values in the help). */
export function loraFields(d: { rank: number; alpha: number }, sourceNote: string) {
  return {
    loraRank: int(d.rank, `LoRA rank r (${sourceNote})`, { min: 1, max: 256 }),
    loraAlpha: num(d.alpha, 'LoRA alpha; scale = alpha / r', { min: 1e-6, max: 4096 }),
    loraTargets: oneOf(LORA_TARGET_SETS, 'all', 'projections that get adapters: all (q k v o gate up down), attention, mlp'),
    loraDropout: num(0, 'LoRA dropout on the adapter input while training (seeded; resumes exactly)', { min: 0, max: 0.9 }),
  };
}

/** The adapter loraFields configure, attached to `model`; `seed` seeds its init and dropout. */
export function attachConfiguredLora(model: LlamaModel, c: { loraRank: number; loraAlpha: number; loraTargets: LoraTargetSet; loraDropout: number }, seed: number): LoraSet {
  return attachLora(model, { r: c.loraRank, alpha: c.loraAlpha, targets: loraTargets(c.loraTargets), dropout: c.loraDropout, seed });
}

/**
 * AdamW's betas and weight decay, and the gradient-norm clip (the learning rate stays with each
 * recipe: its name and its source note differ). A note replaces the text in the help's parentheses.
 */
export function adamFields(notes: { beta1?: string; beta2?: string; weightDecay?: string } = {}) {
  return {
    beta1: num(0.9, `Adam beta1 (${notes.beta1 ?? 'first-moment decay'})`, { min: 0, max: 0.99999 }),
    beta2: num(0.95, `Adam beta2 (${notes.beta2 ?? 'second-moment decay'})`, { min: 0, max: 0.99999 }),
    weightDecay: num(0, `AdamW decoupled weight decay${notes.weightDecay === undefined ? '' : ` (${notes.weightDecay})`}`, { min: 0, max: 1 }),
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
  const losses: readonly PolicyLoss[] = d.policyLoss === 'ppo' ? ['ppo', 'importance_sampling'] : ['importance_sampling', 'ppo'];
  return {
    advantage: oneOf(estimators, d.advantage, help.advantage),
    normAdvByStd: bool(d.normAdvByStd, `divide group-centred rewards by the group std (${help.stdNote})`),
    policyLoss: oneOf(losses, d.policyLoss, help.policyLoss),
    clipRatio: num(0.2, `PPO clip epsilon${help.clipNote === undefined ? '' : ` (${help.clipNote})`}`, { min: 0, max: 10 }),
  };
}
