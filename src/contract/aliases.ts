// The names researchers already type. One table maps a lab config field to its veRL key (a dotted
// path of `verl.trainer.main_ppo`'s Hydra config) and its TRL name (GRPOConfig, or ModelConfig for
// LoRA); the CLI's `--set`, the setup URL, `--help` and the veRL / TRL export all read it, so a new
// field gets its aliases by adding one row here.
//
// A row applies to every recipe whose schema has the lab field, unless `recipes` narrows it (the
// policy's sampling temperature is `temperature` in redteam but `attackerTemperature` in attack).
// `values` translates an aliased value into the lab's (TRL's scale_rewards=group -> true); a value
// it does not list passes through unchanged and the schema judges it.
import type { Schema } from './schema';

export interface FieldAlias {
  /** The lab's field name. */
  readonly lab: string;
  /** Dotted key in veRL's trainer config (verified against the key-list fixture in the tests). */
  readonly verl?: string;
  /** GRPOConfig / ModelConfig field in TRL. */
  readonly trl?: string;
  /** Only these recipes (default: every recipe that has the field). */
  readonly recipes?: readonly string[];
  /** The lab's earlier names of the field: saved configs, setup URLs and scripts that use them still work. */
  readonly former?: readonly string[];
  /** Aliased value -> lab value, per framework (e.g. TRL scale_rewards). */
  readonly values?: {
    readonly verl?: Readonly<Record<string, string>>;
    readonly trl?: Readonly<Record<string, string>>;
  };
}

const TRAINS_DEFENDER = ['redteam', 'defend', 'tokenbuncher', 'multiturn'];
const LORA_TARGET_VALUES = { 'all-linear': 'all' };

export const FIELD_ALIASES: readonly FieldAlias[] = [
  { lab: 'groupSize', verl: 'actor_rollout_ref.rollout.n', trl: 'num_generations' },
  {
    lab: 'temperature',
    verl: 'actor_rollout_ref.rollout.temperature',
    trl: 'temperature',
    recipes: [...TRAINS_DEFENDER, 'minmax', 'rlhf'],
  },
  {
    lab: 'topP',
    verl: 'actor_rollout_ref.rollout.top_p',
    trl: 'top_p',
    recipes: [...TRAINS_DEFENDER, 'minmax', 'rlhf'],
  },
  { lab: 'topK', verl: 'actor_rollout_ref.rollout.top_k', trl: 'top_k' },
  // multiturn's maxNewTokens caps one reply; veRL's response length covers the whole conversation.
  {
    lab: 'maxNewTokens',
    verl: 'data.max_response_length',
    trl: 'max_completion_length',
    recipes: ['redteam', 'defend', 'tokenbuncher'],
  },
  {
    lab: 'attackerTemperature',
    verl: 'actor_rollout_ref.rollout.temperature',
    trl: 'temperature',
    recipes: ['attack'],
  },
  { lab: 'attackerTopP', verl: 'actor_rollout_ref.rollout.top_p', trl: 'top_p', recipes: ['attack'] },
  { lab: 'attackerMaxTokens', verl: 'data.max_response_length', trl: 'max_completion_length', recipes: ['attack'] },
  {
    lab: 'policyMaxTokens',
    verl: 'data.max_response_length',
    trl: 'max_completion_length',
    recipes: ['minmax', 'rlhf'],
  },
  { lab: 'prompts', verl: 'data.train_batch_size', recipes: ['redteam'] },
  { lab: 'lr', verl: 'actor_rollout_ref.actor.optim.lr', trl: 'learning_rate' },
  // minmax's export is the policy's job (rlhf's), so its policy learning rate is veRL's actor lr too.
  { lab: 'policyLr', verl: 'actor_rollout_ref.actor.optim.lr', trl: 'learning_rate', recipes: ['rlhf', 'minmax'] },
  { lab: 'beta1', trl: 'adam_beta1' },
  { lab: 'beta2', trl: 'adam_beta2' },
  { lab: 'weightDecay', verl: 'actor_rollout_ref.actor.optim.weight_decay', trl: 'weight_decay' },
  { lab: 'maxGradNorm', verl: 'actor_rollout_ref.actor.optim.clip_grad', trl: 'max_grad_norm' },
  { lab: 'loraRank', verl: 'actor_rollout_ref.model.lora_rank', trl: 'lora_r' },
  { lab: 'loraAlpha', verl: 'actor_rollout_ref.model.lora_alpha', trl: 'lora_alpha' },
  { lab: 'loraDropout', trl: 'lora_dropout' },
  {
    lab: 'loraTargets',
    verl: 'actor_rollout_ref.model.target_modules',
    trl: 'lora_target_modules',
    values: { verl: LORA_TARGET_VALUES, trl: LORA_TARGET_VALUES },
  },
  { lab: 'advantage', verl: 'algorithm.adv_estimator' },
  {
    lab: 'normAdvByStd',
    verl: 'algorithm.norm_adv_by_std_in_grpo',
    trl: 'scale_rewards',
    values: { trl: { group: 'true', none: 'false' } },
  },
  { lab: 'clipRatio', verl: 'actor_rollout_ref.actor.clip_ratio', trl: 'epsilon' },
  // KL in the reward (the red-team trainer, MTSA, Token Buncher) is veRL's kl_ctrl; TRL has no
  // reward KL, only the loss term `beta`, so klBeta gets no TRL alias.
  { lab: 'klBeta', verl: 'algorithm.kl_ctrl.kl_coef' },
  // The shared learning options (commonFields.ts trainingFields / klLossFields / klControllerFields /
  // criticFields) whose values mean the same in the lab and the framework.
  { lab: 'ppoEpochs', verl: 'actor_rollout_ref.actor.ppo_epochs', trl: 'num_iterations' },
  { lab: 'clipRatioC', verl: 'actor_rollout_ref.actor.clip_ratio_c' },
  // 0 in the lab means "= clipRatio"; the export writes clipRatio then (veRL and TRL have no such 0).
  { lab: 'clipRatioHigh', verl: 'actor_rollout_ref.actor.clip_ratio_high', trl: 'epsilon_high' },
  { lab: 'entropyCoeff', verl: 'actor_rollout_ref.actor.entropy_coeff', trl: 'entropy_coef' },
  { lab: 'lrSchedule', verl: 'actor_rollout_ref.actor.optim.lr_scheduler_type', trl: 'lr_scheduler_type' },
  // auto and token-sum have no veRL name: the export translates (src/export/verl/loss.ts).
  { lab: 'lossAggMode', verl: 'actor_rollout_ref.actor.loss_agg_mode' },
  { lab: 'trlLossType', trl: 'loss_type' },
  { lab: 'lrWarmupSteps', verl: 'actor_rollout_ref.actor.optim.lr_warmup_steps' },
  { lab: 'lrMinRatio', verl: 'actor_rollout_ref.actor.optim.min_lr_ratio' },
  // KL in the loss (veRL use_kl_loss, TRL beta), in every recipe under veRL's name; multiturn
  // called it klCoef / klEstimator before.
  { lab: 'klLossCoef', verl: 'actor_rollout_ref.actor.kl_loss_coef', trl: 'beta', former: ['klCoef'] },
  { lab: 'klLossEstimator', verl: 'actor_rollout_ref.actor.kl_loss_type', former: ['klEstimator'] },
  { lab: 'maskTruncatedCompletions', trl: 'mask_truncated_completions' },
  { lab: 'topEntropyQuantile', trl: 'top_entropy_quantile' },
  { lab: 'klController', verl: 'algorithm.kl_ctrl.type' },
  { lab: 'klTarget', verl: 'algorithm.kl_ctrl.target_kl' },
  { lab: 'klHorizon', verl: 'algorithm.kl_ctrl.horizon' },
  { lab: 'criticLr', verl: 'critic.optim.lr' },
  { lab: 'gaeGamma', verl: 'algorithm.gamma' },
  { lab: 'gaeLambda', verl: 'algorithm.lam' },
  { lab: 'cliprangeValue', verl: 'critic.cliprange_value' },
];

export type Framework = 'verl' | 'trl';

/** The rows that apply to a recipe with this schema. */
export function aliasRows(recipe: string, schema: Schema): FieldAlias[] {
  return FIELD_ALIASES.filter((a) => Object.hasOwn(schema, a.lab) && (!a.recipes || a.recipes.includes(recipe)));
}

/** The alias row of one lab field of a recipe, if any. */
export function aliasOf(recipe: string, schema: Schema, field: string): FieldAlias | undefined {
  return aliasRows(recipe, schema).find((a) => a.lab === field);
}

/** "veRL actor_rollout_ref.rollout.n, TRL num_generations" for help text; '' without aliases. */
export function aliasNote(recipe: string, schema: Schema, field: string): string {
  const a = aliasOf(recipe, schema, field);
  if (!a) return '';
  return [a.verl && `veRL ${a.verl}`, a.trl && `TRL ${a.trl}`].filter(Boolean).join(', ');
}

/**
 * What an input key names: the lab field itself, or the lab field behind a veRL / TRL alias
 * (with the framework, for value translation). Null for a key the recipe does not know.
 */
export function resolveFieldName(
  recipe: string,
  schema: Schema,
  key: string,
): { field: string; via?: Framework } | null {
  if (Object.hasOwn(schema, key)) return { field: key };
  for (const a of aliasRows(recipe, schema)) {
    if (a.former?.includes(key)) return { field: a.lab };
    if (a.verl === key) return { field: a.lab, via: 'verl' };
    if (a.trl === key) return { field: a.lab, via: 'trl' };
  }
  return null;
}

/**
 * Input keyed by lab names, veRL keys or TRL names -> input keyed by lab names (aliased values
 * translated). Unknown keys pass through for the schema to report; a field given twice (under
 * two names) is an error naming both.
 */
export function resolveAliases(
  recipe: string,
  schema: Schema,
  input: Record<string, unknown>,
): { input: Record<string, unknown>; errors: Record<string, string> } {
  const out: Record<string, unknown> = {};
  const from: Record<string, string> = {};
  const errors: Record<string, string> = {};
  for (const [key, raw] of Object.entries(input)) {
    const r = resolveFieldName(recipe, schema, key);
    if (!r) {
      out[key] = raw;
      continue;
    }
    if (Object.hasOwn(from, r.field)) {
      errors[r.field] = `field "${r.field}" is set twice: as "${from[r.field]}" and as "${key}"`;
      continue;
    }
    let value = raw;
    const map = r.via ? aliasOf(recipe, schema, r.field)?.values?.[r.via] : undefined;
    if (map && typeof raw === 'string' && Object.hasOwn(map, raw.trim())) value = map[raw.trim()];
    out[r.field] = value;
    from[r.field] = key;
  }
  return { input: out, errors };
}

/**
 * Input with the lab's earlier field names (`former`) renamed to today's; every other key as it
 * is. A field given under both names is an error naming both.
 */
export function currentNames(
  recipe: string,
  schema: Schema,
  input: Record<string, unknown>,
): { input: Record<string, unknown>; errors: Record<string, string> } {
  const out: Record<string, unknown> = { ...input };
  const errors: Record<string, string> = {};
  for (const a of aliasRows(recipe, schema)) {
    for (const old of a.former ?? []) {
      if (!Object.hasOwn(input, old) || Object.hasOwn(schema, old)) continue;
      if (Object.hasOwn(input, a.lab)) errors[a.lab] = `field "${a.lab}" is set twice: as "${a.lab}" and as "${old}"`;
      else out[a.lab] = input[old];
      delete out[old];
    }
  }
  return { input: out, errors };
}

/** Earlier field name -> today's, over every row (a checkpoint's saved config reads through it). */
export const FORMER_NAMES: ReadonlyMap<string, string> = new Map(
  FIELD_ALIASES.flatMap((a) => (a.former ?? []).map((old) => [old, a.lab] as const)),
);

// ---------------------------------------------------------------- metric names

export interface MetricAlias {
  readonly lab: string;
  readonly verl?: string;
  readonly trl?: string;
}

/**
 * Lab metric -> the name veRL's trainer logs (ray_trainer / dp_actor / core_algos) and the name
 * TRL's GRPOTrainer logs. Only metrics that mean the same thing are paired; the rest keep the
 * lab's name in a renamed log.
 */
export const METRIC_ALIASES: readonly MetricAlias[] = [
  { lab: 'reward/mean', verl: 'critic/score/mean', trl: 'reward' },
  { lab: 'reward/std', trl: 'reward_std' },
  { lab: 'reward/max', verl: 'critic/score/max' },
  { lab: 'reward/min', verl: 'critic/score/min' },
  { lab: 'loss/policy', verl: 'actor/pg_loss', trl: 'loss' },
  { lab: 'loss/kl', verl: 'actor/kl_loss' },
  { lab: 'loss/value', verl: 'critic/vf_loss' },
  { lab: 'kl/mean', verl: 'actor/reward_kl_penalty', trl: 'kl' },
  { lab: 'kl/coef', verl: 'actor/reward_kl_penalty_coeff' },
  { lab: 'entropy/mean', verl: 'actor/entropy', trl: 'entropy' },
  { lab: 'grad/norm', verl: 'actor/grad_norm', trl: 'grad_norm' },
  { lab: 'grad/critic_norm', verl: 'critic/grad_norm' },
  { lab: 'optim/lr', verl: 'actor/lr', trl: 'learning_rate' },
  { lab: 'ppo/clipfrac', verl: 'actor/pg_clipfrac', trl: 'clip_ratio/region_mean' },
  { lab: 'ppo/clipfrac_lower', verl: 'actor/pg_clipfrac_lower', trl: 'clip_ratio/low_mean' },
  { lab: 'ppo/approx_kl', verl: 'actor/ppo_kl' },
  { lab: 'value/clipfrac', verl: 'critic/vf_clipfrac' },
  { lab: 'value/mean', verl: 'critic/values/mean' },
  { lab: 'response/length_mean', verl: 'response_length/mean', trl: 'completions/mean_length' },
  { lab: 'perf/step_ms', verl: 'timing_s/step' },
  { lab: 'perf/tokens_per_s', verl: 'perf/throughput' },
];

/** Lab metric name -> framework name; milliseconds become seconds where veRL logs seconds. */
export function renameMetrics(metrics: Record<string, number>, to: Framework): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(metrics)) {
    const a = METRIC_ALIASES.find((m) => m.lab === k);
    const name = a?.[to] ?? k;
    out[name] = name === 'timing_s/step' ? v / 1000 : v;
  }
  return out;
}
