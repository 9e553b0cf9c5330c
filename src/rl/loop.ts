// A minimal, generic RL iteration on a prompt list and a reward function: rollout -> score ->
// advantages -> learn -> StepReport. The dev harnesses, benchmarks and e2e learn checks drive it;
// the recipes run their step through src/recipes/kit/groupStep.ts instead.
//
//   rollout   each prompt G times through generate (seeded by (seed, step); row r draws from
//             Philox stream r), adapters on
//   score     rewardFn per response -> outcome reward on the last response token
//             (optionally - beta kl_t per token, KL to the reference in the reward)
//   learn     reference log-probs (adapters off), critic values for gae, advantages by the
//             configured estimator (veRL names), then learnStep (one or more updates)
//   report    metrics (reward/*, response/*, trainer metrics, perf/*), a couple of samples
import { generate } from '../model/generate';
import { hash3 } from '../model/random';
import type { Metrics, RewardTerms, RolloutSample, StepReport, Verdict } from '../contract/report';
import { computeAdvantages, type AdvantageConfig } from './advantages';
import { applyKlPenalty, klPenaltyValue, updateKlController, type KlController } from './kl';
import { placeOutcomeRewards } from './placement';
import { policyAndReferenceStats, policyStats, referenceStats } from './policy';
import { plannedRolloutStats } from './plannedLearn';
import { mean, std } from './stats';
import { learnStep, type Learner, type TrainerConfig } from './trainer';
import {
  fromRows,
  fromTensor2D,
  tokenMatrix,
  type AdvantageEstimatorName,
  type KlEstimatorName,
  type TokenMatrix,
} from './types';
import * as tf from '@tensorflow/tfjs';

/** What a reward function sees: one response (its generated ids up to and including a stop token). */
export interface ScoredSample {
  prompt: number[];
  response: number[];
  /** Index of the prompt in the step's prompt list (the GRPO group). */
  promptIndex: number;
  /** Row in the rollout batch. */
  row: number;
}

/** A reward function returns a number, or a number with its terms and a verdict for the report. */
export type RewardResult = number | { reward: number; terms?: RewardTerms; verdict?: Verdict };
export type RewardFn = (sample: ScoredSample) => RewardResult | Promise<RewardResult>;

export interface RlLoopConfig {
  /** G: responses sampled per prompt. */
  groupSize: number;
  maxNewTokens: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  stopTokens?: number[];
  padTokenId?: number;
  /** Run seed; the rollout of step s uses hash(seed, s). Default 0. */
  seed?: number;
  /** veRL adv_estimator name. gae needs a value head on the learner. */
  advantage: AdvantageEstimatorName;
  advantageConfig?: AdvantageConfig;
  /** learnStep settings (policy loss, clip, aggregation, KL loss, entropy, micro-batches...). */
  trainer?: TrainerConfig;
  /** KL to the reference in the reward: r_t -= coef kl_t (veRL apply_kl_penalty). */
  klInReward?: { estimator: KlEstimatorName; coef: number };
  /** Compute reference log-probs (adapters off) for kl/mean even without a KL term. Default true. */
  reference?: boolean;
  /** Optimiser updates on each batch (PPO epochs; old log-probs stay the rollout's). Default 1. */
  updatesPerBatch?: number;
  /** Learning rate of this step (a schedule's value); default the optimiser's. */
  lr?: number | ((step: number) => number);
  /** Rollouts included in the report. Default 2. */
  samplesInReport?: number;
}

export interface RlLoopContext {
  learner: Learner;
  rewardFn: RewardFn;
  /** Turns ids into text for the report (the tokenizer's decode); default: ids joined by spaces. */
  decode?: (ids: number[]) => string;
  runId?: string;
  recipe?: string;
  /**
   * Adaptive (or fixed) controller of the in-reward KL coefficient. When present it replaces
   * klInReward.coef, and rlStep updates it in place after each step from the measured KL.
   */
  klController?: KlController;
}

/** Mean of the row's masked values. */
function rowMean(m: TokenMatrix, mask: number[][], b: number): number {
  let s = 0;
  let n = 0;
  for (let t = 0; t < m.cols; t++) {
    s += m.data[b * m.cols + t] * mask[b][t];
    n += mask[b][t];
  }
  return n > 0 ? s / n : 0;
}

/** One iteration on `prompts` (unpadded id lists): G rollouts each, scored, learned from, reported. */
export async function rlStep(
  ctx: RlLoopContext,
  prompts: number[][],
  step: number,
  config: RlLoopConfig,
): Promise<StepReport> {
  const t0 = performance.now();
  const { learner } = ctx;
  const { model, lora } = learner;
  const G = config.groupSize;
  if (!Number.isInteger(G) || G < 1) throw new Error(`rlStep: groupSize must be a positive integer, got ${G}`);
  if (prompts.length === 0) throw new Error('rlStep: no prompts');
  const trainer: TrainerConfig = { temperature: config.temperature, padTokenId: config.padTokenId, ...config.trainer };
  const decode = ctx.decode ?? ((ids: number[]) => ids.join(' '));
  const gae = config.advantage === 'gae';
  if (gae && !learner.valueHead) throw new Error('rlStep: the gae estimator needs a value head on the learner');

  // --- rollout
  const rowPrompts: number[][] = [];
  const index: number[] = [];
  prompts.forEach((p, i) => {
    for (let g = 0; g < G; g++) {
      rowPrompts.push(p);
      index.push(i);
    }
  });
  const B = rowPrompts.length;
  const gen = await generate(model, rowPrompts, {
    maxNewTokens: config.maxNewTokens,
    temperature: config.temperature,
    topK: config.topK,
    topP: config.topP,
    stopTokens: config.stopTokens,
    padTokenId: config.padTokenId,
    seed: hash3(config.seed ?? 0, step, 0x5eed),
  });
  const T = gen.tokens[0].length;
  const t1 = performance.now();

  // --- score
  const results = await Promise.all(
    gen.tokens.map((tokens, row) =>
      ctx.rewardFn({
        prompt: rowPrompts[row],
        response: tokens.slice(0, gen.lengths[row]),
        promptIndex: index[row],
        row,
      }),
    ),
  );
  const scored = results.map((r) => (typeof r === 'number' ? { reward: r } : r));
  const scores = scored.map((s) => s.reward);
  scores.forEach((s, row) => {
    if (!Number.isFinite(s)) throw new Error(`rlStep: reward of row ${row} is ${s} (rewards must be finite numbers)`);
  });
  // ReMax: the baseline of each prompt is the reward of its greedy rollout.
  let rewardBaselines: number[] | undefined;
  if (config.advantage === 'remax') {
    const greedy = await generate(model, prompts, {
      maxNewTokens: config.maxNewTokens,
      greedy: true,
      stopTokens: config.stopTokens,
      padTokenId: config.padTokenId,
    });
    const base = await Promise.all(
      greedy.tokens.map((tokens, i) =>
        ctx.rewardFn({ prompt: prompts[i], response: tokens.slice(0, greedy.lengths[i]), promptIndex: i, row: -1 - i }),
      ),
    );
    const perPrompt = base.map((r) => (typeof r === 'number' ? r : r.reward));
    rewardBaselines = index.map((i) => perPrompt[i]);
  }
  const t2 = performance.now();

  // --- learn
  const batch = { prompts: rowPrompts, responses: gen.tokens, mask: gen.mask };
  const mask = fromRows(gen.mask);
  const needRef = config.reference !== false || !!config.klInReward || (trainer.kl?.coef ?? 0) !== 0;
  let refLogp: TokenMatrix | undefined;
  let values: TokenMatrix | undefined;
  const statsOpts = { temperature: config.temperature, padTokenId: config.padTokenId };
  // On WebGPU the plan the learning step replays next gives them (reference pass, hidden rows).
  const planned =
    needRef || gae
      ? await plannedRolloutStats(model, lora, batch, statsOpts, {
          reference: needRef,
          valueHead: gae ? learner.valueHead : undefined,
        })
      : null;
  if (planned) {
    refLogp = planned.refLogp;
    values = planned.values;
  } else if (needRef && gae) {
    // Both of the same batch: one fused stats pass gives the policy's hidden state (for the
    // values) and the reference log-probs.
    const s = policyAndReferenceStats(model, lora, batch, { ...statsOpts, withHidden: true });
    const v = learner.valueHead!.forward(s.hidden!);
    refLogp = await fromTensor2D(s.refLogp);
    values = await fromTensor2D(v);
    tf.dispose([s.logp, s.entropy, s.refLogp, s.hidden!, v]);
  } else if (needRef) {
    const ref = referenceStats(model, lora, batch, statsOpts);
    refLogp = await fromTensor2D(ref.logp);
    tf.dispose([ref.logp, ref.entropy]);
  }
  const oldLogp = fromRows(gen.logprobs);
  let tokenRewards = placeOutcomeRewards(scores, mask);
  const metrics: Metrics = {};
  if (config.klInReward) {
    const kl = tokenMatrix(B, T);
    for (let i = 0; i < kl.data.length; i++)
      kl.data[i] = klPenaltyValue(oldLogp.data[i], refLogp!.data[i], config.klInReward.estimator);
    const coef = ctx.klController?.value ?? config.klInReward.coef;
    const pen = applyKlPenalty(tokenRewards, kl, mask, coef);
    tokenRewards = pen.rewards;
    metrics['kl/reward_kl'] = pen.currentKl;
    metrics['kl/coef'] = coef;
    if (ctx.klController) ctx.klController = updateKlController(ctx.klController, pen.currentKl, B);
  }
  if (gae && !values) {
    const s = policyStats(model, batch, { ...statsOpts, withHidden: true });
    const v = learner.valueHead!.forward(s.hidden!);
    values = await fromTensor2D(v);
    tf.dispose([s.logp, s.entropy, s.hidden!, v]);
  }
  const adv = computeAdvantages(
    config.advantage,
    { tokenLevelRewards: tokenRewards, responseMask: mask, index, values, rewardBaselines },
    config.advantageConfig,
  );
  const lr = typeof config.lr === 'function' ? config.lr(step) : config.lr;
  const updates = Math.max(1, Math.floor(config.updatesPerBatch ?? 1));
  let learn: Metrics = {};
  for (let u = 0; u < updates; u++) {
    learn = await learnStep(
      learner,
      {
        ...batch,
        oldLogp,
        refLogp,
        advantages: adv.advantages,
        lossMask: adv.mask,
        values: gae ? values : undefined,
        returns: gae ? adv.returns : undefined,
      },
      trainer,
      lr,
    );
  }
  const t3 = performance.now();

  // --- report
  const tokens = gen.lengths.reduce((a, b) => a + b, 0);
  Object.assign(metrics, learn, {
    'reward/mean': mean(scores),
    'reward/std': std(scores, false),
    'reward/min': Math.min(...scores),
    'reward/max': Math.max(...scores),
    'response/length_mean': mean(gen.lengths),
    'advantage/abs_mean': mean(Array.from({ length: B }, (_, b) => Math.abs(rowMean(adv.advantages, gen.mask, b)))),
    'batch/skipped_rows': adv.zeroAdvantageRows.reduce((a, x) => a + x, 0),
    'perf/step_ms': t3 - t0,
    'perf/tokens_per_s': tokens / Math.max(1e-9, (t1 - t0) / 1000),
  });
  const nSamples = Math.min(B, Math.max(0, config.samplesInReport ?? 2));
  // Spread the reported samples over the groups: rows 0, G, 2G, ... (then the rest).
  const order = [
    ...Array.from({ length: prompts.length }, (_, i) => i * G),
    ...Array.from({ length: B }, (_, r) => r).filter((r) => r % G !== 0),
  ];
  const samples: RolloutSample[] = order.slice(0, nSamples).map((row) => {
    const n = gen.lengths[row];
    const ids = gen.tokens[row].slice(0, n);
    const s = scored[row];
    return {
      id: `${ctx.runId ?? 'run'}-${step}-${row}`,
      promptKey: `prompt-${index[row]}`,
      group: index[row],
      messages: [
        { role: 'user', text: decode(rowPrompts[row]) },
        {
          role: 'assistant',
          text: decode(ids),
          tokens: {
            ids,
            pieces: ids.map((id) => decode([id])),
            logp: gen.logprobs[row].slice(0, n),
            entropy: gen.entropy[row].slice(0, n),
          },
        },
      ],
      verdict: s.verdict ?? {
        label: `reward ${s.reward.toFixed(3)}`,
        unsafe: 0,
        refused: false,
        success: s.reward > 0,
      },
      reward: s.reward,
      terms: s.terms ?? { reward: s.reward },
      advantage: rowMean(adv.advantages, gen.mask, row),
    };
  });
  return {
    runId: ctx.runId ?? 'run',
    recipe: ctx.recipe ?? 'rl',
    step,
    time: Date.now(),
    metrics,
    samples,
    timings: { rollout_ms: t1 - t0, score_ms: t2 - t1, learn_ms: t3 - t2, total_ms: t3 - t0 },
  };
}
