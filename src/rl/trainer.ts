// The learning step every recipe shares: one optimiser update of the LoRA adapters (and, for PPO,
// the value head) from a scored batch of rollouts.
//
//   for each micro-batch k:                       (gradient accumulation)
//     logp, H, h   = policyStats(prompt + response)          differentiable in the adapters
//     pg           = PPO clip (dual clip) | importance sampling, aggregated (veRL / TRL names)
//     loss_k       = pg - entropy_coeff agg(H) + kl_coef agg(kl(logp, ref)) + vf_coef value loss
//     grads       += w_k d(loss_k)                w_k = micro-batch share of the aggregation's
//                                                 denominator, so the sum equals the full batch
//   clip the global grad norm; AdamW (skipped when the norm is not finite): on WebGPU the planned
//   GPU optimiser (plannedOptim.ts) does both in one pass, tfjs's AdamW elsewhere
//
// On WebGPU the forward and backward of a micro-batch run as one planned pass by default
// (src/rl/plannedLearn.ts: the same loss, differentiated with respect to the per-token statistics
// the plan leaves on the GPU); its LoRA gradients accumulate in the plans' flat buffer, which the
// planned optimiser reads in place; tfjs op by op is the fallback and the reference.
//
// Inputs that are constants of the loss (old / ref log-probs, advantages, values, returns) are CPU
// TokenMatrix values, uploaded per micro-batch. Metrics come back as plain numbers in one
// readback at the end.
import * as tf from '@tensorflow/tfjs';
import type { LlamaModel } from '../model/llama';
import type { LoraSet } from '../model/lora';
import { untaped } from '../engine';
import { aggLoss, trlLoss } from './aggregate';
import { klPenalty } from './kl';
import { clipByGlobalNorm, type AdamW } from './optim';
import { plannedOptimizerActive, plannedUpdate } from './plannedOptim';
import { policyStats, stopGradient, type ResponseBatch, type ValueHead } from './policy';
import { PPO_DEFAULTS, computePolicyLoss, valueLoss } from './policyLoss';
import { plannedLearnBlocker, plannedMicroBatch, plannedMicroBatchRows } from './plannedLearn';
import { type FlatGrads, type PlannedMicroBatch, withFlatGrads } from '../model/planned/learnStep';
import { fromRows, type KlEstimatorName, type LossAggMode, type TokenMatrix, type TrlLossType } from './types';

/** One scored batch of rollouts, all [B, T] aligned with `responses`. */
export interface LearnBatch extends ResponseBatch {
  /** [B, T] log-probs under the rollout policy (generate's `logprobs`). */
  oldLogp: TokenMatrix;
  /** [B, T] log-probs under the reference (adapters off); needed for a KL loss and the kl/mean metric. */
  refLogp?: TokenMatrix;
  /** [B, T] token-level advantages. */
  advantages: TokenMatrix;
  /** [B, T] loss mask when it differs from the generation mask (e.g. skipped all-zero groups). */
  lossMask?: TokenMatrix;
  /**
   * [B, T] mask of the KL-loss and entropy-bonus terms when it differs from lossMask: skipping a
   * group whose advantages are all zero removes it from the policy term only (default lossMask).
   */
  regMask?: TokenMatrix;
  /** [B, T] critic values at rollout time (PPO value clipping). */
  values?: TokenMatrix;
  /** [B, T] value targets (GAE returns). With values, enables the value loss. */
  returns?: TokenMatrix;
}

export type TrainerPolicyLoss = 'ppo' | 'vanilla' | 'importance_sampling';

export interface TrainerConfig {
  /** `ppo` (= veRL `vanilla`: clipped surrogate with dual clip) or Tinker `importance_sampling`. Default ppo. */
  policyLoss?: TrainerPolicyLoss;
  /** PPO eps_low / eps_high (clip-higher) and dual-clip c. Defaults 0.2 / 0.2 / 3. */
  clipRatioLow?: number;
  clipRatioHigh?: number;
  clipRatioC?: number;
  /** veRL loss_agg_mode. Default token-mean (token-sum for importance_sampling). */
  lossAggMode?: LossAggMode;
  /** TRL loss_type; when set it replaces lossAggMode for the policy, entropy and KL terms. */
  trlLossType?: TrlLossType;
  /** TRL max_completion_length (dr_grpo denominator); default T. */
  maxCompletionLength?: number;
  /** KL to the reference as a loss term (veRL use_kl_loss, TRL beta): + coef agg(kl). coef 0: metric only. */
  kl?: { estimator: KlEstimatorName; coef: number };
  /** Entropy bonus: loss -= coef agg(H). Default 0. */
  entropyCoeff?: number;
  /** Weight of the value loss (needs a value head and batch.values/returns). Default 0.5. */
  vfCoef?: number;
  /** Value clip range around the rollout values. Default 0.5. */
  cliprangeValue?: number;
  /** Let the value loss send gradient into the adapters (shared actor-critic). Default false. */
  valueGradToAdapters?: boolean;
  /** Global grad-norm clip. Default 1. */
  maxGradNorm?: number;
  /**
   * With a value head in the update: clip the actor's and the critic's gradients each to
   * maxGradNorm on its own ('separate', veRL: each model has its own optimiser and clip_grad), or
   * both under one global norm ('joint': a value loss near 2,000 then scales the actor's step
   * down by its own norm). Default 'separate'.
   */
  criticGradClip?: 'separate' | 'joint';
  /**
   * Rows per micro-batch (gradient accumulation). Default: on the planned WebGPU path the
   * learn-memory planner's (src/contract/learnMemory.ts, from the device's limits and the budget),
   * elsewhere the whole batch.
   */
  microBatchSize?: number;
  /** Rollout temperature (logits are divided by it). Default 1. */
  temperature?: number;
  padTokenId?: number;
}

/** What the update touches. */
export interface Learner {
  model: LlamaModel;
  lora: LoraSet;
  optimizer: AdamW;
  /** PPO critic; trained when the batch has values and returns. */
  valueHead?: ValueHead;
  /** The critic's own optimiser (veRL: a separate critic optimiser and lr); default `optimizer`. */
  valueOptimizer?: AdamW;
}

export type LearnMetrics = Record<string, number>;

/** Per-micro-batch weight of a mean-style aggregate: its share of the full batch's denominator. */
function aggShare(mode: LossAggMode | TrlLossType, mask: TokenMatrix, rows: number[]): { part: number; total: number } {
  const T = mask.cols;
  const tokens = (rs: Iterable<number>) => {
    let n = 0;
    for (const r of rs) for (let t = 0; t < T; t++) n += mask.data[r * T + t];
    return n;
  };
  const nonEmpty = (rs: Iterable<number>) => {
    let n = 0;
    for (const r of rs) n += tokens([r]) > 0 ? 1 : 0;
    return n;
  };
  const all = Array.from({ length: mask.rows }, (_, i) => i);
  switch (mode) {
    case 'token-mean':
    case 'bnpo':
    case 'dapo':
      return { part: tokens(rows), total: tokens(all) };
    case 'seq-mean-token-sum':
    case 'seq-mean-token-mean':
      return { part: nonEmpty(rows), total: nonEmpty(all) };
    case 'grpo':
    case 'dr_grpo':
      return { part: rows.length, total: mask.rows };
    case 'token-sum':
    case 'seq-mean-token-sum-norm':
      return { part: 1, total: 1 };
  }
}

function sliceRows(m: TokenMatrix, rows: number[]): TokenMatrix {
  const out = new Float32Array(rows.length * m.cols);
  rows.forEach((r, i) => out.set(m.data.subarray(r * m.cols, (r + 1) * m.cols), i * m.cols));
  return { data: out, rows: rows.length, cols: m.cols };
}

function sum(xs: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s;
}

function upload(m: TokenMatrix): tf.Tensor2D {
  return tf.tensor2d(m.data, [m.rows, m.cols], 'float32');
}

function checkShape(name: string, m: TokenMatrix | undefined, B: number, T: number): void {
  if (m && (m.rows !== B || m.cols !== T))
    throw new Error(`learnStep: ${name} is [${m.rows}, ${m.cols}], the batch is [${B}, ${T}]`);
}

/**
 * One optimiser update from a scored batch. Returns metrics: loss/total, loss/policy, loss/value,
 * loss/entropy, loss/kl, kl/mean, entropy/mean, ppo/clipfrac, ppo/clipfrac_lower, ppo/approx_kl,
 * ppo/ratio_mean, value/clipfrac, value/mean, grad/norm (before clipping), grad/skipped, optim/lr.
 * Token means are over the loss mask; entropy/mean and kl/mean over the generation mask.
 */
export async function learnStep(
  learner: Learner,
  batch: LearnBatch,
  config: TrainerConfig = {},
  lr?: number,
): Promise<LearnMetrics> {
  const { model, lora, optimizer, valueHead } = learner;
  const B = batch.prompts.length;
  if (B === 0) throw new Error('learnStep: empty batch');
  const T = batch.responses[0]?.length ?? 0;
  const genMask = fromRows(batch.mask.map((r) => r.map((m) => (m > 0 ? 1 : 0))));
  checkShape('mask', genMask, B, T);
  for (const [name, m] of Object.entries({
    oldLogp: batch.oldLogp,
    refLogp: batch.refLogp,
    advantages: batch.advantages,
    lossMask: batch.lossMask,
    regMask: batch.regMask,
    values: batch.values,
    returns: batch.returns,
  })) {
    checkShape(name, m, B, T);
  }
  const lossMask = batch.lossMask ?? genMask;
  const policyLoss = config.policyLoss ?? 'ppo';
  const lossName = policyLoss === 'importance_sampling' ? 'importance_sampling' : 'vanilla';
  const aggMode: LossAggMode = config.lossAggMode ?? (lossName === 'importance_sampling' ? 'token-sum' : 'token-mean');
  const trl = config.trlLossType;
  const klLossCoef = config.kl?.coef ?? 0;
  if (klLossCoef !== 0 && !batch.refLogp)
    throw new Error('learnStep: a KL loss needs batch.refLogp (reference log-probs)');
  const useValue = !!(valueHead && batch.returns);
  if (batch.returns && !batch.values)
    throw new Error('learnStep: batch.returns needs batch.values (rollout values for value clipping)');
  if (batch.returns && !valueHead) throw new Error('learnStep: batch.returns given but the learner has no value head');
  const vfCoef = config.vfCoef ?? 0.5;
  const entCoef = config.entropyCoeff ?? 0;
  const valueMode: LossAggMode = trl ? 'token-mean' : aggMode;
  const regMask = batch.regMask ?? lossMask;
  const stepLr = lr ?? optimizer.config.lr;
  // Nothing would contribute a gradient (every group skipped, no KL / entropy / value term on any
  // token): no optimiser step at all, since AdamW would still move the adapter through its
  // momentum and weight decay with a zero gradient.
  const regTerms = klLossCoef !== 0 || entCoef !== 0;
  if (sum(lossMask.data) === 0 && !(regTerms && sum(regMask.data) > 0) && !useValue) {
    return { 'grad/norm': 0, 'grad/skipped': 1, 'optim/no_update': 1, 'optim/lr': stepLr };
  }

  const vars: Record<string, tf.Variable> = {};
  for (const v of lora.variables()) vars[v.name] = v;
  if (useValue) for (const v of valueHead!.variables()) vars[v.name] = v;
  const varList = Object.values(vars);

  const agg = (x: tf.Tensor, m: tf.Tensor): tf.Scalar =>
    trl ? trlLoss(x, m, trl, config.maxCompletionLength) : aggLoss(x, m, aggMode);

  // Device-side accumulators: metric sums (weighted so their sum is the full-batch value).
  const sums: Record<string, tf.Scalar> = {};
  // Computed with the tape paused (untaped): no gradient is asked of a metric, and under the tape
  // their ops saved clones of their inputs, an Identity kernel each on wasm.
  const addMetric = (name: string, of: () => tf.Scalar) =>
    untaped(() => {
      const x = of();
      const prev = sums[name];
      sums[name] = tf.keep(prev ? tf.add(prev, x) : x.clone()) as tf.Scalar;
      prev?.dispose();
    });
  let acc: tf.NamedTensorMap | null = null;
  // The planned micro-batches' LoRA gradients, summed in the plans' flat buffer on the GPU.
  let flat: FlatGrads | null = null;
  const totalLossTokens = sum(lossMask.data);
  const totalGenTokens = sum(genMask.data);

  // The planned WebGPU pass when switched on and it can run this learner; tfjs otherwise.
  const plannedPass = plannedLearnBlocker(model, lora) === null;
  // Unset, the micro-batch is the learn-memory planner's on the planned path (device limits and the
  // memory budget: src/contract/learnMemory.ts), the whole batch on tfjs.
  const mb = Math.max(1, Math.floor(config.microBatchSize ?? (plannedPass ? plannedMicroBatchRows(model, batch) : B)));
  const wasTraining = lora.training;
  lora.training = true;
  try {
    for (let r0 = 0; r0 < B; r0 += mb) {
      const rows = Array.from({ length: Math.min(mb, B - r0) }, (_, i) => r0 + i);
      const pShare = aggShare(trl ?? aggMode, lossMask, rows);
      const vShare = aggShare(valueMode, lossMask, rows);
      const wP = pShare.total > 0 ? pShare.part / pShare.total : 0;
      const wV = vShare.total > 0 ? vShare.part / vShare.total : 0;
      const rShare = aggShare(trl ?? aggMode, regMask, rows);
      const wR = rShare.total > 0 ? rShare.part / rShare.total : 0;
      // Token shares of this micro-batch, for the token-mean metrics.
      const tokW = totalLossTokens > 0 ? sum(sliceRows(lossMask, rows).data) / totalLossTokens : 0;
      const genW = totalGenTokens > 0 ? sum(sliceRows(genMask, rows).data) / totalGenTokens : 0;
      const sub: ResponseBatch = {
        prompts: rows.map((r) => batch.prompts[r]),
        responses: rows.map((r) => batch.responses[r]),
        mask: rows.map((r) => batch.mask[r]),
      };
      const consts = {
        // one upload each, disposed below
        old: upload(sliceRows(batch.oldLogp, rows)),
        adv: upload(sliceRows(batch.advantages, rows)),
        lm: upload(sliceRows(lossMask, rows)),
        rm: batch.regMask ? upload(sliceRows(regMask, rows)) : null,
        gm: upload(sliceRows(genMask, rows)),
        ref: batch.refLogp ? upload(sliceRows(batch.refLogp, rows)) : null,
        vOld: useValue ? upload(sliceRows(batch.values!, rows)) : null,
        ret: useValue ? upload(sliceRows(batch.returns!, rows)) : null,
      };
      try {
        // The loss of this micro-batch from its per-token statistics (both paths differentiate it).
        const lossOf = (s: { logp: tf.Tensor2D; entropy: tf.Tensor2D; hidden?: tf.Tensor3D }): tf.Scalar => {
          const pl = computePolicyLoss(
            lossName,
            { logp: s.logp, oldLogp: consts.old, advantages: consts.adv, mask: consts.lm },
            {
              clipRatioLow: config.clipRatioLow ?? PPO_DEFAULTS.clipRatioLow,
              clipRatioHigh: config.clipRatioHigh ?? PPO_DEFAULTS.clipRatioHigh,
              clipRatioC: config.clipRatioC ?? PPO_DEFAULTS.clipRatioC,
              lossAggMode: aggMode,
            },
          );
          const pg = trl ? agg(pl.perToken, consts.lm) : pl.loss;
          let loss: tf.Scalar = tf.mul(pg, wP);
          addMetric('loss/policy', () => tf.mul(pg, wP));
          addMetric('ppo/clipfrac', () => tf.mul(pl.clipFrac, tokW));
          addMetric('ppo/clipfrac_lower', () => tf.mul(pl.clipFracLower, tokW));
          addMetric('ppo/approx_kl', () => tf.mul(pl.approxKl, tokW));
          addMetric('ppo/ratio_mean', () =>
            tf.mul(aggLoss(tf.exp(tf.sub(s.logp, consts.old)), consts.lm, 'token-mean'), tokW),
          );
          addMetric('entropy/mean', () => tf.mul(aggLoss(s.entropy, consts.gm, 'token-mean'), genW));
          const rm = consts.rm ?? consts.lm;
          if (entCoef !== 0) {
            const e = agg(s.entropy, rm);
            loss = tf.sub(loss, tf.mul(e, entCoef * wR));
            addMetric('loss/entropy', () => tf.mul(e, -entCoef * wR));
          }
          if (consts.ref) {
            const kl = klPenalty(s.logp, consts.ref, config.kl?.estimator ?? 'k3');
            addMetric('kl/mean', () => tf.mul(aggLoss(kl, consts.gm, 'token-mean'), genW));
            if (klLossCoef !== 0) {
              const k = agg(kl, rm);
              loss = tf.add(loss, tf.mul(k, klLossCoef * wR));
              addMetric('loss/kl', () => tf.mul(k, klLossCoef * wR));
            }
          }
          if (useValue) {
            const h = config.valueGradToAdapters ? s.hidden! : stopGradient(s.hidden!);
            const v = valueHead!.forward(h);
            const vl = valueLoss(v, consts.ret!, consts.vOld!, consts.lm, config.cliprangeValue ?? 0.5, valueMode);
            loss = tf.add(loss, tf.mul(vl.loss, vfCoef * wV));
            addMetric('loss/value', () => tf.mul(vl.loss, wV));
            addMetric('value/clipfrac', () => tf.mul(vl.clipFrac, tokW));
            addMetric('value/mean', () => tf.mul(aggLoss(v, consts.lm, 'token-mean'), tokW));
          }
          addMetric('loss/total', () => loss);
          return loss;
        };
        let grads: tf.NamedTensorMap;
        const viaPlan: PlannedMicroBatch | null = plannedPass
          ? await plannedMicroBatch(
              model,
              lora,
              sub,
              {
                temperature: config.temperature,
                padTokenId: config.padTokenId,
                valueHead: useValue ? valueHead : undefined,
                valueGradToAdapters: useValue && !!config.valueGradToAdapters,
                accumulate: flat !== null,
              },
              lossOf,
            )
          : null;
        if (viaPlan) {
          viaPlan.loss.dispose();
          flat = viaPlan.flat;
          grads = viaPlan.varGrads;
        } else {
          const out = tf.variableGrads(
            () =>
              lossOf(
                policyStats(model, sub, {
                  temperature: config.temperature,
                  padTokenId: config.padTokenId,
                  withHidden: useValue,
                }),
              ),
            varList,
          );
          out.value.dispose();
          grads = out.grads;
        }
        if (!acc) acc = grads;
        else {
          const prev: tf.NamedTensorMap = acc;
          const next: tf.NamedTensorMap = {};
          for (const name of Object.keys(grads))
            next[name] = prev[name] ? tf.add(prev[name], grads[name]) : grads[name].clone();
          for (const name of Object.keys(prev)) if (!next[name]) next[name] = prev[name].clone();
          tf.dispose([...Object.values(prev), ...Object.values(grads)]);
          acc = next;
        }
      } finally {
        tf.dispose(Object.values(consts).filter((t): t is tf.Tensor2D => t !== null));
      }
    }
  } finally {
    lora.training = wasTraining;
  }

  let grads: tf.NamedTensorMap = acc ?? {};
  const names = Object.keys(sums);
  const vo = learner.valueOptimizer;
  // The planned GPU optimiser takes the update on WebGPU unless the critic has its own optimiser.
  const isHead = new Set(useValue && valueHead ? valueHead.variables().map((v) => v.name) : []);
  const splitClip = isHead.size > 0 && (config.criticGradClip ?? 'separate') === 'separate';
  const planned = plannedOptimizerActive() && !(vo && useValue) && !splitClip;
  // The flat LoRA gradients go to the planned optimiser as they are; anything else (tfjs's
  // optimiser, a micro-batch that fell back to tfjs) takes them as one tensor per variable.
  if (flat && (!planned || flat.tensors.some((t) => grads[t.name]))) {
    grads = withFlatGrads(grads, flat);
    flat = null;
  }
  const clipped = planned ? null : clipGrads(grads, config.maxGradNorm ?? 1, splitClip ? isHead : null);
  let norm = clipped ? (await clipped.norm.data())[0] : NaN;
  const criticNorm = clipped?.criticNorm ? (await clipped.criticNorm.data())[0] : NaN;
  const stacked = names.length ? tf.stack(names.map((n) => sums[n])) : null;
  const values = stacked ? await stacked.data() : new Float32Array(0);
  // A non-finite loss or gradient norm: no update (veRL skips it too); grad/skipped says so.
  const total = values[names.indexOf('loss/total')];
  const lossBad = total !== undefined && !Number.isFinite(total);
  let skipped: boolean;
  if (planned) {
    const r = await plannedUpdate(optimizer, vars, grads, stepLr, config.maxGradNorm ?? 1, lossBad, flat ?? undefined);
    norm = r.norm;
    skipped = r.skipped;
  } else {
    skipped = !Number.isFinite(norm) || lossBad || (splitClip && !Number.isFinite(criticNorm));
    if (!skipped) {
      const cg = clipped!.grads;
      if (vo && useValue) {
        const pick = (keep: boolean) => Object.fromEntries(Object.entries(cg).filter(([n]) => isHead.has(n) === keep));
        optimizer.applyGradients(vars, pick(false), stepLr);
        vo.applyGradients(vars, pick(true));
      } else optimizer.applyGradients(vars, cg, stepLr);
    }
  }
  tf.dispose([
    ...Object.values(grads),
    ...(clipped
      ? [...Object.values(clipped.grads), clipped.norm, ...(clipped.criticNorm ? [clipped.criticNorm] : [])]
      : []),
    ...Object.values(sums),
  ]);
  stacked?.dispose();
  const metrics: LearnMetrics = {};
  names.forEach((n, i) => (metrics[n] = values[i]));
  metrics['grad/norm'] = norm;
  if (splitClip) metrics['grad/critic_norm'] = criticNorm;
  metrics['grad/skipped'] = skipped ? 1 : 0;
  metrics['optim/lr'] = stepLr;
  return metrics;
}

/**
 * Gradients clipped to `maxNorm`: all under one global norm, or (`head` given) the value head's
 * variables and the rest each under their own; `norm` is then the actor's, `criticNorm` the head's.
 */
function clipGrads(
  grads: tf.NamedTensorMap,
  maxNorm: number,
  head: ReadonlySet<string> | null,
): { grads: tf.NamedTensorMap; norm: tf.Scalar; criticNorm?: tf.Scalar } {
  if (!head) return clipByGlobalNorm(grads, maxNorm);
  const part = (keep: boolean) => Object.fromEntries(Object.entries(grads).filter(([n]) => head.has(n) === keep));
  const actor = clipByGlobalNorm(part(false), maxNorm);
  const critic = clipByGlobalNorm(part(true), maxNorm);
  return { grads: { ...actor.grads, ...critic.grads }, norm: actor.norm, criticNorm: critic.norm };
}

/** PPO epochs and mini-batches over one rollout batch (veRL ppo_epochs, ppo_mini_batch_size). */
export interface EpochConfig {
  /** Passes over the batch. Default 1. */
  epochs?: number;
  /** Mini-batches per pass, each its own optimiser step (contiguous rows, veRL's split). Default 1. */
  miniBatches?: number;
}

function batchRows(batch: LearnBatch, rows: number[]): LearnBatch {
  const pick = <T>(xs: T[]) => rows.map((r) => xs[r]);
  const sub = (m: TokenMatrix | undefined) => (m ? sliceRows(m, rows) : undefined);
  return {
    prompts: pick(batch.prompts),
    responses: pick(batch.responses),
    mask: pick(batch.mask),
    oldLogp: sliceRows(batch.oldLogp, rows),
    refLogp: sub(batch.refLogp),
    advantages: sliceRows(batch.advantages, rows),
    lossMask: sub(batch.lossMask),
    regMask: sub(batch.regMask),
    values: sub(batch.values),
    returns: sub(batch.returns),
  };
}

/**
 * `epochs` passes over the batch, each split into `miniBatches` optimiser steps. The old log-probs
 * stay the rollout's, so from the second update on the PPO ratio differs from 1 and the clip can
 * bind. `lr` may be a function of the optimiser's step count (a schedule). Metrics are the mean
 * over the updates, except the counts: `optim/updates` (optimiser steps taken), `optim/no_update`
 * (updates with nothing to learn from), `grad/skipped` (non-finite); `ppo/clipfrac_last` is the
 * last update's clip fraction.
 */
export async function learnEpochs(
  learner: Learner,
  batch: LearnBatch,
  config: TrainerConfig,
  e: EpochConfig = {},
  lr?: number | ((optimizerStep: number) => number),
): Promise<LearnMetrics> {
  const B = batch.prompts.length;
  const epochs = Math.max(1, Math.floor(e.epochs ?? 1));
  const mbs = Math.min(B, Math.max(1, Math.floor(e.miniBatches ?? 1)));
  const size = Math.ceil(B / mbs);
  const parts = Array.from({ length: mbs }, (_, k) =>
    Array.from({ length: Math.max(0, Math.min(size, B - k * size)) }, (_, i) => k * size + i),
  ).filter((r) => r.length > 0);
  const all: LearnMetrics[] = [];
  let updates = 0;
  for (let ep = 0; ep < epochs; ep++) {
    for (const rows of parts) {
      const stepLr = typeof lr === 'function' ? lr(learner.optimizer.step) : lr;
      const m = await learnStep(learner, rows.length === B ? batch : batchRows(batch, rows), config, stepLr);
      if (!m['optim/no_update'] && !m['grad/skipped']) updates++;
      all.push(m);
    }
  }
  const out: LearnMetrics = {};
  const keys = new Set(all.flatMap((m) => Object.keys(m)));
  for (const k of keys) {
    const xs = all.map((m) => m[k]).filter((x) => x !== undefined);
    out[k] = xs.reduce((a, x) => a + x, 0) / xs.length;
  }
  out['optim/updates'] = updates;
  // Counts, not means over the updates that reported them.
  out['optim/no_update'] = all.filter((m) => m['optim/no_update']).length;
  out['grad/skipped'] = all.filter((m) => m['grad/skipped'] && !m['optim/no_update']).length;
  out['ppo/clipfrac_last'] = all[all.length - 1]['ppo/clipfrac'] ?? 0;
  return out;
}
