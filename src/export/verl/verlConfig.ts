// The veRL config of an export: Hydra overrides for `python3 -m verl.trainer.main_ppo` as dotted
// keys (every one checked in CI against veRL's own trainer config), and the YAML file that holds
// them. Field names come from the alias table (aliases.ts) where a lab field maps one-to-one;
// what needs translating (estimator names, KL placement, loss names, LoRA targets) is spelled
// out here.
import { aliasRows } from '../../contract/aliases';
import { hfTargetModules, type LoraTargetSet } from '../../contract/loraTargets';
import { verlBatches } from './batch';
import { lossMapping } from './loss';
import type { Schema } from '../../contract/schema';
import type { ExportRecipe } from './entry';

/** Lab KL estimator names -> veRL kl_penalty / kl_loss_type names. */
export const VERL_KL_NAMES: Readonly<Record<string, string>> = {
  k1: 'kl',
  kl: 'kl',
  abs: 'abs',
  k2: 'mse',
  mse: 'mse',
  k3: 'low_var_kl',
  low_var_kl: 'low_var_kl',
};

export interface VerlJob {
  /** Training steps (trainer.total_training_steps). */
  steps: number;
  /** actor_rollout_ref.model.path: a hub id or a folder inside the export. */
  modelPath: string;
  /** Longest prompt in the dataset, in tokens (an upper bound, or veRL's own count where promptTokensExact). */
  maxPromptTokens: number;
  /** maxPromptTokens was counted with the shipped model's tokenizer and chat template (tokens.ts). */
  promptTokensExact?: boolean;
  gpus: number;
  experiment: string;
}

/**
 * The export folder, as an absolute path: Ray starts veRL's workers in their own directories, so
 * paths relative to the launch folder do not resolve there. run.sh starts veRL from the folder.
 */
export const HERE = '${oc.env:PWD}';

/** Where veRL writes checkpoints: an absolute folder of the export (veRL's default is relative to each worker's directory). */
export const CHECKPOINTS = `${HERE}/checkpoints`;

/** The `trainer` keys both of veRL's trainers (PPO and SFT) share: steps, naming, logging, GPUs, saving. */
export function trainerKeys(job: { steps: number; gpus: number; experiment: string }): Record<string, unknown> {
  return {
    'trainer.total_training_steps': job.steps,
    // Steps bound the run; the epoch count only has to be large enough not to end it first.
    'trainer.total_epochs': 1000,
    'trainer.project_name': 'sparring',
    'trainer.experiment_name': job.experiment,
    'trainer.logger': ['console'],
    'trainer.nnodes': 1,
    'trainer.n_gpus_per_node': job.gpus,
    'trainer.save_freq': job.steps,
    'trainer.test_freq': -1,
    'trainer.default_local_dir': CHECKPOINTS,
  };
}

/**
 * veRL's target_modules: HFModelConfig declares `Optional[str]` (verl/workers/config/model.py:122)
 * and hands the string to PEFT's LoraConfig (fsdp_workers.py:467): "all-linear" (PEFT: every
 * linear layer but the output head, i.e. the seven projections of Llama / Qwen2), or a regular
 * expression PEFT full-matches against each module's name.
 */
export function verlTargetModules(set: LoraTargetSet): string {
  if (set === 'all') return 'all-linear';
  return `.*\\.(${hfTargetModules(set).join('|')})`;
}

/** veRL's lora_alpha is an int (HFModelConfig, model.py:121; the SFT trainer's default 16): a fractional alpha is refused. */
export function verlLoraAlpha(alpha: unknown, field = 'loraAlpha'): number {
  if (typeof alpha !== 'number' || !Number.isInteger(alpha))
    throw new Error(
      `export-verl: field "${field}" is ${String(alpha)}; veRL's lora_alpha is an int (verl/workers/config/model.py:121), so a fractional alpha cannot be exported: set a whole alpha (the scale is alpha / r)`,
    );
  return alpha;
}

const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;

/**
 * data.max_prompt_length and data.truncation. By default every row fits (a counted length needs only
 * a small margin; a byte bound leaves room for the chat template) and truncation is "error". A
 * recipe whose prompts the lab cuts (truncation left / right / middle) exports its own budget with
 * the same side, and veRL keeps the long rows (filter_overlong_prompts would drop them instead).
 */
function promptLength(c: Record<string, unknown>, job: VerlJob): Record<string, unknown> {
  const fits = job.promptTokensExact ? roundUp(job.maxPromptTokens + 8, 16) : roundUp(job.maxPromptTokens + 32, 64);
  const budget = c.maxPromptLength;
  if (typeof budget === 'number' && c.truncation !== undefined && c.truncation !== 'error' && budget < fits)
    return { 'data.max_prompt_length': budget, 'data.filter_overlong_prompts': false, 'data.truncation': c.truncation };
  return { 'data.max_prompt_length': fits, 'data.filter_overlong_prompts': true, 'data.truncation': 'error' };
}

/**
 * The dotted-key overrides of a recipe run. Order matters: the job's defaults first, then every
 * one-to-one field of the alias table (so a field added there, e.g. PPO epochs or a second clip
 * ratio, overrides the default it refines), then the values that need translating, the KL
 * placement, and last the recipe's own keys.
 */
export function verlOverrides(
  recipe: ExportRecipe,
  schemaRecipe: { name: string; schema: Schema },
  c: Record<string, unknown>,
  job: VerlJob,
): Record<string, unknown> {
  const batch = recipe.batchPrompts(c);
  const n = c.groupSize as number;
  const sizes = verlBatches(batch, n, (c.ppoMiniBatches as number | undefined) ?? 1, job.gpus);
  const loss = lossMapping(c);
  const o: Record<string, unknown> = {
    'data.train_files': `${HERE}/data/train.parquet`,
    'data.val_files': `${HERE}/data/val.parquet`,
    'data.prompt_key': 'prompt',
    'data.train_batch_size': batch,
    ...promptLength(c, job),
    'actor_rollout_ref.model.use_shm': false,
    'actor_rollout_ref.model.enable_gradient_checkpointing': true,
    // ppoMiniBatches optimiser steps per batch, as in the lab (one by default: the ratio starts at 1 every step).
    'actor_rollout_ref.actor.ppo_mini_batch_size': sizes.miniPrompts,
    'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu': sizes.micro,
    'actor_rollout_ref.actor.ppo_epochs': 1,
    'actor_rollout_ref.actor.optim.betas': [c.beta1, c.beta2],
    'actor_rollout_ref.actor.optim.lr_scheduler_type': c.lrSchedule ?? 'constant',
    'actor_rollout_ref.actor.optim.lr_warmup_steps': 0,
    'actor_rollout_ref.actor.clip_ratio_low': c.clipRatio,
    'actor_rollout_ref.actor.clip_ratio_high': c.clipRatioHigh ? c.clipRatioHigh : c.clipRatio,
    'actor_rollout_ref.actor.clip_ratio_c': 3,
    'actor_rollout_ref.actor.policy_loss.loss_mode': c.policyLoss === 'importance_sampling' ? 'gpg' : 'vanilla',
    'actor_rollout_ref.actor.loss_agg_mode': loss.verl,
    'actor_rollout_ref.actor.entropy_coeff': 0,
    'actor_rollout_ref.actor.use_kl_loss': false,
    'actor_rollout_ref.rollout.name': 'vllm',
    'actor_rollout_ref.rollout.tensor_model_parallel_size': 1,
    'actor_rollout_ref.rollout.gpu_memory_utilization': ROLLOUT_GPU_MEMORY,
    'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu': sizes.micro,
    // veRL's LoRA guide (docs/advance/ppo_lora.rst): vLLM must load the base weights itself.
    'actor_rollout_ref.rollout.load_format': 'safetensors',
    'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu': sizes.micro,
    'custom_reward_function.path': `${HERE}/reward.py`,
    'custom_reward_function.name': 'compute_score',
    ...trainerKeys(job),
    'trainer.val_before_train': false,
    'trainer.critic_warmup': 0,
  };
  for (const a of aliasRows(schemaRecipe.name, schemaRecipe.schema))
    if (a.verl && c[a.lab] !== undefined) o[a.verl] = c[a.lab];
  Object.assign(o, {
    'actor_rollout_ref.model.path': job.modelPath,
    'actor_rollout_ref.model.target_modules': verlTargetModules(c.loraTargets as LoraTargetSet),
    'actor_rollout_ref.model.lora_alpha': verlLoraAlpha(c.loraAlpha),
    'actor_rollout_ref.rollout.top_k': c.topK === undefined || c.topK === 0 ? -1 : c.topK,
    // Lab values veRL names differently: clipRatioHigh 0 = clipRatio; auto / token-sum / a TRL loss type (loss.ts).
    'actor_rollout_ref.actor.clip_ratio_high': c.clipRatioHigh ? c.clipRatioHigh : c.clipRatio,
    'actor_rollout_ref.actor.loss_agg_mode': loss.verl,
  });
  // veRL steps its scheduler once per trainer step (fsdp_workers.py:921), the lab once per optimiser step.
  const perStep = optimiserStepsPerStep(c);
  if (typeof c.lrWarmupSteps === 'number')
    o['actor_rollout_ref.actor.optim.lr_warmup_steps'] = Math.round(c.lrWarmupSteps / perStep);
  // std scaling: group (veRL's GRPO) or none; the lab's batch std has no veRL switch (listed).
  if (typeof c.normAdvByStd === 'boolean')
    o['algorithm.norm_adv_by_std_in_grpo'] = c.normAdvByStd && c.scaleRewards !== 'none';
  // KL in the reward (the source systems' placement): veRL's use_kl_in_reward with k1.
  if (typeof c.klBeta === 'number') {
    Object.assign(o, {
      'algorithm.use_kl_in_reward': c.klBeta > 0,
      'algorithm.kl_penalty': 'kl',
      // The lab's controller (klControllerFields) where the recipe offers one; fixed otherwise.
      'algorithm.kl_ctrl.type': c.klController ?? 'fixed',
      'algorithm.kl_ctrl.kl_coef': c.klBeta,
    });
  }
  // KL as a loss term: klLossCoef (veRL use_kl_loss, on when the coefficient is).
  if (typeof c.klLossCoef === 'number') {
    Object.assign(o, {
      'actor_rollout_ref.actor.use_kl_loss': c.klLossCoef > 0,
      'actor_rollout_ref.actor.kl_loss_coef': c.klLossCoef,
      'actor_rollout_ref.actor.kl_loss_type': VERL_KL_NAMES[c.klLossEstimator as string] ?? 'low_var_kl',
      // A recipe without KL in the reward (multiturn, as SaFeR) turns veRL's off.
      ...(typeof c.klBeta === 'number' ? {} : { 'algorithm.use_kl_in_reward': false }),
    });
  }
  // PPO with a critic: veRL's critic is a model of its own (the actor's base, with its own LoRA);
  // without a path it would load the config's default model.
  if (c.advantage === 'gae') {
    Object.assign(o, {
      'critic.model.path': job.modelPath,
      'critic.model.lora_rank': c.loraRank,
      'critic.model.lora_alpha': verlLoraAlpha(c.loraAlpha),
      'critic.model.target_modules': verlTargetModules(c.loraTargets as LoraTargetSet),
      'critic.ppo_micro_batch_size_per_gpu': sizes.micro,
    });
  }
  o['data.max_response_length'] ??= c.maxNewTokens;
  const own = recipe.verl(c);
  // The recipe's entropy term (defend, tokenbuncher: minimise entropy) adds to the shared entropy bonus.
  const entropyKey = 'actor_rollout_ref.actor.entropy_coeff';
  const recipeEntropy = typeof own[entropyKey] === 'number' ? (own[entropyKey] as number) : 0;
  Object.assign(o, own);
  o[entropyKey] = recipeEntropy + ((c.entropyCoeff as number | undefined) ?? 0);
  return o;
}

/** Optimiser steps per lab step: PPO epochs x mini-batches. */
export const optimiserStepsPerStep = (c: Record<string, unknown>): number =>
  ((c.ppoEpochs as number | undefined) ?? 1) * ((c.ppoMiniBatches as number | undefined) ?? 1);

/** rollout.gpu_memory_utilization: the share of each GPU the training vLLM takes; the rest holds FSDP's actor, and an opponent server must fit beside. */
export const ROLLOUT_GPU_MEMORY = 0.5;

/** Dotted keys -> nested record. */
export function nest(flat: Record<string, unknown>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flat)) {
    const parts = k.split('.');
    let node = root;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1]] = v;
  }
  return root;
}

/** Plain words a YAML 1.1 reader takes for booleans or null (`n` is false there: veRL's own file quotes the key). */
const YAML11_WORDS = /^(y|n|yes|no|true|false|on|off|null|~)$/i;

const yamlKey = (k: string) => (YAML11_WORDS.test(k) ? `'${k}'` : k);

function yamlScalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean' || typeof v === 'number') {
    if (typeof v === 'number' && !Number.isFinite(v)) throw new Error(`yaml: ${v} is not finite`);
    // YAML 1.1 (PyYAML, OmegaConf) reads 1e-05 as a string: write exponents with a dot and a sign.
    if (typeof v === 'number' && /e/i.test(String(v))) {
      const [m, e] = String(v).toLowerCase().split('e');
      return `${m.includes('.') ? m : `${m}.0`}e${e.startsWith('-') ? e : `+${e}`}`;
    }
    return String(v);
  }
  if (typeof v === 'string')
    return /^[A-Za-z_./][A-Za-z0-9_./-]*$/.test(v) && !YAML11_WORDS.test(v) ? v : JSON.stringify(v);
  throw new Error(`yaml: cannot write ${typeof v}`);
}

/** A small YAML writer for nested records of scalars and scalar lists (all a Hydra override file needs). */
export function toYaml(v: Record<string, unknown>, indent = ''): string {
  const lines: string[] = [];
  for (const [k, x] of Object.entries(v)) {
    const key = yamlKey(k);
    if (Array.isArray(x)) lines.push(`${indent}${key}: [${x.map(yamlScalar).join(', ')}]`);
    else if (x !== null && typeof x === 'object')
      lines.push(`${indent}${key}:`, toYaml(x as Record<string, unknown>, `${indent}  `));
    else lines.push(`${indent}${key}: ${yamlScalar(x)}`);
  }
  return lines.join('\n');
}

/** A Hydra config file: one of veRL's trainer configs (`ppo_trainer`, `sft_trainer`) as the base, then these overrides. */
export function verlYaml(flat: Record<string, unknown>, header: string[], base = 'ppo_trainer'): string {
  return [
    ...header.map((h) => `# ${h}`),
    'hydra:',
    '  searchpath:',
    '    - pkg://verl.trainer.config',
    'defaults:',
    `  - ${base}`,
    '  - _self_',
    toYaml(nest(flat)),
    '',
  ].join('\n');
}
