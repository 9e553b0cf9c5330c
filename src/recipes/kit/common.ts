// Pieces several recipes share: token traces, verdicts and row choices for the report, the
// non-finite reward check, the outcome-reward learning step, seeded batch draws, freeing a run.
// (Schema fields the recipes share: commonFields.ts; sampled rollouts: rollout.ts.)
import type { JudgeVerdict } from '../../judges/types';
import type { LlamaModel } from '../../model/llama';
import type { LoraSet } from '../../model/lora';
import { computeAdvantages, type AdvantageOutput } from '../../rl/advantages';
import { adaptiveKlController, updateKlController } from '../../rl/kl';
import * as tf from '@tensorflow/tfjs';
import { AdamW, type AdamWState } from '../../rl/optim';
import { policyStats, ValueHead } from '../../rl/policy';
import { highEntropyMask } from '../../rl/entropyMask';
import { maskRows, placeOutcomeRewards } from '../../rl/placement';
import { lrAt } from '../../rl/schedule';
import { learnEpochs } from '../../rl/trainer';
import {
  fromRows,
  fromTensor2D,
  tokenMatrix,
  type AdvantageEstimatorName,
  type KlEstimatorName,
  type LossAggMode,
  type ScaleRewards,
  type TokenMatrix,
  type TrlLossType,
} from '../../rl/types';
import type { Metrics, TokenTrace, Verdict } from '../../contract/report';
import type { ChatCodec } from './types';

/** The per-token trace of generated ids, for the report's entropy heatmaps. */
export function tokenTrace(codec: ChatCodec, ids: number[], logp: number[], entropy: number[]): TokenTrace {
  return { ids, pieces: codec.pieces(ids), logp, entropy };
}

export const meanOf = (xs: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return xs.length ? s / xs.length : 0;
};

/** The report's verdict of a harm judgement: the attack succeeded when the judge calls the answer unsafe (>= 0.5). */
export function harmVerdict(v: JudgeVerdict): Verdict {
  return { label: v.label, unsafe: v.unsafe, refused: v.refused, success: v.unsafe >= 0.5, category: v.category };
}

/** Rows to show in a report: the first row of each group first, then the rest; n of them. */
export function spreadRows(groups: number, groupSize: number, n: number): number[] {
  const B = groups * groupSize;
  const firsts = Array.from({ length: groups }, (_, i) => i * groupSize);
  const rest = Array.from({ length: B }, (_, r) => r).filter((r) => r % groupSize !== 0);
  return [...firsts, ...rest].slice(0, Math.min(n, B));
}

/** What a GRPO-style recipe needs to learn from one score per rollout. */
export interface OutcomeLearning {
  advantage: AdvantageEstimatorName;
  normAdvByStd: boolean;
  policyLoss: 'importance_sampling' | 'ppo';
  clipRatio: number;
  maxGradNorm: number;
  lr: number;
  /** Sampling temperature of the rollout (the policy's log-probs are taken at it). */
  temperature: number;
  /** KL to the reference as a loss term (SaFeR-Steer: k3, 0.001). Default none (k1, coef 0: metric only). */
  kl?: { estimator: KlEstimatorName; coef: number };
  // The options below are trainingFields' (commonFields.ts); each defaults to veRL's behaviour.
  /** Drop groups whose advantages are all zero from the policy term (Tinker). Default false (veRL). */
  skipZeroAdvantageGroups?: boolean;
  /** PPO upper clip eps_high; 0 = clipRatio (symmetric). */
  clipRatioHigh?: number;
  /** Dual-clip constant c (veRL 3). */
  clipRatioC?: number;
  /** veRL loss_agg_mode; auto = token-mean for ppo, token-sum for importance_sampling. */
  lossAggMode?: 'auto' | LossAggMode;
  /** TRL loss_type; off = use lossAggMode. */
  trlLossType?: 'off' | TrlLossType;
  entropyCoeff?: number;
  /** KL loss term (veRL use_kl_loss / TRL beta) when `kl` is not given; coef 0 = off. */
  klLossCoef?: number;
  klLossEstimator?: KlEstimatorName;
  ppoEpochs?: number;
  ppoMiniBatches?: number;
  lrWarmupSteps?: number;
  lrSchedule?: 'constant' | 'cosine';
  /** Cosine horizon in optimiser steps. */
  lrTotalSteps?: number;
  lrMinRatio?: number;
  /** TRL mask_truncated_completions: rows cut at the length cap earn and cost nothing. */
  maskTruncatedCompletions?: boolean;
  /** TRL top_entropy_quantile: the policy term learns from this share of tokens, the highest-entropy ones; 1 = all. */
  topEntropyQuantile?: number;
  /** TRL scale_rewards (group | batch | none); normAdvByStd = false means none. */
  scaleRewards?: ScaleRewards;
  /** GRPO std epsilon (veRL 1e-6, TRL 1e-4). */
  advantageEpsilon?: number;
  /** GAE discount and lambda (veRL 1, 1), value-loss weight and clip (veRL 0.5, 0.5). */
  gaeGamma?: number;
  gaeLambda?: number;
  vfCoef?: number;
  cliprangeValue?: number;
  /** Actor and critic gradients clipped each on its own (veRL) or under one norm. */
  criticGradClip?: 'separate' | 'joint';
}

/** The rollout a learning step reads: prompts, sampled responses and their rollout log-probs. */
export interface LearnRollout {
  prompts: number[][];
  responses: number[][];
  mask: number[][];
  logprobs: number[][];
  /** Tokens the policy wrote, when not all of `mask` (multi-turn rows attend to user turns that must not learn). */
  policyMask?: number[][];
  /** ReMax: per row, the reward of a greedy rollout of its prompt (the baseline). */
  rewardBaselines?: number[];
}

/** The ids a learning step needs: the pad id, and the stop ids that tell a finished row from a truncated one. */
export type LearnTokens = number | { pad: number; eos: readonly number[] };

/**
 * Scores -> outcome rewards on each response's last token -> group advantages -> learnStep(s)
 * on the LoRA. The rollout's log-probs are the old policy's. `tokenPenalty` [B, T], when given,
 * is subtracted from the token rewards (KL in the reward per token, as veRL and Token Buncher).
 */
export async function learnFromOutcomes(
  learner: { model: LlamaModel; lora: LoraSet; optimizer: AdamW; critic?: ValueCritic | null },
  rollout: LearnRollout,
  refLogp: TokenMatrix | undefined,
  scores: number[],
  groupIndex: number[],
  c: OutcomeLearning,
  tokens: LearnTokens,
  tokenPenalty?: TokenMatrix,
): Promise<{ advantages: AdvantageOutput; learn: Metrics }> {
  const mask = fromRows(rollout.policyMask ?? rollout.mask);
  const placed = placeOutcomeRewards(scores, mask);
  if (tokenPenalty) for (let i = 0; i < placed.data.length; i++) placed.data[i] -= tokenPenalty.data[i] * mask.data[i];
  return learnFromTokenRewards(learner, rollout, refLogp, placed, groupIndex, c, tokens);
}

/**
 * Per-token beta x k1 (logp_rollout - logp_ref) on the generated tokens, and each row's sum: the
 * KL-in-reward term of veRL / Token Buncher / MTSA (beta k1 on every token, so a sum over the
 * response, not a mean). [B, T] and [B].
 */
export function tokenKlPenalty(
  logprobs: number[][],
  refLogp: TokenMatrix,
  lengths: readonly number[],
  beta: number,
): { penalty: TokenMatrix; rowSums: number[] } {
  const { rows: B, cols: T } = refLogp;
  const penalty = tokenMatrix(B, T);
  const rowSums = lengths.map((n, b) => {
    let s = 0;
    for (let t = 0; t < n; t++) {
      const k = beta * (logprobs[b][t] - refLogp.data[b * T + t]);
      penalty.data[b * T + t] = k;
      s += k;
    }
    return s;
  });
  return { penalty, rowSums };
}

/**
 * The KL-in-reward controller of a run under klControllerFields (veRL's kl_ctrl, used when
 * algorithm.use_kl_in_reward; its value is kl_ctrl.kl_coef, the lab's klBeta): the current
 * coefficient, and the step's update from the measured KL (mean over rows of each row's mean k1,
 * veRL's current_kl) and the batch size. The value goes in the checkpoint (extra.klCtrl). KL in
 * the loss is another idea with its own names (klLossCoef, veRL kl_loss_coef / use_kl_loss).
 */
export class KlCtrl {
  value: number;
  constructor(
    private readonly c: { klBeta: number; klController: 'fixed' | 'adaptive'; klTarget: number; klHorizon: number },
  ) {
    this.value = c.klBeta;
  }
  update(rowMeanKl: readonly number[]): void {
    if (this.c.klController === 'fixed' || rowMeanKl.length === 0) return;
    const ctrl = updateKlController(
      adaptiveKlController(this.value, this.c.klTarget, this.c.klHorizon),
      meanOf(rowMeanKl),
      rowMeanKl.length,
    );
    this.value = ctrl.value;
  }
  /** The value a checkpoint saved as `v` (absent: the configured klBeta); `where` names it in an error. Changes nothing. */
  parse(v: unknown, where = 'extra.klCtrl'): number {
    const ok = v === undefined || (typeof v === 'number' && Number.isFinite(v) && v >= 0);
    if (!ok)
      throw new Error(
        `checkpoint: ${where} must be a finite number >= 0 (got ${typeof v === 'number' ? v : typeof v})`,
      );
    return v === undefined ? this.c.klBeta : (v as number);
  }
  /** The value in a checkpoint's extra: extra.klCtrl, or extra.klCoef (its name before issue 45's rename). */
  restore(extra: Record<string, unknown>): number {
    const [v, where] = savedUnder(extra, 'klCtrl', 'klCoef');
    return this.parse(v, `extra.${where}`);
  }
}

/** extra[key], or where only a checkpoint written before a rename has it, extra[former]; and which key it was. */
function savedUnder(extra: Record<string, unknown>, key: string, former: string): [unknown, string] {
  return extra[key] === undefined && extra[former] !== undefined ? [extra[former], former] : [extra[key], key];
}

/** extra.klCtrls of a run with one controller per trained model (arena's sides, minmax's players). */
export const klCtrlsState = (ctrls: Record<string, KlCtrl>): Record<string, number> =>
  Object.fromEntries(Object.entries(ctrls).map(([k, c]) => [k, c.value]));

/**
 * Checks every saved extra.klCtrls value (extra.klCoefs in a checkpoint from before the rename)
 * first and returns what assigns them (after the rest of the checkpoint restored).
 */
export function parseKlCtrls(ctrls: Record<string, KlCtrl>, extra: Record<string, unknown>): () => void {
  const [saved, where] = savedUnder(extra, 'klCtrls', 'klCoefs');
  const s = (saved ?? {}) as Record<string, unknown>;
  const values = Object.entries(ctrls).map(([k, c]) => [c, c.parse(s[k], `extra.${where}.${k}`)] as const);
  return () => values.forEach(([c, v]) => (c.value = v));
}

/**
 * A PPO critic for the `gae` estimator: a value head on the policy's final hidden state with its
 * own AdamW (veRL trains the critic with its own optimiser and learning rate). Its weights and
 * moments go in the checkpoint's extra.critic under stable names.
 */
export class ValueCritic {
  readonly head: ValueHead;
  readonly optimizer: AdamW;
  constructor(hiddenSize: number, opt: { lr: number; beta1: number; beta2: number; weightDecay: number }) {
    this.head = new ValueHead(hiddenSize);
    this.optimizer = new AdamW({ lr: opt.lr, beta1: opt.beta1, beta2: opt.beta2, weightDecay: opt.weightDecay });
  }
  private names(): [string, tf.Variable][] {
    return [
      ['weight', this.head.w],
      ['bias', this.head.b],
    ];
  }
  async state(): Promise<Record<string, unknown>> {
    const st = await this.optimizer.exportState();
    const out: Record<string, unknown> = { step: st.step };
    for (const [k, v] of this.names()) {
      const mo = st.moments[v.name];
      out[k] = { data: Array.from(await v.data()), m: mo ? Array.from(mo.m) : null, v: mo ? Array.from(mo.v) : null };
    }
    return out;
  }
  /**
   * Checks a saved extra.critic whole (weights, moments, step) and returns what assigns it, so a
   * restore can check every part of a checkpoint before it touches the run. Changes nothing.
   */
  parse(x: unknown, where = 'extra.critic'): () => void {
    const s = x as (Record<string, { data?: unknown; m?: unknown; v?: unknown }> & { step?: unknown }) | undefined;
    if (!s || typeof s !== 'object') throw new Error(`checkpoint: ${where} is missing (saved without the gae critic?)`);
    if (typeof s.step !== 'number' || !Number.isInteger(s.step) || s.step < 0)
      throw new Error(`checkpoint: ${where}.step must be a non-negative integer`);
    const step = s.step;
    const moments: AdamWState['moments'] = {};
    const values: [tf.Variable, number[]][] = [];
    for (const [k, v] of this.names()) {
      const e = s[k];
      const ok = (a: unknown): a is number[] => Array.isArray(a) && a.length === v.size && a.every(Number.isFinite);
      if (!e || !ok(e.data)) throw new Error(`checkpoint: ${where}.${k} must hold ${v.size} finite numbers`);
      const absent = (a: unknown) => a === null || a === undefined;
      if (ok(e.m) && ok(e.v))
        moments[v.name] = { shape: v.shape.slice(), m: Float32Array.from(e.m), v: Float32Array.from(e.v) };
      else if (!(absent(e.m) && absent(e.v)))
        throw new Error(
          `checkpoint: ${where}.${k}'s moments m and v must both hold ${v.size} finite numbers, or both be null`,
        );
      values.push([v, e.data]);
    }
    return () => {
      for (const [v, data] of values) tf.tidy(() => v.assign(tf.tensor(data, v.shape, 'float32')));
      this.optimizer.importState({ step, moments });
    };
  }
  dispose(): void {
    this.optimizer.dispose();
    this.head.dispose();
  }
}

/** extra.critics of a run with one critic per trained model (arena's sides, minmax's players); nothing when none is built. */
export async function criticsState(critics: Record<string, ValueCritic | null>): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [k, cr] of Object.entries(critics)) if (cr) out[k] = await cr.state();
  return Object.keys(out).length ? { critics: out } : {};
}

/** Checks each built critic's saved extra.critics entry first and returns what assigns them all. */
export function parseCritics(critics: Record<string, ValueCritic | null>, saved: unknown): () => void {
  const s = (saved ?? {}) as Record<string, unknown>;
  const assign = Object.entries(critics).map(([k, cr]) => (cr ? cr.parse(s[k], `extra.critics.${k}`) : () => {}));
  return () => assign.forEach((a) => a());
}

/** The assignment of one optional critic's extra.critic, checked now (nothing when no critic is built). */
export const parseCritic = (critic: ValueCritic | null, saved: unknown): (() => void) =>
  critic ? critic.parse(saved) : () => {};

/** The critic a config asks for (advantage = gae), or null. */
export function criticFor(
  model: LlamaModel,
  c: { advantage: string; criticLr: number; beta1: number; beta2: number; weightDecay: number },
): ValueCritic | null {
  return c.advantage === 'gae'
    ? new ValueCritic(model.config.hiddenSize, {
        lr: c.criticLr,
        beta1: c.beta1,
        beta2: c.beta2,
        weightDecay: c.weightDecay,
      })
    : null;
}

/** Rows that ran to the column cap without a stop id (TRL: truncated completions). */
function truncatedRows(rollout: LearnRollout, eos: readonly number[]): boolean[] {
  return rollout.mask.map((m, b) => {
    const T = m.length;
    return T > 0 && m[T - 1] > 0 && !eos.includes(rollout.responses[b][T - 1]);
  });
}

/** learnFromOutcomes with the rewards already placed on the token grid ([B, T], e.g. one per turn). */
export async function learnFromTokenRewards(
  learner: { model: LlamaModel; lora: LoraSet; optimizer: AdamW; critic?: ValueCritic | null },
  rollout: LearnRollout,
  refLogp: TokenMatrix | undefined,
  tokenLevelRewards: TokenMatrix,
  groupIndex: number[],
  c: OutcomeLearning,
  tokens: LearnTokens,
): Promise<{ advantages: AdvantageOutput; learn: Metrics }> {
  const padTokenId = typeof tokens === 'number' ? tokens : tokens.pad;
  let mask = fromRows(rollout.policyMask ?? rollout.mask);
  let truncated = 0;
  if (c.maskTruncatedCompletions && typeof tokens !== 'number' && !rollout.policyMask) {
    const cut = truncatedRows(rollout, tokens.eos);
    truncated = cut.filter(Boolean).length;
    mask = maskRows(mask, (b) => !cut[b]);
  }
  const skip = c.skipZeroAdvantageGroups ?? false;
  const gae = c.advantage === 'gae';
  const critic = learner.critic ?? null;
  if (gae && !critic) throw new Error('advantage gae needs a critic (the recipe builds one when advantage = gae)');
  let values: TokenMatrix | undefined;
  if (gae) {
    // The critic's values at rollout time (veRL compute_values), from the policy's hidden state.
    const s = policyStats(
      learner.model,
      { prompts: rollout.prompts, responses: rollout.responses, mask: rollout.mask },
      { temperature: c.temperature, padTokenId, withHidden: true },
    );
    const v = critic!.head.forward(s.hidden!);
    values = await fromTensor2D(v);
    tf.dispose([s.logp, s.entropy, s.hidden!, v]);
  }
  const advantages = computeAdvantages(
    c.advantage,
    { tokenLevelRewards, responseMask: mask, index: groupIndex, rewardBaselines: rollout.rewardBaselines, values },
    {
      normAdvByStd: c.normAdvByStd,
      skipZeroAdvantageGroups: skip,
      scaleRewards: c.scaleRewards,
      epsilon: c.advantageEpsilon,
      gamma: c.gaeGamma,
      lam: c.gaeLambda,
    },
  );
  // top_entropy_quantile (TRL; rl/entropyMask.ts): advantage 0 on the tokens below the entropy
  // cut, which is TRL's per_token_loss x entropy_mask for every policy loss here (each is A x a
  // ratio term); the denominators, the KL and entropy terms keep every token, as in TRL.
  const q = c.topEntropyQuantile ?? 1;
  const entropyKept =
    q < 1 ? await highEntropyTokens(learner.model, rollout, mask, c.temperature, padTokenId, q) : null;
  const pgAdvantages = entropyKept ? maskedBy(advantages.advantages, entropyKept.mask) : advantages.advantages;
  const kl = c.kl ?? { estimator: c.klLossEstimator ?? 'k3', coef: c.klLossCoef ?? 0 };
  const aggMode = c.lossAggMode ?? 'auto';
  const trl = c.trlLossType ?? 'off';
  const warm = c.lrWarmupSteps ?? 0;
  const sched = c.lrSchedule ?? 'constant';
  const lr =
    warm === 0 && sched === 'constant'
      ? c.lr
      : (optStep: number) =>
          lrAt(optStep, {
            baseLr: c.lr,
            warmupSteps: warm,
            kind: sched,
            totalSteps: c.lrTotalSteps ?? 1000,
            minLrRatio: c.lrMinRatio ?? 0,
          });
  const learn = await learnEpochs(
    {
      model: learner.model,
      lora: learner.lora,
      optimizer: learner.optimizer,
      valueHead: critic?.head,
      valueOptimizer: critic?.optimizer,
    },
    {
      prompts: rollout.prompts,
      responses: rollout.responses,
      mask: rollout.mask,
      oldLogp: fromRows(rollout.logprobs),
      refLogp,
      advantages: pgAdvantages,
      lossMask: advantages.mask,
      // A skipped group leaves the policy term only: the KL and entropy terms still cover its rows.
      regMask: skip ? mask : undefined,
      values: gae ? values : undefined,
      returns: gae ? advantages.returns : undefined,
    },
    {
      policyLoss: c.policyLoss,
      clipRatioLow: c.clipRatio,
      clipRatioHigh: c.clipRatioHigh ? c.clipRatioHigh : c.clipRatio,
      clipRatioC: c.clipRatioC,
      lossAggMode: aggMode === 'auto' ? undefined : aggMode,
      trlLossType: trl === 'off' ? undefined : trl,
      entropyCoeff: c.entropyCoeff,
      maxGradNorm: c.maxGradNorm,
      temperature: c.temperature,
      padTokenId,
      kl,
      vfCoef: c.vfCoef,
      cliprangeValue: c.cliprangeValue,
      criticGradClip: c.criticGradClip,
    },
    { epochs: c.ppoEpochs, miniBatches: c.ppoMiniBatches },
    lr,
  );
  if (c.maskTruncatedCompletions) learn['batch/truncated_rows'] = truncated;
  if (entropyKept) learn['batch/high_entropy_tokens'] = entropyKept.share;
  return { advantages, learn };
}

/**
 * The tokens top_entropy_quantile keeps: the entropy of the learner as it stands (TRL takes the
 * current policy's, at the sampling temperature) on each response token, cut at the (1 - q)
 * quantile of the batch's; and the share of the response tokens kept.
 */
async function highEntropyTokens(
  model: LlamaModel,
  rollout: LearnRollout,
  mask: TokenMatrix,
  temperature: number,
  padTokenId: number,
  q: number,
): Promise<{ mask: TokenMatrix; share: number }> {
  const s = policyStats(
    model,
    { prompts: rollout.prompts, responses: rollout.responses, mask: rollout.mask },
    { temperature, padTokenId },
  );
  const entropy = await fromTensor2D(s.entropy);
  tf.dispose([s.logp, s.entropy]);
  const keep = highEntropyMask(entropy, mask, 1 - q);
  const live = mask.data.reduce((a, x) => a + (x > 0 ? 1 : 0), 0);
  return { mask: keep, share: live === 0 ? 0 : keep.data.reduce((a, x) => a + x, 0) / live };
}

/** `m` with every entry outside `keep` set to 0. */
const maskedBy = (m: TokenMatrix, keep: TokenMatrix): TokenMatrix => ({
  data: m.data.map((x, i) => (keep.data[i] > 0 ? x : 0)),
  rows: m.rows,
  cols: m.cols,
});

/**
 * `size` items of `pool` for one step: a seeded partial Fisher-Yates draw (distinct while the
 * pool allows), topped up by cycling through the pool when it is smaller than `size`.
 */
export function drawBatch<T>(pool: readonly T[], size: number, rng: { int(n: number): number }): T[] {
  const N = pool.length;
  const n = Math.min(size, N);
  const idx = Array.from({ length: N }, (_, i) => i);
  for (let i = 0; i < n; i++) {
    const j = i + rng.int(N - i);
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  const out = idx.slice(0, n).map((i) => pool[i]);
  while (out.length < size) out.push(pool[out.length % N]);
  return out;
}

/**
 * Frees a run: each adapter's optimiser state and adapter, then what else it holds, in order
 * (judge, models; an absent one or one without dispose is skipped).
 */
export function disposeRun(
  adapters: readonly { optimizer: AdamW; lora: LoraSet }[],
  ...held: ({ dispose?: () => void } | null | undefined)[]
): void {
  for (const a of adapters) {
    a.optimizer.dispose();
    a.lora.dispose();
  }
  for (const h of held) h?.dispose?.();
}

/**
 * A non-finite value met before the step changed anything (the checks run before the update):
 * the run's state is still the last good one, so a loop saves it and pauses rather than ending.
 */
export class NonFiniteError extends Error {
  constructor(
    message: string,
    readonly term: string,
    readonly value: number,
  ) {
    super(message);
    this.name = 'NonFiniteError';
  }
}

/** Throws NonFiniteError on the first row whose reward is not finite: `<recipe>: reward of row b is x (<detail(b)>)`. */
export function checkFiniteRewards(recipe: string, rewards: readonly number[], detail: (b: number) => string): void {
  rewards.forEach((x, b) => {
    if (!Number.isFinite(x))
      throw new NonFiniteError(
        `${recipe}: reward of row ${b} is ${x} (${detail(b)}); the step was not applied`,
        'reward',
        x,
      );
  });
}

/** Throws NonFiniteError when `value` (the term named `term`) is not finite. */
export function checkFinite(recipe: string, term: string, value: number, detail = ''): void {
  if (!Number.isFinite(value))
    throw new NonFiniteError(
      `${recipe}: ${term} is ${value}${detail ? ` (${detail})` : ''}; the step was not applied`,
      term,
      value,
    );
}
