// What the shared learning settings become on veRL and on TRL, where they do not carry over one to
// one: a sentence each for the export's README ("what veRL cannot express") and the TRL script.
import { lossMapping } from './loss';
import type { Cfg } from './entry';
import { hfTargetModules, type LoraTargetSet } from '../../contract/loraTargets';
import { optimiserStepsPerStep, verlTargetModules } from './verlConfig';

/** Settings every policy-gradient recipe shares, as veRL runs them. */
export function learningNotes(c: Cfg, steps: number, recipeNotes: readonly string[] = []): string[] {
  const out = [...lossMapping(c).verlNotes];
  const perStep = optimiserStepsPerStep(c);
  if (c.normAdvByStd === true && c.scaleRewards === 'batch')
    out.push(
      "scaleRewards = batch (advantages divided by the batch's reward std): veRL's GRPO divides by the group std or not at all (norm_adv_by_std_in_grpo), so the export keeps the group std; the TRL script's scale_rewards = batch carries it.",
    );
  if (c.loraUseRslora === true)
    out.push(
      `loraUseRslora (scale alpha / sqrt(r)): veRL's FSDP workers build PEFT's LoraConfig without use_rslora (fsdp_workers.py:463-469), so veRL scales by alpha / r; lora_alpha = ${String(c.loraAlpha)} x sqrt(${String(c.loraRank)}) would give the same scale (the TRL script passes use_rslora).`,
    );
  if (c.loraTargets !== undefined && c.loraTargets !== 'all')
    out.push(
      `loraTargets = ${String(c.loraTargets)}: veRL takes target_modules as one string, so the export writes a regular expression PEFT full-matches (${verlTargetModules(c.loraTargets as LoraTargetSet)}); veRL saves a checkpoint's actor/lora_adapter/adapter_config.json with list(target_modules) (fsdp_workers.py:1097), i.e. that string's characters: set target_modules there to ${JSON.stringify(hfTargetModules(c.loraTargets as LoraTargetSet))} before loading the adapter with PEFT.`,
    );
  const warm = c.lrWarmupSteps as number | undefined;
  if (warm && warm % perStep !== 0)
    out.push(
      `Learning-rate warm-up: veRL steps its scheduler once per trainer step (${perStep} optimiser steps here), so the lab's ${warm} warm-up steps become ${Math.round(warm / perStep)} trainer steps.`,
    );
  if (c.lrSchedule === 'cosine') {
    const labHorizon = (c.lrTotalSteps as number) / perStep;
    if (labHorizon !== steps)
      out.push(
        `Cosine schedule: veRL decays over trainer.total_training_steps (${steps} steps; ray_trainer.py:390 sets it), the lab over lrTotalSteps = ${String(c.lrTotalSteps)} optimiser steps (${labHorizon} trainer steps): export with --steps ${labHorizon} to match.`,
      );
  }
  if (typeof c.advantageEpsilon === 'number' && c.advantageEpsilon !== 1e-6)
    out.push(
      `advantageEpsilon = ${c.advantageEpsilon}: veRL's GRPO divides by (std + 1e-6) with no setting for it (core_algos.py compute_grpo_outcome_advantage); TRL by (std + 1e-4).`,
    );
  if (c.maskTruncatedCompletions === true)
    out.push(
      'maskTruncatedCompletions: veRL has no switch to drop truncated responses from the loss; the TRL script sets mask_truncated_completions.',
    );
  if (typeof c.topEntropyQuantile === 'number' && c.topEntropyQuantile < 1)
    out.push(
      `topEntropyQuantile = ${c.topEntropyQuantile}: veRL has no switch to train on the highest-entropy tokens only; the TRL script sets top_entropy_quantile.`,
    );
  if (c.skipZeroAdvantageGroups === true && !recipeNotes.some((s) => s.startsWith('Groups whose')))
    out.push(
      'skipZeroAdvantageGroups: veRL keeps groups whose advantages are all zero in the token-mean denominators (they add no gradient).',
    );
  return out;
}

/** Where the TRL script's GRPOTrainer trains something other than the lab (its docstring and the README say so). */
export function trlNotes(c: Cfg): string[] {
  const out: string[] = [...lossMapping(c).trlNotes];
  if (typeof c.klBeta === 'number' && c.klBeta > 0)
    out.push(
      `KL in the reward: the lab subtracts klBeta (${c.klBeta}) x k1 from the reward; TRL has no reward KL (GRPOTrainer adds only beta x k3 to the loss), so this TRL job trains WITHOUT the lab's reward KL. Use the veRL job to keep it.`,
    );
  if (
    typeof c.klLossCoef === 'number' &&
    c.klLossCoef > 0 &&
    c.klLossEstimator !== 'k3' &&
    c.klLossEstimator !== 'low_var_kl'
  )
    out.push(
      `KL loss estimator ${String(c.klLossEstimator)}: TRL's beta term is always k3; beta = klLossCoef = ${c.klLossCoef} with k3.`,
    );
  if (c.advantage !== undefined && c.advantage !== 'grpo')
    out.push(`advantage = ${String(c.advantage)}: TRL's GRPOTrainer has group-normalised advantages only (GRPO).`);
  if (c.policyLoss === 'importance_sampling' && optimiserStepsPerStep(c) > 1)
    out.push(
      `policyLoss = importance_sampling with ${optimiserStepsPerStep(c)} optimiser steps per batch: TRL's GRPO loss clips the ratio at epsilon, the lab's importance_sampling loss does not.`,
    );
  return out;
}
